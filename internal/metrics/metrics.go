// Package metrics exposes a node's health in Prometheus form, named as the
// Prometheus JMX exporter's Kafka rules (example_configs/kafka-2_0_0.yml,
// lowercaseOutputName) name Kafka's MBeans, so that dashboards and alerts
// written for Kafka read weir unchanged: kafka.<domain>:type=<Type>,name=<Name>
// is kafka_<domain>_<type>_<name> lowercased, the other keys of the MBean
// name become labels, a ...PerSec meter is a counter named without PerSec and
// ending in _total (rate() gives the per-second value), and a Kafka
// histogram (...TimeMs) is a Prometheus histogram of that name (Kafka's rule
// gives only its _count and quantile gauges: use histogram_quantile).
// Families Kafka has no MBean for keep weir's earlier names,
// weir_<domain>_<type>_<name> in snake case. docs/OPERATIONS.md has the
// table with Kafka's MBeans.
//
// The gauges are not kept up to date by the code they describe: a
// collector reads them from a [Source], which the server implements, at
// every scrape. The only state held here is the [Counters] that the
// replication code and the coordinators bump as events happen. This
// package imports no other weir package.
//
// Metrics:
//
//	kafka_server_replicamanager_partitioncount                    local replicas (offline ones too)
//	kafka_server_replicamanager_offlinereplicacount               local replicas whose log cannot be opened
//	kafka_server_replicamanager_leadercount                       local replicas led here
//	kafka_server_replicamanager_underreplicatedpartitions         led here, ISR < replicas
//	kafka_server_replicamanager_underminisrpartitioncount         led here, ISR < min.insync.replicas
//	kafka_server_replicamanager_atminisrpartitioncount            led here, ISR = min.insync.replicas
//	kafka_server_replicamanager_isrshrinks_total                  ISR shrinks of partitions led here
//	kafka_server_replicamanager_isrexpands_total                  ISR expansions of partitions led here
//	kafka_server_fetcherlagmetrics_consumerlag{clientId,topic,partition}
//	                                                              per follower replica: ReplicaStatus.Lag;
//	                                                              clientId "ReplicaFetcherThread-0-<leader id>"
//	kafka_server_replicafetchermanager_maxlag{clientId="Replica"} the largest of those, 0 without followers
//	kafka_server_brokertopicmetrics_<name>_total{topic}           BrokerTopicMetrics (topics.go) per topic with
//	                                                              a local replica, and without the label for all
//	                                                              topics: messagesin, bytesin, bytesout,
//	                                                              bytesrejected, failedproducerequests,
//	                                                              failedfetchrequests, totalproducerequests,
//	                                                              totalfetchrequests; replicationbytesin and
//	                                                              replicationbytesout for all topics only
//	kafka_network_requestmetrics_requests_total{request,version}  RequestsPerSec (requests.go); request is Kafka's
//	                                                              API name, Fetch split into FetchConsumer and
//	                                                              FetchFollower
//	kafka_network_requestmetrics_errors_total{request,error}      ErrorsPerSec: the error codes of the responses
//	                                                              (NONE included) by Kafka's error name
//	kafka_network_requestmetrics_<hist>{request}                  histograms: totaltimems, requestqueuetimems,
//	                                                              localtimems, remotetimems, throttletimems,
//	                                                              responsequeuetimems, responsesendtimems (ms),
//	                                                              requestbytes
//	kafka_log_log_<name>{topic,partition}                          Log (logs.go) per local replica: size,
//	                                                              numlogsegments, logstartoffset, logendoffset
//	kafka_log_logflushstats_logflushrateandtimems                 histogram (ms) of the log flushes
//	kafka_log_logcleanermanager_max_dirty_percent                 the cleaner's last run: dirtiest compacted log
//	kafka_log_logcleanermanager_time_since_last_run_ms            since the cleaner's last run
//	kafka_log_logcleaner_max_clean_time_secs                      the last clean's duration
//	kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation}
//	                                                              Produce (acks=all) and Fetch (long polls) waiting
//	kafka_server_socket_server_metrics_<name>{listener,networkProcessor="0"}
//	                                                              connection_count, connection_creation_total,
//	                                                              connection_close_total,
//	                                                              failed_authentication_total,
//	                                                              successful_authentication_total
//	kafka_controller_kafkacontroller_activecontrollercount        1 on the active controller, else 0
//	kafka_controller_kafkacontroller_offlinepartitionscount       partitions without a leader
//	kafka_controller_kafkacontroller_globaltopiccount             topics in the cluster
//	kafka_controller_kafkacontroller_globalpartitioncount         partitions in the cluster
//	kafka_controller_kafkacontroller_activebrokercount            brokers not fenced, active controller only
//	kafka_controller_kafkacontroller_fencedbrokercount            brokers fenced, active controller only
//	kafka_controller_kafkacontroller_preferredreplicaimbalancecount
//	                                                              partitions not led by their first replica
//	kafka_controller_controllerstats_uncleanleaderelections_total unclean elections this node committed
//	kafka_controller_controllerstats_leaderelectionrateandtimems_count
//	                                                              leader changes this node committed
//	kafka_server_raft_metrics_<attr>                              raft.go: current_leader, current_epoch,
//	                                                              current_vote, high_watermark, log_end_offset;
//	                                                              commit_latency_ms and election_latency_ms
//	                                                              histograms; append_records_total
//	kafka_controller_kafkacontroller_lastappliedrecordoffset      and lastcommittedrecordoffset, controllers
//	kafka_server_broker_metadata_metrics_last_applied_record_offset
//	kafka_server_snapshot_emitter_metrics_latest_snapshot_generated_age_ms
//	kafka_server_quota_byte_rate{resource,user,clientId}          Produce bytes per second (resource "Produce") or
//	                                                              consumer Fetch response bytes per second ("Fetch")
//	                                                              of a client quota's sensor
//	kafka_server_quota_request_time{resource="Request",user,clientId}
//	                                                              handler time in percent of one thread
//	kafka_server_quota_mutation_rate{resource="ControllerMutation",user,clientId}
//	                                                              partitions created or deleted per second
//	weir_server_quota_throttle_time_ms_total{resource,user,clientId}
//	                                                              throttle time given to the sensor's clients
//	kafka_coordinator_group_groupmetadatamanager_numgroups        coordinators.go: classic groups coordinated here,
//	                                                              and numgroups<state> (preparingrebalance,
//	                                                              completingrebalance, stable, dead, empty); numoffsets
//	kafka_server_group_coordinator_metrics_group_count{protocol}  groups by protocol ("classic", "consumer")
//	kafka_server_group_coordinator_metrics_consumer_group_count{state}
//	                                                              consumer protocol groups by state
//	kafka_server_group_coordinator_metrics_<count>                counters: offset_commit_count,
//	                                                              offset_expiration_count, offset_deletion_count,
//	                                                              group_completed_rebalance_count,
//	                                                              consumer_group_rebalance_count
//	weir_group_consumer_lag{group,topic,partition}                high watermark minus committed offset of the
//	                                                              groups coordinated here (kafka-lag-exporter's
//	                                                              labels); {group,topic} with aggregation=topic
//	weir_group_consumer_lag_sum{group}                            the group's sum
//	weir_transaction_coordinator_transactions{state}              transactional ids coordinated here by state
//	weir_transaction_coordinator_markers_queued                   marker partitions waiting for their sender
//	weir_transaction_coordinator_producer_id_blocks_total         producer id blocks fetched, and
//	weir_transaction_coordinator_producer_ids_total               the ids in them
//	weir_server_ready                                             1 while /readyz answers 200
//	weir_log_open_segment_files                                   segment files open (log.open.files.max)
//	weir_coordinator_loader_skipped_records_total{coordinator}    unreadable records of __consumer_offsets
//	                                                              (coordinator "group") or __transaction_state
//	                                                              ("transaction") skipped while loading them
//	weir_cluster_link_count                                       cluster links of the cluster (this broker's image)
//	weir_cluster_link_mirror_topic_count                          mirror topics still following their source
//	weir_cluster_link_mirror_topic_state{link,topic,state}        1 per mirror topic of the cluster, state
//	                                                              "active", "paused", "promoted" or "failed_over"
//	weir_cluster_link_mirror_partition_state{link,topic,partition,state}
//	                                                              1 per mirror partition led here, state
//	                                                              "active" or "source_unavailable" (fetches failing)
//	weir_cluster_link_mirror_partition_lag{link,topic,partition}  the source's high watermark minus the mirror's
//	                                                              log end, as of the last fetch
//	weir_cluster_link_mirror_partition_lag_ms{link,topic,partition}
//	                                                              while behind, ms since the mirror was
//	                                                              last at the source's high watermark; else 0
//	weir_cluster_link_fetched_bytes_total{link,topic,partition}   bytes of batches copied from the source
//	weir_cluster_link_fetched_records_total{link,topic,partition} records copied from the source
//	weir_cluster_link_fetch_errors_total{link,topic,partition}    failed steps of the copying loop
//	weir_cluster_link_throttled_fetches_total{link,topic,partition}
//	                                                              fetches held back by the link's
//	                                                              link.fetcher.throttle.bytes.per.sec
//
// A client quota's series exist while a quota applies to some client and
// for an hour after its last request; user and clientId are the tags of
// the quota that applies (empty for a part it does not depend on; Kafka
// leaves an empty tag out of the MBean name). Kafka's throttle-time is the
// average throttle of the requests in its windows; weir gives the total,
// under a weir_ name, whose rate() is the throttle time per second. The
// byte and mutation rates are measured over the quota's windows
// (quota.window.num of quota.window.size.seconds). The mutation quota is
// charged on the active controller only.
//
// With weir.metrics.aggregation=topic ([Options.ByTopic]) the families
// with a partition label (the Log gauges, the follower lag and the
// consumer lag) have one series per topic instead, without that label,
// whose value is the sum over the topic's partitions: what
// sum without (partition) gives of the per-partition series.
//
// The cluster link series of a partition exist while this broker leads it
// as an active mirror; its counters start at 0 with each leadership.
//
// plus the Go runtime's go_* and the process's process_* metrics. The
// controller's gauges are 0 on every node but the active controller, so
// that summing them over a cluster counts each partition once.
package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source is what a node reports, read at each scrape. Its methods are
// called from the HTTP server's goroutines, concurrently with everything
// else the node does, and must not block for long.
type Source interface {
	// Replicas lists every replica hosted by this broker (none on a
	// controller-only node).
	Replicas() []ReplicaStatus
	// Controller is the controller's view of the cluster; the zero value
	// on a node that is not the active controller.
	Controller() ControllerStatus
	// Links is the cluster links' state on this broker.
	Links() LinkStatus
	// OpenSegmentFiles is how many segment files the broker's logs have
	// open (at most log.open.files.max while none is in use).
	OpenSegmentFiles() int
	// ClientQuotas are the client quota sensors in use.
	ClientQuotas() []ClientQuotaStatus
	// Logs are the logs of the local replicas (none for offline ones).
	Logs() []LogStatus
	// Cleaner is the log cleaner's last run.
	Cleaner() CleanerStatus
	// Raft is the node's view of the metadata quorum.
	Raft() RaftStatus
	// Ready is what /readyz answers: true for 200.
	Ready() bool
	// Coordinators are the group and transaction coordinators' metrics
	// and the consumer lag of the groups coordinated here.
	Coordinators() CoordinatorStatus
}

