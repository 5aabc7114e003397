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
