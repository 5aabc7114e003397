package coordinator

import (
	"container/heap"
	"time"
)

// Timed is an entry of Timers: when it is due, and its sequence number,
// unique and increasing, which orders entries due at the same time.
type Timed interface {
	Due() (at time.Time, seq uint64)
}

// Timers is a shard's wake-ups, ordered by time, then by sequence number,
// so simultaneous timers fire in the order they were set. Entries are never
// removed early: a shard cancels a timer by forgetting its sequence number,
// and the stale entry is dropped when it reaches the top (Next, PopDue).
// The zero value is empty.
type Timers[T Timed] struct{ h timerHeap[T] }

// Push adds t.
func (ts *Timers[T]) Push(t T) { heap.Push(&ts.h, t) }

// Len is the number of entries, stale ones included.
func (ts *Timers[T]) Len() int { return len(ts.h) }

// Next drops the entries at the top that live does not want and returns
// when the first live one is due; ok is false when none is left.
func (ts *Timers[T]) Next(live func(T) bool) (at time.Time, ok bool) {
	for len(ts.h) > 0 && !live(ts.h[0]) {
		heap.Pop(&ts.h)
	}
	if len(ts.h) == 0 {
		return time.Time{}, false
	}
	at, _ = ts.h[0].Due()
	return at, true
}

// PopDue removes and returns the first entry if it is due at now and was
// set at or before sequence number last, so that a timer that firing sets
// for now waits for the next round.
func (ts *Timers[T]) PopDue(now time.Time, last uint64) (t T, ok bool) {
	if len(ts.h) == 0 {
		return t, false
	}
	if at, seq := ts.h[0].Due(); at.After(now) || seq > last {
		return t, false
	}
	return heap.Pop(&ts.h).(T), true
}

type timerHeap[T Timed] []T

func (h timerHeap[T]) Len() int { return len(h) }
func (h timerHeap[T]) Less(i, j int) bool {
	ai, si := h[i].Due()
	aj, sj := h[j].Due()
	if !ai.Equal(aj) {
		return ai.Before(aj)
	}
	return si < sj
}
func (h timerHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap[T]) Push(x any)   { *h = append(*h, x.(T)) }
func (h *timerHeap[T]) Pop() any {
	old := *h
	t := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	*h = old[:len(old)-1]
	return t
}
