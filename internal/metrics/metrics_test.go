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
	"weir_server_replica_manager_partition_count",
	"weir_server_replica_manager_leader_count",
	"weir_server_replica_manager_under_replicated_partitions",
	"weir_server_replica_manager_under_min_isr_partition_count",
	"weir_server_replica_manager_at_min_isr_partition_count",
	"weir_server_replica_manager_isr_shrinks_total",
	"weir_server_replica_manager_isr_expands_total",
	"weir_server_fetcher_lag_metrics_consumer_lag",
	"weir_server_replica_fetcher_manager_max_lag",
	"weir_controller_kafka_controller_active_controller_count",
	"weir_controller_kafka_controller_offline_partitions_count",
	"weir_controller_kafka_controller_global_topic_count",
	"weir_controller_kafka_controller_global_partition_count",
	"weir_log_open_segment_files",
}

func TestCollectorReadsSourceAtScrape(t *testing.T) {
	src := &fakeSource{
		reps: []ReplicaStatus{
			{Topic: "a", Partition: 0, Leader: true, Replicas: 3, ISR: 3, MinISR: 2},
			{Topic: "a", Partition: 1, Leader: true, Replicas: 3, ISR: 2, MinISR: 2}, // under-replicated, at min ISR
			{Topic: "a", Partition: 2, Leader: true, Replicas: 3, ISR: 1, MinISR: 2}, // under min ISR
			{Topic: "b", Partition: 0, Leader: false, Replicas: 3, ISR: 3, MinISR: 2, Lag: 7},
			{Topic: "b", Partition: 1, Leader: false, Replicas: 3, ISR: 3, MinISR: 2, Lag: -1}, // clamped to 0
		},
		ctl:   ControllerStatus{Active: true, OfflinePartitions: 2, Topics: 4, Partitions: 9},
		files: 12,
	}
	m := New(src)
	m.Counters.IsrShrunk()
	m.Counters.IsrChanged(true)
	m.Counters.IsrChanged(false)

	want := `
# HELP weir_controller_kafka_controller_active_controller_count 1 on the active controller, 0 elsewhere.
# TYPE weir_controller_kafka_controller_active_controller_count gauge
weir_controller_kafka_controller_active_controller_count 1
# HELP weir_controller_kafka_controller_global_partition_count Partitions in the cluster; reported by the active controller only.
# TYPE weir_controller_kafka_controller_global_partition_count gauge
weir_controller_kafka_controller_global_partition_count 9
# HELP weir_controller_kafka_controller_global_topic_count Topics in the cluster; reported by the active controller only.
# TYPE weir_controller_kafka_controller_global_topic_count gauge
weir_controller_kafka_controller_global_topic_count 4
# HELP weir_controller_kafka_controller_offline_partitions_count Partitions without a leader; reported by the active controller only.
# TYPE weir_controller_kafka_controller_offline_partitions_count gauge
weir_controller_kafka_controller_offline_partitions_count 2
# HELP weir_log_open_segment_files Segment files (.log, .index, .timeindex) the broker keeps open; weir closes idle ones past log.open.files.max.
# TYPE weir_log_open_segment_files gauge
weir_log_open_segment_files 12
# HELP weir_server_fetcher_lag_metrics_consumer_lag Messages a follower replica on this broker is behind its leader (Kafka's FetcherLagMetrics ConsumerLag).
# TYPE weir_server_fetcher_lag_metrics_consumer_lag gauge
weir_server_fetcher_lag_metrics_consumer_lag{partition="0",topic="b"} 7
weir_server_fetcher_lag_metrics_consumer_lag{partition="1",topic="b"} 0
# HELP weir_server_replica_fetcher_manager_max_lag Largest lag, in messages, of a follower replica on this broker (Kafka's ReplicaFetcherManager MaxLag).
# TYPE weir_server_replica_fetcher_manager_max_lag gauge
weir_server_replica_fetcher_manager_max_lag 7
# HELP weir_server_replica_manager_at_min_isr_partition_count Partitions led by this broker whose ISR size equals min.insync.replicas.
# TYPE weir_server_replica_manager_at_min_isr_partition_count gauge
weir_server_replica_manager_at_min_isr_partition_count 1
# HELP weir_server_replica_manager_isr_expands_total ISR expansions of partitions led by this broker (Kafka's IsrExpandsPerSec).
# TYPE weir_server_replica_manager_isr_expands_total counter
weir_server_replica_manager_isr_expands_total 1
# HELP weir_server_replica_manager_isr_shrinks_total ISR shrinks of partitions led by this broker (Kafka's IsrShrinksPerSec).
# TYPE weir_server_replica_manager_isr_shrinks_total counter
weir_server_replica_manager_isr_shrinks_total 2
# HELP weir_server_replica_manager_leader_count Number of partitions this broker leads (Kafka's ReplicaManager LeaderCount).
# TYPE weir_server_replica_manager_leader_count gauge
weir_server_replica_manager_leader_count 3
# HELP weir_server_replica_manager_partition_count Number of replicas hosted by this broker (Kafka's ReplicaManager PartitionCount).
# TYPE weir_server_replica_manager_partition_count gauge
weir_server_replica_manager_partition_count 5
# HELP weir_server_replica_manager_under_min_isr_partition_count Partitions led by this broker whose ISR is smaller than min.insync.replicas.
# TYPE weir_server_replica_manager_under_min_isr_partition_count gauge
weir_server_replica_manager_under_min_isr_partition_count 1
# HELP weir_server_replica_manager_under_replicated_partitions Partitions led by this broker whose ISR is smaller than their replica set.
# TYPE weir_server_replica_manager_under_replicated_partitions gauge
weir_server_replica_manager_under_replicated_partitions 2
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
		"weir_server_replica_manager_partition_count":               1,
		"weir_server_replica_manager_leader_count":                  1,
		"weir_server_replica_manager_under_replicated_partitions":   0,
		"weir_server_replica_fetcher_manager_max_lag":               0,
		"weir_controller_kafka_controller_active_controller_count":  0,
		"weir_controller_kafka_controller_offline_partitions_count": 0,
		"weir_controller_kafka_controller_global_topic_count":       0,
		"weir_server_replica_manager_isr_shrinks_total":             2,
	} {
		if got := gathered(t, m, name); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "weir_server_fetcher_lag_metrics_consumer_lag"); err != nil || n != 0 {
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
	m := New(&fakeSource{reps: []ReplicaStatus{{Topic: "t", Partition: 0, Leader: true, Replicas: 1, ISR: 1, MinISR: 1}}})
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
	for _, want := range []string{"\nweir_server_replica_manager_leader_count 1\n", "\ngo_goroutines ", "\nprocess_resident_memory_bytes "} {
		if !strings.Contains("\n"+string(body), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

// Two registries in one process do not collide.
func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(&fakeSource{}), New(&fakeSource{})
	a.Counters.IsrExpanded()
	if got := gathered(t, b, "weir_server_replica_manager_isr_expands_total"); got != 0 {
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
	if err := testutil.GatherAndCompare(New(src).Registry(), strings.NewReader(want), "weir_cluster_link_count",
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
	m := New(src)
	want := `
# HELP weir_server_controller_mutation_mutation_rate The client quota's measured rate, per user and client id of the quota (Kafka's kafka.server:type=ControllerMutation mutation-rate).
# TYPE weir_server_controller_mutation_mutation_rate gauge
weir_server_controller_mutation_mutation_rate{client_id="tool",user=""} 2.5
# HELP weir_server_controller_mutation_throttle_time_ms_total Throttle time the client quota gave, in total, per user and client id of the quota (Kafka's kafka.server:type=ControllerMutation throttle-time is its average).
# TYPE weir_server_controller_mutation_throttle_time_ms_total counter
weir_server_controller_mutation_throttle_time_ms_total{client_id="tool",user=""} 4000
# HELP weir_server_produce_byte_rate The client quota's measured rate, per user and client id of the quota (Kafka's kafka.server:type=Produce byte-rate).
# TYPE weir_server_produce_byte_rate gauge
weir_server_produce_byte_rate{client_id="",user="alice"} 1500
# HELP weir_server_produce_throttle_time_ms_total Throttle time the client quota gave, in total, per user and client id of the quota (Kafka's kafka.server:type=Produce throttle-time is its average).
# TYPE weir_server_produce_throttle_time_ms_total counter
weir_server_produce_throttle_time_ms_total{client_id="",user="alice"} 250
`
	names := []string{"weir_server_controller_mutation_mutation_rate", "weir_server_controller_mutation_throttle_time_ms_total",
		"weir_server_produce_byte_rate", "weir_server_produce_throttle_time_ms_total", "weir_server_fetch_byte_rate", "weir_server_request_request_time"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}
