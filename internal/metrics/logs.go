package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LogStatus is one local replica's log: Kafka's kafka.log:type=Log MBeans
// of its partition.
type LogStatus struct {
	Topic      string
	Partition  int32
	Size       int64 // bytes of all its segments
	Segments   int
	Start, End int64 // log start and log end offsets
}

// CleanerStatus is the log cleaner's last run (Kafka's LogCleaner and
// LogCleanerManager metrics).
type CleanerStatus struct {
	// SinceLastRun is the time since the cleaner last looked for a log to
	// clean (since start-up before its first run).
	SinceLastRun time.Duration
	// MaxDirtyPercent is the largest dirty ratio of the compacted logs as
	// of that run, in percent.
	MaxDirtyPercent float64
	// LastCleanTime is how long the last clean took.
	LastCleanTime time.Duration
}

// logMetricNames are the kafka.log:type=Log gauges, in LogStatus order.
var logMetricNames = [...]string{"size", "numlogsegments", "logstartoffset", "logendoffset"}

var logMetricHelp = [...]string{
	"Bytes of the partition's log segments (Kafka's Log Size).",
	"Segments of the partition's log (Kafka's Log NumLogSegments).",
	"The partition's log start offset (Kafka's Log LogStartOffset).",
	"The partition's log end offset (Kafka's Log LogEndOffset).",
}

// descLog are the per-partition series, descLogTopic the per-topic sums
// of weir.metrics.aggregation=topic.
var descLog, descLogTopic [len(logMetricNames)]*prometheus.Desc

var (
	descCleanerDirty   = kdesc("log_logcleanermanager_max_dirty_percent", "Largest dirty ratio, in percent, of the compacted logs as of the cleaner's last run (Kafka's LogCleanerManager max-dirty-percent).")
	descCleanerSince   = kdesc("log_logcleanermanager_time_since_last_run_ms", "Milliseconds since the log cleaner last looked for a log to clean (Kafka's LogCleanerManager time-since-last-run-ms).")
	descCleanerMaxTime = kdesc("log_logcleaner_max_clean_time_secs", "Seconds the last clean took (Kafka's LogCleaner max-clean-time-secs; weir runs one cleaner).")
)

func init() {
	for i, n := range logMetricNames {
		descLog[i] = kdesc("log_log_"+n, logMetricHelp[i], "topic", "partition")
		descLogTopic[i] = kdesc("log_log_"+n, logMetricHelp[i]+" With weir.metrics.aggregation=topic, the sum over the topic's partitions here.", "topic")
	}
}

// newFlushHistogram is kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs.
func newFlushHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kafka_log_logflushstats_logflushrateandtimems",
		Help:    "Milliseconds each log flush (fsync of a partition's segments) took (Kafka's LogFlushStats LogFlushRateAndTimeMs; _count is its rate).",
		Buckets: msBuckets})
}

// logCollector reports the Log gauges, per partition or per topic, and
// the cleaner's.
type logCollector struct {
	src     Source
	byTopic bool
}

func (c logCollector) Describe(ch chan<- *prometheus.Desc) {
	d := descLog
	if c.byTopic {
		d = descLogTopic
	}
	for _, x := range d {
		ch <- x
	}
	ch <- descCleanerDirty
	ch <- descCleanerSince
	ch <- descCleanerMaxTime
}

func (c logCollector) Collect(ch chan<- prometheus.Metric) {
	logs := c.src.Logs()
	if c.byTopic {
		sums := map[string]*[len(logMetricNames)]int64{}
		for _, l := range logs {
			s := sums[l.Topic]
			if s == nil {
				s = new([len(logMetricNames)]int64)
				sums[l.Topic] = s
			}
			s[0] += l.Size
			s[1] += int64(l.Segments)
			s[2] += l.Start
			s[3] += l.End
		}
		for topic, s := range sums {
			for i, v := range s {
				ch <- prometheus.MustNewConstMetric(descLogTopic[i], prometheus.GaugeValue, float64(v), topic)
			}
		}
	} else {
		for _, l := range logs {
			p := strconv.Itoa(int(l.Partition))
			for i, v := range [...]int64{l.Size, int64(l.Segments), l.Start, l.End} {
				ch <- prometheus.MustNewConstMetric(descLog[i], prometheus.GaugeValue, float64(v), l.Topic, p)
			}
		}
	}
	cs := c.src.Cleaner()
	ch <- prometheus.MustNewConstMetric(descCleanerDirty, prometheus.GaugeValue, cs.MaxDirtyPercent)
	ch <- prometheus.MustNewConstMetric(descCleanerSince, prometheus.GaugeValue, float64(cs.SinceLastRun.Milliseconds()))
	ch <- prometheus.MustNewConstMetric(descCleanerMaxTime, prometheus.GaugeValue, cs.LastCleanTime.Seconds())
}
