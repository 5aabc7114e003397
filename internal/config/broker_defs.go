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
	KeyFastFencing             = "weir.fast.fencing.enable"
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

var brokerCoreDefs = []Def{
	// Node identity and KRaft.
	def(KeyProcessRoles, TypeList, DefaultProcessRoles, listIn(false, "broker", "controller"), ReadOnly, "Roles of this process: broker, controller, or both (weir: both by default)."),
	def(KeyNodeID, TypeInt, DefaultNodeID, atLeast(0), ReadOnly, "Id of this node in the cluster (weir: 1 by default)."),
	def(KeyBrokerID, TypeInt, "-1", nil, ReadOnly, "Deprecated alias of node.id; must equal node.id when both are set."),
	def("broker.rack", TypeString, nullDefault, nil, ReadOnly, "Rack of the broker, used for rack-aware replica placement."),
	def(KeyControllerListenerNames, TypeList, DefaultControllerListenerNames, nonDuplicateList(false), ReadOnly, "Names of the listeners used by the KRaft controller; brokers use the first one."),
	def(KeyQuorumVoters, TypeList, DefaultQuorumVoters, votersValidator, ReadOnly, "Static controller quorum as id@host:port entries (weir: 1@localhost:9093)."),
	def(KeyQuorumBootstrapServers, TypeList, "", bootstrapServersValidator, ReadOnly, "Controller endpoints (host:port) used to discover a dynamic quorum."),
	def("controller.quorum.election.timeout.ms", TypeInt, "1000", nil, ReadOnly, "Time without a leader before a voter starts an election."),
	def("controller.quorum.fetch.timeout.ms", TypeInt, "2000", nil, ReadOnly, "Time without a successful fetch from the leader before a voter becomes a candidate."),
	def("controller.quorum.election.backoff.max.ms", TypeInt, "1000", nil, ReadOnly, "Upper bound of the randomized backoff between elections."),
	def("controller.quorum.append.linger.ms", TypeInt, "25", nil, ReadOnly, "How long the quorum leader batches writes before flushing them."),
	def("controller.quorum.request.timeout.ms", TypeInt, "2000", nil, ReadOnly, "Timeout of requests between quorum members."),
	def("controller.quorum.retry.backoff.ms", TypeInt, "20", nil, ReadOnly, "Wait before retrying a failed quorum request."),
	def("broker.heartbeat.interval.ms", TypeInt, "2000", nil, ReadOnly, "Interval between broker heartbeats to the controller."),
	def("broker.session.timeout.ms", TypeInt, "9000", nil, ReadOnly, "How long a broker stays registered without heartbeats."),
	def("initial.broker.registration.timeout.ms", TypeInt, "60000", nil, ReadOnly, "How long a starting broker waits to register before giving up."),
	def(KeyMetadataLogDir, TypeString, nullDefault, nil, ReadOnly, "Directory of the metadata log; defaults to the first log directory."),
	def("metadata.log.max.record.bytes.between.snapshots", TypeLong, "20971520", atLeast(1), ReadOnly, "Metadata log bytes after the latest snapshot that trigger a new snapshot."),
	def("metadata.log.max.snapshot.interval.ms", TypeLong, "3600000", atLeast(0), ReadOnly, "Longest time before uncovered committed metadata is snapshotted; 0 disables."),
	def("metadata.log.segment.bytes", TypeInt, "1073741824", atLeast(12), ReadOnly, "Maximum size of one metadata log segment."),
	def("metadata.log.segment.ms", TypeLong, "604800000", nil, ReadOnly, "Maximum age of a metadata log segment before it is rolled."),
	def("metadata.max.retention.bytes", TypeLong, "104857600", nil, ReadOnly, "Soft size limit of metadata log plus snapshots."),
	def("metadata.max.retention.ms", TypeLong, "604800000", nil, ReadOnly, "Soft age limit of metadata log segments and snapshots."),
	def("metadata.max.idle.interval.ms", TypeInt, "500", atLeast(0), ReadOnly, "How often an idle active controller appends a no-op record; 0 disables."),

	// Networking.
	def(KeyListeners, TypeList, DefaultListeners, listenersValidator, PerBroker, "Addresses to listen on as NAME://host:port; an empty host binds all interfaces."),
	def(KeyAdvertisedListeners, TypeList, nullDefault, listenersValidator, ReadOnly, "Addresses published to clients; defaults to the non-controller listeners."),
	def(KeyListenerSecurityMap, TypeString, DefaultSecurityProtocolMap, protocolMapValidator, PerBroker, "Security protocol of each listener name, as NAME:PROTOCOL pairs."),
	def(KeyInterBrokerListenerName, TypeString, nullDefault, nil, ReadOnly, "Listener used between brokers; defaults to the one named by security.inter.broker.protocol."),
	def(KeyInterBrokerProtocol, TypeString, "PLAINTEXT", in(securityProtocols...), ReadOnly, "Security protocol between brokers; exclusive with inter.broker.listener.name."),
	// weir defaults to -1 where Kafka sets 102400: a fixed buffer turns off
	// the kernel's autotuning, and 100 KiB windows cut produce throughput
	// of megabyte requests by a third even on loopback.
	def("socket.send.buffer.bytes", TypeInt, "-1", nil, ReadOnly, "SO_SNDBUF of server sockets; -1 (weir's default; Kafka's is 102400) keeps the kernel's autotuning."),
	def("socket.receive.buffer.bytes", TypeInt, "-1", nil, ReadOnly, "SO_RCVBUF of server sockets; -1 (weir's default; Kafka's is 102400) keeps the kernel's autotuning."),
	def("socket.request.max.bytes", TypeInt, "104857600", atLeast(1), ReadOnly, "Largest request the server accepts."),
	def("socket.listen.backlog.size", TypeInt, "50", atLeast(1), ReadOnly, "Maximum number of pending connections per listening socket."),
	def("max.connections", TypeInt, maxInt, atLeast(0), ClusterWide, "Maximum number of connections across all listeners."),
	def("max.connections.per.ip", TypeInt, maxInt, atLeast(0), ClusterWide, "Maximum number of connections from one IP address."),
	def("max.connections.per.ip.overrides", TypeString, "", nil, ClusterWide, "Per host or IP connection limits as host:count pairs."),
	def("max.connection.creation.rate", TypeInt, maxInt, atLeast(0), ClusterWide, "Maximum new connections per second across the broker."),
	def("connections.max.idle.ms", TypeLong, "600000", nil, ReadOnly, "Idle connections are closed after this long."),
	def("connection.failed.authentication.delay.ms", TypeInt, "100", atLeast(0), ReadOnly, "Delay before closing a connection that failed authentication."),
	def("queued.max.requests", TypeInt, "500", atLeast(1), ReadOnly, "Requests queued before network threads stop reading."),
	def("queued.max.request.bytes", TypeLong, "-1", nil, ReadOnly, "Bytes of queued requests before reading stops; -1 means no limit."),
	def("num.network.threads", TypeInt, "3", atLeast(1), ClusterWide, "Threads per listener that read requests and write responses."),
	def("num.io.threads", TypeInt, "8", atLeast(1), ClusterWide, "Threads that process requests."),
	def("background.threads", TypeInt, "10", atLeast(1), ClusterWide, "Threads for background tasks."),
	def("request.timeout.ms", TypeInt, "30000", nil, ReadOnly, "Timeout of requests the broker sends to other nodes."),

	// Requests and topics.
	def("message.max.bytes", TypeInt, "1048588", atLeast(0), ClusterWide, "Largest record batch accepted (topic override: max.message.bytes)."),
	def("fetch.max.bytes", TypeInt, "57671680", atLeast(1024), ReadOnly, "Largest response returned for a fetch request."),
	def("max.incremental.fetch.session.cache.slots", TypeInt, "1000", atLeast(0), ReadOnly, "Maximum number of incremental fetch sessions kept."),
	def("auto.create.topics.enable", TypeBoolean, "true", nil, ReadOnly, "Create unknown topics when clients ask for them."),
	def("delete.topic.enable", TypeBoolean, "true", nil, ReadOnly, "Allow topics to be deleted."),
	def("num.partitions", TypeInt, "1", atLeast(1), ReadOnly, "Partition count of automatically created topics."),
	def("default.replication.factor", TypeInt, "1", between(1, 32767), ReadOnly, "Replication factor of automatically created topics."),
	def("controlled.shutdown.enable", TypeBoolean, "true", nil, ReadOnly, "Move leadership away before shutting down."),

	// Replication.
	def("replica.lag.time.max.ms", TypeLong, "30000", nil, ReadOnly, "A follower that has not caught up for this long leaves the ISR."),
	def("replica.socket.timeout.ms", TypeInt, "30000", nil, ReadOnly, "Socket timeout of follower fetches; at least replica.fetch.wait.max.ms."),
	def("replica.socket.receive.buffer.bytes", TypeInt, "65536", nil, ReadOnly, "Socket receive buffer of follower fetch connections."),
	def("replica.fetch.max.bytes", TypeInt, "1048576", atLeast(0), ReadOnly, "Bytes a follower tries to fetch per partition (soft limit)."),
	def("replica.fetch.wait.max.ms", TypeInt, "500", nil, ReadOnly, "Maximum wait of a follower fetch; at most replica.lag.time.max.ms."),
	def("replica.fetch.min.bytes", TypeInt, "1", nil, ReadOnly, "Minimum bytes a follower fetch waits for."),
	def("replica.fetch.response.max.bytes", TypeInt, "10485760", atLeast(0), ReadOnly, "Bytes a follower expects per fetch response (soft limit)."),
	def("replica.fetch.backoff.ms", TypeInt, "1000", atLeast(0), ReadOnly, "Wait after a follower fetch error."),
	def("num.replica.fetchers", TypeInt, "1", nil, ClusterWide, "Follower fetcher threads per source broker."),
	def("replica.high.watermark.checkpoint.interval.ms", TypeLong, "5000", nil, ReadOnly, "How often high watermarks are saved to disk."),
	def("auto.leader.rebalance.enable", TypeBoolean, "true", nil, ReadOnly, "Periodically move leadership back to preferred replicas."),
	def("leader.imbalance.per.broker.percentage", TypeInt, "10", nil, ReadOnly, "Leader imbalance per broker, in percent, that triggers a rebalance."),
	def("leader.imbalance.check.interval.seconds", TypeLong, "300", atLeast(1), ReadOnly, "How often leader imbalance is checked."),
	def("unclean.leader.election.enable", TypeBoolean, "false", nil, ClusterWide, "Allow out-of-sync replicas to become leader, at the risk of data loss."),
	def("leader.replication.throttled.rate", TypeLong, maxLong, atLeast(0), ClusterWide, "Bytes/s limit of leader-side replication of throttled replicas."),
	def("follower.replication.throttled.rate", TypeLong, maxLong, atLeast(0), ClusterWide, "Bytes/s limit of follower-side replication of throttled replicas."),
	def("replica.alter.log.dirs.io.max.bytes.per.second", TypeLong, maxLong, atLeast(0), ClusterWide, "Bytes/s limit of moving replicas between log directories."),

	// Group coordinator.
	def("offsets.topic.num.partitions", TypeInt, "50", atLeast(1), ReadOnly, "Partitions of the __consumer_offsets topic; do not change after deployment."),
	def("offsets.topic.replication.factor", TypeShort, "3", atLeast(1), ReadOnly, "Replication factor of the __consumer_offsets topic."),
	def("offsets.topic.segment.bytes", TypeInt, "104857600", atLeast(1), ReadOnly, "Segment size of the __consumer_offsets topic."),
	def("offsets.topic.compression.codec", TypeInt, "0", between(0, 4), ReadOnly, "Compression codec id used for the __consumer_offsets topic."),
	def("offsets.load.buffer.size", TypeInt, "5242880", atLeast(1), ReadOnly, "Read batch size when loading groups from the offsets topic."),
	def("offsets.commit.timeout.ms", TypeInt, "5000", atLeast(1), ReadOnly, "How long a commit waits for offsets-topic replication."),
	def("offsets.retention.minutes", TypeInt, "10080", atLeast(1), ReadOnly, "How long committed offsets of empty or unsubscribed groups are kept."),
	def("offsets.retention.check.interval.ms", TypeLong, "600000", atLeast(1), ReadOnly, "How often expired offsets are removed."),
	def("offset.metadata.max.bytes", TypeInt, "4096", nil, ReadOnly, "Largest metadata string allowed with an offset commit."),
	def("group.initial.rebalance.delay.ms", TypeInt, "3000", nil, ReadOnly, "Wait for more members before the first rebalance of a new classic group."),
	def("group.min.session.timeout.ms", TypeInt, "6000", nil, ReadOnly, "Smallest session timeout a classic group member may request."),
	def("group.max.session.timeout.ms", TypeInt, "1800000", nil, ReadOnly, "Largest session timeout a classic group member may request."),
	def("group.max.size", TypeInt, maxInt, atLeast(1), ReadOnly, "Maximum members of a classic group."),
	def("group.coordinator.threads", TypeInt, "4", atLeast(1), ReadOnly, "Threads of the group coordinator."),
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
	def("transaction.state.log.load.buffer.size", TypeInt, "5242880", atLeast(1), ReadOnly, "Read batch size when loading transactions from the log."),
	def("transaction.max.timeout.ms", TypeInt, "900000", atLeast(1), ReadOnly, "Largest transaction timeout a producer may request."),
	def("transactional.id.expiration.ms", TypeInt, "604800000", atLeast(1), ReadOnly, "Idle time after which a transactional id expires."),
	def("transaction.abort.timed.out.transaction.cleanup.interval.ms", TypeInt, "10000", atLeast(1), ReadOnly, "How often timed-out transactions are aborted."),
	def("transaction.remove.expired.transaction.cleanup.interval.ms", TypeInt, "3600000", atLeast(1), ReadOnly, "How often expired transactional ids are removed."),
	def("transaction.partition.verification.enable", TypeBoolean, "true", nil, ClusterWide, "Check that a partition joined the transaction before accepting transactional writes."),
	def("producer.id.expiration.ms", TypeInt, "86400000", atLeast(1), ClusterWide, "Idle time after which a partition leader forgets a producer id."),

	// Client quotas.
	def("quota.window.num", TypeInt, "11", atLeast(1), ReadOnly, "Samples kept for client quotas."),
	def("quota.window.size.seconds", TypeInt, "1", atLeast(1), ReadOnly, "Length of one client quota sample."),
	def("replication.quota.window.num", TypeInt, "11", atLeast(1), ReadOnly, "Samples kept for replication quotas."),
	def("replication.quota.window.size.seconds", TypeInt, "1", atLeast(1), ReadOnly, "Length of one replication quota sample."),

	// weir-specific keys (no Kafka equivalent).
	def(KeyMetricsListener, TypeString, "", metricsListenerValidator, ReadOnly, "weir: address of the Prometheus /metrics endpoint, host:port or http://host:port; empty disables it."),
	def(KeyFastFencing, TypeBoolean, "true", nil, ReadOnly, "weir: the active controller fences a broker at once, without waiting for broker.session.timeout.ms, when the connection its heartbeats come on closes (or when the controller takes over) and nothing listens at its address; false waits for the session, as Kafka does."),
}
