package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Broker is a loaded, validated static broker configuration. Typed fields
// exist for the keys weir reads statically; every key's value is in Values.
//
// Durations derived from millisecond (or second, minute) keys saturate at the
// largest time.Duration, so Kafka's "never" (Long.MAX_VALUE ms) reads as
// roughly 292 years.
type Broker struct {
	// Identity and KRaft.
	NodeID                  int32
	ProcessRoles            []string // "broker" and/or "controller"
	Rack                    string   // "" when unset
	ControllerListenerNames []string // upper-cased
	QuorumVoters            []Voter
	QuorumBootstrapServers  []string // host:port
	MetadataLogDir          string   // metadata.log.dir, else the first log dir

	BrokerHeartbeatInterval           time.Duration
	BrokerSessionTimeout              time.Duration
	InitialBrokerRegistrationTimeout  time.Duration
	QuorumElectionTimeout             time.Duration
	MetadataLogSegmentBytes           int32
	MetadataSnapshotMaxNewRecordBytes int64
	MetadataSnapshotMaxInterval       time.Duration

	// Networking. Listeners and AdvertisedListeners carry their security
	// protocol. AdvertisedListeners is the effective list: advertised.listeners
	// if set, else the listeners that are not controller listeners.
	Listeners                 []Listener
	AdvertisedListeners       []Listener
	ListenerSecurityProtocols map[string]string // effective listener.security.protocol.map
	InterBrokerListenerName   string            // effective
	SocketSendBufferBytes     int32
	SocketReceiveBufferBytes  int32
	SocketRequestMaxBytes     int32
	RequestTimeout            time.Duration
	// SSL is the TLS settings of SSL listeners and of the node's own
	// connections to them; SASL the settings of SASL listeners.
	SSL  SSL
	SASL SASL

	// Requests and topic creation.
	MessageMaxBytes          int32
	FetchMaxBytes            int32
	AutoCreateTopics         bool
	DeleteTopicEnable        bool
	NumPartitions            int32
	DefaultReplicationFactor int16
	ControlledShutdownEnable bool

	// Log manager.
	LogDirs                          []string // log.dirs, else log.dir
	LogRetentionCheckInterval        time.Duration
	FlushSchedulerInterval           time.Duration
	OffsetCheckpointInterval         time.Duration // log.flush.offset.checkpoint.interval.ms
	LogStartOffsetCheckpointInterval time.Duration
	LogCleanerEnable                 bool
	LogCleanerBackoff                time.Duration
	LogCleanerDedupeBufferSize       int64
	LogCleanerIOBufferLoadFactor     float64

	// Replication.
	ReplicaLagTimeMax                      time.Duration
	ReplicaSocketTimeout                   time.Duration
	ReplicaFetchMaxBytes                   int32
	ReplicaFetchMinBytes                   int32
	ReplicaFetchWaitMax                    time.Duration
	ReplicaFetchResponseMaxBytes           int32
	ReplicaFetchBackoff                    time.Duration
	NumReplicaFetchers                     int32
	ReplicaHighWatermarkCheckpointInterval time.Duration
	AutoLeaderRebalanceEnable              bool
	LeaderImbalancePerBrokerPercentage     int32
	LeaderImbalanceCheckInterval           time.Duration

	// Group coordinator.
	OffsetsTopicNumPartitions      int32
	OffsetsTopicReplicationFactor  int16
	OffsetsTopicSegmentBytes       int32
	OffsetsCommitTimeout           time.Duration
	OffsetsRetention               time.Duration
	OffsetsRetentionCheckInterval  time.Duration
	OffsetMetadataMaxBytes         int32
	GroupInitialRebalanceDelay     time.Duration
	GroupMinSessionTimeout         time.Duration
	GroupMaxSessionTimeout         time.Duration
	GroupMaxSize                   int32
	ConsumerGroupSessionTimeout    time.Duration
	ConsumerGroupHeartbeatInterval time.Duration
	// The bounds of a group's consumer.session.timeout.ms and
	// consumer.heartbeat.interval.ms (GROUP configs).
	ConsumerGroupMinSessionTimeout    time.Duration
	ConsumerGroupMaxSessionTimeout    time.Duration
	ConsumerGroupMinHeartbeatInterval time.Duration
	ConsumerGroupMaxHeartbeatInterval time.Duration
	ConsumerGroupMaxSize              int32
	ConsumerGroupAssignors            []string
	TransactionStateLogNumPartitions  int32
	TransactionStateLogReplication    int16
	TransactionStateLogMinISR         int32
	TransactionStateLogSegmentBytes   int32
	TransactionMaxTimeout             time.Duration
	TransactionalIDExpiration         time.Duration
	TransactionAbortTimedOutInterval  time.Duration
	TransactionRemoveExpiredInterval  time.Duration
	TransactionPartitionVerification  bool
	ReplicationQuotaWindowNum         int32
	QuotaWindowNum                    int32
	ConnectionsMaxIdle                time.Duration // < 0: never
	QuotaWindowSize                   time.Duration
	ReplicationQuotaWindowSize        time.Duration

	// MetricsListener is the host:port of the Prometheus endpoint
	// (weir.metrics.listener without its http:// prefix); "" disables it.
	MetricsListener string
	// MetricsAggregation is weir.metrics.aggregation: "partition" or
	// "topic".
	MetricsAggregation string
	// ConsoleListener is the host:port of the web console
	// (weir.console.listener without its http:// prefix); "" disables it.
	ConsoleListener string
	// FastFencing is weir.fast.fencing.enable.
	FastFencing bool
	// LogOpenFilesMax is log.open.files.max.
	LogOpenFilesMax int32
	// NumRecoveryThreadsPerDataDir is num.recovery.threads.per.data.dir.
	NumRecoveryThreadsPerDataDir int32

	// Values holds the normalized value of every known broker key that has
	// a value: explicitly set keys and keys with a non-null default. Keys
	// whose Kafka default is null and that were not set are absent.
	Values map[string]string
	// Set records the keys that came from the loaded properties
	// (STATIC_BROKER_CONFIG); all other keys in Values are defaults
	// (DEFAULT_CONFIG).
	Set map[string]bool
}

