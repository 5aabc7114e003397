package group

import (
	"crypto/rand"
	"fmt"
	"math"
	"time"
)

// Config holds the broker settings the coordinator obeys. Kafka's key for
// each field is in its comment; DefaultConfig gives Kafka's defaults.
type Config struct {
	// OffsetsTopicPartitions is offsets.topic.num.partitions; it decides which
	// __consumer_offsets partition (and so which coordinator) owns a group.
	OffsetsTopicPartitions int32
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long a
	// rebalance that starts from an Empty group waits for more members.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout are group.min.session.timeout.ms
	// and group.max.session.timeout.ms; a JoinGroup outside them gets
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// MaxSize is group.max.size.
	MaxSize int
	// NewMemberJoinTimeout bounds how long a JoinGroup of a member that has
	// never completed a join may wait (Kafka's fixed 5 minutes).
	NewMemberJoinTimeout time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes. Like Kafka, it is
	// compared with the metadata's length in UTF-16 code units.
	OffsetMetadataMaxBytes int
	// OffsetsRetention is offsets.retention.minutes.
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms.
	OffsetsRetentionCheckInterval time.Duration
	// NewUUID returns the random part of generated member ids. Nil uses a
	// random version-4 UUID; tests pass a deterministic sequence.
	NewUUID func() string
	// Consumer holds the group.consumer.* settings of consumer groups
	// (KIP-848); zero fields take Kafka's defaults.
	Consumer ConsumerConfig
	// Stats, when set, receives the coordinator's metrics (stats.go).
	Stats *Stats
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		OffsetsTopicPartitions:        50,
		InitialRebalanceDelay:         3 * time.Second,
		MinSessionTimeout:             6 * time.Second,
		MaxSessionTimeout:             30 * time.Minute,
		MaxSize:                       math.MaxInt32,
		NewMemberJoinTimeout:          5 * time.Minute,
		OffsetMetadataMaxBytes:        4096,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		Consumer:                      DefaultConsumerConfig(),
	}
}

// randomUUID formats 16 random bytes as a version-4 UUID, the form of
// java.util.UUID.randomUUID().toString() that Kafka puts in member ids.
func randomUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("group: reading random bytes: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
