package metrics

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The histograms of kafka.network:type=RequestMetrics, per request name,
// in apiStats.hists.
const (
	histTotal = iota
	histRequestQueue
	histLocal
	histRemote
	histThrottle
	histResponseQueue
	histResponseSend
	histRequestBytes
	numHists
)

var histNames = [numHists]string{"TotalTimeMs", "RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ThrottleTimeMs",
	"ResponseQueueTimeMs", "ResponseSendTimeMs", "RequestBytes"}

var histHelp = [numHists]string{
	"Milliseconds from a request's last byte read to its response's last byte written (Kafka's RequestMetrics TotalTimeMs).",
	"Milliseconds from a request read to its handler's start: decoding and the SASL gate, as weir hands a request to its handler on the connection's goroutine (Kafka's RequestQueueTimeMs).",
	"Milliseconds the handler ran (Kafka's LocalTimeMs).",
	"Milliseconds the request waited after its handler for others: acks=all for the followers, a Fetch for fetch.min.bytes or max.wait.ms, a forwarded request for the controller (Kafka's RemoteTimeMs, time in purgatory).",
	"Milliseconds of throttle time the response gave the client (Kafka's ThrottleTimeMs).",
	"Milliseconds the completed response waited for the connection's writer (Kafka's ResponseQueueTimeMs).",
	"Milliseconds writing the response took (Kafka's ResponseSendTimeMs).",
	"Bytes of the request, header included (Kafka's RequestBytes).",
}

// msBuckets are the time histograms' buckets, in milliseconds;
// byteBuckets RequestBytes'.
var (
	msBuckets   = []float64{0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000}
	byteBuckets = prometheus.ExponentialBuckets(64, 4, 12) // 64 B to 256 MiB
)

const (
	maxAPIKey  = 128
	maxVersion = 32
	numCodes   = 160 // error codes -1 to 158
	// The two request names Kafka splits Fetch into for RequestsPerSec
	// and the histograms, after the API keys.
	fetchConsumerSlot = maxAPIKey
	fetchFollowerSlot = maxAPIKey + 1
)

var (
	descRequests = kdesc("network_requestmetrics_requests_total", "Requests answered, by request name (Fetch as FetchConsumer and FetchFollower) and version (Kafka's RequestMetrics RequestsPerSec).", "request", "version")
	descErrors   = kdesc("network_requestmetrics_errors_total", "Error codes in responses, NONE included, by request name and Kafka's error name, counted as Kafka's errorCounts: each partition or resource of a response, and its top-level error (Kafka's RequestMetrics ErrorsPerSec).", "request", "error")
)

// apiStats are one request name's counts.
type apiStats struct {
	name     string
	once     sync.Once
	hists    [numHists]prometheus.Observer
	requests [maxVersion]atomic.Uint64
	errors   [numCodes]atomic.Uint64
}

// RequestStats are the RequestMetrics of a node: each Kafka API by its
// name as Kafka's ApiKeys spell it (kmsg.NameForKey). The counters are
// atomics indexed by key, version and error code, and an API's
// histograms are made at its first request, so a request costs no lookup
// by name. Its methods are safe for concurrent use and on a nil
// *RequestStats.
type RequestStats struct {
	apis  [maxAPIKey + 2]apiStats
	vecs  [numHists]*prometheus.HistogramVec
	purg  [2]atomic.Int64 // Produce, Fetch waiting
	conns sync.Map        // listener name -> *ListenerStats
}

func newRequestStats() *RequestStats {
	r := &RequestStats{}
	for k := range maxAPIKey {
		r.apis[k].name = kmsg.NameForKey(int16(k))
	}
	r.apis[fetchConsumerSlot].name, r.apis[fetchFollowerSlot].name = "FetchConsumer", "FetchFollower"
	for i, n := range histNames {
		b := msBuckets
		if i == histRequestBytes {
			b = byteBuckets
		}
		r.vecs[i] = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kafka_network_requestmetrics_" + strings.ToLower(n), Help: histHelp[i], Buckets: b}, []string{"request"})
	}
	return r
}

// Request is one request's path through a node, for [RequestStats.Observe].
type Request struct {
	Key, Version int16
	// Follower is set for a Fetch of a follower replica.
	Follower bool
	// Bytes is the request's size.
	Bytes int
	// Read is when its last byte was read, Handled when its handler
	// began, Returned when the handler returned, Completed when its
	// response was ready (Returned unless it waited), Writing when the
	// writer began sending it, Sent when it was written.
	Read, Handled, Returned, Completed, Writing, Sent time.Time
	Throttle                                          time.Duration
}

func (r *RequestStats) api(key int16) *apiStats {
	if r == nil || key < 0 || key >= maxAPIKey || r.apis[key].name == "" {
		return nil
	}
	return &r.apis[key]
}

// Observe counts a request answered (or, for acks=0, handled) in
// RequestsPerSec and the histograms.
func (r *RequestStats) Observe(q *Request) {
	a := r.api(q.Key)
	if a == nil {
		return
	}
	if q.Key == 1 { // Fetch
		a = &r.apis[fetchConsumerSlot]
		if q.Follower {
			a = &r.apis[fetchFollowerSlot]
		}
	}
	a.once.Do(func() {
		for i, v := range r.vecs {
			a.hists[i] = v.WithLabelValues(a.name)
		}
	})
	if q.Version >= 0 && q.Version < maxVersion {
		a.requests[q.Version].Add(1)
	}
	ms := func(d time.Duration) float64 { return float64(max(d, 0)) / float64(time.Millisecond) }
	a.hists[histTotal].Observe(ms(q.Sent.Sub(q.Read)))
	a.hists[histRequestQueue].Observe(ms(q.Handled.Sub(q.Read)))
	a.hists[histLocal].Observe(ms(q.Returned.Sub(q.Handled)))
	a.hists[histRemote].Observe(ms(q.Completed.Sub(q.Returned)))
	a.hists[histThrottle].Observe(ms(q.Throttle))
	a.hists[histResponseQueue].Observe(ms(q.Writing.Sub(q.Completed)))
	a.hists[histResponseSend].Observe(ms(q.Sent.Sub(q.Writing)))
	a.hists[histRequestBytes].Observe(float64(q.Bytes))
}

