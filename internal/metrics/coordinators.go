package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// CoordinatorStatus is what the group and transaction coordinators of a
// broker report (the zero value on a node without them).
type CoordinatorStatus struct {
	// ClassicGroups and ConsumerGroups count the groups coordinated here
	// by Kafka's state name (every state present, zeros included).
	ClassicGroups, ConsumerGroups map[string]int64
	// Offsets are the committed offsets held (NumOffsets).
	Offsets int64
	// The group coordinator's event counts (Kafka's -count attributes).
	OffsetCommits, OffsetExpirations, OffsetDeletions uint64
	ClassicRebalances, ConsumerRebalances             uint64

	// Transactions counts the transactional ids coordinated here by state.
	Transactions map[string]int64
	// MarkersQueued are the partitions whose transaction markers wait to
	// be sent to their leader.
	MarkersQueued int64
	// ProducerIDBlocks and ProducerIDs are the producer id blocks the
	// transaction coordinator fetched from the controller, and their ids.
	ProducerIDBlocks, ProducerIDs uint64

	// Lag is the consumer lag of the groups coordinated here, as of the
	// broker's last refresh.
	Lag []ConsumerLag
}

// ConsumerLag is one committed offset of a group and how far its
// partition's high watermark is past it.
type ConsumerLag struct {
	Group, Topic string
	Partition    int32
	Lag          int64
}

// classicStates are Kafka's classic group states with their
// GroupMetadataManager gauge.
var classicStates = []struct{ state, name string }{
	{"PreparingRebalance", "numgroupspreparingrebalance"}, {"CompletingRebalance", "numgroupscompletingrebalance"},
	{"Stable", "numgroupsstable"}, {"Dead", "numgroupsdead"}, {"Empty", "numgroupsempty"},
}

var (
	descNumGroups        = kdesc("coordinator_group_groupmetadatamanager_numgroups", "Classic groups coordinated here (Kafka's kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups).")
	descNumOffsets       = kdesc("coordinator_group_groupmetadatamanager_numoffsets", "Committed offsets of the groups coordinated here (Kafka's GroupMetadataManager NumOffsets).")
	descNumGroupsByState = map[string]*prometheus.Desc{}

	descGroupCount         = kdesc("server_group_coordinator_metrics_group_count", "Groups coordinated here by protocol (Kafka's kafka.server:type=group-coordinator-metrics,protocol= group-count).", "protocol")
	descConsumerGroupCount = kdesc("server_group_coordinator_metrics_consumer_group_count", "Consumer protocol groups coordinated here by state (Kafka's group-coordinator-metrics consumer-group-count).", "state")
	descOffsetCommits      = kdesc("server_group_coordinator_metrics_offset_commit_count", "Offsets committed (partitions of OffsetCommit and TxnOffsetCommit written; Kafka's group-coordinator-metrics offset-commit-count).")
	descOffsetExpirations  = kdesc("server_group_coordinator_metrics_offset_expiration_count", "Offsets removed by retention (Kafka's group-coordinator-metrics offset-expiration-count).")
	descOffsetDeletions    = kdesc("server_group_coordinator_metrics_offset_deletion_count", "Offsets removed by OffsetDelete (Kafka's group-coordinator-metrics offset-deletion-count).")
	descClassicRebalances  = kdesc("server_group_coordinator_metrics_group_completed_rebalance_count", "Rebalances of classic groups completed (Kafka's group-coordinator-metrics group-completed-rebalance-count).")
	descConsumerRebalances = kdesc("server_group_coordinator_metrics_consumer_group_rebalance_count", "Group epoch bumps of consumer protocol groups (Kafka's group-coordinator-metrics consumer-group-rebalance-count).")

	descTransactions     = desc("transaction_coordinator_transactions", "Transactional ids coordinated here by state.", "state")
	descMarkersQueued    = desc("transaction_coordinator_markers_queued", "Partitions whose transaction markers wait to be sent to their leader.")
	descProducerIDBlocks = desc("transaction_coordinator_producer_id_blocks_total", "Producer id blocks the transaction coordinator fetched from the controller.")
	descProducerIDs      = desc("transaction_coordinator_producer_ids_total", "Producer ids in the blocks the transaction coordinator fetched.")

	descGroupLag      = desc("group_consumer_lag", "A group's consumer lag: its partition's high watermark minus the group's committed offset (never below 0), exported by the group's coordinator.", "group", "topic", "partition")
	descGroupLagTopic = desc("group_consumer_lag", "A group's consumer lag summed over the topic's partitions it committed (weir.metrics.aggregation=topic).", "group", "topic")
	descGroupLagSum   = desc("group_consumer_lag_sum", "A group's consumer lag summed over all its committed partitions.", "group")
)

func init() {
	for _, s := range classicStates {
		descNumGroupsByState[s.state] = kdesc("coordinator_group_groupmetadatamanager_"+s.name,
			"Classic groups coordinated here in state "+s.state+" (Kafka's GroupMetadataManager gauge of the state).")
	}
}

// coordinatorCollector reports the coordinators' metrics and the consumer
// lag, per partition or per topic.
type coordinatorCollector struct {
	src     Source
	byTopic bool
}

func (c coordinatorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNumGroups, descNumOffsets, descGroupCount, descConsumerGroupCount,
		descOffsetCommits, descOffsetExpirations, descOffsetDeletions, descClassicRebalances, descConsumerRebalances,
		descTransactions, descMarkersQueued, descProducerIDBlocks, descProducerIDs, descGroupLagSum} {
		ch <- d
	}
	for _, d := range descNumGroupsByState {
		ch <- d
	}
	if c.byTopic {
		ch <- descGroupLagTopic
	} else {
		ch <- descGroupLag
	}
}

func (c coordinatorCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Coordinators()
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	var classic, consumer int64
	for _, s := range classicStates {
		n := st.ClassicGroups[s.state]
		classic += n
		gauge(descNumGroupsByState[s.state], n)
	}
	for _, state := range []string{"Empty", "Assigning", "Reconciling", "Stable", "Dead"} {
		n := st.ConsumerGroups[state]
		consumer += n
		gauge(descConsumerGroupCount, n, state)
	}
	gauge(descNumGroups, classic)
	gauge(descNumOffsets, st.Offsets)
	gauge(descGroupCount, classic, "classic")
	gauge(descGroupCount, consumer, "consumer")
	counter(descOffsetCommits, st.OffsetCommits)
	counter(descOffsetExpirations, st.OffsetExpirations)
	counter(descOffsetDeletions, st.OffsetDeletions)
	counter(descClassicRebalances, st.ClassicRebalances)
	counter(descConsumerRebalances, st.ConsumerRebalances)
	for state, n := range st.Transactions {
		gauge(descTransactions, n, state)
	}
	gauge(descMarkersQueued, st.MarkersQueued)
	counter(descProducerIDBlocks, st.ProducerIDBlocks)
	counter(descProducerIDs, st.ProducerIDs)

	type groupTopic struct{ group, topic string }
	byTopic := map[groupTopic]int64{}
	sums := map[string]int64{}
	for _, l := range st.Lag {
		lag := max(l.Lag, 0)
		sums[l.Group] += lag
		if c.byTopic {
			byTopic[groupTopic{l.Group, l.Topic}] += lag
		} else {
			gauge(descGroupLag, lag, l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
		}
	}
	for k, lag := range byTopic {
		gauge(descGroupLagTopic, lag, k.group, k.topic)
	}
	for g, lag := range sums {
		gauge(descGroupLagSum, lag, g)
	}
}