// HasRole reports whether process.roles contains role ("broker" or
// "controller").
func (b *Broker) HasRole(role string) bool { return contains(b.ProcessRoles, role) }

// Source returns STATIC_BROKER_CONFIG for keys set in the loaded properties
// and DEFAULT_CONFIG otherwise.
func (b *Broker) Source(name string) Source {
	if b.Set[name] {
		return SourceStaticBroker
	}
	return SourceDefault
}

// LoadBroker merges props over the defaults, validates every value and the
// cross-key rules, and returns the typed configuration. Unknown keys do not
// fail loading; each yields a warning such as
// `unknown configuration "foo.bar" was ignored`, and so does each Ignored
// key set and each Refused key set to Kafka's default. Invalid values,
// Refused keys set otherwise and undefined keys of a refused family (see
// refusedFamily) are all reported (joined), each as an *Error naming the
// key and value.
func LoadBroker(props map[string]string) (*Broker, []string, error) {
	b := &Broker{Values: make(map[string]string), Set: make(map[string]bool)}
	var warnings []string
	var errs []error

	// Refusals do not stop the cross-key checks, so that every setting
	// weir does not honour (a secure listener too) is named at once.
	var refusals []error
	for _, k := range sortedKeys(props) {
		d, ok := brokerRegistry.byName[k]
		if l, mech, isJAAS := jaasKey(k); !ok && isJAAS {
			if err := b.loadJAAS(k, props[k], l, mech); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if l, isHandler := callbackKey(k); !ok && isHandler {
			if err := b.loadCallbackHandler(k, props[k], l); err != nil {
				refusals = append(refusals, err)
			}
			continue
		}
		if !ok {
			if err := checkUnknownBroker(k, props[k]); err != nil {
				refusals = append(refusals, err)
			} else {
				warnings = append(warnings, fmt.Sprintf("unknown configuration %q was ignored", k))
			}
			continue
		}
		norm, err := d.Normalize(props[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := d.refusal(props[k], norm); err != nil {
			refusals = append(refusals, err)
		} else if w := d.setWarning(norm); w != "" {
			warnings = append(warnings, w)
		}
		b.Values[k] = norm
		b.Set[k] = true
	}
	if len(errs) > 0 {
		return nil, warnings, errors.Join(append(errs, refusals...)...)
	}
	for i := range brokerRegistry.defs {
		d := &brokerRegistry.defs[i]
		if _, ok := b.Values[d.Name]; !ok && d.HasDefault {
			b.Values[d.Name] = d.Default
		}
	}
	// broker.id is a deprecated alias of node.id (Kafka copies whichever is
	// set to the other).
	switch {
	case b.Set[KeyBrokerID] && b.Set[KeyNodeID]:
		if b.Values[KeyBrokerID] != b.Values[KeyNodeID] {
			return nil, warnings, combinationError(KeyBrokerID, "%s must equal %s (%s) when both are set",
				b.Values[KeyBrokerID], KeyNodeID, b.Values[KeyNodeID])
		}
	case b.Set[KeyBrokerID]:
		if _, err := brokerRegistry.byName[KeyNodeID].Normalize(b.Values[KeyBrokerID]); err != nil {
			return nil, warnings, err
		}
		b.Values[KeyNodeID], b.Set[KeyNodeID] = b.Values[KeyBrokerID], true
	case b.Set[KeyNodeID]:
		b.Values[KeyBrokerID], b.Set[KeyBrokerID] = b.Values[KeyNodeID], true
	}
	b.fill()
	if errs := append(refusals, b.check()...); len(errs) > 0 {
		return nil, warnings, errors.Join(errs...)
	}
	return b, append(warnings, b.authorizerWarnings()...), nil
}

// fill sets the typed fields from Values (which are valid by now).
func (b *Broker) fill() {
	g := getter(b.Values)
	b.NodeID = g.i32(KeyNodeID)
	b.ProcessRoles = g.list(KeyProcessRoles)
	b.Rack = g.str("broker.rack")
	b.ControllerListenerNames = upper(g.list(KeyControllerListenerNames))
	for _, s := range g.list(KeyQuorumVoters) {
		v, _ := ParseVoter(s)
		b.QuorumVoters = append(b.QuorumVoters, v)
	}
	b.QuorumBootstrapServers = g.list(KeyQuorumBootstrapServers)
	b.LogDirs = g.list(KeyLogDir)
	if b.Set[KeyLogDirs] {
		b.LogDirs = g.list(KeyLogDirs)
	}
	b.MetadataLogDir = g.str(KeyMetadataLogDir)
	if b.MetadataLogDir == "" && len(b.LogDirs) > 0 {
		b.MetadataLogDir = b.LogDirs[0]
	}

	b.BrokerHeartbeatInterval = g.ms("broker.heartbeat.interval.ms")
	b.BrokerSessionTimeout = g.ms("broker.session.timeout.ms")
	b.InitialBrokerRegistrationTimeout = g.ms("initial.broker.registration.timeout.ms")
	b.QuorumElectionTimeout = g.ms("controller.quorum.election.timeout.ms")
	b.MetadataLogSegmentBytes = g.i32("metadata.log.segment.bytes")
	b.MetadataSnapshotMaxNewRecordBytes = g.i64("metadata.log.max.record.bytes.between.snapshots")
	b.MetadataSnapshotMaxInterval = g.ms("metadata.log.max.snapshot.interval.ms")

	b.InterBrokerListenerName = strings.ToUpper(g.str(KeyInterBrokerListenerName))
	if _, set := b.Values[KeyInterBrokerListenerName]; !set {
		b.InterBrokerListenerName = g.str(KeyInterBrokerProtocol)
	}
	b.SocketSendBufferBytes = g.i32("socket.send.buffer.bytes")
	b.SocketReceiveBufferBytes = g.i32("socket.receive.buffer.bytes")
	b.SocketRequestMaxBytes = g.i32("socket.request.max.bytes")
	b.RequestTimeout = g.ms("request.timeout.ms")

	b.MessageMaxBytes = g.i32("message.max.bytes")
	b.FetchMaxBytes = g.i32("fetch.max.bytes")
	b.AutoCreateTopics = g.bool("auto.create.topics.enable")
	b.DeleteTopicEnable = g.bool("delete.topic.enable")
	b.NumPartitions = g.i32("num.partitions")
	b.DefaultReplicationFactor = int16(g.i64("default.replication.factor"))
	b.ControlledShutdownEnable = g.bool("controlled.shutdown.enable")

	b.LogRetentionCheckInterval = g.ms("log.retention.check.interval.ms")
	b.FlushSchedulerInterval = g.ms("log.flush.scheduler.interval.ms")
	b.OffsetCheckpointInterval = g.ms("log.flush.offset.checkpoint.interval.ms")
	b.LogStartOffsetCheckpointInterval = g.ms("log.flush.start.offset.checkpoint.interval.ms")
	b.LogCleanerEnable = g.bool("log.cleaner.enable")
	b.LogCleanerBackoff = g.ms("log.cleaner.backoff.ms")
	b.LogCleanerDedupeBufferSize = g.i64("log.cleaner.dedupe.buffer.size")
	b.LogCleanerIOBufferLoadFactor = g.f64("log.cleaner.io.buffer.load.factor")

	b.ReplicaLagTimeMax = g.ms("replica.lag.time.max.ms")
	b.ReplicaSocketTimeout = g.ms("replica.socket.timeout.ms")
	b.ReplicaFetchMaxBytes = g.i32("replica.fetch.max.bytes")
	b.ReplicaFetchMinBytes = g.i32("replica.fetch.min.bytes")
	b.ReplicaFetchWaitMax = g.ms("replica.fetch.wait.max.ms")
	b.ReplicaFetchResponseMaxBytes = g.i32("replica.fetch.response.max.bytes")
	b.ReplicaFetchBackoff = g.ms("replica.fetch.backoff.ms")
	b.NumReplicaFetchers = g.i32("num.replica.fetchers")
	b.ReplicaHighWatermarkCheckpointInterval = g.ms("replica.high.watermark.checkpoint.interval.ms")
	b.AutoLeaderRebalanceEnable = g.bool("auto.leader.rebalance.enable")
	b.LeaderImbalancePerBrokerPercentage = g.i32("leader.imbalance.per.broker.percentage")
	b.LeaderImbalanceCheckInterval = g.dur("leader.imbalance.check.interval.seconds", time.Second)

	b.OffsetsTopicNumPartitions = g.i32("offsets.topic.num.partitions")
	b.OffsetsTopicReplicationFactor = int16(g.i64("offsets.topic.replication.factor"))
	b.OffsetsTopicSegmentBytes = g.i32("offsets.topic.segment.bytes")
	b.OffsetsCommitTimeout = g.ms("offsets.commit.timeout.ms")
	b.OffsetsRetention = g.dur("offsets.retention.minutes", time.Minute)
	b.OffsetsRetentionCheckInterval = g.ms("offsets.retention.check.interval.ms")
	b.OffsetMetadataMaxBytes = g.i32("offset.metadata.max.bytes")
	b.GroupInitialRebalanceDelay = g.ms("group.initial.rebalance.delay.ms")
	b.GroupMinSessionTimeout = g.ms("group.min.session.timeout.ms")
	b.GroupMaxSessionTimeout = g.ms("group.max.session.timeout.ms")
	b.GroupMaxSize = g.i32("group.max.size")
	b.ConsumerGroupSessionTimeout = g.ms("group.consumer.session.timeout.ms")
	b.ConsumerGroupHeartbeatInterval = g.ms("group.consumer.heartbeat.interval.ms")
	b.ConsumerGroupMinSessionTimeout = g.ms("group.consumer.min.session.timeout.ms")
	b.ConsumerGroupMaxSessionTimeout = g.ms("group.consumer.max.session.timeout.ms")
	b.ConsumerGroupMinHeartbeatInterval = g.ms("group.consumer.min.heartbeat.interval.ms")
	b.ConsumerGroupMaxHeartbeatInterval = g.ms("group.consumer.max.heartbeat.interval.ms")
	b.ConsumerGroupMaxSize = g.i32("group.consumer.max.size")
	b.ConsumerGroupAssignors = g.list("group.consumer.assignors")
	b.TransactionStateLogNumPartitions = g.i32("transaction.state.log.num.partitions")
	b.TransactionStateLogReplication = int16(g.i64("transaction.state.log.replication.factor"))
	b.TransactionStateLogMinISR = g.i32("transaction.state.log.min.isr")
	b.TransactionStateLogSegmentBytes = g.i32("transaction.state.log.segment.bytes")
	b.TransactionMaxTimeout = g.ms("transaction.max.timeout.ms")
	b.TransactionalIDExpiration = g.ms("transactional.id.expiration.ms")
	b.TransactionAbortTimedOutInterval = g.ms("transaction.abort.timed.out.transaction.cleanup.interval.ms")
	b.TransactionRemoveExpiredInterval = g.ms("transaction.remove.expired.transaction.cleanup.interval.ms")
	b.TransactionPartitionVerification = g.bool("transaction.partition.verification.enable")
	b.ReplicationQuotaWindowNum = g.i32("replication.quota.window.num")
	b.QuotaWindowNum = g.i32("quota.window.num")
	b.ConnectionsMaxIdle = time.Duration(g.i64("connections.max.idle.ms")) * time.Millisecond
	b.QuotaWindowSize = g.dur("quota.window.size.seconds", time.Second)
	b.ReplicationQuotaWindowSize = g.dur("replication.quota.window.size.seconds", time.Second)
	b.MetricsListener, _ = ParseMetricsListener(g.str(KeyMetricsListener))
	b.MetricsAggregation = g.str(KeyMetricsAggregation)
	b.ConsoleListener, _ = ParseConsoleListener(g.str(KeyConsoleListener))
	b.FastFencing = g.bool(KeyFastFencing)
	b.LogOpenFilesMax = g.i32(KeyLogOpenFilesMax)
	b.NumRecoveryThreadsPerDataDir = g.i32("num.recovery.threads.per.data.dir")
	b.fillSSL()
}

// getter reads normalized values. Values are validated before use, so
// parse failures cannot happen; a key missing from the registry is a
// programming error and panics.
type getter map[string]string

func (g getter) raw(name string) string {
	if _, ok := brokerRegistry.byName[name]; !ok {
		panic("config: unknown broker key " + name)
	}
	return g[name]
}

func (g getter) str(name string) string { return g.raw(name) }
func (g getter) bool(name string) bool  { return g.raw(name) == "true" }
func (g getter) i64(name string) int64 {
	n, _ := strconv.ParseInt(g.raw(name), 10, 64)
	return n
}
func (g getter) i32(name string) int32 { return int32(g.i64(name)) }
func (g getter) f64(name string) float64 {
	f, _ := strconv.ParseFloat(g.raw(name), 64)
	return f
}
func (g getter) list(name string) []string {
	if s := g.raw(name); s != "" {
		return strings.Split(s, ",")
	}
	return nil
}
func (g getter) ms(name string) time.Duration { return g.dur(name, time.Millisecond) }
func (g getter) dur(name string, unit time.Duration) time.Duration {
	return scaleDuration(g.i64(name), unit)
}

// scaleDuration multiplies n by unit, saturating instead of overflowing.
func scaleDuration(n int64, unit time.Duration) time.Duration {
	if n > int64(math.MaxInt64/unit) {
		return time.Duration(math.MaxInt64)
	}
	if n < int64(math.MinInt64/unit) {
		return time.Duration(math.MinInt64)
	}
	return time.Duration(n) * unit
}

func upper(list []string) []string {
	for i := range list {
		list[i] = strings.ToUpper(list[i])
	}
	return list
}