// ClientQuotaStatus is one client quota sensor: its type ("produce",
// "fetch", "request" or "controller_mutation"), the user and client id it
// is shared by, its rate (see the package comment) and the throttle time
// it gave, in milliseconds.
type ClientQuotaStatus struct {
	Type, User, ClientID string
	Rate                 float64
	ThrottleMs           uint64
}

// quotaDescs are the resource label and the rate metric of each client
// quota type; the throttle time of all of them is descThrottle.
var quotaDescs = map[string]quotaDesc{}

// quotaDesc is a client quota type's resource label and rate metric.
type quotaDesc struct {
	resource string
	rate     *prometheus.Desc
}

var descThrottle = desc("server_quota_throttle_time_ms_total", "Throttle time the client quota gave, in total, per resource, user and client id of the quota (Kafka's kafka.server:type=<resource> throttle-time is its average).", "resource", "user", "clientId")

func init() {
	rates := map[string]*prometheus.Desc{}
	for _, q := range []struct{ typ, resource, rate string }{
		{"produce", "Produce", "byte_rate"}, {"fetch", "Fetch", "byte_rate"},
		{"request", "Request", "request_time"}, {"controller_mutation", "ControllerMutation", "mutation_rate"},
	} {
		if rates[q.rate] == nil {
			rates[q.rate] = kdesc("server_quota_"+q.rate, "The client quota's measured rate, per resource, user and client id of the quota (Kafka's kafka.server:type=<resource> "+strings.ReplaceAll(q.rate, "_", "-")+").", "resource", "user", "clientId")
		}
		quotaDescs[q.typ] = quotaDesc{q.resource, rates[q.rate]}
	}
}

