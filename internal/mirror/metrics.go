package mirror

// MM2's metrics in Prometheus form, served on /metrics at
// weir.metrics.listener. Each is named as the Prometheus JMX exporter's
// default rules name MM2's MBean (kafka.connect.mirror:type=<Type>, the
// attribute in snake case), with MM2's windows (two samples of 30 s: rates
// per second over them, min/max/avg of what they saw, NaN when they saw
// nothing, as Kafka's metrics report); the lag, which MM2 does not have,
// is weir's:
//
//	kafka_connect_mirror_mirrorsourceconnector_record_count{source,target,topic,partition}  records copied (acknowledged)
//	kafka_connect_mirror_mirrorsourceconnector_record_rate{...}                             the same per second
//	kafka_connect_mirror_mirrorsourceconnector_byte_count{...}, _byte_rate{...}             value bytes copied, and per second
//	kafka_connect_mirror_mirrorsourceconnector_record_age_ms_{min,max,avg}{...}             age of a record when polled
//	kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_{min,max,avg}{...}    age of a record when its batch is acknowledged
//	weir_mirror_source_connector_lag_records{...}                                           source high watermark minus the next offset to copy
//	kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms_{min,max,avg}{source,target,group,topic,partition}
//
// topic is the remote topic. A process reports the partitions it holds;
// a partition given up is no longer reported.

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// window is one of Kafka's sampled windows.
const window = 30 * time.Second

// sample is one window of a sampled stat.
type sample struct {
	start              time.Time
	n                  int64
	sum, lowest, great float64
}

// sampled is Kafka's SampledStat with two windows.
type sampled struct{ s [2]sample }

func (w *sampled) record(now time.Time, v float64) {
	w.merge(now, summary{n: 1, sum: v, lo: v, hi: v})
}

// summary is count, sum, min and max of values recorded at once.
type summary struct {
	n      int64
	sum    float64
	lo, hi float64
}

func newSummary() summary { return summary{lo: math.Inf(1), hi: math.Inf(-1)} }

func (s *summary) add(v float64) {
	s.n++
	s.sum += v
	s.lo, s.hi = math.Min(s.lo, v), math.Max(s.hi, v)
}

// merge records the values of s at now.
func (w *sampled) merge(now time.Time, s summary) {
	cur := &w.s[1]
	if cur.start.IsZero() || now.Sub(cur.start) >= window {
		w.s[0] = *cur
		*cur = sample{start: now, lowest: math.Inf(1), great: math.Inf(-1)}
	}
	cur.n += s.n
	cur.sum += s.sum
	cur.lowest = math.Min(cur.lowest, s.lo)
	cur.great = math.Max(cur.great, s.hi)
}

// live are the samples not yet expired (younger than two windows).
func (w *sampled) live(now time.Time) []sample {
	var out []sample
	for _, s := range w.s {
		if !s.start.IsZero() && now.Sub(s.start) < 2*window {
			out = append(out, s)
		}
	}
	return out
}

// stats are min, max and avg, NaN with no value in the live windows.
func (w *sampled) stats(now time.Time) (lo, hi, avg float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	var n int64
	var sum float64
	for _, s := range w.live(now) {
		n += s.n
		sum += s.sum
		lo, hi = math.Min(lo, s.lowest), math.Max(hi, s.great)
	}
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	return lo, hi, sum / float64(n)
}

// rate is the sum per second over the live windows, counting at least one
// full window as Kafka's Rate does.
func (w *sampled) rate(now time.Time) float64 {
	live := w.live(now)
	if len(live) == 0 {
		return 0
	}
	var sum float64
	for _, s := range live {
		sum += s.sum
	}
	elapsed := now.Sub(live[0].start)
	if elapsed < window {
		elapsed += window
	}
	return sum / elapsed.Seconds()
}

type partStats struct {
	records, bytes int64
	recordRate     sampled // sums 1 per record
	byteRate       sampled
	age, latency   sampled
	lag            int64
	hasLag         bool
}

type groupPartition struct {
	group string
	tp    topicPartition
}

// flowMetrics are one flow's metrics.
type flowMetrics struct {
	source, target string

	mu          sync.Mutex
	parts       map[topicPartition]*partStats // by remote topic
	checkpoints map[groupPartition]*sampled
}

func (m *flowMetrics) part(tp topicPartition) *partStats {
	p := m.parts[tp]
	if p == nil {
		p = &partStats{}
		m.parts[tp] = p
	}
	return p
}

// batch notes records copied to a remote partition, polled at polled and
// all acknowledged at acked: their count, value bytes, ages when polled and
// when acknowledged.
func (m *flowMetrics) batch(remote topicPartition, recs []kgo.Record, polled, acked time.Time) {
	var bytes int64
	age, latency := newSummary(), newSummary()
	for i := range recs {
		r := &recs[i]
		bytes += int64(len(r.Value))
		age.add(float64(polled.Sub(r.Timestamp).Milliseconds()))
		latency.add(float64(acked.Sub(r.Timestamp).Milliseconds()))
	}
	n := int64(len(recs))
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.part(remote)
	p.records += n
	p.bytes += bytes
	p.recordRate.merge(acked, summary{n: n, sum: float64(n), lo: 1, hi: 1})
	p.byteRate.merge(polled, summary{n: n, sum: float64(bytes)})
	p.age.merge(polled, age)
	p.latency.merge(acked, latency)
}

