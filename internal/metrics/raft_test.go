package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A voter reports its epoch, vote, snapshot age and committed offset; an
// observer (broker-only node) only the leader and its log's offsets; the
// controller's election counters are reported whether or not it is
// active.
func TestRaftAndControllerMetrics(t *testing.T) {
	src := &fakeSource{raft: RaftStatus{Voter: true, Leader: 2, Vote: 2, Epoch: 7, HighWatermark: 120, LogEndOffset: 121,
		SnapshotAge: 1500 * time.Millisecond, ControllerApplied: 119, BrokerApplied: 118},
		ctl: ControllerStatus{Elections: 4, UncleanElections: 1}}
	m := New(src, Options{})
	m.RaftCommitted(3*time.Millisecond, 5)
	m.RaftElected(200 * time.Millisecond)
	for name, want := range map[string]float64{
		"kafka_server_raft_metrics_current_leader": 2, "kafka_server_raft_metrics_current_epoch": 7, "kafka_server_raft_metrics_current_vote": 2,
		"kafka_server_raft_metrics_high_watermark": 120, "kafka_server_raft_metrics_log_end_offset": 121,
		"kafka_server_snapshot_emitter_metrics_latest_snapshot_generated_age_ms": 1500,
		"kafka_controller_kafkacontroller_lastcommittedrecordoffset":             119,
		"kafka_controller_kafkacontroller_lastappliedrecordoffset":               119,
		"kafka_server_broker_metadata_metrics_last_applied_record_offset":        118,
		"kafka_server_raft_metrics_append_records_total":                         5,
		"kafka_controller_controllerstats_leaderelectionrateandtimems_count":     4,
		"kafka_controller_controllerstats_uncleanleaderelections_total":          1,
		"kafka_controller_kafkacontroller_activecontrollercount":                 0,
	} {
		if got := gathered(t, m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	src.mu.Lock()
	src.raft = RaftStatus{Leader: 1, Vote: -1, HighWatermark: 50, LogEndOffset: 50, ControllerApplied: -1, BrokerApplied: 49}
	src.mu.Unlock()
	for _, name := range []string{"kafka_server_raft_metrics_current_epoch", "kafka_server_raft_metrics_current_vote",
		"kafka_server_snapshot_emitter_metrics_latest_snapshot_generated_age_ms", "kafka_controller_kafkacontroller_lastappliedrecordoffset"} {
		if n, err := testutil.GatherAndCount(m.Registry(), name); err != nil || n != 0 {
			t.Errorf("observer: %s has %d series (%v), want none", name, n, err)
		}
	}
	if got := gathered(t, m, "kafka_server_raft_metrics_current_leader"); got != 1 {
		t.Errorf("observer's leader = %v", got)
	}
}