// LinkStatus is what a broker knows of cluster links.
type LinkStatus struct {
	Links        int // links in the cluster
	MirrorTopics int // mirror topics still following their source
	// Topics are the cluster's mirror topics, in every state.
	Topics []MirrorTopicStatus
	// Partitions are the mirror partitions this broker copies.
	Partitions []MirrorPartitionStatus
}

// MirrorTopicStatus is a mirror topic's state: "active", "paused",
// "promoted" or "failed_over".
type MirrorTopicStatus struct {
	Link, Topic, State string
}

// MirrorPartitionStatus is one mirror partition this broker leads and
// copies from its source.
type MirrorPartitionStatus struct {
	Link, Topic    string
	Partition      int32
	Failing        bool // its last step failed (source unavailable)
	Lag            int64
	LagMs          int64 // while Lag > 0, ms since the mirror was last caught up
	Bytes, Records uint64
	Errors         uint64
	Throttled      uint64
}

// ReplicaStatus is one local replica as the broker sees it now.
type ReplicaStatus struct {
	Topic     string
	Partition int32
	// Leader is true when this broker leads the partition; LeaderID is
	// the partition's leader (-1 without one).
	Leader   bool
	LeaderID int32
	// Replicas, ISR and MinISR are the sizes of the assignment and of the
	// in-sync set, and the topic's effective min.insync.replicas.
	Replicas, ISR, MinISR int
	// Offline is true when the replica's log could not be opened (Kafka's
	// replica in a failed log directory); the other fields are then
	// ignored.
	Offline bool
	// Lag is meaningful on a follower only (Leader false): the leader's
	// log end offset as this follower last learned it, minus the
	// follower's own log end offset, and never below 0 (Kafka's
	// FetcherLagMetrics ConsumerLag, which uses the leader's high
	// watermark from the last fetch response). It is ignored on a leader.
	Lag int64
}

