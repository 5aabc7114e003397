package perf

import (
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics is a franz-go hook that counts what a client did, for
// --print-metrics. It is called per request and per batch, never per
// record, and only touches atomics (and a mutex for the latency maximum).
type Metrics struct {
	start time.Time

	connects      atomic.Int64
	connectErrors atomic.Int64
	requests      atomic.Int64
	requestErrors atomic.Int64
	bytesOut      atomic.Int64
	bytesIn       atomic.Int64
	e2eSumNs      atomic.Int64
	e2eCount      atomic.Int64
	throttleNs    atomic.Int64
	throttles     atomic.Int64

	produceRequests atomic.Int64
	fetchRequests   atomic.Int64

	batches      atomic.Int64
	batchRecords atomic.Int64
	batchRaw     atomic.Int64
	batchWire    atomic.Int64

	mu     sync.Mutex
	e2eMax time.Duration
}

// NewMetrics starts the rate clock now.
func NewMetrics() *Metrics { return &Metrics{start: time.Now()} }

var (
	_ kgo.HookBrokerConnect       = (*Metrics)(nil)
	_ kgo.HookBrokerE2E           = (*Metrics)(nil)
	_ kgo.HookBrokerThrottle      = (*Metrics)(nil)
	_ kgo.HookProduceBatchWritten = (*Metrics)(nil)
	_ kgo.HookFetchBatchRead      = (*Metrics)(nil)
)

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (m *Metrics) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		m.connectErrors.Add(1)
		return
	}
	m.connects.Add(1)
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (m *Metrics) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	m.requests.Add(1)
	m.bytesOut.Add(int64(e.BytesWritten))
	m.bytesIn.Add(int64(e.BytesRead))
	if e.Err() != nil {
		m.requestErrors.Add(1)
		return
	}
	switch key {
	case int16(kmsg.Produce):
		m.produceRequests.Add(1)
	case int16(kmsg.Fetch):
		m.fetchRequests.Add(1)
	}
	d := e.DurationE2E()
	m.e2eSumNs.Add(int64(d))
	m.e2eCount.Add(1)
	m.mu.Lock()
	if d > m.e2eMax {
		m.e2eMax = d
	}
	m.mu.Unlock()
}

// OnBrokerThrottle implements kgo.HookBrokerThrottle.
func (m *Metrics) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	m.throttles.Add(1)
	m.throttleNs.Add(int64(d))
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (m *Metrics) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, b kgo.ProduceBatchMetrics) {
	m.batch(b.NumRecords, b.UncompressedBytes, b.CompressedBytes)
}

// OnFetchBatchRead implements kgo.HookFetchBatchRead.
func (m *Metrics) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, b kgo.FetchBatchMetrics) {
	m.batch(b.NumRecords, b.UncompressedBytes, b.CompressedBytes)
}

func (m *Metrics) batch(records, raw, wire int) {
	m.batches.Add(1)
	m.batchRecords.Add(int64(records))
	m.batchRaw.Add(int64(raw))
	m.batchWire.Add(int64(wire))
}

// Print writes the metrics as Kafka's tools do: a "Metric Name  Value"
// table of group:name:{client-id=ID} rows, sorted, values with three
// decimals. group is "producer-metrics" or "consumer-metrics"; rates are
// averages since NewMetrics.
func (m *Metrics) Print(w io.Writer, group, clientID string) {
	secs := time.Since(m.start).Seconds()
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	m.mu.Lock()
	e2eMax := m.e2eMax
	m.mu.Unlock()
	reqs := float64(m.requests.Load())
	ok := float64(m.e2eCount.Load())
	batches := float64(m.batches.Load())
	recs := float64(m.batchRecords.Load())
	raw := float64(m.batchRaw.Load())
	wire := float64(m.batchWire.Load())
	rows := map[string]float64{
		"connection-creation-total":  float64(m.connects.Load()),
		"connection-creation-errors": float64(m.connectErrors.Load()),
		"request-total":              reqs,
		"request-rate":               div(reqs, secs),
		"request-errors-total":       float64(m.requestErrors.Load()),
		"request-latency-avg":        div(float64(m.e2eSumNs.Load())/1e6, ok),
		"request-latency-max":        float64(e2eMax) / 1e6,
		"outgoing-byte-total":        float64(m.bytesOut.Load()),
		"outgoing-byte-rate":         div(float64(m.bytesOut.Load()), secs),
		"incoming-byte-total":        float64(m.bytesIn.Load()),
		"incoming-byte-rate":         div(float64(m.bytesIn.Load()), secs),
		"throttle-time-avg":          div(float64(m.throttleNs.Load())/1e6, float64(m.throttles.Load())),
	}
	if group == "producer-metrics" {
		rows["produce-request-total"] = float64(m.produceRequests.Load())
		rows["batch-total"] = batches
		rows["batch-size-avg"] = div(wire, batches)
		rows["compression-rate-avg"] = div(wire, raw)
		rows["record-send-total"] = recs
		rows["record-send-rate"] = div(recs, secs)
		rows["records-per-batch-avg"] = div(recs, batches)
		rows["records-per-request-avg"] = div(recs, float64(m.produceRequests.Load()))
	} else {
		rows["fetch-total"] = float64(m.fetchRequests.Load())
		rows["fetch-rate"] = div(float64(m.fetchRequests.Load()), secs)
		rows["records-consumed-total"] = recs
		rows["records-consumed-rate"] = div(recs, secs)
		rows["bytes-consumed-total"] = raw
		rows["bytes-consumed-rate"] = div(raw, secs)
		rows["records-per-batch-avg"] = div(recs, batches)
	}
	names := make([]string, 0, len(rows))
	width := len("Metric Name")
	full := map[string]string{}
	for k := range rows {
		n := fmt.Sprintf("%s:%s:{client-id=%s}", group, k, clientID)
		full[k] = n
		names = append(names, k)
		width = max(width, len(n))
	}
	sort.Slice(names, func(i, j int) bool { return full[names[i]] < full[names[j]] })
	fmt.Fprintf(w, "\n%-*s   %s\n", width, "Metric Name", "Value")
	for _, k := range names {
		fmt.Fprintf(w, "%-*s : %.3f\n", width, full[k], rows[k])
	}
}
