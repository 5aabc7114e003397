package metrics

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

var logNames = []string{"kafka_log_log_size", "kafka_log_log_numlogsegments", "kafka_log_log_logstartoffset", "kafka_log_log_logendoffset",
	"kafka_log_logcleanermanager_max_dirty_percent", "kafka_log_logcleanermanager_time_since_last_run_ms", "kafka_log_logcleaner_max_clean_time_secs"}

func TestLogMetricsPerPartitionAndPerTopic(t *testing.T) {
	src := &fakeSource{logs: []LogStatus{
		{Topic: "a", Partition: 0, Size: 1000, Segments: 2, Start: 10, End: 50},
		{Topic: "a", Partition: 1, Size: 24, Segments: 1, Start: 0, End: 3},
		{Topic: "b", Partition: 0},
	}, clean: CleanerStatus{SinceLastRun: 1500 * time.Millisecond, MaxDirtyPercent: 37.5, LastCleanTime: 2500 * time.Millisecond}}
	cleaner := `
# HELP kafka_log_logcleaner_max_clean_time_secs Seconds the last clean took (Kafka's LogCleaner max-clean-time-secs; weir runs one cleaner).
# TYPE kafka_log_logcleaner_max_clean_time_secs gauge
kafka_log_logcleaner_max_clean_time_secs 2.5
# HELP kafka_log_logcleanermanager_max_dirty_percent Largest dirty ratio, in percent, of the compacted logs as of the cleaner's last run (Kafka's LogCleanerManager max-dirty-percent).
# TYPE kafka_log_logcleanermanager_max_dirty_percent gauge
kafka_log_logcleanermanager_max_dirty_percent 37.5
# HELP kafka_log_logcleanermanager_time_since_last_run_ms Milliseconds since the log cleaner last looked for a log to clean (Kafka's LogCleanerManager time-since-last-run-ms).
# TYPE kafka_log_logcleanermanager_time_since_last_run_ms gauge
kafka_log_logcleanermanager_time_since_last_run_ms 1500
`
	perPartition := `
# HELP kafka_log_log_logendoffset The partition's log end offset (Kafka's Log LogEndOffset).
# TYPE kafka_log_log_logendoffset gauge
kafka_log_log_logendoffset{partition="0",topic="a"} 50
kafka_log_log_logendoffset{partition="1",topic="a"} 3
kafka_log_log_logendoffset{partition="0",topic="b"} 0
# HELP kafka_log_log_logstartoffset The partition's log start offset (Kafka's Log LogStartOffset).
# TYPE kafka_log_log_logstartoffset gauge
kafka_log_log_logstartoffset{partition="0",topic="a"} 10
kafka_log_log_logstartoffset{partition="1",topic="a"} 0
kafka_log_log_logstartoffset{partition="0",topic="b"} 0
# HELP kafka_log_log_numlogsegments Segments of the partition's log (Kafka's Log NumLogSegments).
# TYPE kafka_log_log_numlogsegments gauge
kafka_log_log_numlogsegments{partition="0",topic="a"} 2
kafka_log_log_numlogsegments{partition="1",topic="a"} 1
kafka_log_log_numlogsegments{partition="0",topic="b"} 0
# HELP kafka_log_log_size Bytes of the partition's log segments (Kafka's Log Size).
# TYPE kafka_log_log_size gauge
kafka_log_log_size{partition="0",topic="a"} 1000
kafka_log_log_size{partition="1",topic="a"} 24
kafka_log_log_size{partition="0",topic="b"} 0
`
	if err := testutil.GatherAndCompare(New(src, Options{}).Registry(), strings.NewReader(perPartition+cleaner), logNames...); err != nil {
		t.Fatal(err)
	}
	const sum = " With weir.metrics.aggregation=topic, the sum over the topic's partitions here."
	perTopic := `
# HELP kafka_log_log_logendoffset The partition's log end offset (Kafka's Log LogEndOffset).` + sum + `
# TYPE kafka_log_log_logendoffset gauge
kafka_log_log_logendoffset{topic="a"} 53
kafka_log_log_logendoffset{topic="b"} 0
# HELP kafka_log_log_logstartoffset The partition's log start offset (Kafka's Log LogStartOffset).` + sum + `
# TYPE kafka_log_log_logstartoffset gauge
kafka_log_log_logstartoffset{topic="a"} 10
kafka_log_log_logstartoffset{topic="b"} 0
# HELP kafka_log_log_numlogsegments Segments of the partition's log (Kafka's Log NumLogSegments).` + sum + `
# TYPE kafka_log_log_numlogsegments gauge
kafka_log_log_numlogsegments{topic="a"} 3
kafka_log_log_numlogsegments{topic="b"} 0
# HELP kafka_log_log_size Bytes of the partition's log segments (Kafka's Log Size).` + sum + `
# TYPE kafka_log_log_size gauge
kafka_log_log_size{topic="a"} 1024
kafka_log_log_size{topic="b"} 0
`
	if err := testutil.GatherAndCompare(New(src, Options{ByTopic: true}).Registry(), strings.NewReader(perTopic+cleaner), logNames...); err != nil {
		t.Fatal(err)
	}
}

func TestLogFlushHistogram(t *testing.T) {
	m := New(&fakeSource{}, Options{})
	m.LogFlushed(3 * time.Millisecond)
	m.LogFlushed(40 * time.Millisecond)
	(*Metrics)(nil).LogFlushed(time.Second)
	if n, err := testutil.GatherAndCount(m.Registry(), "kafka_log_logflushstats_logflushrateandtimems"); err != nil || n != 1 {
		t.Fatalf("flush histogram series = %d, %v", n, err)
	}
	mfs, _ := m.Registry().Gather()
	for _, mf := range mfs {
		if mf.GetName() == "kafka_log_logflushstats_logflushrateandtimems" {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() != 43 {
				t.Fatalf("count %d sum %v, want 2 and 43 ms", h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
}

// maxByTopicBytes bounds the endpoint of a broker with 10,000 replicas of
// 10 topics (half led here, half followed) with
// weir.metrics.aggregation=topic: its per-partition families are one
// series per topic, so the size does not grow with the partitions.
const maxByTopicBytes = 64 << 10

func TestTenThousandPartitionsByTopicBounded(t *testing.T) {
	src := &fakeSource{}
	for i := range 10_000 {
		topic := fmt.Sprintf("topic-%d", i%10)
		p := int32(i / 10)
		src.reps = append(src.reps, ReplicaStatus{Topic: topic, Partition: p, Leader: i%2 == 0, LeaderID: int32(1 + i%3), Replicas: 3, ISR: 3, MinISR: 2, Lag: 5})
		src.logs = append(src.logs, LogStatus{Topic: topic, Partition: p, Size: 1 << 30, Segments: 1, Start: 1_000_000, End: 9_000_000})
	}
	size := func(opts Options) int {
		m := New(src, opts)
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.Len()
	}
	byTopic, byPartition := size(Options{ByTopic: true}), size(Options{})
	if byTopic > maxByTopicBytes {
		t.Errorf("topic aggregation: %d bytes, want at most %d", byTopic, maxByTopicBytes)
	}
	if byPartition < 10*maxByTopicBytes {
		t.Errorf("per partition: %d bytes, expected far more than the topic mode's bound", byPartition)
	}
	t.Logf("10,000 partitions: %d bytes by topic, %d by partition", byTopic, byPartition)
}
