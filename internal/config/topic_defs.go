package config

// Topic key registry. Defaults and validators follow Kafka 4.x LogConfig;
// Synonyms list the broker keys that supply each server-side default, in
// Kafka's ServerTopicConfigSynonyms order.

// Topic key names used by the code in this package.
const (
	TopicSegmentBytes          = "segment.bytes"
	TopicSegmentMs             = "segment.ms"
	TopicSegmentJitterMs       = "segment.jitter.ms"
	TopicSegmentIndexBytes     = "segment.index.bytes"
	TopicFlushMessages         = "flush.messages"
	TopicFlushMs               = "flush.ms"
	TopicRetentionBytes        = "retention.bytes"
	TopicRetentionMs           = "retention.ms"
	TopicMaxMessageBytes       = "max.message.bytes"
	TopicIndexIntervalBytes    = "index.interval.bytes"
	TopicDeleteRetentionMs     = "delete.retention.ms"
	TopicMinCompactionLagMs    = "min.compaction.lag.ms"
	TopicMaxCompactionLagMs    = "max.compaction.lag.ms"
	TopicFileDeleteDelayMs     = "file.delete.delay.ms"
	TopicMinCleanableRatio     = "min.cleanable.dirty.ratio"
	TopicCleanupPolicy         = "cleanup.policy"
	TopicUncleanLeaderElection = "unclean.leader.election.enable"
	TopicMinInsyncReplicas     = "min.insync.replicas"
	TopicCompressionType       = "compression.type"
	TopicGzipLevel             = "compression.gzip.level"
	TopicLz4Level              = "compression.lz4.level"
	TopicZstdLevel             = "compression.zstd.level"
	TopicPreallocate           = "preallocate"
	TopicTimestampType         = "message.timestamp.type"
	TopicTimestampBeforeMaxMs  = "message.timestamp.before.max.ms"
	TopicTimestampAfterMaxMs   = "message.timestamp.after.max.ms"
	TopicLeaderThrottled       = "leader.replication.throttled.replicas"
	TopicFollowerThrottled     = "follower.replication.throttled.replicas"
	TopicRemoteStorageEnable   = "remote.storage.enable"
	TopicLocalRetentionMs      = "local.retention.ms"
	TopicLocalRetentionBytes   = "local.retention.bytes"
	TopicRemoteCopyDisable     = "remote.log.copy.disable"
	TopicRemoteDeleteOnDisable = "remote.log.delete.on.disable"
)

// topicDef builds a topic key definition with its broker synonyms.
func topicDef(name string, t Type, dflt string, v validator, synonyms []Synonym, doc string) Def {
	d := def(name, t, dflt, v, ReadOnly, doc)
	d.Synonyms = synonyms
	return d
}