// ControllerStatus is the active controller's view of the cluster.
type ControllerStatus struct {
	// Active is true on the active controller only; the counts below
	// are reported only when it is.
	Active bool
	// OfflinePartitions counts partitions without a leader (Leader -1 in
	// the controller's image).
	OfflinePartitions int
	Topics            int
	Partitions        int
	// FencedBrokers and ActiveBrokers are the registered brokers, fenced
	// and not; PreferredImbalance the partitions whose leader is not
	// their first replica.
	FencedBrokers, ActiveBrokers int
	PreferredImbalance           int
	// Elections and UncleanElections are the leader elections this node
	// committed as the active controller, reported whether or not it
	// still is.
	Elections, UncleanElections uint64
}

// Counters are the event counts the replication code and the
// coordinators report as they happen. Their methods are safe for concurrent use and on a nil
// *Counters (then they do nothing), so the caller can hold one
// unconditionally.
type Counters struct {
	isrShrinks        atomic.Uint64
	isrExpands        atomic.Uint64
	skippedGroupLoads atomic.Uint64
	skippedTxnLoads   atomic.Uint64
}

// IsrShrunk counts one ISR shrink of a partition this broker leads: call
// it once each time a smaller ISR proposed by this leader is committed
// (one call however many replicas left), as Kafka's IsrShrinksPerSec.
func (c *Counters) IsrShrunk() {
	if c != nil {
		c.isrShrinks.Add(1)
	}
}

// IsrExpanded counts one ISR expansion of a partition this broker leads:
// call it once each time a larger ISR proposed by this leader is
// committed, as Kafka's IsrExpandsPerSec.
func (c *Counters) IsrExpanded() {
	if c != nil {
		c.isrExpands.Add(1)
	}
}

// IsrChanged counts a committed ISR change of a partition this broker
// leads: a shrink when shrunk, else an expansion. It fits a
// func(shrunk bool) hook.
func (c *Counters) IsrChanged(shrunk bool) {
	if shrunk {
		c.IsrShrunk()
	} else {
		c.IsrExpanded()
	}
}

// GroupRecordsSkipped counts n records of __consumer_offsets the group
// coordinator could not read, and skipped, while loading a partition.
func (c *Counters) GroupRecordsSkipped(n int) {
	if c != nil {
		c.skippedGroupLoads.Add(uint64(n))
	}
}

