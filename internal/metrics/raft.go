package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RaftStatus is this node's view of the metadata quorum (Kafka's
// kafka.server:type=raft-metrics) and of the metadata it applied.
type RaftStatus struct {
	// Voter is true on a controller (a voter of the quorum); a broker-only
	// node follows the log as an observer and reports no epoch, vote or
	// snapshot age.
	Voter bool
	// Leader is the quorum's leader as this node knows it, -1 for none;
	// Vote the voter it voted for in Epoch, -1 for none.
	Leader, Vote int32
	Epoch        uint64
	// HighWatermark and LogEndOffset are of this node's copy of the
	// metadata log.
	HighWatermark, LogEndOffset int64
	// SnapshotAge is the time since this node last wrote a snapshot.
	SnapshotAge time.Duration
	// ControllerApplied and BrokerApplied are the offsets of the last
	// metadata records the controller's and the broker's images applied,
	// -1 for a role this node does not have.
	ControllerApplied, BrokerApplied int64
}

var (
	descRaftLeader      = kdesc("server_raft_metrics_current_leader", "The metadata quorum's leader as this node knows it, -1 for none (Kafka's raft-metrics current-leader).")
	descRaftEpoch       = kdesc("server_raft_metrics_current_epoch", "The quorum's epoch (Raft term) this node is in (Kafka's raft-metrics current-epoch); controllers only.")
	descRaftVote        = kdesc("server_raft_metrics_current_vote", "The voter this node voted for in the current epoch, -1 for none (Kafka's raft-metrics current-vote); controllers only.")
	descRaftHW          = kdesc("server_raft_metrics_high_watermark", "The metadata log's high watermark on this node (Kafka's raft-metrics high-watermark).")
	descRaftLEO         = kdesc("server_raft_metrics_log_end_offset", "The end offset of this node's copy of the metadata log (Kafka's raft-metrics log-end-offset).")
	descSnapshotAge     = kdesc("server_snapshot_emitter_metrics_latest_snapshot_generated_age_ms", "Milliseconds since this controller last wrote a metadata snapshot, since start-up before that (Kafka's snapshot-emitter-metrics latest-snapshot-generated-age-ms).")
	descCtlApplied      = kdesc("controller_kafkacontroller_lastappliedrecordoffset", "Offset of the last metadata record the controller applied (Kafka's KafkaController LastAppliedRecordOffset); controllers only.")
	descCtlCommitted    = kdesc("controller_kafkacontroller_lastcommittedrecordoffset", "Offset of the last committed metadata record (Kafka's KafkaController LastCommittedRecordOffset); controllers only.")
	descBrokerApplied   = kdesc("server_broker_metadata_metrics_last_applied_record_offset", "Offset of the last metadata record the broker applied (Kafka's broker-metadata-metrics last-applied-record-offset); brokers only.")
	descFenced          = kdesc("controller_kafkacontroller_fencedbrokercount", "Registered brokers that are fenced; reported by the active controller only.")
	descActiveBrokers   = kdesc("controller_kafkacontroller_activebrokercount", "Registered brokers that are not fenced; reported by the active controller only.")
	descImbalance       = kdesc("controller_kafkacontroller_preferredreplicaimbalancecount", "Partitions whose leader is not their preferred (first) replica; reported by the active controller only.")
	descUncleanElection = kdesc("controller_controllerstats_uncleanleaderelections_total", "Unclean leader elections this node committed as the active controller (Kafka's ControllerStats UncleanLeaderElectionsPerSec).")
	descElections       = kdesc("controller_controllerstats_leaderelectionrateandtimems_count", "Leader elections this node committed as the active controller (the _count of Kafka's ControllerStats LeaderElectionRateAndTimeMs; weir times none).")
)

// newRaftHistograms are the commit and election latencies and the
// records appended (Kafka's raft-metrics commit-latency-avg/max,
// election-latency-avg/max, append-records-rate).
func newRaftHistograms() (commit, election prometheus.Histogram, appended prometheus.Counter) {
	commit = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kafka_server_raft_metrics_commit_latency_ms",
		Help:    "Milliseconds from the active controller's append of a batch of metadata records to its commit (Kafka's raft-metrics commit-latency-avg and -max).",
		Buckets: msBuckets})
	election = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kafka_server_raft_metrics_election_latency_ms",
		Help:    "Milliseconds this controller went without a known quorum leader before learning of a new one (Kafka's raft-metrics election-latency-avg and -max).",
		Buckets: msBuckets})
	appended = prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_raft_metrics_append_records_total",
		Help: "Metadata records this node appended to the quorum as its leader (Kafka's raft-metrics append-records-rate is its rate)."})
	return commit, election, appended
}

// RaftCommitted records a batch of n records the quorum committed d after
// its append (it fits quorum.Config.OnCommit). Safe on a nil *Metrics.
func (m *Metrics) RaftCommitted(d time.Duration, n int) {
	if m != nil {
		m.commit.Observe(float64(d) / float64(time.Millisecond))
		m.appended.Add(float64(n))
	}
}

// RaftElected records d without a known leader before a new one (it fits
// quorum.Config.OnElection). Safe on a nil *Metrics.
func (m *Metrics) RaftElected(d time.Duration) {
	if m != nil {
		m.election.Observe(float64(d) / float64(time.Millisecond))
	}
}

// raftCollector reports RaftStatus.
type raftCollector struct{ src Source }

func (raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRaftLeader, descRaftEpoch, descRaftVote, descRaftHW, descRaftLEO, descSnapshotAge, descCtlApplied, descCtlCommitted, descBrokerApplied} {
		ch <- d
	}
}

func (c raftCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.src.Raft()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	g(descRaftLeader, float64(r.Leader))
	g(descRaftHW, float64(r.HighWatermark))
	g(descRaftLEO, float64(r.LogEndOffset))
	if r.Voter {
		g(descRaftEpoch, float64(r.Epoch))
		g(descRaftVote, float64(r.Vote))
		g(descSnapshotAge, float64(r.SnapshotAge.Milliseconds()))
		g(descCtlCommitted, float64(r.HighWatermark-1))
	}
	if r.ControllerApplied >= 0 {
		g(descCtlApplied, float64(r.ControllerApplied))
	}
	if r.BrokerApplied >= 0 {
		g(descBrokerApplied, float64(r.BrokerApplied))
	}
}