var topicRegistry = newRegistry(withRetention([]Def{
	topicDef(TopicSegmentBytes, TypeInt, "1073741824", atLeast(1024*1024), syn("log.segment.bytes"), "Maximum size of one log segment file."),
	topicDef(TopicSegmentMs, TypeLong, "604800000", atLeast(1), []Synonym{{"log.roll.ms", 1}, {"log.roll.hours", msPerHour}}, "Maximum age of the active segment before it is rolled."),
	topicDef(TopicSegmentJitterMs, TypeLong, "0", atLeast(0), []Synonym{{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", msPerHour}}, "Maximum random jitter subtracted from the roll time."),
	topicDef(TopicSegmentIndexBytes, TypeInt, "10485760", atLeast(4), syn("log.index.size.max.bytes"), "Maximum size of the offset index of a segment."),
	topicDef(TopicFlushMessages, TypeLong, maxLong, atLeast(1), syn("log.flush.interval.messages"), "Messages appended before the log is fsynced."),
	topicDef(TopicFlushMs, TypeLong, maxLong, atLeast(0), syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"), "Longest time appended data stays unflushed."),
	topicDef(TopicRetentionBytes, TypeLong, "-1", nil, syn("log.retention.bytes"), "Maximum partition size before old segments are deleted; -1 means no limit."),
	topicDef(TopicRetentionMs, TypeLong, "604800000", atLeast(-1), []Synonym{{"log.retention.ms", 1}, {"log.retention.minutes", msPerMinute}, {"log.retention.hours", msPerHour}}, "How long data is kept before old segments are deleted; -1 keeps forever."),
	topicDef(TopicMaxMessageBytes, TypeInt, "1048588", atLeast(0), syn("message.max.bytes"), "Largest record batch accepted, after compression."),
	topicDef(TopicIndexIntervalBytes, TypeInt, "4096", atLeast(0), syn("log.index.interval.bytes"), "Bytes between two offset index entries."),
	topicDef(TopicDeleteRetentionMs, TypeLong, "86400000", atLeast(0), syn("log.cleaner.delete.retention.ms"), "How long tombstones are kept in a compacted topic."),
	topicDef(TopicMinCompactionLagMs, TypeLong, "0", atLeast(0), syn("log.cleaner.min.compaction.lag.ms"), "Minimum age of a record before it can be compacted."),
	topicDef(TopicMaxCompactionLagMs, TypeLong, maxLong, atLeast(1), syn("log.cleaner.max.compaction.lag.ms"), "Maximum age of a record before it must become eligible for compaction."),
	topicDef(TopicFileDeleteDelayMs, TypeLong, "60000", atLeast(0), syn("log.segment.delete.delay.ms"), "Wait before a deleted segment file is removed from disk."),
	topicDef(TopicMinCleanableRatio, TypeDouble, "0.5", betweenFloat(0, 1), syn("log.cleaner.min.cleanable.ratio"), "Dirty to total ratio that makes the log eligible for compaction."),
	topicDef(TopicCleanupPolicy, TypeList, "delete", listIn(true, "compact", "delete"), syn("log.cleanup.policy"), "How old segments are cleaned: delete, compact, or both."),
	topicDef(TopicUncleanLeaderElection, TypeBoolean, "false", nil, syn("unclean.leader.election.enable"), "Allow out-of-sync replicas to become leader, at the risk of data loss."),
	topicDef(TopicMinInsyncReplicas, TypeInt, "1", atLeast(1), syn("min.insync.replicas"), "In-sync replicas required to acknowledge an acks=all write."),
	topicDef(TopicCompressionType, TypeString, "producer", in(compressionTypes...), syn("compression.type"), "Compression stored on disk; producer keeps the producer's codec."),
	topicDef(TopicGzipLevel, TypeInt, "-1", gzipLevel, syn("compression.gzip.level"), "Gzip level used when compression.type is gzip."),
	topicDef(TopicLz4Level, TypeInt, "9", between(lz4MinLevel, lz4MaxLevel), syn("compression.lz4.level"), "LZ4 level used when compression.type is lz4."),
	topicDef(TopicZstdLevel, TypeInt, "3", between(zstdMinLevel, zstdMaxLevel), syn("compression.zstd.level"), "Zstandard level used when compression.type is zstd."),
	ignored(topicDef(TopicPreallocate, TypeBoolean, "false", nil, syn("log.preallocate"), "Preallocate segment files when they are created."), reasonPreallocate),
	topicDef(TopicTimestampType, TypeString, "CreateTime", in("CreateTime", "LogAppendTime"), syn("log.message.timestamp.type"), "Record timestamps: the producer's CreateTime or the broker's LogAppendTime."),
	topicDef(TopicTimestampBeforeMaxMs, TypeLong, maxLong, atLeast(0), syn("log.message.timestamp.before.max.ms"), "How far in the past a CreateTime timestamp may be."),
	topicDef(TopicTimestampAfterMaxMs, TypeLong, "3600000", atLeast(0), syn("log.message.timestamp.after.max.ms"), "How far in the future a CreateTime timestamp may be."),
	topicDef(TopicLeaderThrottled, TypeList, "", throttledReplicas, nil, "Replicas (partition:broker, or *) throttled on the leader side."),
	topicDef(TopicFollowerThrottled, TypeList, "", throttledReplicas, nil, "Replicas (partition:broker, or *) throttled on the follower side."),
	refused(topicDef(TopicRemoteStorageEnable, TypeBoolean, "false", nil, nil, "Tiered storage for the topic."), reasonTieredStorage),
	ignored(topicDef(TopicLocalRetentionMs, TypeLong, "-2", atLeast(-2), syn("log.local.retention.ms"), "Local retention time of a tiered topic; -2 means retention.ms."), reasonTiered),
	ignored(topicDef(TopicLocalRetentionBytes, TypeLong, "-2", atLeast(-2), syn("log.local.retention.bytes"), "Local retention size of a tiered topic; -2 means retention.bytes."), reasonTiered),
	ignored(topicDef(TopicRemoteCopyDisable, TypeBoolean, "false", nil, nil, "Stop copying segments to tiered storage."), reasonTiered),
	ignored(topicDef(TopicRemoteDeleteOnDisable, TypeBoolean, "false", nil, nil, "Delete tiered data when tiered storage is disabled."), reasonTiered),
}))

// withRetention marks retention.ms so that any negative effective value reads
// as -1 (infinite), as Kafka does for the broker's retention settings.
func withRetention(defs []Def) []Def {
	for i := range defs {
		if defs[i].Name == TopicRetentionMs {
			defs[i].negInfinite = true
		}
	}
	return defs
}
