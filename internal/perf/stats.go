package perf

import (
	"sync"
	"time"
)

// DefaultReportInterval is how often the producer prints a window line, as
// kafka-producer-perf-test.sh does.
const DefaultReportInterval = 5 * time.Second

// ProducerStats accumulates acknowledged records. Like Kafka's tool, it
// closes a window inside Record once the interval has passed since the
// window opened, so a line is printed only when acknowledgements arrive.
//
// Record takes a mutex (franz-go calls promises from one goroutine, so it is
// never contended in practice) and does not allocate except when a window
// closes.
type ProducerStats struct {
	mu       sync.Mutex
	interval time.Duration
	emit     func(ProducerWindow)

	start time.Time
	count int64
	bytes int64
	hist  Histogram

	winStart time.Time
	winCount int64
	winBytes int64
	winSum   time.Duration
	winMax   time.Duration
}

// NewProducerStats starts the clock at start. emit, if not nil, is called
// with each closed window; interval <= 0 means DefaultReportInterval.
func NewProducerStats(start time.Time, interval time.Duration, emit func(ProducerWindow)) *ProducerStats {
	if interval <= 0 {
		interval = DefaultReportInterval
	}
	return &ProducerStats{interval: interval, emit: emit, start: start, winStart: start}
}

// Record counts one acknowledged record of n bytes with its latency, acked
// at now.
func (s *ProducerStats) Record(latency time.Duration, n int, now time.Time) {
	s.mu.Lock()
	s.count++
	s.bytes += int64(n)
	s.hist.Record(latency)
	s.winCount++
	s.winBytes += int64(n)
	s.winSum += latency
	if latency > s.winMax {
		s.winMax = latency
	}
	if now.Sub(s.winStart) >= s.interval {
		w := s.windowLocked(now)
		s.winStart, s.winCount, s.winBytes, s.winSum, s.winMax = now, 0, 0, 0, 0
		if s.emit != nil {
			s.emit(w)
		}
	}
	s.mu.Unlock()
}

func (s *ProducerStats) windowLocked(now time.Time) ProducerWindow {
	w := ProducerWindow{
		Records:    s.winCount,
		Bytes:      s.winBytes,
		Elapsed:    now.Sub(s.winStart),
		MaxLatency: s.winMax,
	}
	if s.winCount > 0 {
		w.AvgLatency = s.winSum / time.Duration(s.winCount)
	}
	return w
}

// Total summarizes everything recorded, measured from the start to now.
func (s *ProducerStats) Total(now time.Time) ProducerTotal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ProducerTotal{
		Records:    s.count,
		Bytes:      s.bytes,
		Elapsed:    now.Sub(s.start),
		AvgLatency: s.hist.Mean(),
		MaxLatency: s.hist.Max(),
		P50:        s.hist.Percentile(0.5),
		P95:        s.hist.Percentile(0.95),
		P99:        s.hist.Percentile(0.99),
		P999:       s.hist.Percentile(0.999),
	}
}

// Count returns how many records were recorded so far.
func (s *ProducerStats) Count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// ConsumerStats follows kafka-consumer-perf-test.sh's bookkeeping: running
// totals, the time of the last record, the interval rows of
// --show-detailed-stats and the group-join time that fell into each interval.
// It is not safe for concurrent use.
type ConsumerStats struct {
	Start time.Time

	Messages int64
	Bytes    int64
	// Rebalance is the total time spent joining the group.
	Rebalance time.Duration
	// LastConsumed is when records last arrived (Start until then).
	LastConsumed time.Time

	interval     time.Duration
	lastReport   time.Time
	lastMessages int64
	lastBytes    int64
	roundJoin    time.Duration
}

// NewConsumerStats starts the clock at start; interval is the reporting
// interval of the detailed rows.
func NewConsumerStats(start time.Time, interval time.Duration) *ConsumerStats {
	return &ConsumerStats{Start: start, LastConsumed: start, lastReport: start, interval: interval}
}

// AddJoin adds group-join time.
func (s *ConsumerStats) AddJoin(d time.Duration) {
	s.Rebalance += d
	s.roundJoin += d
}

// Add counts records that arrived at now. When at least the reporting
// interval has passed since the last row, it returns that row and true.
func (s *ConsumerStats) Add(messages, bytes int64, now time.Time) (ConsumerProgress, bool) {
	if messages > 0 {
		s.LastConsumed = now
	}
	s.Messages += messages
	s.Bytes += bytes
	if messages == 0 || now.Sub(s.lastReport) < s.interval {
		return ConsumerProgress{}, false
	}
	p := ConsumerProgress{
		Start:        s.lastReport,
		End:          now,
		Bytes:        s.Bytes,
		LastBytes:    s.lastBytes,
		Messages:     s.Messages,
		LastMessages: s.lastMessages,
		Rebalance:    s.roundJoin,
	}
	s.lastReport, s.lastBytes, s.lastMessages, s.roundJoin = now, s.Bytes, s.Messages, 0
	return p, true
}

// Idle reports whether more than timeout has passed since records last
// arrived, the tool's --timeout rule.
func (s *ConsumerStats) Idle(now time.Time, timeout time.Duration) bool {
	return now.Sub(s.LastConsumed) > timeout
}

// Summary returns the final row for a run that ended at end.
func (s *ConsumerStats) Summary(end time.Time) ConsumerSummary {
	return ConsumerSummary{Start: s.Start, End: end, Bytes: s.Bytes, Messages: s.Messages, Rebalance: s.Rebalance}
}

// Throttler paces a sender to about target records per second, like Kafka's
// ThroughputThrottler: after each send the caller asks how long to sleep so
// that sent/elapsed does not exceed the target. A target <= 0 disables it.
type Throttler struct {
	target float64
	start  time.Time
}

// NewThrottler paces from start at target records per second.
func NewThrottler(target float64, start time.Time) Throttler {
	return Throttler{target: target, start: start}
}

// minThrottleSleep keeps the sender from sleeping in slivers the OS cannot
// honour; debt below it is carried to a later record.
const minThrottleSleep = 2 * time.Millisecond

// Enabled reports whether the throttler limits anything.
func (t Throttler) Enabled() bool { return t.target > 0 }

// Delay returns how long to sleep after sent records at now, or 0.
func (t Throttler) Delay(sent int64, now time.Time) time.Duration {
	if t.target <= 0 {
		return 0
	}
	due := t.start.Add(time.Duration(float64(sent) / t.target * float64(time.Second)))
	d := due.Sub(now)
	if d < minThrottleSleep {
		return 0
	}
	return d
}
