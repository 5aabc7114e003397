package perf

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistIndexRoundTrip(t *testing.T) {
	// Every bucket's lowest value maps back to that bucket, and buckets are
	// contiguous and increasing.
	prev := uint64(0)
	for i := 0; i < histBuckets; i++ {
		lo := histLowest(i)
		if got := histIndex(lo); got != i {
			t.Fatalf("histIndex(histLowest(%d)=%d) = %d", i, lo, got)
		}
		if i > 0 && lo <= prev {
			t.Fatalf("bucket %d lowest %d not above bucket %d lowest %d", i, lo, i-1, prev)
		}
		if i > 0 && histIndex(lo-1) != i-1 {
			t.Fatalf("value %d below bucket %d should be in bucket %d, got %d", lo-1, i, i-1, histIndex(lo-1))
		}
		prev = lo
	}
	if got := histIndex(1 << 62); got != histBuckets-1 {
		t.Fatalf("huge value index = %d, want last bucket %d", got, histBuckets-1)
	}
}

func TestHistogramExactSmallValues(t *testing.T) {
	var h Histogram
	for us := uint64(1); us <= 100; us++ {
		h.RecordMicros(us)
	}
	if h.Count() != 100 {
		t.Fatalf("count = %d", h.Count())
	}
	// Kafka's rule: sorted[floor(q*n)], so with 1..100 the 50th is the 51st
	// smallest, 51.
	cases := map[float64]time.Duration{
		0:     1 * time.Microsecond,
		0.5:   51 * time.Microsecond,
		0.95:  96 * time.Microsecond,
		0.99:  100 * time.Microsecond,
		0.999: 100 * time.Microsecond,
	}
	for q, want := range cases {
		if got := h.Percentile(q); got != want {
			t.Errorf("Percentile(%v) = %v, want %v", q, got, want)
		}
	}
	if got := h.Mean(); got != 50*time.Microsecond { // 5050/100 = 50.5, truncated
		t.Errorf("Mean = %v", got)
	}
	if got := h.Max(); got != 100*time.Microsecond {
		t.Errorf("Max = %v", got)
	}
}

func TestHistogramMatchesSortedSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var h Histogram
	samples := make([]uint64, 0, 200000)
	for range 200000 {
		// log-uniform from 1 µs to ~10 s
		us := uint64(1) << rng.IntN(24)
		us += rng.Uint64N(us)
		samples = append(samples, us)
		h.RecordMicros(us)
	}
	slices.Sort(samples)
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		want := samples[int(q*float64(len(samples)))]
		got := uint64(h.Percentile(q) / time.Microsecond)
		if got < want || float64(got-want) > float64(want)/256+1 {
			t.Errorf("Percentile(%v) = %d µs, exact %d µs: off by more than a bucket", q, got, want)
		}
	}
	if uint64(h.Max()/time.Microsecond) != samples[len(samples)-1] {
		t.Errorf("Max = %v, want %d µs", h.Max(), samples[len(samples)-1])
	}
}

func TestHistogramEmptyMergeReset(t *testing.T) {
	var a, b Histogram
	if a.Percentile(0.5) != 0 || a.Mean() != 0 || a.Max() != 0 {
		t.Fatal("empty histogram should answer zeros")
	}
	a.Record(2 * time.Millisecond)
	b.Record(4 * time.Millisecond)
	b.Record(-time.Second) // counts as 0
	a.Merge(&b)
	if a.Count() != 3 || a.Max() != 4*time.Millisecond {
		t.Fatalf("after merge: count %d max %v", a.Count(), a.Max())
	}
	if got := a.Percentile(0); got != 0 {
		t.Fatalf("p0 = %v, want 0", got)
	}
	if got := a.Percentile(0.99); got != 4*time.Millisecond {
		t.Fatalf("p99 = %v, want 4ms", got)
	}
	a.Reset()
	if a.Count() != 0 {
		t.Fatal("reset kept values")
	}
}

func TestHistogramRecordDoesNotAllocate(t *testing.T) {
	h := new(Histogram)
	if n := testing.AllocsPerRun(1000, func() { h.Record(1234 * time.Microsecond) }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
}
