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
func (c *Coordinator) nextSeq() uint64 {
	c.lastSeq++
	return c.lastSeq
}

// schedule sets a timer d from now and returns its seq.
func (c *Coordinator) schedule(kind timerKind, d time.Duration, groupID, memberID string) uint64 {
	t := &timer{at: c.now.Add(d), seq: c.nextSeq(), kind: kind, group: groupID, member: memberID}
	c.timers.Push(t)
	return t.seq
}

// timerLive reports whether t is still wanted.
func (c *Coordinator) timerLive(t *timer) bool {
	g := c.groups[t.group]
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
		return c.consumerTimerLive(g, t)
	}
	return false
}

// deadline drops stale timers from the top of the heap and returns when
// Tick is next needed.
func (c *Coordinator) deadline() time.Time {
	next := c.nextCleanup
	if at, ok := c.timers.Next(c.timerLive); ok && (next.IsZero() || at.Before(next)) {
		next = at
	}
	return next
}

// fire runs a due timer if it is still live.
func (c *Coordinator) fire(t *timer) {
	if !c.timerLive(t) {
		return
	}
	g := c.groups[t.group]
	switch t.kind {
	case timerSession:
		c.onSessionExpired(g, t.member)
	case timerJoin:
		g.joinTimer = 0
		c.onJoinTimer(g)
	case timerSync:
		g.syncTimer = 0
		c.onSyncExpired(g)
	case timerConsumerSession, timerConsumerRebalance:
		c.onConsumerTimer(g, t)
	}
}
