package perf

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// bytesPerMB is the megabyte Kafka's perf tools divide by: 1024*1024.
const bytesPerMB = 1024 * 1024

// jf formats a float the way Java's %.Nf does for the values these tools
// print: fixed point with prec decimals, and "NaN", "Infinity" or
// "-Infinity" for the special values (which appear when an elapsed time is 0).
func jf(v float64, prec int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// ms converts a duration to fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ProducerWindow is what one periodic producer report line says.
type ProducerWindow struct {
	Records    int64
	Bytes      int64
	Elapsed    time.Duration
	AvgLatency time.Duration
	MaxLatency time.Duration
}

// Line renders the window like kafka-producer-perf-test.sh's periodic line:
//
//	N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency.
func (w ProducerWindow) Line() string {
	secs := w.Elapsed.Seconds()
	var b strings.Builder
	b.WriteString(itoa(w.Records))
	b.WriteString(" records sent, ")
	b.WriteString(jf(float64(w.Records)/secs, 1))
	b.WriteString(" records/sec (")
	b.WriteString(jf(float64(w.Bytes)/secs/bytesPerMB, 2))
	b.WriteString(" MB/sec), ")
	b.WriteString(jf(ms(w.AvgLatency), 1))
	b.WriteString(" ms avg latency, ")
	b.WriteString(jf(ms(w.MaxLatency), 1))
	b.WriteString(" ms max latency.")
	return b.String()
}

// ProducerTotal is what the final producer summary line says.
type ProducerTotal struct {
	Records    int64
	Bytes      int64
	Elapsed    time.Duration
	AvgLatency time.Duration
	MaxLatency time.Duration
	// P50, P95, P99 and P999 are printed as whole milliseconds, truncated,
	// as Kafka prints them.
	P50, P95, P99, P999 time.Duration
}

// Line renders the summary exactly like kafka-producer-perf-test.sh's last
// line:
//
//	N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.
func (t ProducerTotal) Line() string {
	secs := t.Elapsed.Seconds()
	var b strings.Builder
	b.WriteString(itoa(t.Records))
	b.WriteString(" records sent, ")
	b.WriteString(jf(float64(t.Records)/secs, 6))
	b.WriteString(" records/sec (")
	b.WriteString(jf(float64(t.Bytes)/secs/bytesPerMB, 2))
	b.WriteString(" MB/sec), ")
	b.WriteString(jf(ms(t.AvgLatency), 2))
	b.WriteString(" ms avg latency, ")
	b.WriteString(jf(ms(t.MaxLatency), 2))
	b.WriteString(" ms max latency, ")
	for i, p := range [...]struct {
		d    time.Duration
		name string
	}{{t.P50, "50th"}, {t.P95, "95th"}, {t.P99, "99th"}, {t.P999, "99.9th"}} {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(itoa(int64(p.d / time.Millisecond)))
		b.WriteString(" ms ")
		b.WriteString(p.name)
	}
	b.WriteString(".")
	return b.String()
}

// ConsumerHeader returns kafka-consumer-perf-test.sh's header line (without
// the newline). The detailed header names the columns of the periodic rows.
func ConsumerHeader(detailed bool) string {
	const tail = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
	if detailed {
		return "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + tail
	}
	return "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + tail
}

// KafkaTime formats t in the tools' default date format,
// yyyy-MM-dd HH:mm:ss:SSS, in t's location.
func KafkaTime(t time.Time) string {
	var b [23]byte
	out := t.AppendFormat(b[:0], "2006-01-02 15:04:05")
	msec := t.Nanosecond() / int(time.Millisecond)
	out = append(out, ':', byte('0'+msec/100), byte('0'+msec/10%10), byte('0'+msec%10))
	return string(out)
}

// ConsumerSummary is the single CSV row kafka-consumer-perf-test.sh prints
// at the end when detailed stats are off.
type ConsumerSummary struct {
	Start, End time.Time
	Bytes      int64
	Messages   int64
	// Rebalance is the time spent joining the group; fetch time is the
	// rest of End-Start.
	Rebalance time.Duration
}

// Line renders the row:
//
//	start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
//
// Times are whole milliseconds as in Kafka, so rates come from the same
// millisecond arithmetic.
func (s ConsumerSummary) Line() string {
	elapsedMs := s.End.UnixMilli() - s.Start.UnixMilli()
	joinMs := s.Rebalance.Milliseconds()
	fetchMs := elapsedMs - joinMs
	elapsedSec := float64(elapsedMs) / 1000
	mb := float64(s.Bytes) / bytesPerMB
	fetchSec := float64(fetchMs) / 1000
	var b strings.Builder
	b.WriteString(KafkaTime(s.Start))
	b.WriteString(", ")
	b.WriteString(KafkaTime(s.End))
	b.WriteString(", ")
	b.WriteString(jf(mb, 4))
	b.WriteString(", ")
	b.WriteString(jf(mb/elapsedSec, 4))
	b.WriteString(", ")
	b.WriteString(itoa(s.Messages))
	b.WriteString(", ")
	b.WriteString(jf(float64(s.Messages)/elapsedSec, 4))
	b.WriteString(", ")
	b.WriteString(itoa(joinMs))
	b.WriteString(", ")
	b.WriteString(itoa(fetchMs))
	b.WriteString(", ")
	b.WriteString(jf(mb/fetchSec, 4))
	b.WriteString(", ")
	b.WriteString(jf(float64(s.Messages)/fetchSec, 4))
	return b.String()
}

// ConsumerProgress is one periodic row of --show-detailed-stats.
type ConsumerProgress struct {
	ThreadID int
	// Interval start and end; the row is stamped with End.
	Start, End time.Time
	// Totals so far and totals at the previous row.
	Bytes, LastBytes       int64
	Messages, LastMessages int64
	// Rebalance is the group-join time that fell inside this interval.
	Rebalance time.Duration
}

// Line renders the row:
//
//	time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
//
// where MB and nMsg are running totals and every rate covers the interval.
func (p ConsumerProgress) Line() string {
	elapsedMs := float64(p.End.UnixMilli() - p.Start.UnixMilli())
	totalMB := float64(p.Bytes) / bytesPerMB
	intervalMB := float64(p.Bytes-p.LastBytes) / bytesPerMB
	intervalMsgs := p.Messages - p.LastMessages
	joinMs := p.Rebalance.Milliseconds()
	fetchMs := p.End.UnixMilli() - p.Start.UnixMilli() - joinMs
	fetchMBs, fetchMsgs := 0.0, 0.0
	if fetchMs > 0 {
		fetchMBs = 1000 * intervalMB / float64(fetchMs)
		fetchMsgs = 1000 * float64(intervalMsgs) / float64(fetchMs)
	}
	var b strings.Builder
	b.WriteString(KafkaTime(p.End))
	b.WriteString(", ")
	b.WriteString(strconv.Itoa(p.ThreadID))
	b.WriteString(", ")
	b.WriteString(jf(totalMB, 4))
	b.WriteString(", ")
	b.WriteString(jf(1000*intervalMB/elapsedMs, 4))
	b.WriteString(", ")
	b.WriteString(itoa(p.Messages))
	b.WriteString(", ")
	b.WriteString(jf(float64(intervalMsgs)/elapsedMs*1000, 4))
	b.WriteString(", ")
	b.WriteString(itoa(joinMs))
	b.WriteString(", ")
	b.WriteString(itoa(fetchMs))
	b.WriteString(", ")
	b.WriteString(jf(fetchMBs, 4))
	b.WriteString(", ")
	b.WriteString(jf(fetchMsgs, 4))
	return b.String()
}
