package link

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"weir/internal/record"
)

// logSource is a Source over a fixed log of one-record batches at offsets
// 0..n-1, recording the offsets fetched; failAt makes a fetch from that
// offset fail.
type logSource struct {
	Source
	t       *testing.T
	batches [][]byte
	failAt  int64

	mu      sync.Mutex
	fetched []int64
}

func newLogSource(t *testing.T, n int) *logSource {
	s := &logSource{t: t, failAt: -1}
	for i := range n {
		h := record.NewBatchHeader()
		h.BaseOffset = int64(i)
		b, err := record.Build(h, []record.Record{{Value: []byte{byte(i)}}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.batches = append(s.batches, b)
	}
	return s
}

// Fetch answers two batches from offset (fewer at the end, none past it).
func (s *logSource) Fetch(_ context.Context, _ string, _, _ int32, offset int64, _ int32) (Fetched, error) {
	s.mu.Lock()
	s.fetched = append(s.fetched, offset)
	s.mu.Unlock()
	if offset == s.failAt {
		return Fetched{}, errors.New("connection refused")
	}
	var out []byte
	for o := offset; o < offset+2 && o < int64(len(s.batches)); o++ {
		out = append(out, s.batches[o]...)
	}
	return Fetched{Records: out, HighWatermark: int64(len(s.batches))}, nil
}

func (s *logSource) calls() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.fetched...)
}

// The pipeline has the fetch after each answer in flight, hands it to the
// fetch that asks for it, drops it for any other, and prefetches nothing
// after a failure or an empty answer.
func TestPipelineFetchesAhead(t *testing.T) {
	ctx := context.Background()
	src := newLogSource(t, 7)
	p := &pipeline{Source: src}
	fetch := func(epoch int32, offset int64) Fetched {
		t.Helper()
		f, err := p.Fetch(ctx, "t", 0, epoch, offset, 100)
		if err != nil {
			t.Fatal(err)
		}
		if end, ok := wholeEnd(f.Records); ok && end != min(offset+2, 7) {
			t.Fatalf("fetch from %d ended at %d", offset, end)
		}
		if p.next != nil {
			<-p.next.done // the prefetch sent, so that the calls below are known
		}
		return f
	}
	fetch(1, 0)
	fetch(1, 2) // the prefetch's answer
	fetch(1, 4)
	if got, want := src.calls(), []int64{0, 2, 4, 6}; !slices.Equal(got, want) {
		t.Fatalf("fetched %v, want %v", got, want)
	}
	// Another offset (the log was cut) or another epoch: sent anew.
	fetch(1, 3)
	fetch(2, 5)
	if got, want := src.calls(), []int64{0, 2, 4, 6, 3, 5, 5, 7}; !slices.Equal(got, want) {
		t.Fatalf("fetched %v, want %v", got, want)
	}
	// Caught up: nothing more in flight.
	if f := fetch(2, 7); len(f.Records) != 0 || p.next != nil {
		t.Fatalf("at the end: %d bytes, a prefetch in flight: %v", len(f.Records), p.next != nil)
	}
	// A prefetch that failed reports its failure to the fetch it serves,
	// which sends none after it.
	src.failAt = 2
	fetch(3, 0)
	if _, err := p.Fetch(ctx, "t", 0, 3, 2, 100); err == nil || p.next != nil {
		t.Fatalf("a failed prefetch: %v, a prefetch in flight: %v", err, p.next != nil)
	}
}
