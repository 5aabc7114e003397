package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCoordinatorMetrics(t *testing.T) {
	src := &fakeSource{coord: CoordinatorStatus{
		ClassicGroups:  map[string]int64{"Stable": 2, "Empty": 1},
		ConsumerGroups: map[string]int64{"Reconciling": 1},
		Offsets:        7, OffsetCommits: 9, ClassicRebalances: 3,
		Transactions: map[string]int64{"Ongoing": 2},
		Lag: []ConsumerLag{{Group: "g", Topic: "a", Partition: 0, Lag: 5}, {Group: "g", Topic: "a", Partition: 1, Lag: 2},
			{Group: "g", Topic: "b", Partition: 0, Lag: -1}, {Group: "h", Topic: "a", Partition: 0, Lag: 4}},
	}}
	want := `
# HELP kafka_coordinator_group_groupmetadatamanager_numgroups Classic groups coordinated here (Kafka's kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups).
# TYPE kafka_coordinator_group_groupmetadatamanager_numgroups gauge
kafka_coordinator_group_groupmetadatamanager_numgroups 3
# HELP kafka_coordinator_group_groupmetadatamanager_numgroupsstable Classic groups coordinated here in state Stable (Kafka's GroupMetadataManager gauge of the state).
# TYPE kafka_coordinator_group_groupmetadatamanager_numgroupsstable gauge
kafka_coordinator_group_groupmetadatamanager_numgroupsstable 2
# HELP kafka_server_group_coordinator_metrics_group_count Groups coordinated here by protocol (Kafka's kafka.server:type=group-coordinator-metrics,protocol= group-count).
# TYPE kafka_server_group_coordinator_metrics_group_count gauge
kafka_server_group_coordinator_metrics_group_count{protocol="classic"} 3
kafka_server_group_coordinator_metrics_group_count{protocol="consumer"} 1
# HELP kafka_server_group_coordinator_metrics_offset_commit_count Offsets committed (partitions of OffsetCommit and TxnOffsetCommit written; Kafka's group-coordinator-metrics offset-commit-count).
# TYPE kafka_server_group_coordinator_metrics_offset_commit_count counter
kafka_server_group_coordinator_metrics_offset_commit_count 9
# HELP weir_transaction_coordinator_transactions Transactional ids coordinated here by state.
# TYPE weir_transaction_coordinator_transactions gauge
weir_transaction_coordinator_transactions{state="Ongoing"} 2
# HELP weir_group_consumer_lag A group's consumer lag: its partition's high watermark minus the group's committed offset (never below 0), exported by the group's coordinator.
# TYPE weir_group_consumer_lag gauge
weir_group_consumer_lag{group="g",partition="0",topic="a"} 5
weir_group_consumer_lag{group="g",partition="0",topic="b"} 0
weir_group_consumer_lag{group="g",partition="1",topic="a"} 2
weir_group_consumer_lag{group="h",partition="0",topic="a"} 4
# HELP weir_group_consumer_lag_sum A group's consumer lag summed over all its committed partitions.
# TYPE weir_group_consumer_lag_sum gauge
weir_group_consumer_lag_sum{group="g"} 7
weir_group_consumer_lag_sum{group="h"} 4
`
	names := []string{"kafka_coordinator_group_groupmetadatamanager_numgroups", "kafka_coordinator_group_groupmetadatamanager_numgroupsstable",
		"kafka_server_group_coordinator_metrics_group_count", "kafka_server_group_coordinator_metrics_offset_commit_count",
		"weir_transaction_coordinator_transactions", "weir_group_consumer_lag", "weir_group_consumer_lag_sum"}
	if err := testutil.GatherAndCompare(New(src, Options{}).Registry(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}

	byTopic := `
# HELP weir_group_consumer_lag A group's consumer lag summed over the topic's partitions it committed (weir.metrics.aggregation=topic).
# TYPE weir_group_consumer_lag gauge
weir_group_consumer_lag{group="g",topic="a"} 7
weir_group_consumer_lag{group="g",topic="b"} 0
weir_group_consumer_lag{group="h",topic="a"} 4
`
	if err := testutil.GatherAndCompare(New(src, Options{ByTopic: true}).Registry(), strings.NewReader(byTopic), "weir_group_consumer_lag"); err != nil {
		t.Fatal(err)
	}
}
