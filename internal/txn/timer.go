package txn

// Timers: marker and completion retries, the sweep that aborts timed-out
// transactions, and the one that removes expired transactional ids.

import "time"

type timerKind uint8

const (
	timerMarkerRetry timerKind = iota
	timerCompleteRetry
)

// timer is one scheduled wake-up, live while its transaction's marker
// round still holds its seq.
type timer struct {
	at   time.Time
	seq  uint64
	kind timerKind
	id   string
}

// Due orders timers for coordinator.Timers.
func (t *timer) Due() (time.Time, uint64) { return t.at, t.seq }

func (c *Coordinator) schedule(kind timerKind, d time.Duration, id string) uint64 {
	c.lastSeq++
	c.timers.Push(&timer{at: c.now.Add(d), seq: c.lastSeq, kind: kind, id: id})
	return c.lastSeq
}

func (c *Coordinator) timerLive(t *timer) bool {
	m := c.txns[t.id]
	return m != nil && m.markers != nil && m.markers.timer == t.seq
}

// deadline drops stale timers from the top of the heap and returns when
// Tick is next needed.
func (c *Coordinator) deadline() time.Time {
	next := c.nextAbort
	if !c.nextExpire.IsZero() && c.nextExpire.Before(next) {
		next = c.nextExpire
	}
	if at, ok := c.timers.Next(c.timerLive); ok && (next.IsZero() || at.Before(next)) {
		next = at
	}
	return next
}

// Tick fires every timer due at now. Timers that firing schedules for now
// or earlier wait for the next Tick.
func (c *Coordinator) Tick(now time.Time) Ready {
	c.begin(now)
	last := c.lastSeq
	for t, ok := c.timers.PopDue(now, last); ok; t, ok = c.timers.PopDue(now, last) {
		if !c.timerLive(t) {
			continue
		}
		m := c.txns[t.id]
		m.markers.timer = 0
		switch t.kind {
		case timerMarkerRetry:
			c.retryMarkers(m)
		case timerCompleteRetry:
			c.maybeComplete(m)
		}
	}
	if !c.nextAbort.IsZero() && !now.Before(c.nextAbort) {
		c.abortTimedOut()
		c.nextAbort = now.Add(c.cfg.AbortTimedOutInterval)
	}
	if !c.nextExpire.IsZero() && !now.Before(c.nextExpire) {
		c.removeExpired()
		c.nextExpire = now.Add(c.cfg.RemoveExpiredInterval)
	}
	return c.end()
}

// abortTimedOut aborts every ongoing transaction older than its timeout,
// at a bumped epoch (Kafka's abortTimedOutTransactions): the producer is
// fenced, and learns it at its next request.
func (c *Coordinator) abortTimedOut() {
	now := c.nowMs()
	for _, id := range sortedIDs(c.txns) {
		m := c.txns[id]
		if m.pending != nil || m.state != Ongoing || m.startMs+int64(m.timeoutMs) >= now {
			continue
		}
		t := m.prepareFence()
		if t == nil {
			continue
		}
		c.endTransaction(m, t.producerID, t.epoch, false, false, func(int16) {})
	}
}

// removeExpired writes tombstones for the transactional ids with no
// transaction in progress that were last used longer than IDExpiration
// ago, one write per partition, and forgets them once written.
func (c *Coordinator) removeExpired() {
	cutoff := c.nowMs() - c.cfg.IDExpiration.Milliseconds()
	type expiring struct {
		m *txnMeta
		t *transit
	}
	byPart := map[int32][]expiring{}
	var parts []int32
	for _, id := range sortedIDs(c.txns) {
		m := c.txns[id]
		switch m.state {
		case Empty, CompleteCommit, CompleteAbort:
		default:
			continue
		}
		if m.pending != nil || m.updateMs > cutoff {
			continue
		}
		t := m.prepareDead()
		if t == nil {
			continue
		}
		if byPart[m.partition] == nil {
			parts = append(parts, m.partition)
		}
		byPart[m.partition] = append(byPart[m.partition], expiring{m, t})
	}
	for _, p := range parts {
		es := byPart[p]
		recs := make([]Record, len(es))
		for i, e := range es {
			recs[i] = encodeTransit(e.m.id, e.t)
		}
		c.emitWrite(p, recs, func(code int16) {
			for _, e := range es {
				if !c.live(e.m) || e.m.pending != e.t {
					continue
				}
				if code != 0 {
					e.m.pending = nil
					continue
				}
				e.m.complete(e.t)
				delete(c.txns, e.m.id)
				c.touch(e.m.id)
			}
		})
	}
}
