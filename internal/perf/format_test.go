package perf

import (
	"testing"
	"time"
)

func TestProducerWindowLine(t *testing.T) {
	w := ProducerWindow{
		Records:    500000,
		Bytes:      500000 * 1000,
		Elapsed:    5 * time.Second,
		AvgLatency: 12340 * time.Microsecond,
		MaxLatency: 98760 * time.Microsecond,
	}
	want := "500000 records sent, 100000.0 records/sec (95.37 MB/sec), 12.3 ms avg latency, 98.8 ms max latency."
	if got := w.Line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestProducerWindowLineEmpty(t *testing.T) {
	// Java prints NaN for 0/0; so do we.
	want := "0 records sent, NaN records/sec (NaN MB/sec), 0.0 ms avg latency, 0.0 ms max latency."
	if got := (ProducerWindow{}).Line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestProducerTotalLine(t *testing.T) {
	tot := ProducerTotal{
		Records:    2000000,
		Bytes:      2048000000,
		Elapsed:    17500 * time.Millisecond,
		AvgLatency: 428410 * time.Microsecond,
		MaxLatency: 1010710 * time.Microsecond,
		P50:        438900 * time.Microsecond,
		P95:        854 * time.Millisecond,
		P99:        931200 * time.Microsecond,
		P999:       1001990 * time.Microsecond,
	}
	want := "2000000 records sent, 114285.714286 records/sec (111.61 MB/sec), 428.41 ms avg latency, " +
		"1010.71 ms max latency, 438 ms 50th, 854 ms 95th, 931 ms 99th, 1001 ms 99.9th."
	if got := tot.Line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestProducerTotalLineZeroElapsed(t *testing.T) {
	tot := ProducerTotal{Records: 1, Bytes: 10}
	want := "1 records sent, Infinity records/sec (Infinity MB/sec), 0.00 ms avg latency, 0.00 ms max latency, " +
		"0 ms 50th, 0 ms 95th, 0 ms 99th, 0 ms 99.9th."
	if got := tot.Line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestConsumerHeader(t *testing.T) {
	if got, want := ConsumerHeader(false), "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got, want := ConsumerHeader(true), "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.UTC)

func TestKafkaTime(t *testing.T) {
	if got := KafkaTime(t0); got != "2026-01-02 03:04:05:678" {
		t.Errorf("got %q", got)
	}
	if got := KafkaTime(time.Date(2026, 12, 31, 23, 59, 9, 5_000_000, time.UTC)); got != "2026-12-31 23:59:09:005" {
		t.Errorf("got %q", got)
	}
}

func TestConsumerSummaryLine(t *testing.T) {
	s := ConsumerSummary{
		Start:    t0,
		End:      t0.Add(13697 * time.Millisecond),
		Bytes:    2048000000,
		Messages: 2000000,
	}
	want := "2026-01-02 03:04:05:678, 2026-01-02 03:04:19:375, 1953.1250, 142.5951, 2000000, 146017.3761, 0, 13697, 142.5951, 146017.3761"
	if got := s.Line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	s.Rebalance = 3697 * time.Millisecond
	want = "2026-01-02 03:04:05:678, 2026-01-02 03:04:19:375, 1953.1250, 142.5951, 2000000, 146017.3761, 3697, 10000, 195.3125, 200000.0000"
	if got := s.Line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestConsumerProgressLine(t *testing.T) {
	p := ConsumerProgress{
		Start:        t0,
		End:          t0.Add(5 * time.Second),
		Bytes:        30 << 20,
		LastBytes:    10 << 20,
		Messages:     30000,
		LastMessages: 10000,
		Rebalance:    time.Second,
	}
	want := "2026-01-02 03:04:10:678, 0, 30.0000, 4.0000, 30000, 4000.0000, 1000, 4000, 5.0000, 5000.0000"
	if got := p.Line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A whole interval spent rebalancing reports zero fetch rates, not NaN.
	p.Rebalance = 5 * time.Second
	want = "2026-01-02 03:04:10:678, 0, 30.0000, 4.0000, 30000, 4000.0000, 5000, 0, 0.0000, 0.0000"
	if got := p.Line(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