// lagged sets a partition's lag in records.
func (m *flowMetrics) lagged(remote topicPartition, lag int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.part(remote)
	p.lag, p.hasLag = max(lag, 0), true
}

// checkpointed notes a checkpoint written, created at created.
func (m *flowMetrics) checkpointed(group string, remote topicPartition, created time.Time) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := groupPartition{group, remote}
	s := m.checkpoints[k]
	if s == nil {
		s = &sampled{}
		m.checkpoints[k] = s
	}
	s.record(now, float64(now.Sub(created).Milliseconds()))
}

// forget stops reporting remote partitions given up.
func (m *flowMetrics) forget(remote []topicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tp := range remote {
		delete(m.parts, tp)
	}
}

// forgetCheckpoints stops reporting checkpoints (their task went elsewhere).
func (m *flowMetrics) forgetCheckpoints() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.checkpoints)
}

// metrics is a process's collector over its flows.
type metrics struct {
	mu    sync.Mutex
	flows []*flowMetrics
}

func (c *metrics) flow(source, target string) *flowMetrics {
	m := &flowMetrics{source: source, target: target, parts: map[topicPartition]*partStats{}, checkpoints: map[groupPartition]*sampled{}}
	c.mu.Lock()
	c.flows = append(c.flows, m)
	c.mu.Unlock()
	return m
}

var (
	partLabels = []string{"source", "target", "topic", "partition"}
	cpLabels   = []string{"source", "target", "group", "topic", "partition"}
	// MM2's MBeans kafka.connect.mirror:type=MirrorSourceConnector and
	// type=MirrorCheckpointConnector, named as the Prometheus JMX
	// exporter's default rules name them; the lag has no MBean.
	src     = "kafka_connect_mirror_mirrorsourceconnector_"
	cpt     = "kafka_connect_mirror_mirrorcheckpointconnector_"
	weirSrc = "weir_mirror_source_connector_"

	descRecordCount = prometheus.NewDesc(src+"record_count", "Records copied to the remote partition and acknowledged (MM2 record-count).", partLabels, nil)
	descRecordRate  = prometheus.NewDesc(src+"record_rate", "Records copied per second (MM2 record-rate).", partLabels, nil)
	descByteCount   = prometheus.NewDesc(src+"byte_count", "Value bytes of the records polled (MM2 byte-count).", partLabels, nil)
	descByteRate    = prometheus.NewDesc(src+"byte_rate", "Value bytes polled per second (MM2 byte-rate).", partLabels, nil)
	descLag         = prometheus.NewDesc(weirSrc+"lag_records", "Records of the source partition not copied yet: its high watermark minus the next offset to copy, at the last fetch.", partLabels, nil)
	descAge         = statDescs(src+"record_age_ms", "Age of a record when polled from the source (MM2 record-age-ms)", partLabels)
	descLatency     = statDescs(src+"replication_latency_ms", "Age of a record when its batch is acknowledged by the target (MM2 replication-latency-ms)", partLabels)
	descCheckpoint  = statDescs(cpt+"checkpoint_latency_ms", "Time from a checkpoint's translation to its acknowledgement (MM2 checkpoint-latency-ms)", cpLabels)
)

func statDescs(name, help string, labels []string) [3]*prometheus.Desc {
	return [3]*prometheus.Desc{
		prometheus.NewDesc(name+"_min", help+", minimum.", labels, nil),
		prometheus.NewDesc(name+"_max", help+", maximum.", labels, nil),
		prometheus.NewDesc(name+"_avg", help+", average.", labels, nil),
	}
}

func (c *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecordCount, descRecordRate, descByteCount, descByteRate, descLag} {
		ch <- d
	}
	for _, ds := range [][3]*prometheus.Desc{descAge, descLatency, descCheckpoint} {
		for _, d := range ds {
			ch <- d
		}
	}
}

func (c *metrics) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	c.mu.Lock()
	flows := c.flows
	c.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	stats := func(ds [3]*prometheus.Desc, s *sampled, labels ...string) {
		lo, hi, avg := s.stats(now)
		gauge(ds[0], lo, labels...)
		gauge(ds[1], hi, labels...)
		gauge(ds[2], avg, labels...)
	}
	for _, m := range flows {
		m.mu.Lock()
		for tp, p := range m.parts {
			l := []string{m.source, m.target, tp.topic, strconv.Itoa(int(tp.partition))}
			ch <- prometheus.MustNewConstMetric(descRecordCount, prometheus.CounterValue, float64(p.records), l...)
			ch <- prometheus.MustNewConstMetric(descByteCount, prometheus.CounterValue, float64(p.bytes), l...)
			gauge(descRecordRate, p.recordRate.rate(now), l...)
			gauge(descByteRate, p.byteRate.rate(now), l...)
			if p.hasLag {
				gauge(descLag, float64(p.lag), l...)
			}
			stats(descAge, &p.age, l...)
			stats(descLatency, &p.latency, l...)
		}
		for k, s := range m.checkpoints {
			stats(descCheckpoint, s, m.source, m.target, k.group, k.tp.topic, strconv.Itoa(int(k.tp.partition)))
		}
		m.mu.Unlock()
	}
}
