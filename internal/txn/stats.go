package txn

import "sync/atomic"

// Stats are the transaction coordinator's metrics: the transactional ids
// it serves by durable state, brought up to date at the end of every input
// for the ids that input changed, the marker partitions queued for their
// leaders, and the producer id blocks fetched. The coordinator and the
// service write them; any goroutine may read them. A nil *Stats counts
// nothing.
type Stats struct {
	states        [len(stateNames)]atomic.Int64
	markersQueued atomic.Int64
	pidBlocks     atomic.Uint64
	pids          atomic.Uint64
}

// StatsSnapshot is one read of Stats.
type StatsSnapshot struct {
	// States counts the transactional ids by Kafka's state name; every
	// state a transaction can be in durably is present (not Dead, which is
	// a tombstone, nor PrepareEpochFence, which is never written).
	States map[string]int64
	// MarkersQueued are the partitions whose markers wait for their
	// leader's sender.
	MarkersQueued int64
	// ProducerIDBlocks and ProducerIDs count the blocks fetched from the
	// controller and the ids they held.
	ProducerIDBlocks, ProducerIDs uint64
}

// Snapshot reads the stats (zero, with the states present, for a nil
// *Stats).
func (s *Stats) Snapshot() StatsSnapshot {
	out := StatsSnapshot{States: map[string]int64{}}
	for i, name := range stateNames {
		if st := State(i); st == Dead || st == PrepareEpochFence {
			continue
		}
		if s != nil {
			out.States[name] = s.states[i].Load()
		} else {
			out.States[name] = 0
		}
	}
	if s != nil {
		out.MarkersQueued = s.markersQueued.Load()
		out.ProducerIDBlocks, out.ProducerIDs = s.pidBlocks.Load(), s.pids.Load()
	}
	return out
}

func (s *Stats) queued(n int) {
	if s != nil {
		s.markersQueued.Add(int64(n))
	}
}

func (s *Stats) pidBlock(n int32) {
	if s != nil {
		s.pidBlocks.Add(1)
		s.pids.Add(uint64(n))
	}
}

// touch notes that the input being handled may have changed transactional
// id id's state or existence.
func (c *Coordinator) touch(id string) {
	if c.cfg.Stats != nil {
		c.dirty[id] = struct{}{}
	}
}

// recount brings the state gauges up to date for the ids touched.
func (c *Coordinator) recount() {
	for id := range c.dirty {
		delete(c.dirty, id)
		old, had := c.counted[id]
		m := c.txns[id]
		if had && (m == nil || m.state != old) {
			c.cfg.Stats.states[old].Add(-1)
			delete(c.counted, id)
			had = false
		}
		if m != nil && !had {
			c.cfg.Stats.states[m.state].Add(1)
			c.counted[id] = m.state
		}
	}
}
