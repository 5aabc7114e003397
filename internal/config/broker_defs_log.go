package config

import "errors"

// Broker key registry, part 2: log storage, retention, flushing, compression
// and the log cleaner. Most of these are the server-side defaults of topic
// keys (see topic_defs.go) and, like in Kafka, the highest-priority synonym of
// each topic key is dynamically updatable cluster-wide.

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// Compression level bounds (Kafka's GzipCompression, Lz4Compression and
// ZstdCompression).
const (
	lz4MinLevel  = 1
	lz4MaxLevel  = 17
	zstdMinLevel = -131072
	zstdMaxLevel = 22
)

// cleanerThreads refuses 0, with which Kafka starts no cleaner and never
// compacts: weir's single cleaner would compact anyway.
var cleanerThreads validator = check{"[1,...]", func(v any) error {
	if n, _ := v.(int64); n < 1 {
		return errors.New("weir runs one log cleaner whatever the thread count and refuses 0 (no cleaner); set log.cleaner.enable=false to stop compaction")
	}
	return nil
}}

var brokerLogDefs = []Def{
	// Directories and recovery.
	def(KeyLogDirs, TypeList, nullDefault, nonDuplicateList(false), ReadOnly, "Data directories; when set, log.dir is ignored."),
	def(KeyLogDir, TypeList, DefaultLogDir, nonDuplicateList(false), ReadOnly, "Data directories used when log.dirs is not set (weir: ./data)."),
	startupOnly(def("num.recovery.threads.per.data.dir", TypeInt, "2", atLeast(1), ClusterWide, "Threads per data directory for log recovery at startup and flushing at shutdown.")),

	// Segments and indexes.
	def("log.segment.bytes", TypeInt, "1073741824", atLeast(1024*1024), ClusterWide, "Maximum size of one log segment."),
	def("log.roll.ms", TypeLong, nullDefault, nil, ClusterWide, "Maximum segment age before rolling, in ms; overrides log.roll.hours."),
	def("log.roll.hours", TypeInt, "168", atLeast(1), ReadOnly, "Maximum segment age before rolling, in hours."),
	def("log.roll.jitter.ms", TypeLong, nullDefault, nil, ClusterWide, "Maximum random jitter subtracted from the roll time, in ms; overrides log.roll.jitter.hours."),
	def("log.roll.jitter.hours", TypeInt, "0", atLeast(0), ReadOnly, "Maximum random jitter subtracted from the roll time, in hours."),
	def("log.index.size.max.bytes", TypeInt, "10485760", atLeast(4), ClusterWide, "Maximum size of an offset index file."),
	def("log.index.interval.bytes", TypeInt, "4096", atLeast(0), ClusterWide, "Bytes between two offset index entries."),
	ignored(def("log.preallocate", TypeBoolean, "false", nil, ClusterWide, "Preallocate segment files when they are created."), reasonPreallocate),
	def("log.segment.delete.delay.ms", TypeLong, "60000", atLeast(0), ClusterWide, "Wait before deleting a segment file from disk."),

	// Retention.
	def("log.retention.ms", TypeLong, nullDefault, nil, ClusterWide, "Time to keep log data, in ms; overrides minutes and hours; -1 keeps forever."),
	def("log.retention.minutes", TypeInt, nullDefault, nil, ReadOnly, "Time to keep log data, in minutes; overrides log.retention.hours."),
	def("log.retention.hours", TypeInt, "168", nil, ReadOnly, "Time to keep log data, in hours."),
	def("log.retention.bytes", TypeLong, "-1", nil, ClusterWide, "Maximum size of a partition before old segments are deleted; -1 means no limit."),
	def("log.retention.check.interval.ms", TypeLong, "300000", atLeast(1), ReadOnly, "How often logs are checked for segments to delete."),
	def("log.cleanup.policy", TypeList, "delete", listIn(true, "compact", "delete"), ClusterWide, "Default cleanup policy of topics: delete, compact or both."),
	ignored(def("log.local.retention.ms", TypeLong, "-2", atLeast(-2), ClusterWide, "Local retention time for tiered topics; -2 means use retention.ms."), reasonTiered),
	ignored(def("log.local.retention.bytes", TypeLong, "-2", atLeast(-2), ClusterWide, "Local retention size for tiered topics; -2 means use retention.bytes."), reasonTiered),

	// Tiered storage (issue 27): refused until reads from the store work end
	// to end. The store's keys carry Kafka's RSM prefix (rsm.config., the
	// default of remote.log.storage.manager.impl.prefix) and the names of
	// the common S3 plugin's; internal/objstore implements them.
	refused(def("remote.log.storage.system.enable", TypeBoolean, "false", nil, ReadOnly, "Enable tiered storage on this broker."), reasonTieredStorage),
	refused(def("rsm.config.storage.backend", TypeString, nullDefault, nil, ReadOnly, "weir: the object store of tiered storage, s3 or local (a directory, for development)."), reasonTieredStorage),
	refused(def("rsm.config.storage.local.dir", TypeString, nullDefault, nil, ReadOnly, "weir: the directory of the local object store."), reasonTieredStorage),
	refused(def("rsm.config.key.prefix", TypeString, "", nil, ReadOnly, "Prefix of every object key in the store."), reasonTieredStorage),
	refused(def("rsm.config.storage.s3.bucket.name", TypeString, nullDefault, nil, ReadOnly, "S3 bucket of tiered storage."), reasonTieredStorage),
	refused(def("rsm.config.storage.s3.region", TypeString, nullDefault, nil, ReadOnly, "Region of the S3 bucket; unset lets the client find it."), reasonTieredStorage),
	refused(def("rsm.config.storage.s3.endpoint.url", TypeString, nullDefault, nil, ReadOnly, "URL of an S3-compatible service; unset for AWS S3."), reasonTieredStorage),
	refused(def("rsm.config.storage.s3.path.style.access.enabled", TypeBoolean, "false", nil, ReadOnly, "Address the bucket in the URL's path rather than its host name."), reasonTieredStorage),
	refused(def("rsm.config.storage.s3.multipart.upload.part.size", TypeInt, "16777216", atLeast(5<<20), ReadOnly, "Part size of multi-part uploads (weir: 16 MiB by default)."), reasonTieredStorage),
	refused(def("rsm.config.storage.aws.access.key.id", TypeString, nullDefault, nil, ReadOnly, "Static access key id; unset for the environment, the shared credentials file or the IAM role."), reasonTieredStorage),
	refused(def("rsm.config.storage.aws.secret.access.key", TypePassword, nullDefault, nil, ReadOnly, "Static secret access key."), reasonTieredStorage),

	// Flushing and checkpoints.
	def("log.flush.interval.messages", TypeLong, maxLong, atLeast(1), ClusterWide, "Messages appended to a partition before it is fsynced."),
	def("log.flush.interval.ms", TypeLong, nullDefault, nil, ClusterWide, "Longest time data stays unflushed; defaults to log.flush.scheduler.interval.ms."),
	def("log.flush.scheduler.interval.ms", TypeLong, maxLong, nil, ReadOnly, "How often the flusher checks for logs to flush."),
	def("log.flush.offset.checkpoint.interval.ms", TypeInt, "60000", atLeast(0), ReadOnly, "How often the recovery point of each log is checkpointed."),
	def("log.flush.start.offset.checkpoint.interval.ms", TypeInt, "60000", atLeast(0), ReadOnly, "How often the log start offset of each log is checkpointed."),

	// Timestamps, durability, compression.
	def("log.message.timestamp.type", TypeString, "CreateTime", in("CreateTime", "LogAppendTime"), ClusterWide, "Record timestamps: the producer's CreateTime or the broker's LogAppendTime."),
	def("log.message.timestamp.before.max.ms", TypeLong, maxLong, atLeast(0), ClusterWide, "How far in the past a CreateTime timestamp may be."),
	def("log.message.timestamp.after.max.ms", TypeLong, "3600000", atLeast(0), ClusterWide, "How far in the future a CreateTime timestamp may be."),
	def("min.insync.replicas", TypeInt, "1", atLeast(1), ClusterWide, "In-sync replicas required to acknowledge an acks=all write."),
	def("compression.type", TypeString, "producer", in(compressionTypes...), ClusterWide, "Compression stored on disk; producer keeps the producer's codec."),
	def("compression.gzip.level", TypeInt, "-1", gzipLevel, ClusterWide, "Gzip level used when compression.type is gzip."),
	def("compression.lz4.level", TypeInt, "9", between(lz4MinLevel, lz4MaxLevel), ClusterWide, "LZ4 level used when compression.type is lz4."),
	def("compression.zstd.level", TypeInt, "3", between(zstdMinLevel, zstdMaxLevel), ClusterWide, "Zstandard level used when compression.type is zstd."),

	// Log cleaner (compaction).
	def("log.cleaner.enable", TypeBoolean, "true", nil, ReadOnly, "Run the log cleaner; deprecated, keep it enabled."),
	ignored(def("log.cleaner.threads", TypeInt, "1", cleanerThreads, ClusterWide, "Log cleaner threads."), reasonCleanerThreads),
	refused(def("log.cleaner.io.max.bytes.per.second", TypeDouble, "1.7976931348623157E308", nil, ClusterWide, "Read plus write I/O budget of the cleaner, in bytes per second."), reasonCleanerThrottle),
	startupOnly(def("log.cleaner.dedupe.buffer.size", TypeLong, "134217728", nil, ClusterWide, "Memory for key deduplication across all cleaner threads.")),
	ignored(def("log.cleaner.io.buffer.size", TypeInt, "524288", atLeast(0), ClusterWide, "Memory for cleaner I/O buffers across all cleaner threads."), reasonCleanerIOBuffer),
	startupOnly(def("log.cleaner.io.buffer.load.factor", TypeDouble, "0.9", nil, ClusterWide, "Fill ratio of the dedupe buffer's hash table.")),
	startupOnly(def("log.cleaner.backoff.ms", TypeLong, "15000", atLeast(0), ClusterWide, "Sleep when no log needs cleaning.")),
	def("log.cleaner.min.cleanable.ratio", TypeDouble, "0.5", betweenFloat(0, 1), ClusterWide, "Dirty to total ratio that makes a log eligible for cleaning."),
	def("log.cleaner.delete.retention.ms", TypeLong, "86400000", atLeast(0), ClusterWide, "How long tombstones are kept in compacted topics."),
	def("log.cleaner.min.compaction.lag.ms", TypeLong, "0", atLeast(0), ClusterWide, "Minimum age of a record before it can be compacted."),
	def("log.cleaner.max.compaction.lag.ms", TypeLong, maxLong, atLeast(1), ClusterWide, "Maximum age of a record before it must become eligible for compaction."),
}

var brokerRegistry = newRegistry(append(append(append([]Def{}, brokerCoreDefs...), brokerLogDefs...), brokerSecurityDefs...))