// TxnRecordsSkipped counts n records of __transaction_state the
// transaction coordinator could not read, and skipped, while loading a
// partition.
func (c *Counters) TxnRecordsSkipped(n int) {
	if c != nil {
		c.skippedTxnLoads.Add(uint64(n))
	}
}

// Metrics is one node's registry. Each server has its own, so that
// several servers can run in one process.
type Metrics struct {
	// Counters is what the replication code bumps.
	Counters *Counters
	// Topics are the BrokerTopicMetrics, which the partitions count.
	Topics *BrokerTopicStats
	// Requests are the RequestMetrics and connection counts, which the
	// listeners count.
	Requests *RequestStats

	flush            prometheus.Histogram
	commit, election prometheus.Histogram
	appended         prometheus.Counter
	reg              *prometheus.Registry
}

// Options are a registry's settings.
type Options struct {
	// ByTopic is weir.metrics.aggregation=topic: the per-partition
	// families are summed per topic, without the partition label (see
	// the package comment).
	ByTopic bool
}

// New returns a registry that reads src at each scrape and also reports
// the Go runtime and process collectors.
func New(src Source, opts Options) *Metrics {
	m := &Metrics{Counters: &Counters{}, Topics: NewBrokerTopicStats(), Requests: newRequestStats(), flush: newFlushHistogram(), reg: prometheus.NewRegistry()}
	m.commit, m.election, m.appended = newRaftHistograms()
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&collector{src: src, counters: m.Counters, byTopic: opts.ByTopic},
		topicCollector{m.Topics},
		m.Requests,
		logCollector{src: src, byTopic: opts.ByTopic},
		m.flush,
		raftCollector{src},
		coordinatorCollector{src: src, byTopic: opts.ByTopic},
		m.commit, m.election, m.appended,
	)
	return m
}

// LogFlushed records a log flush that took d (it fits log.Options.Flushed).
// Safe for concurrent use, and on a nil *Metrics.
func (m *Metrics) LogFlushed(d time.Duration) {
	if m != nil {
		m.flush.Observe(float64(d) / float64(time.Millisecond))
	}
}

// Registry is the underlying registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text and protobuf
// exposition formats. A metric that fails to gather is left out and
// the rest is served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// desc is a weir_ metric (one Kafka has no MBean for).
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("weir_"+name, help, labels, nil)
}

// kdesc is the metric of a Kafka MBean, named as the JMX exporter's rules
// name it (see the package comment).
func kdesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("kafka_"+name, help, labels, nil)
}

