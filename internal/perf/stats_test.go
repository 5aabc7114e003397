package perf

import (
	"testing"
	"time"
)

func TestProducerStatsWindowsAndTotal(t *testing.T) {
	var windows []ProducerWindow
	s := NewProducerStats(t0, 5*time.Second, func(w ProducerWindow) { windows = append(windows, w) })

	// 4 records inside the first window, then one at 5s closes it.
	for i := range 4 {
		s.Record(time.Duration(i+1)*time.Millisecond, 100, t0.Add(time.Duration(i)*time.Second))
	}
	if len(windows) != 0 {
		t.Fatalf("window closed early: %+v", windows)
	}
	s.Record(10*time.Millisecond, 100, t0.Add(5*time.Second))
	if len(windows) != 1 {
		t.Fatalf("got %d windows, want 1", len(windows))
	}
	w := windows[0]
	if w.Records != 5 || w.Bytes != 500 || w.Elapsed != 5*time.Second ||
		w.AvgLatency != 4*time.Millisecond || w.MaxLatency != 10*time.Millisecond {
		t.Fatalf("window = %+v", w)
	}
	if got, want := w.Line(), "5 records sent, 1.0 records/sec (0.00 MB/sec), 4.0 ms avg latency, 10.0 ms max latency."; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}

	// The next window starts at the closing record.
	s.Record(20*time.Millisecond, 100, t0.Add(9*time.Second))
	s.Record(30*time.Millisecond, 100, t0.Add(10*time.Second))
	if len(windows) != 2 || windows[1].Records != 2 || windows[1].MaxLatency != 30*time.Millisecond {
		t.Fatalf("second window = %+v", windows[1:])
	}

	tot := s.Total(t0.Add(10 * time.Second))
	if tot.Records != 7 || tot.Bytes != 700 || tot.Elapsed != 10*time.Second {
		t.Fatalf("total = %+v", tot)
	}
	// latencies 1,2,3,4,10,20,30 ms: mean 10, p50 = sorted[3] = 4, p95 =
	// sorted[6] = 30 (percentiles are exact to the histogram bucket, which is
	// what the whole-millisecond output shows).
	if tot.AvgLatency != 10*time.Millisecond || tot.MaxLatency != 30*time.Millisecond ||
		tot.P50/time.Millisecond != 4 || tot.P95 != 30*time.Millisecond {
		t.Fatalf("total latencies = %+v", tot)
	}
	if s.Count() != 7 {
		t.Fatalf("Count = %d", s.Count())
	}
}

func TestProducerStatsRecordDoesNotAllocate(t *testing.T) {
	s := NewProducerStats(t0, time.Hour, nil)
	now := t0.Add(time.Second)
	if n := testing.AllocsPerRun(1000, func() { s.Record(time.Millisecond, 1024, now) }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
}

func TestConsumerStats(t *testing.T) {
	s := NewConsumerStats(t0, 5*time.Second)
	if _, ok := s.Add(10, 1000, t0.Add(time.Second)); ok {
		t.Fatal("row before the interval passed")
	}
	if s.Idle(t0.Add(3*time.Second), 2*time.Second) {
		t.Fatal("idle too early")
	}
	if !s.Idle(t0.Add(3*time.Second+1), 2*time.Second) {
		t.Fatal("not idle after timeout")
	}
	s.AddJoin(500 * time.Millisecond)
	// Empty polls never print, even past the interval.
	if _, ok := s.Add(0, 0, t0.Add(6*time.Second)); ok {
		t.Fatal("row for an empty poll")
	}
	p, ok := s.Add(30, 3000, t0.Add(6*time.Second))
	if !ok {
		t.Fatal("no row after the interval")
	}
	want := ConsumerProgress{Start: t0, End: t0.Add(6 * time.Second), Bytes: 4000, Messages: 40, Rebalance: 500 * time.Millisecond}
	if p != want {
		t.Fatalf("row = %+v\nwant  %+v", p, want)
	}
	p, ok = s.Add(5, 50, t0.Add(12*time.Second))
	if !ok || p.LastMessages != 40 || p.LastBytes != 4000 || p.Rebalance != 0 || p.Start != t0.Add(6*time.Second) {
		t.Fatalf("second row = %+v %v", p, ok)
	}
	sum := s.Summary(t0.Add(20 * time.Second))
	if sum.Messages != 45 || sum.Bytes != 4050 || sum.Rebalance != 500*time.Millisecond || sum.Start != t0 {
		t.Fatalf("summary = %+v", sum)
	}
}

func TestThrottler(t *testing.T) {
	off := NewThrottler(-1, t0)
	if off.Enabled() || off.Delay(1e9, t0) != 0 {
		t.Fatal("disabled throttler throttles")
	}
	th := NewThrottler(1000, t0) // 1000 records/sec: record n is due at n ms
	if !th.Enabled() {
		t.Fatal("throttler not enabled")
	}
	if d := th.Delay(500, t0.Add(100*time.Millisecond)); d != 400*time.Millisecond {
		t.Fatalf("ahead by 400 records: delay %v", d)
	}
	if d := th.Delay(500, t0.Add(600*time.Millisecond)); d != 0 {
		t.Fatalf("behind schedule: delay %v", d)
	}
	if d := th.Delay(101, t0.Add(100*time.Millisecond)); d != 0 {
		t.Fatalf("1 ms ahead is below the minimum sleep, got %v", d)
	}
	if d := th.Delay(103, t0.Add(100*time.Millisecond)); d != 3*time.Millisecond {
		t.Fatalf("3 ms ahead: delay %v", d)
	}
}
