package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fakeSource struct {
	mu     sync.Mutex
	reps   []ReplicaStatus
	ctl    ControllerStatus
	links  LinkStatus
	files  int
	quotas []ClientQuotaStatus
	logs   []LogStatus
	clean  CleanerStatus
	raft   RaftStatus
	coord  CoordinatorStatus
}

func (f *fakeSource) Ready() bool { return true }

func (f *fakeSource) Coordinators() CoordinatorStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.coord
}

func (f *fakeSource) Raft() RaftStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.raft
}

func (f *fakeSource) Logs() []LogStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logs
}

func (f *fakeSource) Cleaner() CleanerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clean
}

func (f *fakeSource) ClientQuotas() []ClientQuotaStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.quotas
}

func (f *fakeSource) OpenSegmentFiles() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files
}

func (f *fakeSource) Replicas() []ReplicaStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reps
}

func (f *fakeSource) Links() LinkStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.links
}

func (f *fakeSource) Controller() ControllerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ctl
}

var weirNames = []string{
	"kafka_server_replicamanager_partitioncount",
	"kafka_server_replicamanager_leadercount",
	"kafka_server_replicamanager_underreplicatedpartitions",
	"kafka_server_replicamanager_underminisrpartitioncount",
	"kafka_server_replicamanager_atminisrpartitioncount",
	"kafka_server_replicamanager_isrshrinks_total",
	"kafka_server_replicamanager_isrexpands_total",
	"kafka_server_fetcherlagmetrics_consumerlag",
	"kafka_server_replicafetchermanager_maxlag",
	"kafka_controller_kafkacontroller_activecontrollercount",
	"kafka_controller_kafkacontroller_offlinepartitionscount",
	"kafka_controller_kafkacontroller_globaltopiccount",
	"kafka_controller_kafkacontroller_globalpartitioncount",
	"weir_log_open_segment_files",
}

