package config

// Broker key registry, part 1: node identity, KRaft, networking, replication,
// group and transaction coordinators, quotas. Log and cleaner keys are in
// broker_defs_log.go. Names, types, defaults, validators and update modes
// follow Kafka 4.x; weir-specific defaults are marked "weir:".

// Broker key names used by the code in this package.
const (
	KeyProcessRoles            = "process.roles"
	KeyNodeID                  = "node.id"
	KeyBrokerID                = "broker.id"
	KeyListeners               = "listeners"
	KeyAdvertisedListeners     = "advertised.listeners"
	KeyListenerSecurityMap     = "listener.security.protocol.map"
	KeyControllerListenerNames = "controller.listener.names"
	KeyInterBrokerListenerName = "inter.broker.listener.name"
	KeyInterBrokerProtocol     = "security.inter.broker.protocol"
	KeyQuorumVoters            = "controller.quorum.voters"
	KeyQuorumBootstrapServers  = "controller.quorum.bootstrap.servers"
	KeyLogDirs                 = "log.dirs"
	KeyLogDir                  = "log.dir"
	KeyMetadataLogDir          = "metadata.log.dir"
	KeyMetricsListener         = "weir.metrics.listener"
	KeyMetricsAggregation      = "weir.metrics.aggregation"
	KeyConsoleListener         = "weir.console.listener"
	KeyProducerIDExpiration    = "producer.id.expiration.ms"
	KeyFastFencing             = "weir.fast.fencing.enable"
	KeyLogOpenFilesMax         = "log.open.files.max"
)

// Weir defaults that differ from Kafka (where Kafka has no default or a
// different one).
const (
	DefaultProcessRoles            = "broker,controller"
	DefaultNodeID                  = "1"
	DefaultListeners               = "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093"
	DefaultControllerListenerNames = "CONTROLLER"
	DefaultQuorumVoters            = "1@localhost:9093"
	DefaultLogDir                  = "./data"
	// DefaultSecurityProtocolMap is Kafka's identity mapping of the four
	// security protocols plus CONTROLLER:PLAINTEXT.
	DefaultSecurityProtocolMap = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)

// Why keys are Ignored (accepted, with no effect, because ignoring them is
// harmless) or Refused (weir lacks the feature), beyond security (see
// broker_defs_security.go).
const (
	reasonGoroutines = "weir runs goroutines, not Kafka's thread pools; there is no pool to size"
	reasonRaftFetch  = "weir's quorum (etcd raft with check-quorum) notices a lost leader after " +
		"controller.quorum.election.timeout.ms; it has no separate fetch timeout"
	reasonRaftBackoff       = "etcd raft randomizes each election timeout between one and two controller.quorum.election.timeout.ms instead of backing off"
	reasonRaftLinger        = "the active controller proposes each batch of metadata records when it is ready; it does not linger to gather writes"
	reasonRaftMessages      = "controllers exchange one-way etcd raft messages, resent on the next heartbeat tick; there are no requests to time out or retry"
	reasonMetadataRetention = "weir deletes the metadata log behind each snapshot and keeps the newest snapshots; " +
		"a node that falls behind fetches a snapshot, so nothing is kept longer"
	reasonNoOpRecords         = "weir appends no no-op records: brokers learn that their metadata is current from the quorum's heartbeats and fetches"
	reasonBacklog             = "Go's listeners ask the kernel for its largest accept backlog (net.core.somaxconn)"
	reasonNoRequestQueue      = "weir has no shared request queue: each connection handles its own requests in order, with at most 100 replies pending"
	reasonNoFetchSessions     = "weir declines fetch sessions (KIP-227), as Kafka does with 0 slots: clients send full fetch requests"
	reasonReplicaBuffer       = "follower connections keep the kernel's buffer autotuning, as socket.receive.buffer.bytes=-1 does"
	reasonNoLogDirMoves       = "weir never moves replicas between log directories (AlterReplicaLogDirs is not served), so there is nothing to throttle"
	reasonOffsetsUncompressed = "weir writes __consumer_offsets batches uncompressed; readers accept any codec"
	reasonLoadBuffer          = "loading a coordinator's partition reads its batches straight from the log; there is no load buffer to size"
	reasonPreallocate         = "weir does not preallocate segment files; preallocation only affects file-system fragmentation, never the data"
	reasonTiered              = "weir implements no tiered storage (remote.storage.enable is refused), so no topic is tiered"
	reasonCleanerThreads      = "weir runs one log cleaner per broker whatever the count (0, with which Kafka never compacts, is refused)"
	reasonCleanerIOBuffer     = "weir's log cleaner reads and writes segments through the log's own buffers"
	reasonQueuedBytes         = "weir does not bound the bytes of requests in flight across connections yet; each connection holds the request it is reading " +
		"(its buffer growing with the bytes received, up to socket.request.max.bytes) and the one being handled"
	reasonCleanerThrottle = "weir's log cleaner does not throttle its I/O yet"
	reasonTieredStorage   = "weir does not implement tiered storage; each topic keeps all its data in its local log"
)

