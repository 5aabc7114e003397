package quota

import (
	"math"
	"testing"
	"time"
)

func TestRateOverTheWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewRate(11, time.Second)
	if r.Value(now) != 0 {
		t.Fatal("an empty rate is not zero")
	}
	// A start-up burst is spread over the window less one sample.
	r.Record(10_000, now)
	if v := r.Value(now); v != 1000 {
		t.Fatalf("rate %v, want 1000 (10000 bytes over 10 s)", v)
	}
	// A steady 5000 B/s for 20 s reads as 5000 B/s.
	r = NewRate(11, time.Second)
	for i := 0; i < 20; i++ {
		r.Record(5000, now.Add(time.Duration(i)*time.Second))
	}
	if v := r.Value(now.Add(20 * time.Second)); v < 4500 || v > 5500 {
		t.Fatalf("steady rate reads %v, want about 5000", v)
	}
	if !r.Exceeded(4000, now.Add(20*time.Second)) || r.Exceeded(6000, now.Add(20*time.Second)) {
		t.Fatal("Exceeded disagrees with Value")
	}
	if r.Exceeded(math.MaxInt64, now.Add(20*time.Second)) {
		t.Fatal("the default limit throttles")
	}
	// Old samples age out.
	if v := r.Value(now.Add(time.Minute)); v != 0 {
		t.Fatalf("rate a minute later %v, want 0", v)
	}
}

func TestListed(t *testing.T) {
	for _, c := range []struct {
		list []string
		p, b int32
		want bool
	}{
		{nil, 0, 1, false},
		{[]string{"*"}, 7, 3, true},
		{[]string{"0:1", "1:2"}, 1, 2, true},
		{[]string{"0:1", "1:2"}, 1, 1, false},
		{[]string{" 2 : 3 "}, 2, 3, true},
		{[]string{"bad"}, 0, 0, false},
	} {
		if got := Listed(c.list, c.p, c.b); got != c.want {
			t.Errorf("Listed(%v, %d, %d) = %v", c.list, c.p, c.b, got)
		}
	}
}

func TestNilReplicationNeverThrottles(t *testing.T) {
	var q *Replication
	if q.LeaderExceeded() || q.FollowerExceeded() {
		t.Fatal("nil quotas throttle")
	}
	q.RecordLeader(1)
	q.RecordFollower(1)
}

// move simulates a reassignment's new replica catching up under the
// follower-side quota, as the fetcher drives it: before each fetch the
// partition is left out while the quota is exceeded, and what a fetch
// brings is recorded. The link carries one fetch of up to fetchBytes
// every step. It returns the bytes moved by the end of each second.
func move(q *Replication, clock *time.Time, total, fetchBytes int64, step time.Duration, seconds int) []int64 {
	var moved int64
	perSecond := make([]int64, 0, seconds)
	start := *clock
	for len(perSecond) < seconds {
		if moved < total && !q.FollowerExceeded() {
			n := min(fetchBytes, total-moved)
			q.RecordFollower(n)
			moved += n
		}
		*clock = clock.Add(step)
		if clock.Sub(start) >= time.Duration(len(perSecond)+1)*time.Second {
			perSecond = append(perSecond, moved)
		}
	}
	return perSecond
}

// A 50 MB/s follower throttle on a link that carries 100 MiB/s (1 MiB
// fetches every 10 ms), as in `reassign-partitions --throttle 50000000`.
// Like Kafka's quota, a fresh one lets (samples-1) windows' worth of the
// limit through at full speed: a 200 MiB move is never held back, which
// is what progress samples taken during such a move show. A larger move
// is held to the limit once that allowance is spent.
func TestFollowerThrottleOverAMove(t *testing.T) {
	const limit, fetch, mib = 50_000_000, 1 << 20, 1 << 20
	clock := time.Unix(1000, 0)
	newQuota := func() *Replication {
		q := NewReplication(11, time.Second, func() (int64, int64) { return math.MaxInt64, limit })
		q.Now = func() time.Time { return clock }
		return q
	}

	small := move(newQuota(), &clock, 200*mib, fetch, 10*time.Millisecond, 5)
	if small[0] != 100*mib || small[1] != 200*mib {
		t.Fatalf("200 MiB move: %v bytes after each second, want 100 MiB then 200 MiB (never throttled)", small)
	}

	q := newQuota()
	big := move(q, &clock, 10_000*mib, fetch, 10*time.Millisecond, 120)
	// The allowance: the move runs at link speed until the rate over
	// the elapsed time plus the windows assumed empty before it (10 to
	// 11 s in all) passes the limit.
	if big[3] != 400*mib || big[5] < 10*limit || big[5] > 11*limit+fetch {
		t.Fatalf("first seconds of a large move: %v, want 100 MiB/s up to 10 to 11 s x %d bytes", big[:6], limit)
	}
	// From then on the move averages the limit over the quota's window:
	// every 11 s span carries about 11 s x limit, and the long-run rate
	// is the limit.
	for s := 20; s+11 < len(big); s++ {
		got := big[s+11] - big[s]
		if got > 11*limit+10*fetch || got < 11*limit-10*fetch {
			t.Fatalf("seconds %d to %d moved %d bytes, want about %d", s, s+11, got, 11*limit)
		}
	}
	if avg := float64(big[119]-big[19]) / 100; avg > limit*1.02 || avg < limit*0.98 {
		t.Fatalf("seconds 20 to 120 averaged %.0f B/s, want about %d", avg, limit)
	}
	// But it is an on/off control, as Kafka's: while the rate over the
	// window is under the limit the replica fetches at link speed, and
	// while over it fetches nothing. Seconds (and shorter progress
	// samples) show either link speed or nothing, never the limit.
	var full, idle int
	for s := 20; s < len(big); s++ {
		switch big[s] - big[s-1] {
		case 100 * mib:
			full++
		case 0:
			idle++
		}
	}
	if full == 0 || idle == 0 {
		t.Fatalf("seconds 20 to 120: %d at link speed, %d idle; want both", full, idle)
	}
}
