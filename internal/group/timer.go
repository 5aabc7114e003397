package group

import "time"

type timerKind uint8

const (
	// timerSession expires a member (or a pending member) whose session
	// ran out, and bounds a new member's JoinGroup.
	timerSession timerKind = iota
	// timerJoin ends the join phase of a rebalance: the initial delay or
	// the rebalance timeout.
	timerJoin
	// timerSync removes members that did not send SyncGroup within the
	// rebalance timeout after the join phase.
	timerSync
	// timerConsumerSession removes a consumer group member whose session
	// ran out; timerConsumerRebalance one that did not revoke in time.
	timerConsumerSession
	timerConsumerRebalance
)

// timer is one scheduled wake-up. A timer is live while the object it is
// for still holds its seq (member.sessionTimer, group.joinTimer, ...);
// cancelling or rescheduling just replaces that seq, and stale entries are
// dropped when they reach the top of the heap.
type timer struct {
	at     time.Time
	seq    uint64
	kind   timerKind
	group  string
	member string
}

// Due orders timers for coordinator.Timers.
func (t *timer) Due() (time.Time, uint64) { return t.at, t.seq }

// nextSeq returns a fresh identity for a timer or a waiter.
func (b *base) nextSeq() uint64 {
	b.lastSeq++
	return b.lastSeq
}

// schedule sets a timer d from now and returns its seq.
func (b *base) schedule(kind timerKind, d time.Duration, groupID, memberID string) uint64 {
	t := &timer{at: b.out.Now().Add(d), seq: b.nextSeq(), kind: kind, group: groupID, member: memberID}
	b.timers.Push(t)
	return t.seq
}

// timerLive reports whether t is still wanted.
func (gm *groupManager) timerLive(t *timer) bool {
	g := gm.byID[t.group]
	if g == nil {
		return false
	}
	switch t.kind {
	case timerSession:
		if seq, ok := g.pendingJoin[t.member]; ok {
			return seq == t.seq
		}
		m := g.byID[t.member]
		return m != nil && m.sessionTimer == t.seq
	case timerJoin:
		return g.joinTimer == t.seq
	case timerSync:
		return g.syncTimer == t.seq
	case timerConsumerSession, timerConsumerRebalance:
		return gm.consumerTimerLive(g, t)
	}
	return false
}

// deadline drops stale timers from the top of the heap and returns when
// Tick is next needed.
func (c *Coordinator) deadline() time.Time {
	next := c.nextCleanup
	if at, ok := c.timers.Next(c.groups.timerLive); ok && (next.IsZero() || at.Before(next)) {
		next = at
	}
	return next
}

// fire runs a due timer if it is still live.
func (gm *groupManager) fire(t *timer) {
	if !gm.timerLive(t) {
		return
	}
	g := gm.byID[t.group]
	switch t.kind {
	case timerSession:
		gm.onSessionExpired(g, t.member)
	case timerJoin:
		g.joinTimer = 0
		gm.onJoinTimer(g)
	case timerSync:
		g.syncTimer = 0
		gm.onSyncExpired(g)
	case timerConsumerSession, timerConsumerRebalance:
		gm.onConsumerTimer(g, t)
	}
}