var brokerCoreDefs = []Def{
	// Node identity and KRaft.
	def(KeyProcessRoles, TypeList, DefaultProcessRoles, listIn(false, "broker", "controller"), ReadOnly, "Roles of this process: broker, controller, or both (weir: both by default)."),
	def(KeyNodeID, TypeInt, DefaultNodeID, atLeast(0), ReadOnly, "Id of this node in the cluster (weir: 1 by default)."),
	def(KeyBrokerID, TypeInt, "-1", nil, ReadOnly, "Deprecated alias of node.id; must equal node.id when both are set."),
	def("broker.rack", TypeString, nullDefault, nil, ReadOnly, "Rack of the broker, used for rack-aware replica placement."),
	def(KeyControllerListenerNames, TypeList, DefaultControllerListenerNames, nonDuplicateList(false), ReadOnly, "Names of the listeners used by the KRaft controller; brokers use the first one."),
	def(KeyQuorumVoters, TypeList, DefaultQuorumVoters, votersValidator, ReadOnly, "Static controller quorum as id@host:port entries (weir: 1@localhost:9093)."),
	def(KeyQuorumBootstrapServers, TypeList, "", bootstrapServersValidator, ReadOnly, "Controller endpoints (host:port) to discover the quorum from; weir accepts only the endpoints of controller.quorum.voters."),
	def("controller.quorum.election.timeout.ms", TypeInt, "1000", nil, ReadOnly, "Time without a leader before a voter starts an election."),
	ignored(def("controller.quorum.fetch.timeout.ms", TypeInt, "2000", nil, ReadOnly, "Time without a successful fetch from the leader before a voter becomes a candidate."), reasonRaftFetch),
	ignored(def("controller.quorum.election.backoff.max.ms", TypeInt, "1000", nil, ReadOnly, "Upper bound of the randomized backoff between elections."), reasonRaftBackoff),
	ignored(def("controller.quorum.append.linger.ms", TypeInt, "25", nil, ReadOnly, "How long the quorum leader batches writes before flushing them."), reasonRaftLinger),
	ignored(def("controller.quorum.request.timeout.ms", TypeInt, "2000", nil, ReadOnly, "Timeout of requests between quorum members."), reasonRaftMessages),
	ignored(def("controller.quorum.retry.backoff.ms", TypeInt, "20", nil, ReadOnly, "Wait before retrying a failed quorum request."), reasonRaftMessages),
	def("broker.heartbeat.interval.ms", TypeInt, "2000", nil, ReadOnly, "Interval between broker heartbeats to the controller."),
	def("broker.session.timeout.ms", TypeInt, "9000", nil, ReadOnly, "How long a broker stays registered without heartbeats."),
	def("initial.broker.registration.timeout.ms", TypeInt, "60000", nil, ReadOnly, "How long a starting broker waits to register before giving up."),
	def(KeyMetadataLogDir, TypeString, nullDefault, nil, ReadOnly, "Directory of the metadata log; defaults to the first log directory."),
	def("metadata.log.max.record.bytes.between.snapshots", TypeLong, "20971520", atLeast(1), ReadOnly, "Metadata log bytes after the latest snapshot that trigger a new snapshot."),
	def("metadata.log.max.snapshot.interval.ms", TypeLong, "3600000", atLeast(0), ReadOnly, "Longest time before uncovered committed metadata is snapshotted; 0 disables."),
	def("metadata.log.segment.bytes", TypeInt, "1073741824", atLeast(12), ReadOnly, "Maximum size of one metadata log segment."),
	ignored(def("metadata.log.segment.ms", TypeLong, "604800000", nil, ReadOnly, "Maximum age of a metadata log segment before it is rolled."), reasonMetadataRetention),
	ignored(def("metadata.max.retention.bytes", TypeLong, "104857600", nil, ReadOnly, "Soft size limit of metadata log plus snapshots."), reasonMetadataRetention),
	ignored(def("metadata.max.retention.ms", TypeLong, "604800000", nil, ReadOnly, "Soft age limit of metadata log segments and snapshots."), reasonMetadataRetention),
	ignored(def("metadata.max.idle.interval.ms", TypeInt, "500", atLeast(0), ReadOnly, "How often an idle active controller appends a no-op record; 0 disables."), reasonNoOpRecords),

	// Networking.
	startupOnly(def(KeyListeners, TypeList, DefaultListeners, listenersValidator, PerBroker, "Addresses to listen on as NAME://host:port; an empty host binds all interfaces.")),
	startupOnly(def(KeyAdvertisedListeners, TypeList, nullDefault, listenersValidator, PerBroker, "Addresses published to clients; defaults to the non-controller listeners.")),
	startupOnly(def(KeyListenerSecurityMap, TypeString, DefaultSecurityProtocolMap, protocolMapValidator, PerBroker, "Security protocol of each listener name, as NAME:PROTOCOL pairs.")),
	def(KeyInterBrokerListenerName, TypeString, nullDefault, nil, ReadOnly, "Listener used between brokers; defaults to the one named by security.inter.broker.protocol."),
	def(KeyInterBrokerProtocol, TypeString, "PLAINTEXT", in(securityProtocols...), ReadOnly, "Security protocol between brokers; exclusive with inter.broker.listener.name."),
	// weir defaults to -1 where Kafka sets 102400: a fixed buffer turns off
	// the kernel's autotuning, and 100 KiB windows cut produce throughput
	// of megabyte requests by a third even on loopback.
	def("socket.send.buffer.bytes", TypeInt, "-1", nil, ReadOnly, "SO_SNDBUF of server sockets; -1 (weir's default; Kafka's is 102400) keeps the kernel's autotuning."),
	def("socket.receive.buffer.bytes", TypeInt, "-1", nil, ReadOnly, "SO_RCVBUF of server sockets; -1 (weir's default; Kafka's is 102400) keeps the kernel's autotuning."),
	def("socket.request.max.bytes", TypeInt, "104857600", atLeast(1), ReadOnly, "Largest request the server accepts."),
	ignored(def("socket.listen.backlog.size", TypeInt, "50", atLeast(1), ReadOnly, "Maximum number of pending connections per listening socket."), reasonBacklog),
	def("max.connections", TypeInt, maxInt, atLeast(0), ClusterWide, "Maximum number of connections across all listeners but the inter-broker one."),
	def("max.connections.per.ip", TypeInt, maxInt, atLeast(0), ClusterWide, "Maximum number of connections from one IP address."),
	def("max.connections.per.ip.overrides", TypeString, "", connectionOverridesValidator, ClusterWide, "Per host or IP connection limits as host:count pairs."),
	def("max.connection.creation.rate", TypeInt, maxInt, atLeast(0), ClusterWide, "Maximum new connections per second across the listeners but the inter-broker one."),
	def("connections.max.idle.ms", TypeLong, "600000", nil, ReadOnly, "Idle connections are closed after this long; a negative value never closes them (weir's own connections between nodes are redialled after 5 minutes unused)."),
	def("connection.failed.authentication.delay.ms", TypeInt, "100", atLeast(0), ReadOnly, "Delay before answering and closing a connection that failed authentication."),
	ignored(def("queued.max.requests", TypeInt, "500", atLeast(1), ReadOnly, "Requests queued before network threads stop reading."), reasonNoRequestQueue),
	refused(def("queued.max.request.bytes", TypeLong, "-1", nil, ReadOnly, "Bytes of queued requests before reading stops; -1 means no limit."), reasonQueuedBytes),
	ignored(def("num.network.threads", TypeInt, "3", atLeast(1), ClusterWide, "Threads per listener that read requests and write responses."), reasonGoroutines),
	ignored(def("num.io.threads", TypeInt, "8", atLeast(1), ClusterWide, "Threads that process requests."), reasonGoroutines),
	ignored(def("background.threads", TypeInt, "10", atLeast(1), ClusterWide, "Threads for background tasks."), reasonGoroutines),
	def("request.timeout.ms", TypeInt, "30000", nil, ReadOnly, "Timeout of requests the broker sends to other nodes."),

	// Requests and topics.
	def("message.max.bytes", TypeInt, "1048588", atLeast(0), ClusterWide, "Largest record batch accepted (topic override: max.message.bytes)."),
	def("fetch.max.bytes", TypeInt, "57671680", atLeast(1024), ReadOnly, "Largest response returned for a fetch request."),
	ignored(def("max.incremental.fetch.session.cache.slots", TypeInt, "1000", atLeast(0), ReadOnly, "Maximum number of incremental fetch sessions kept."), reasonNoFetchSessions),
	def("auto.create.topics.enable", TypeBoolean, "true", nil, ReadOnly, "Create unknown topics when clients ask for them."),
	def("delete.topic.enable", TypeBoolean, "true", nil, ReadOnly, "Allow topics to be deleted."),
	def("num.partitions", TypeInt, "1", atLeast(1), ReadOnly, "Partition count of automatically created topics."),
	def("default.replication.factor", TypeInt, "1", between(1, 32767), ReadOnly, "Replication factor of automatically created topics."),
	def("controlled.shutdown.enable", TypeBoolean, "true", nil, ReadOnly, "Move leadership away before shutting down."),

	// Replication.
	def("replica.lag.time.max.ms", TypeLong, "30000", nil, ReadOnly, "A follower that has not caught up for this long leaves the ISR."),
	def("replica.socket.timeout.ms", TypeInt, "30000", nil, ReadOnly, "Socket timeout of follower fetches; at least replica.fetch.wait.max.ms."),
	ignored(def("replica.socket.receive.buffer.bytes", TypeInt, "65536", nil, ReadOnly, "Socket receive buffer of follower fetch connections."), reasonReplicaBuffer),
	def("replica.fetch.max.bytes", TypeInt, "1048576", atLeast(0), ReadOnly, "Bytes a follower tries to fetch per partition (soft limit)."),
	def("replica.fetch.wait.max.ms", TypeInt, "500", nil, ReadOnly, "Maximum wait of a follower fetch; at most replica.lag.time.max.ms."),
	def("replica.fetch.min.bytes", TypeInt, "1", nil, ReadOnly, "Minimum bytes a follower fetch waits for."),
	def("replica.fetch.response.max.bytes", TypeInt, "10485760", atLeast(0), ReadOnly, "Bytes a follower expects per fetch response (soft limit)."),
	def("replica.fetch.backoff.ms", TypeInt, "1000", atLeast(0), ReadOnly, "Wait after a follower fetch error."),
	startupOnly(def("num.replica.fetchers", TypeInt, "1", nil, ClusterWide, "Follower fetcher threads per source broker.")),
	def("replica.high.watermark.checkpoint.interval.ms", TypeLong, "5000", nil, ReadOnly, "How often high watermarks are saved to disk."),
	def("auto.leader.rebalance.enable", TypeBoolean, "true", nil, ReadOnly, "Periodically move leadership back to preferred replicas."),
	def("leader.imbalance.per.broker.percentage", TypeInt, "10", nil, ReadOnly, "Leader imbalance per broker, in percent, that triggers a rebalance."),
	def("leader.imbalance.check.interval.seconds", TypeLong, "300", atLeast(1), ReadOnly, "How often leader imbalance is checked."),
	def("unclean.leader.election.enable", TypeBoolean, "false", nil, ClusterWide, "Allow out-of-sync replicas to become leader, at the risk of data loss."),
	def("leader.replication.throttled.rate", TypeLong, maxLong, atLeast(0), ClusterWide, "Bytes/s limit of leader-side replication of throttled replicas."),
	def("follower.replication.throttled.rate", TypeLong, maxLong, atLeast(0), ClusterWide, "Bytes/s limit of follower-side replication of throttled replicas."),
	ignored(def("replica.alter.log.dirs.io.max.bytes.per.second", TypeLong, maxLong, atLeast(0), ClusterWide, "Bytes/s limit of moving replicas between log directories."), reasonNoLogDirMoves),

	// Group coordinator.
	def("offsets.topic.num.partitions", TypeInt, "50", atLeast(1), ReadOnly, "Partitions of the __consumer_offsets topic; do not change after deployment."),
	def("offsets.topic.replication.factor", TypeShort, "3", atLeast(1), ReadOnly, "Replication factor of the __consumer_offsets topic."),
	def("offsets.topic.segment.bytes", TypeInt, "104857600", atLeast(1), ReadOnly, "Segment size of the __consumer_offsets topic."),
	ignored(def("offsets.topic.compression.codec", TypeInt, "0", between(0, 4), ReadOnly, "Compression codec id used for the __consumer_offsets topic."), reasonOffsetsUncompressed),
	ignored(def("offsets.load.buffer.size", TypeInt, "5242880", atLeast(1), ReadOnly, "Read batch size when loading groups from the offsets topic."), reasonLoadBuffer),
	def("offsets.commit.timeout.ms", TypeInt, "5000", atLeast(1), ReadOnly, "How long a commit waits for offsets-topic replication."),
	def("offsets.retention.minutes", TypeInt, "10080", atLeast(1), ReadOnly, "How long committed offsets of empty or unsubscribed groups are kept."),
	def("offsets.retention.check.interval.ms", TypeLong, "600000", atLeast(1), ReadOnly, "How often expired offsets are removed."),
	def("offset.metadata.max.bytes", TypeInt, "4096", nil, ReadOnly, "Largest metadata string allowed with an offset commit."),
	def("group.initial.rebalance.delay.ms", TypeInt, "3000", nil, ReadOnly, "Wait for more members before the first rebalance of a new classic group."),
	def("group.min.session.timeout.ms", TypeInt, "6000", nil, ReadOnly, "Smallest session timeout a classic group member may request."),
	def("group.max.session.timeout.ms", TypeInt, "1800000", nil, ReadOnly, "Largest session timeout a classic group member may request."),
	def("group.max.size", TypeInt, maxInt, atLeast(1), ReadOnly, "Maximum members of a classic group."),
	ignored(def("group.coordinator.threads", TypeInt, "4", atLeast(1), ReadOnly, "Threads of the group coordinator."), reasonGoroutines),
	def("group.consumer.session.timeout.ms", TypeInt, "45000", atLeast(1), ReadOnly, "Session timeout of consumer-protocol group members."),
	def("group.consumer.min.session.timeout.ms", TypeInt, "45000", atLeast(1), ReadOnly, "Smallest session timeout for consumer-protocol groups."),
	def("group.consumer.max.session.timeout.ms", TypeInt, "60000", atLeast(1), ReadOnly, "Largest session timeout for consumer-protocol groups."),
	def("group.consumer.heartbeat.interval.ms", TypeInt, "5000", atLeast(1), ReadOnly, "Heartbeat interval given to consumer-protocol group members."),
	def("group.consumer.min.heartbeat.interval.ms", TypeInt, "5000", atLeast(1), ReadOnly, "Smallest heartbeat interval for consumer-protocol groups."),
	def("group.consumer.max.heartbeat.interval.ms", TypeInt, "15000", atLeast(1), ReadOnly, "Largest heartbeat interval for consumer-protocol groups."),
	def("group.consumer.max.size", TypeInt, maxInt, atLeast(1), ReadOnly, "Maximum members of a consumer-protocol group."),
	def("group.consumer.assignors", TypeList, "uniform,range", listIn(false, "uniform", "range"), ReadOnly, "Server-side assignors of consumer-protocol groups; the first is the default."),

	// Transactions and producer state.
	def("transaction.state.log.num.partitions", TypeInt, "50", atLeast(1), ReadOnly, "Partitions of the __transaction_state topic; do not change after deployment."),
	def("transaction.state.log.replication.factor", TypeShort, "3", atLeast(1), ReadOnly, "Replication factor of the __transaction_state topic."),
	def("transaction.state.log.min.isr", TypeInt, "2", atLeast(1), ReadOnly, "min.insync.replicas of the __transaction_state topic."),
	def("transaction.state.log.segment.bytes", TypeInt, "104857600", atLeast(1), ReadOnly, "Segment size of the __transaction_state topic."),
	ignored(def("transaction.state.log.load.buffer.size", TypeInt, "5242880", atLeast(1), ReadOnly, "Read batch size when loading transactions from the log."), reasonLoadBuffer),
	def("transaction.max.timeout.ms", TypeInt, "900000", atLeast(1), ReadOnly, "Largest transaction timeout a producer may request."),
	def("transactional.id.expiration.ms", TypeInt, "604800000", atLeast(1), ReadOnly, "Idle time after which a transactional id expires."),
	def("transaction.abort.timed.out.transaction.cleanup.interval.ms", TypeInt, "10000", atLeast(1), ReadOnly, "How often timed-out transactions are aborted."),
	def("transaction.remove.expired.transaction.cleanup.interval.ms", TypeInt, "3600000", atLeast(1), ReadOnly, "How often expired transactional ids are removed."),
	startupOnly(def("transaction.partition.verification.enable", TypeBoolean, "true", nil, ClusterWide, "Check that a partition joined the transaction before accepting transactional writes.")),
	def(KeyProducerIDExpiration, TypeInt, "86400000", atLeast(1), ClusterWide, "Idle time after which a partition leader forgets a producer id."),

	// Client quotas.
	def("quota.window.num", TypeInt, "11", atLeast(1), ReadOnly, "Samples kept for client quotas."),
	def("quota.window.size.seconds", TypeInt, "1", atLeast(1), ReadOnly, "Length of one client quota sample."),
	def("replication.quota.window.num", TypeInt, "11", atLeast(1), ReadOnly, "Samples kept for replication quotas."),
	def("replication.quota.window.size.seconds", TypeInt, "1", atLeast(1), ReadOnly, "Length of one replication quota sample."),

	// weir-specific keys (no Kafka equivalent).
	def(KeyMetricsListener, TypeString, "", metricsListenerValidator, ReadOnly, "weir: address of the Prometheus /metrics endpoint, host:port or http://host:port; empty disables it."),
	def(KeyConsoleListener, TypeString, "", consoleListenerValidator, ReadOnly, "weir: address of the web console, host:port or http://host:port; empty disables it. The console is a Kafka client of this node's broker listener (a SASL one if the node has one, else PLAINTEXT): with SASL its users log in with their PLAIN or SCRAM credentials and every read and action goes through the broker's authentication and ACLs."),
	def(KeyLogOpenFilesMax, TypeInt, "8192", atLeast(16), ReadOnly, "weir: most segment files (.log, .index, .timeindex) the broker keeps open; files of idle segments are closed, least recently used first, and opened again on use. When RLIMIT_NOFILE cannot hold it and 1,024 more files (connections, checkpoints), the broker keeps fewer and warns."),
	def(KeyMetricsAggregation, TypeString, "partition", in("partition", "topic"), ReadOnly, "weir: the finest level of the per-partition metric families (kafka_log_log_*, the follower lag kafka_server_fetcherlagmetrics_consumerlag and the consumer lag weir_group_consumer_lag): partition gives a series per partition, as Kafka's MBeans; topic sums each topic's partitions into one series without the partition label, so that a broker with 10^5 partitions keeps its endpoint small."),
	def(KeyFastFencing, TypeBoolean, "true", nil, ReadOnly, "weir: the active controller fences a broker at once, without waiting for broker.session.timeout.ms, when the connection its heartbeats come on closes (or when the controller takes over) and nothing listens at its address; false waits for the session, as Kafka does."),
}
