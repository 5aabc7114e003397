package group

// How a consumer group's changes reach the log. Its records are deltas
// (one member's subscription, one member's assignment, the epochs), so the
// in-memory state runs ahead of the log exactly as Kafka's coordinator
// runtime does it: a handler applies each record as it produces it, the
// records are written, and every answer derived from them waits until they
// (and all earlier writes of the group) are durable. A write that fails is
// undone together with every later write of the same group, which was
// computed on top of it, and those answers get the error. A heartbeat that
// writes nothing still waits for the group's earlier writes, so no client
// ever acts on state a crash could lose.
//
// The driver should not let a group's later writes reach the log once an
// earlier one failed (Kafka's runtime reverts to the last committed offset
// for the same reason); if it does, replaying tolerates it.

import "slices"

// cgTxn collects the records one input produces for one consumer group,
// with the undo of each.
type cgTxn struct {
	g    *group
	recs []Record
	undo []func()
}

// emit applies a record to the group and queues it for writing.
func (tx *cgTxn) emit(r cgRecord) {
	r.group = tx.g.id
	tx.recs = append(tx.recs, r.encode())
	tx.undo = append(tx.undo, tx.g.consumer.apply(r))
}

// abort undoes everything the transaction did; nothing is written.
func (tx *cgTxn) abort() {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		tx.undo[i]()
	}
	tx.recs, tx.undo = nil, nil
}

// cgWrite is one write of a consumer group, not yet durable.
type cgWrite struct {
	undo    []func()
	waiters []func(code int16)
	durable bool
}

// cgCommit writes the transaction's records. waiter (may be nil) gets 0
// once they and every earlier write of the group are durable, or the
// append error.
func (gm *groupManager) cgCommit(tx *cgTxn, waiter func(code int16)) {
	g, cg := tx.g, tx.g.consumer
	gm.touch(g.id)
	if len(tx.recs) == 0 {
		if n := len(cg.pending); n > 0 {
			cg.pending[n-1].waiters = append(cg.pending[n-1].waiters, waiter)
		} else if waiter != nil {
			waiter(0)
		}
		return
	}
	w := &cgWrite{undo: tx.undo, waiters: []func(int16){waiter}}
	cg.pending = append(cg.pending, w)
	gm.write(g.partition, tx.recs, func(code int16) { gm.cgPersisted(g, cg, w, code) })
}

func (gm *groupManager) cgPersisted(g *group, cg *consumerGroup, w *cgWrite, code int16) {
	i := slices.Index(cg.pending, w)
	if i < 0 {
		return // undone with an earlier write
	}
	if code == 0 {
		w.durable = true
		for len(cg.pending) > 0 && cg.pending[0].durable {
			done := cg.pending[0]
			cg.pending = cg.pending[1:]
			for _, f := range done.waiters {
				if f != nil {
					f(0)
				}
			}
		}
		return
	}
	failed := cg.pending[i:]
	cg.pending = cg.pending[:i:i]
	gm.touch(g.id)
	for j := len(failed) - 1; j >= 0; j-- {
		for k := len(failed[j].undo) - 1; k >= 0; k-- {
			failed[j].undo[k]()
		}
	}
	if gm.byID[g.id] == g && g.consumer == cg {
		gm.cgRestoreTimers(g)
	}
	for _, f := range failed {
		for _, wt := range f.waiters {
			if wt != nil {
				wt(code)
			}
		}
	}
}

// createConsumerGroup makes id a new, empty consumer group as part of tx.
func (gm *groupManager) createConsumerGroup(tx *cgTxn, id string, p int32) *group {
	g := newGroup(id, p, gm.nowMs())
	g.consumer = newConsumerGroup()
	g.protocolType = consumerProtocolType
	gm.byID[id] = g
	gm.touch(id)
	tx.g = g
	tx.undo = append(tx.undo, func() {
		if gm.byID[id] != g {
			return
		}
		if !gm.offsets.holds(id) {
			gm.forget(g)
		} else {
			gm.resetClassic(g) // it holds offsets committed meanwhile
		}
	})
	return g
}

// convertToConsumerGroup turns an Empty classic group into an empty
// consumer group as part of tx, as Kafka does when a consumer joins it:
// the classic group is tombstoned, its committed offsets stay.
func (gm *groupManager) convertToConsumerGroup(tx *cgTxn, g *group) {
	saved := *g
	tx.g = g
	tx.recs = append(tx.recs, groupTombstone(g.id))
	gm.resetClassic(g)
	g.consumer = newConsumerGroup()
	g.protocolType = consumerProtocolType
	tx.undo = append(tx.undo, func() {
		if gm.byID[g.id] == g {
			*g = saved
			gm.touch(g.id)
		}
	})
}

// convertToClassicGroup turns an empty consumer group into an Empty classic
// group, as Kafka does when a classic member joins it: the consumer group is
// tombstoned, its committed offsets stay.
func (gm *groupManager) convertToClassicGroup(g *group) {
	recs := consumerGroupTombstones(g.id, g.consumer)
	gm.resetClassic(g)
	gm.write(g.partition, recs, nil)
}

// resetClassic makes g a new Empty classic group with g's id (its
// offsets stay). The group keeps its identity, so that callbacks holding it
// stay valid.
func (gm *groupManager) resetClassic(g *group) {
	*g = *newGroup(g.id, g.partition, gm.nowMs())
	gm.touch(g.id)
}

// isEmpty reports whether a group has no members: Kafka's condition for
// deleting it or giving its id to the other protocol.
func (g *group) isEmpty() bool {
	if g.consumer != nil {
		return len(g.consumer.members) == 0
	}
	return g.state == Empty
}
