// Package quota measures byte rates the way Kafka's replication quotas
// do: bytes recorded into a ring of one-second samples (11 of them by
// default), the rate being their sum over the time they span, the
// windows missing before the oldest sample (up to the full window less
// one sample) counted as empty. So, as in Kafka, a throttled replica
// that starts moving after a quiet spell may send about (samples-1) x
// window x limit bytes (500 MB at 50 MB/s) at full speed before the
// quota is exceeded; from then on the rate holds at the limit.
//
// Replication uses two rates per broker: the leader side
// (leader.replication.throttled.rate) counts what it sends to followers
// of the replicas listed in leader.replication.throttled.replicas, the
// follower side (follower.replication.throttled.rate) what it fetches for
// those listed in follower.replication.throttled.replicas. Replicas in
// the ISR are never throttled.
package quota

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rate is a sliding-window byte rate. It is safe for concurrent use.
type Rate struct {
	mu      sync.Mutex
	window  time.Duration // one sample's span
	samples []sample
	cur     int
}

type sample struct {
	start time.Time
	bytes int64
}

// NewRate returns a rate over n samples of window each (Kafka:
// replication.quota.window.num=11, replication.quota.window.size.seconds=1).
func NewRate(n int, window time.Duration) *Rate {
	return &Rate{window: window, samples: make([]sample, max(n, 2))}
}

// Record adds n bytes at now.
func (r *Rate) Record(n int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.samples[r.cur]
	if s.start.IsZero() || now.Sub(s.start) >= r.window {
		r.cur = (r.cur + 1) % len(r.samples)
		r.samples[r.cur] = sample{start: now}
		s = &r.samples[r.cur]
	}
	s.bytes += n
}

// Value is the rate in bytes per second at now.
func (r *Rate) Value(now time.Time) float64 {
	v, _ := r.Measure(now)
	return v
}

// Measure is the rate per second at now and the span it is measured
// over (Kafka's Rate.windowSize), which throttle times are computed with.
func (r *Rate) Measure(now time.Time) (float64, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	span := time.Duration(len(r.samples)) * r.window
	var total int64
	var oldest time.Time
	for _, s := range r.samples {
		if s.start.IsZero() || now.Sub(s.start) >= span {
			continue
		}
		total += s.bytes
		if oldest.IsZero() || s.start.Before(oldest) {
			oldest = s.start
		}
	}
	if total == 0 {
		return 0, span - r.window
	}
	// As Kafka's Rate.windowSize: the windows missing before the oldest
	// sample (fewer than samples-1 have elapsed since it began) count as
	// empty ones.
	elapsed := now.Sub(oldest)
	if full, least := int(elapsed/r.window), len(r.samples)-1; full < least {
		elapsed += time.Duration(least-full) * r.window
	}
	return float64(total) / elapsed.Seconds(), elapsed
}

// Exceeded reports whether the rate is above limit bytes per second; a
// limit of math.MaxInt64 (Kafka's default: no throttle) never is.
func (r *Rate) Exceeded(limit int64, now time.Time) bool {
	return limit != math.MaxInt64 && r.Value(now) > float64(limit)
}

// Listed reports whether a throttled-replicas list ("*", or
// partition:broker pairs) names partition's replica on broker.
func Listed(list []string, partition, broker int32) bool {
	for _, e := range list {
		e = strings.TrimSpace(e)
		if e == "*" {
			return true
		}
		p, b, ok := strings.Cut(e, ":")
		if !ok {
			continue
		}
		pi, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if err1 == nil && err2 == nil && int32(pi) == partition && int32(bi) == broker {
			return true
		}
	}
	return false
}

// Replication is a broker's two replication quotas.
type Replication struct {
	Leader, Follower *Rate
	// Limits returns the current leader and follower rates in bytes per
	// second (dynamic configs can change them at any time).
	Limits func() (leader, follower int64)
	Now    func() time.Time
}

// NewReplication returns quotas over samples windows of window each
// (replication.quota.window.num, replication.quota.window.size.seconds).
func NewReplication(samples int, window time.Duration, limits func() (int64, int64)) *Replication {
	return &Replication{Leader: NewRate(samples, window), Follower: NewRate(samples, window), Limits: limits, Now: time.Now}
}

// LeaderExceeded reports whether the leader side is over its limit.
func (q *Replication) LeaderExceeded() bool {
	if q == nil {
		return false
	}
	l, _ := q.Limits()
	return q.Leader.Exceeded(l, q.Now())
}

// FollowerExceeded reports whether the follower side is over its limit.
func (q *Replication) FollowerExceeded() bool {
	if q == nil {
		return false
	}
	_, f := q.Limits()
	return q.Follower.Exceeded(f, q.Now())
}

// RecordLeader counts bytes sent to throttled followers.
func (q *Replication) RecordLeader(n int64) {
	if q != nil && n > 0 {
		q.Leader.Record(n, q.Now())
	}
}

// RecordFollower counts bytes fetched for throttled replicas.
func (q *Replication) RecordFollower(n int64) {
	if q != nil && n > 0 {
		q.Follower.Record(n, q.Now())
	}
}