func TestCollectorReadsSourceAtScrape(t *testing.T) {
	src := &fakeSource{
		reps: []ReplicaStatus{
			{Topic: "a", Partition: 0, Leader: true, Replicas: 3, ISR: 3, MinISR: 2},
			{Topic: "a", Partition: 1, Leader: true, Replicas: 3, ISR: 2, MinISR: 2}, // under-replicated, at min ISR
			{Topic: "a", Partition: 2, Leader: true, Replicas: 3, ISR: 1, MinISR: 2}, // under min ISR
			{Topic: "b", Partition: 0, Leader: false, LeaderID: 4, Replicas: 3, ISR: 3, MinISR: 2, Lag: 7},
			{Topic: "b", Partition: 1, Leader: false, LeaderID: 5, Replicas: 3, ISR: 3, MinISR: 2, Lag: -1}, // clamped to 0
		},
		ctl:   ControllerStatus{Active: true, OfflinePartitions: 2, Topics: 4, Partitions: 9},
		files: 12,
	}
	m := New(src, Options{})
	m.Counters.IsrShrunk()
	m.Counters.IsrChanged(true)
	m.Counters.IsrChanged(false)

	want := `
# HELP kafka_controller_kafkacontroller_activecontrollercount 1 on the active controller, 0 elsewhere.
# TYPE kafka_controller_kafkacontroller_activecontrollercount gauge
kafka_controller_kafkacontroller_activecontrollercount 1
# HELP kafka_controller_kafkacontroller_globalpartitioncount Partitions in the cluster; reported by the active controller only.
# TYPE kafka_controller_kafkacontroller_globalpartitioncount gauge
kafka_controller_kafkacontroller_globalpartitioncount 9
# HELP kafka_controller_kafkacontroller_globaltopiccount Topics in the cluster; reported by the active controller only.
# TYPE kafka_controller_kafkacontroller_globaltopiccount gauge
kafka_controller_kafkacontroller_globaltopiccount 4
# HELP kafka_controller_kafkacontroller_offlinepartitionscount Partitions without a leader; reported by the active controller only.
# TYPE kafka_controller_kafkacontroller_offlinepartitionscount gauge
kafka_controller_kafkacontroller_offlinepartitionscount 2
# HELP weir_log_open_segment_files Segment files (.log, .index, .timeindex) the broker keeps open; weir closes idle ones past log.open.files.max.
# TYPE weir_log_open_segment_files gauge
weir_log_open_segment_files 12
# HELP kafka_server_fetcherlagmetrics_consumerlag Messages a follower replica on this broker is behind its leader (Kafka's FetcherLagMetrics ConsumerLag).
# TYPE kafka_server_fetcherlagmetrics_consumerlag gauge
kafka_server_fetcherlagmetrics_consumerlag{clientId="ReplicaFetcherThread-0-4",partition="0",topic="b"} 7
kafka_server_fetcherlagmetrics_consumerlag{clientId="ReplicaFetcherThread-0-5",partition="1",topic="b"} 0
# HELP kafka_server_replicafetchermanager_maxlag Largest lag, in messages, of a follower replica on this broker (Kafka's ReplicaFetcherManager MaxLag).
# TYPE kafka_server_replicafetchermanager_maxlag gauge
kafka_server_replicafetchermanager_maxlag{clientId="Replica"} 7
# HELP kafka_server_replicamanager_atminisrpartitioncount Partitions led by this broker whose ISR size equals min.insync.replicas.
# TYPE kafka_server_replicamanager_atminisrpartitioncount gauge
kafka_server_replicamanager_atminisrpartitioncount 1
# HELP kafka_server_replicamanager_isrexpands_total ISR expansions of partitions led by this broker (Kafka's IsrExpandsPerSec).
# TYPE kafka_server_replicamanager_isrexpands_total counter
kafka_server_replicamanager_isrexpands_total 1
# HELP kafka_server_replicamanager_isrshrinks_total ISR shrinks of partitions led by this broker (Kafka's IsrShrinksPerSec).
# TYPE kafka_server_replicamanager_isrshrinks_total counter
kafka_server_replicamanager_isrshrinks_total 2
# HELP kafka_server_replicamanager_leadercount Number of partitions this broker leads (Kafka's ReplicaManager LeaderCount).
# TYPE kafka_server_replicamanager_leadercount gauge
kafka_server_replicamanager_leadercount 3
# HELP kafka_server_replicamanager_partitioncount Number of replicas hosted by this broker (Kafka's ReplicaManager PartitionCount).
# TYPE kafka_server_replicamanager_partitioncount gauge
kafka_server_replicamanager_partitioncount 5
# HELP kafka_server_replicamanager_underminisrpartitioncount Partitions led by this broker whose ISR is smaller than min.insync.replicas.
# TYPE kafka_server_replicamanager_underminisrpartitioncount gauge
kafka_server_replicamanager_underminisrpartitioncount 1
# HELP kafka_server_replicamanager_underreplicatedpartitions Partitions led by this broker whose ISR is smaller than their replica set.
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions 2
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), weirNames...); err != nil {
		t.Fatal(err)
	}

	// The next scrape sees the source as it is then; a node that is no
	// longer the active controller reports no controller counts.
	src.mu.Lock()
	src.reps = src.reps[:1]
	src.ctl = ControllerStatus{Active: false, OfflinePartitions: 5, Topics: 4, Partitions: 9}
	src.mu.Unlock()
	for name, v := range map[string]float64{
		"kafka_server_replicamanager_partitioncount":              1,
		"kafka_server_replicamanager_leadercount":                 1,
		"kafka_server_replicamanager_underreplicatedpartitions":   0,
		"kafka_server_replicafetchermanager_maxlag":               0,
		"kafka_controller_kafkacontroller_activecontrollercount":  0,
		"kafka_controller_kafkacontroller_offlinepartitionscount": 0,
		"kafka_controller_kafkacontroller_globaltopiccount":       0,
		"kafka_server_replicamanager_isrshrinks_total":            2,
	} {
		if got := gathered(t, m, name); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "kafka_server_fetcherlagmetrics_consumerlag"); err != nil || n != 0 {
		t.Errorf("consumer lag series = %d, %v; want none without followers", n, err)
	}
}

// gathered returns the value of an unlabelled gauge or counter.
func gathered(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			if g := mt.GetGauge(); g != nil {
				return g.GetValue()
			}
			return mt.GetCounter().GetValue()
		}
	}
	t.Fatalf("%s not gathered", name)
	return 0
}

func TestNilCountersDoNothing(t *testing.T) {
	var c *Counters
	c.IsrShrunk()
	c.IsrExpanded()
	c.IsrChanged(true)
}

func TestHandlerServesTextWithRuntimeMetrics(t *testing.T) {
	m := New(&fakeSource{reps: []ReplicaStatus{{Topic: "t", Partition: 0, Leader: true, Replicas: 1, ISR: 1, MinISR: 1}}}, Options{})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"\nkafka_server_replicamanager_leadercount 1\n", "\ngo_goroutines ", "\nprocess_resident_memory_bytes "} {
		if !strings.Contains("\n"+string(body), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

// Two registries in one process do not collide.
func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(&fakeSource{}, Options{}), New(&fakeSource{}, Options{})
	a.Counters.IsrExpanded()
	if got := gathered(t, b, "kafka_server_replicamanager_isrexpands_total"); got != 0 {
		t.Fatalf("b counted a's expansion: %v", got)
	}
}

func TestClusterLinkMetrics(t *testing.T) {
	src := &fakeSource{links: LinkStatus{Links: 1, MirrorTopics: 2, Topics: []MirrorTopicStatus{
		{Link: "dr", Topic: "orders", State: "active"}, {Link: "dr", Topic: "payments", State: "paused"}, {Link: "dr", Topic: "old", State: "promoted"},
	}, Partitions: []MirrorPartitionStatus{
		{Link: "dr", Topic: "orders", Partition: 0, Lag: 5, LagMs: 1500, Bytes: 1000, Records: 20, Errors: 1},
		{Link: "dr", Topic: "orders", Partition: 1, Failing: true, Lag: -3, Errors: 4},
	}}}
	want := `
# HELP weir_cluster_link_count Cluster links of the cluster.
# TYPE weir_cluster_link_count gauge
weir_cluster_link_count 1
# HELP weir_cluster_link_fetch_errors_total Failed steps of the copying loop.
# TYPE weir_cluster_link_fetch_errors_total counter
weir_cluster_link_fetch_errors_total{link="dr",partition="0",topic="orders"} 1
weir_cluster_link_fetch_errors_total{link="dr",partition="1",topic="orders"} 4
# HELP weir_cluster_link_fetched_bytes_total Bytes of batches copied from the source.
# TYPE weir_cluster_link_fetched_bytes_total counter
weir_cluster_link_fetched_bytes_total{link="dr",partition="0",topic="orders"} 1000
weir_cluster_link_fetched_bytes_total{link="dr",partition="1",topic="orders"} 0
# HELP weir_cluster_link_fetched_records_total Records copied from the source.
# TYPE weir_cluster_link_fetched_records_total counter
weir_cluster_link_fetched_records_total{link="dr",partition="0",topic="orders"} 20
weir_cluster_link_fetched_records_total{link="dr",partition="1",topic="orders"} 0
# HELP weir_cluster_link_mirror_partition_lag The source's high watermark minus the mirror's log end, as of the last fetch.
# TYPE weir_cluster_link_mirror_partition_lag gauge
weir_cluster_link_mirror_partition_lag{link="dr",partition="0",topic="orders"} 5
weir_cluster_link_mirror_partition_lag{link="dr",partition="1",topic="orders"} 0
# HELP weir_cluster_link_mirror_partition_lag_ms While the mirror is behind its source, milliseconds since it was last at the source's high watermark; 0 when caught up.
# TYPE weir_cluster_link_mirror_partition_lag_ms gauge
weir_cluster_link_mirror_partition_lag_ms{link="dr",partition="0",topic="orders"} 1500
weir_cluster_link_mirror_partition_lag_ms{link="dr",partition="1",topic="orders"} 0
# HELP weir_cluster_link_mirror_partition_state 1 per mirror partition this broker copies, by state.
# TYPE weir_cluster_link_mirror_partition_state gauge
weir_cluster_link_mirror_partition_state{link="dr",partition="0",state="active",topic="orders"} 1
weir_cluster_link_mirror_partition_state{link="dr",partition="1",state="source_unavailable",topic="orders"} 1
# HELP weir_cluster_link_mirror_topic_state 1 per mirror topic of the cluster, by state.
# TYPE weir_cluster_link_mirror_topic_state gauge
weir_cluster_link_mirror_topic_state{link="dr",state="active",topic="orders"} 1
weir_cluster_link_mirror_topic_state{link="dr",state="paused",topic="payments"} 1
weir_cluster_link_mirror_topic_state{link="dr",state="promoted",topic="old"} 1
# HELP weir_cluster_link_mirror_topic_count Mirror topics still following their source.
# TYPE weir_cluster_link_mirror_topic_count gauge
weir_cluster_link_mirror_topic_count 2
`
	if err := testutil.GatherAndCompare(New(src, Options{}).Registry(), strings.NewReader(want), "weir_cluster_link_count",
		"weir_cluster_link_fetch_errors_total", "weir_cluster_link_fetched_bytes_total", "weir_cluster_link_fetched_records_total",
		"weir_cluster_link_mirror_partition_lag", "weir_cluster_link_mirror_partition_lag_ms", "weir_cluster_link_mirror_partition_state", "weir_cluster_link_mirror_topic_count", "weir_cluster_link_mirror_topic_state"); err != nil {
		t.Fatal(err)
	}
}

func TestClientQuotaMetrics(t *testing.T) {
	src := &fakeSource{quotas: []ClientQuotaStatus{
		{Type: "produce", User: "alice", Rate: 1500, ThrottleMs: 250},
		{Type: "controller_mutation", ClientID: "tool", Rate: 2.5, ThrottleMs: 4000},
	}}
	m := New(src, Options{})
	want := `
# HELP kafka_server_quota_byte_rate The client quota's measured rate, per resource, user and client id of the quota (Kafka's kafka.server:type=<resource> byte-rate).
# TYPE kafka_server_quota_byte_rate gauge
kafka_server_quota_byte_rate{clientId="",resource="Produce",user="alice"} 1500
# HELP kafka_server_quota_mutation_rate The client quota's measured rate, per resource, user and client id of the quota (Kafka's kafka.server:type=<resource> mutation-rate).
# TYPE kafka_server_quota_mutation_rate gauge
kafka_server_quota_mutation_rate{clientId="tool",resource="ControllerMutation",user=""} 2.5
# HELP weir_server_quota_throttle_time_ms_total Throttle time the client quota gave, in total, per resource, user and client id of the quota (Kafka's kafka.server:type=<resource> throttle-time is its average).
# TYPE weir_server_quota_throttle_time_ms_total counter
weir_server_quota_throttle_time_ms_total{clientId="",resource="Produce",user="alice"} 250
weir_server_quota_throttle_time_ms_total{clientId="tool",resource="ControllerMutation",user=""} 4000
`
	names := []string{"kafka_server_quota_byte_rate", "kafka_server_quota_mutation_rate", "kafka_server_quota_request_time", "weir_server_quota_throttle_time_ms_total"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}
