package perf

import (
	"math/bits"
	"time"
)

// The histogram stores microseconds in log-linear buckets: values below
// histSub are kept exactly, and every doubling above that is split into
// histSub/2 equal buckets, so a bucket is never wider than 1/256 of the values
// it holds (under 0.4% error). Values at or above histMax are clamped into the
// last bucket but still count exactly toward the sum and the maximum.
const (
	histSubBits = 8
	histSub     = 1 << histSubBits // 256
	histMaxBits = 36               // 2^36 µs is about 19 hours
	histMax     = 1<<histMaxBits - 1
	histBuckets = (histMaxBits-histSubBits)*histSub + histSub
)

// Histogram is a fixed-size latency histogram with microsecond resolution.
// Recording is a few arithmetic operations and one array increment; it never
// allocates. The zero value is ready to use. It is not safe for concurrent use.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sumUs  uint64
	maxUs  uint64
}

// histIndex returns the bucket of a microsecond value.
func histIndex(us uint64) int {
	if us < histSub {
		return int(us)
	}
	if us > histMax {
		us = histMax
	}
	shift := bits.Len64(us) - histSubBits - 1 // us>>shift is in [256, 512)
	return shift*histSub + int(us>>shift)
}

// histLowest returns the smallest microsecond value that falls in bucket i
// (for i == histBuckets, one past the largest value of the last bucket).
func histLowest(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	m := uint64(i - shift*histSub)
	return m << shift
}

// Record adds one latency. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	us := uint64(0)
	if d > 0 {
		us = uint64(d / time.Microsecond)
	}
	h.RecordMicros(us)
}

// RecordMicros adds one latency given in microseconds.
func (h *Histogram) RecordMicros(us uint64) {
	h.counts[histIndex(us)]++
	h.n++
	h.sumUs += us
	if us > h.maxUs {
		h.maxUs = us
	}
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest recorded value, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.maxUs) * time.Microsecond }

// Mean returns the exact mean of the recorded values (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sumUs/h.n) * time.Microsecond
}

// Percentile returns the value at quantile q (0 <= q < 1) the way Kafka's
// ProducerPerformance picks it: sort the samples and take the one at index
// floor(q*count). The answer is the highest value of the bucket holding that
// sample (but never above the maximum recorded), so it is exact below 256 µs
// and at most 0.4% high above. An empty histogram answers 0.
func (h *Histogram) Percentile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if q < 0 {
		rank = 0
	}
	if rank >= h.n {
		rank = h.n - 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			us := histLowest(i+1) - 1
			if i == histBuckets-1 || us > h.maxUs {
				us = h.maxUs
			}
			return time.Duration(us) * time.Microsecond
		}
	}
	return h.Max()
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sumUs += o.sumUs
	if o.maxUs > h.maxUs {
		h.maxUs = o.maxUs
	}
}

// Reset forgets every recorded value.
func (h *Histogram) Reset() { *h = Histogram{} }