// Error counts n error codes code (0: NONE) in responses to key.
func (r *RequestStats) Error(key, code int16, n int) {
	a := r.api(key)
	if a == nil || code < -1 || int(code)+1 >= numCodes {
		return
	}
	a.errors[code+1].Add(uint64(n))
}

// Waiting notes a Produce (fetch false) or Fetch starting (delta 1) or
// ending (-1) a wait in purgatory.
func (r *RequestStats) Waiting(fetch bool, delta int64) {
	if r == nil {
		return
	}
	i := 0
	if fetch {
		i = 1
	}
	r.purg[i].Add(delta)
}

// errorName is a code as Kafka's Errors enum names it.
func errorName(code int16) string {
	switch code {
	case 0:
		return "NONE"
	case 6:
		return "NOT_LEADER_OR_FOLLOWER" // kerr has the name before KIP-392
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && (e.Code == code) {
		return e.Message
	}
	return "UNKNOWN_SERVER_ERROR"
}

var descPurgatory = kdesc("server_delayedoperationpurgatory_purgatorysize", "Requests waiting: Produce for acks=all, Fetch for fetch.min.bytes (Kafka's DelayedOperationPurgatory PurgatorySize).", "delayedOperation")

// ListenerStats are a listener's connection counts, as Kafka's
// socket-server-metrics of the listener.
type ListenerStats struct {
	open                      atomic.Int64
	created, closed           atomic.Uint64
	failedAuth, authenticated atomic.Uint64
	name                      string
}

// Listener returns the counts of the listener named name, made at the
// first call.
func (r *RequestStats) Listener(name string) *ListenerStats {
	if r == nil {
		return nil
	}
	l, _ := r.conns.LoadOrStore(name, &ListenerStats{name: name})
	return l.(*ListenerStats)
}

// Opened counts a connection accepted.
func (l *ListenerStats) Opened() {
	if l != nil {
		l.open.Add(1)
		l.created.Add(1)
	}
}

// Closed counts a connection closed.
func (l *ListenerStats) Closed() {
	if l != nil {
		l.open.Add(-1)
		l.closed.Add(1)
	}
}

// AuthFailed counts a failed authentication (TLS or SASL).
func (l *ListenerStats) AuthFailed() {
	if l != nil {
		l.failedAuth.Add(1)
	}
}

// Authenticated counts a successful SASL authentication.
func (l *ListenerStats) Authenticated() {
	if l != nil {
		l.authenticated.Add(1)
	}
}

var listenerDescs = [5]*prometheus.Desc{
	kdesc("server_socket_server_metrics_connection_count", "Open connections of the listener (Kafka's socket-server-metrics connection-count).", "listener", "networkProcessor"),
	kdesc("server_socket_server_metrics_connection_creation_total", "Connections the listener accepted (Kafka's socket-server-metrics connection-creation-total).", "listener", "networkProcessor"),
	kdesc("server_socket_server_metrics_connection_close_total", "Connections of the listener closed (Kafka's socket-server-metrics connection-close-total).", "listener", "networkProcessor"),
	kdesc("server_socket_server_metrics_failed_authentication_total", "Failed TLS or SASL authentications on the listener (Kafka's socket-server-metrics failed-authentication-total).", "listener", "networkProcessor"),
	kdesc("server_socket_server_metrics_successful_authentication_total", "Successful SASL authentications on the listener (Kafka's socket-server-metrics successful-authentication-total).", "listener", "networkProcessor"),
}

// Describe implements prometheus.Collector.
func (r *RequestStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRequests
	ch <- descErrors
	ch <- descPurgatory
	for _, d := range listenerDescs {
		ch <- d
	}
	for _, v := range r.vecs {
		v.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (r *RequestStats) Collect(ch chan<- prometheus.Metric) {
	for i := range r.apis {
		a := &r.apis[i]
		for v := range a.requests {
			if n := a.requests[v].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), a.name, strconv.Itoa(v))
			}
		}
		for c := range a.errors {
			if n := a.errors[c].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), a.name, errorName(int16(c-1)))
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(descPurgatory, prometheus.GaugeValue, float64(r.purg[0].Load()), "Produce")
	ch <- prometheus.MustNewConstMetric(descPurgatory, prometheus.GaugeValue, float64(r.purg[1].Load()), "Fetch")
	r.conns.Range(func(_, v any) bool {
		l := v.(*ListenerStats)
		for i, n := range []float64{float64(l.open.Load()), float64(l.created.Load()), float64(l.closed.Load()),
			float64(l.failedAuth.Load()), float64(l.authenticated.Load())} {
			typ := prometheus.CounterValue
			if i == 0 {
				typ = prometheus.GaugeValue
			}
			ch <- prometheus.MustNewConstMetric(listenerDescs[i], typ, n, l.name, "0")
		}
		return true
	})
	for _, v := range r.vecs {
		v.Collect(ch)
	}
}