var (
	descPartitionCount   = kdesc("server_replicamanager_partitioncount", "Number of replicas hosted by this broker (Kafka's ReplicaManager PartitionCount).")
	descOfflineReplicas  = kdesc("server_replicamanager_offlinereplicacount", "Replicas on this broker whose log cannot be opened (Kafka's ReplicaManager OfflineReplicaCount).")
	descLeaderCount      = kdesc("server_replicamanager_leadercount", "Number of partitions this broker leads (Kafka's ReplicaManager LeaderCount).")
	descUnderReplicated  = kdesc("server_replicamanager_underreplicatedpartitions", "Partitions led by this broker whose ISR is smaller than their replica set.")
	descUnderMinISR      = kdesc("server_replicamanager_underminisrpartitioncount", "Partitions led by this broker whose ISR is smaller than min.insync.replicas.")
	descAtMinISR         = kdesc("server_replicamanager_atminisrpartitioncount", "Partitions led by this broker whose ISR size equals min.insync.replicas.")
	descIsrShrinks       = kdesc("server_replicamanager_isrshrinks_total", "ISR shrinks of partitions led by this broker (Kafka's IsrShrinksPerSec).")
	descIsrExpands       = kdesc("server_replicamanager_isrexpands_total", "ISR expansions of partitions led by this broker (Kafka's IsrExpandsPerSec).")
	descConsumerLag      = kdesc("server_fetcherlagmetrics_consumerlag", "Messages a follower replica on this broker is behind its leader (Kafka's FetcherLagMetrics ConsumerLag).", "clientId", "topic", "partition")
	descConsumerLagTopic = kdesc("server_fetcherlagmetrics_consumerlag", "Messages the follower replicas of a topic on this broker are behind their leader, summed per leader (weir.metrics.aggregation=topic of Kafka's FetcherLagMetrics ConsumerLag).", "clientId", "topic")
	descMaxLag           = kdesc("server_replicafetchermanager_maxlag", "Largest lag, in messages, of a follower replica on this broker (Kafka's ReplicaFetcherManager MaxLag).", "clientId")
	descActiveController = kdesc("controller_kafkacontroller_activecontrollercount", "1 on the active controller, 0 elsewhere.")
	descOffline          = kdesc("controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader; reported by the active controller only.")
	descGlobalTopics     = kdesc("controller_kafkacontroller_globaltopiccount", "Topics in the cluster; reported by the active controller only.")
	descGlobalPartitions = kdesc("controller_kafkacontroller_globalpartitioncount", "Partitions in the cluster; reported by the active controller only.")
	descReady            = desc("server_ready", "1 while the node is ready (its /readyz answers 200), else 0.")
	descOpenSegments     = desc("log_open_segment_files", "Segment files (.log, .index, .timeindex) the broker keeps open; weir closes idle ones past log.open.files.max.")
	descSkippedRecords   = desc("coordinator_loader_skipped_records_total", "Unreadable records a coordinator skipped while loading its partitions.", "coordinator")
	descLinks            = desc("cluster_link_count", "Cluster links of the cluster.")
	descMirrorTopics     = desc("cluster_link_mirror_topic_count", "Mirror topics still following their source.")
	descMirrorTopicState = desc("cluster_link_mirror_topic_state", "1 per mirror topic of the cluster, by state.", "link", "topic", "state")
	descMirrorState      = desc("cluster_link_mirror_partition_state", "1 per mirror partition this broker copies, by state.", "link", "topic", "partition", "state")
	descMirrorLagMs      = desc("cluster_link_mirror_partition_lag_ms", "While the mirror is behind its source, milliseconds since it was last at the source's high watermark; 0 when caught up.", "link", "topic", "partition")
	descMirrorLag        = desc("cluster_link_mirror_partition_lag", "The source's high watermark minus the mirror's log end, as of the last fetch.", "link", "topic", "partition")
	descMirrorBytes      = desc("cluster_link_fetched_bytes_total", "Bytes of batches copied from the source.", "link", "topic", "partition")
	descMirrorRecords    = desc("cluster_link_fetched_records_total", "Records copied from the source.", "link", "topic", "partition")
	descMirrorErrors     = desc("cluster_link_fetch_errors_total", "Failed steps of the copying loop.", "link", "topic", "partition")
	descMirrorThrottled  = desc("cluster_link_throttled_fetches_total", "Fetches held back by the link's link.fetcher.throttle.bytes.per.sec.", "link", "topic", "partition")
)

// collector turns one read of the Source into metrics.
type collector struct {
	src      Source
	counters *Counters
	byTopic  bool
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	lag := descConsumerLag
	if c.byTopic {
		lag = descConsumerLagTopic
	}
	for _, d := range []*prometheus.Desc{descPartitionCount, descOfflineReplicas, descLeaderCount, descUnderReplicated, descUnderMinISR, descAtMinISR,
		descIsrShrinks, descIsrExpands, lag, descMaxLag, descActiveController, descOffline, descGlobalTopics, descGlobalPartitions,
		descReady, descFenced, descActiveBrokers, descImbalance, descUncleanElection, descElections,
		descSkippedRecords, descOpenSegments, descLinks, descMirrorTopics, descMirrorTopicState, descMirrorState, descMirrorLag, descMirrorLagMs, descMirrorBytes, descMirrorRecords, descMirrorErrors, descMirrorThrottled} {
		ch <- d
	}
	ch <- descThrottle
	seen := map[*prometheus.Desc]bool{}
	for _, d := range quotaDescs {
		if !seen[d.rate] {
			seen[d.rate] = true
			ch <- d.rate
		}
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	reps := c.src.Replicas()
	var leaders, under, underMin, atMin, offline int
	var maxLag int64
	type leaderTopic struct {
		clientID, topic string
	}
	topicLag := map[leaderTopic]int64{}
	for _, r := range reps {
		if r.Offline {
			offline++
			continue
		}
		if !r.Leader {
			lag := max(r.Lag, 0)
			maxLag = max(maxLag, lag)
			clientID := "ReplicaFetcherThread-0-" + strconv.Itoa(int(r.LeaderID))
			if c.byTopic {
				topicLag[leaderTopic{clientID, r.Topic}] += lag
			} else {
				ch <- prometheus.MustNewConstMetric(descConsumerLag, prometheus.GaugeValue, float64(lag), clientID, r.Topic, strconv.Itoa(int(r.Partition)))
			}
			continue
		}
		leaders++
		if r.ISR < r.Replicas {
			under++
		}
		if r.ISR < r.MinISR {
			underMin++
		}
		if r.ISR == r.MinISR {
			atMin++
		}
	}
	for k, lag := range topicLag {
		ch <- prometheus.MustNewConstMetric(descConsumerLagTopic, prometheus.GaugeValue, float64(lag), k.clientID, k.topic)
	}
	gauge(descPartitionCount, len(reps))
	gauge(descOfflineReplicas, offline)
	gauge(descLeaderCount, leaders)
	gauge(descUnderReplicated, under)
	gauge(descUnderMinISR, underMin)
	gauge(descAtMinISR, atMin)
	gauge(descOpenSegments, c.src.OpenSegmentFiles())
	ready := 0
	if c.src.Ready() {
		ready = 1
	}
	gauge(descReady, ready)
	ch <- prometheus.MustNewConstMetric(descMaxLag, prometheus.GaugeValue, float64(maxLag), "Replica")
	ch <- prometheus.MustNewConstMetric(descIsrShrinks, prometheus.CounterValue, float64(c.counters.isrShrinks.Load()))
	ch <- prometheus.MustNewConstMetric(descIsrExpands, prometheus.CounterValue, float64(c.counters.isrExpands.Load()))
	ch <- prometheus.MustNewConstMetric(descSkippedRecords, prometheus.CounterValue, float64(c.counters.skippedGroupLoads.Load()), "group")
	ch <- prometheus.MustNewConstMetric(descSkippedRecords, prometheus.CounterValue, float64(c.counters.skippedTxnLoads.Load()), "transaction")
	ls := c.src.Links()
	gauge(descLinks, ls.Links)
	gauge(descMirrorTopics, ls.MirrorTopics)
	for _, mt := range ls.Topics {
		gauge(descMirrorTopicState, 1, mt.Link, mt.Topic, mt.State)
	}
	for _, m := range ls.Partitions {
		labels := []string{m.Link, m.Topic, strconv.Itoa(int(m.Partition))}
		state := "active"
		if m.Failing {
			state = "source_unavailable"
		}
		gauge(descMirrorState, 1, append(labels, state)...)
		ch <- prometheus.MustNewConstMetric(descMirrorLag, prometheus.GaugeValue, float64(max(m.Lag, 0)), labels...)
		ch <- prometheus.MustNewConstMetric(descMirrorLagMs, prometheus.GaugeValue, float64(m.LagMs), labels...)
		ch <- prometheus.MustNewConstMetric(descMirrorBytes, prometheus.CounterValue, float64(m.Bytes), labels...)
		ch <- prometheus.MustNewConstMetric(descMirrorRecords, prometheus.CounterValue, float64(m.Records), labels...)
		ch <- prometheus.MustNewConstMetric(descMirrorErrors, prometheus.CounterValue, float64(m.Errors), labels...)
		ch <- prometheus.MustNewConstMetric(descMirrorThrottled, prometheus.CounterValue, float64(m.Throttled), labels...)
	}

	for _, q := range c.src.ClientQuotas() {
		d, ok := quotaDescs[q.Type]
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(d.rate, prometheus.GaugeValue, q.Rate, d.resource, q.User, q.ClientID)
		ch <- prometheus.MustNewConstMetric(descThrottle, prometheus.CounterValue, float64(q.ThrottleMs), d.resource, q.User, q.ClientID)
	}

	ctl := c.src.Controller()
	ch <- prometheus.MustNewConstMetric(descElections, prometheus.CounterValue, float64(ctl.Elections))
	ch <- prometheus.MustNewConstMetric(descUncleanElection, prometheus.CounterValue, float64(ctl.UncleanElections))
	if !ctl.Active {
		ctl = ControllerStatus{}
	}
	active := 0
	if ctl.Active {
		active = 1
	}
	gauge(descActiveController, active)
	gauge(descOffline, ctl.OfflinePartitions)
	gauge(descGlobalTopics, ctl.Topics)
	gauge(descGlobalPartitions, ctl.Partitions)
	gauge(descFenced, ctl.FencedBrokers)
	gauge(descActiveBrokers, ctl.ActiveBrokers)
	gauge(descImbalance, ctl.PreferredImbalance)
}
