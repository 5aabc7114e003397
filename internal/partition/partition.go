// Package partition is one replica of a partition on this broker: the log,
// the leader epoch, the ISR as the controller last published it, the high
// watermark, and the produce requests waiting for it (acks=all) and the
// fetches waiting for new data.
//
// The leader's high watermark is the smallest log end offset among the ISR
// and only moves forward. Records at or above it are never shown to
// consumers.
package partition

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"weir/internal/config"
	"weir/internal/log"
	"weir/internal/metrics"
	"weir/internal/quota"
	"weir/internal/record"
)

// Errors, each one Kafka error code (see kafka/errors.go).
var (
	ErrNotLeader                    = errors.New("partition: not the leader")                                      // NOT_LEADER_OR_FOLLOWER
	ErrFencedLeaderEpoch            = errors.New("partition: leader epoch is newer than the request's")            // FENCED_LEADER_EPOCH
	ErrUnknownLeaderEpoch           = errors.New("partition: leader epoch is older than the request's")            // UNKNOWN_LEADER_EPOCH
	ErrNotEnoughReplicas            = errors.New("partition: ISR smaller than min.insync.replicas")                // NOT_ENOUGH_REPLICAS
	ErrNotEnoughReplicasAfterAppend = errors.New("partition: ISR shrank below min.insync.replicas after append")   // NOT_ENOUGH_REPLICAS_AFTER_APPEND
	ErrStorage                      = errors.New("partition: storage error")                                       // KAFKA_STORAGE_ERROR
	ErrPolicyViolation              = errors.New("partition: records of a compacted-only topic cannot be deleted") // POLICY_VIOLATION
)

// State is the partition's registration in the metadata image.
type State struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// Recovering is set after an unclean election (leader recovery
	// state RECOVERING); the new leader clears it with its first ISR
	// change.
	Recovering bool
	// Mirror is the mirror state of the topic (mirror.go).
	Mirror MirrorState
}

// settings is the topic configuration as the partition uses it.
type settings struct {
	policy    record.Policy
	minISR    int
	logAppend bool
	// This replica is listed in leader.replication.throttled.replicas
	// and follower.replication.throttled.replicas.
	leaderThrottled, followerThrottled bool
}

// Partition is one replica. See the package comment.
type Partition struct {
	tp      log.TopicPartition
	topicID [16]byte
	self    int32
	log     *log.Log
	lg      *slog.Logger
	now     func() time.Time
	cfg     atomic.Pointer[settings]
	// stats are the topic's BrokerTopicMetrics (nil without metrics),
	// set before the partition is published and never changed.
	stats *metrics.TopicCounters

	// leaderMu orders leadership changes (Apply, exclusive) against
	// appends (shared, across the write). Lock order: leaderMu, then mu.
	leaderMu    sync.RWMutex
	mu          sync.Mutex
	state       State
	applied     bool // state came from the metadata image
	leader      bool
	replication atomic.Pointer[Replication]
	// Leader side (see leader.go): the followers' progress, the log end
	// when this leadership began, and an ISR change awaiting the
	// controller.
	followers  map[int32]*follower
	epochStart int64
	pending    *IsrChange
	// sourceHW caps the high watermark of a read-only mirror: the
	// source's high watermark as of the link fetcher's last answer.
	sourceHW   int64
	ackWaiters []*ackWaiter // sorted by offset
	watchers   map[*Watcher]*watch
	// The watchers' byte counts (read.go): the bytes appended, those the
	// high watermark has passed, and the appended ranges above it.
	appendedBytes, hwBytes int64
	marks                  []byteMark
}

// New wraps an open log as a replica of tp on broker self.
func New(tp log.TopicPartition, topicID [16]byte, self int32, l *log.Log, topic config.Topic, lg *slog.Logger, now func() time.Time) *Partition {
	p := &Partition{tp: tp, topicID: topicID, self: self, log: l, lg: lg.With("partition", tp.String()), now: now,
		watchers: map[*Watcher]*watch{}}
	p.SetConfig(topic)
	return p
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() log.TopicPartition { return p.tp }

// Stats are the BrokerTopicMetrics counters of the partition's topic on
// this broker (nil: not counted; their methods then do nothing).
func (p *Partition) Stats() *metrics.TopicCounters { return p.stats }

// TopicID is the id of the partition's topic.
func (p *Partition) TopicID() [16]byte { return p.topicID }

// Log is the partition's log.
func (p *Partition) Log() *log.Log { return p.log }

// SetConfig applies a topic configuration change.
func (p *Partition) SetConfig(t config.Topic) {
	s := &settings{minISR: t.MinInsyncReplicas, logAppend: t.MessageTimestampType == config.LogAppendTime,
		leaderThrottled:   quota.Listed(t.LeaderThrottledReplicas, p.tp.Partition, p.self),
		followerThrottled: quota.Listed(t.FollowerThrottledReplicas, p.tp.Partition, p.self)}
	s.policy = record.Policy{
		MaxBatchBytes:      int(t.MaxMessageBytes),
		Compacted:          t.CleanupPolicy.Compact,
		LogAppendTime:      s.logAppend,
		TimestampBeforeMax: t.TimestampBeforeMaxMs,
		TimestampAfterMax:  t.TimestampAfterMaxMs,
	}
	if t.CompressionType != "producer" {
		if c, err := record.ParseCodec(t.CompressionType); err == nil {
			s.policy.Recompress, s.policy.Codec = true, c
			switch c {
			case record.Gzip:
				s.policy.CompressionLevel = int(t.CompressionGzipLevel)
			case record.LZ4:
				s.policy.CompressionLevel = int(t.CompressionLz4Level)
			case record.Zstd:
				s.policy.CompressionLevel = int(t.CompressionZstdLevel)
			}
		}
	}
	p.cfg.Store(s)
	p.log.SetConfig(LogConfig(t))
}

// LogConfig maps a topic configuration to the log's.
func LogConfig(t config.Topic) log.Config {
	c := log.DefaultConfig()
	c.SegmentBytes = t.SegmentBytes
	c.SegmentMs = t.SegmentMs
	c.SegmentJitterMs = t.SegmentJitterMs
	c.IndexIntervalBytes = int64(t.IndexIntervalBytes)
	c.SegmentIndexBytes = int64(t.SegmentIndexBytes)
	c.RetentionMs = t.RetentionMs
	c.RetentionBytes = t.RetentionBytes
	c.Delete = t.CleanupPolicy.Delete
	c.Compact = t.CleanupPolicy.Compact
	c.DeleteRetentionMs = t.DeleteRetentionMs
	c.MinCompactionLagMs = t.MinCompactionLagMs
	c.MaxCompactionLagMs = t.MaxCompactionLagMs
	c.MinCleanableRatio = t.MinCleanableDirtyRatio
	c.FlushMessages = t.FlushMessages
	c.FlushMs = t.FlushMs
	c.FileDeleteDelayMs = t.FileDeleteDelayMs
	c.ProducerExpiryMs = t.ProducerIDExpirationMs
	return c
}

// Apply installs the partition's state from a new metadata image. If this
// broker just became leader, the new epoch is recorded in the log's epoch
// lineage before any append in it. A state older than the current one (by
// leader epoch, then partition epoch) is ignored: an ISR change the
// controller answered directly may be ahead of the image.
func (p *Partition) Apply(st State) error {
	p.leaderMu.Lock()
	defer p.leaderMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.applied && (st.LeaderEpoch < p.state.LeaderEpoch ||
		st.LeaderEpoch == p.state.LeaderEpoch && st.PartitionEpoch < p.state.PartitionEpoch) {
		return nil // stale
	}
	// The log rebuilds its producer state knowing which producers are
	// another cluster's (a promoted mirror's source).
	ownFrom := int32(-1)
	if st.Mirror.Stopped {
		ownFrom = st.Mirror.StopEpoch
	}
	if err := p.log.SetOwnProducersFrom(ownFrom); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	wasLeader, oldEpoch, oldPartitionEpoch, oldISR := p.leader, p.state.LeaderEpoch, p.state.PartitionEpoch, p.state.ISR
	wasMirror := p.applied && p.state.Mirror.ReadOnly
	p.state, p.applied = st, true
	p.leader = st.Leader == p.self
	newLeadership := p.leader && (!wasLeader || st.LeaderEpoch != oldEpoch)
	if newLeadership {
		// A new mirror leader exposes nothing past what was committed
		// until the source's high watermark is known again.
		p.sourceHW = p.log.HighWatermark()
	}
	if p.leader && wasMirror && !st.Mirror.ReadOnly {
		if err := p.endMirrorLocked(); err != nil {
			return err
		}
	}
	// A read-only mirror's lineage is the source's epochs (mirror.go).
	if p.leader && !st.Mirror.ReadOnly && (!wasLeader || st.LeaderEpoch > p.log.LatestEpoch()) {
		if err := p.log.AssignEpoch(st.LeaderEpoch); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	switch {
	case p.leader:
		if !newLeadership && st.PartitionEpoch != oldPartitionEpoch {
			p.countISRChangeLocked(oldISR, st.ISR)
		}
		p.resetFollowersLocked(newLeadership)
		if st.PartitionEpoch != oldPartitionEpoch {
			// A proposal based on the old partition epoch is void.
			p.pending = nil
		}
		if st.Recovering && p.pending == nil && p.repl().AlterISR != nil {
			// Nothing to recover but the state itself: proposing the
			// current ISR marks the partition recovered.
			p.proposeISRLocked(p.state.ISR)
		}
		p.maybeAdvanceHWLocked()
	default:
		p.followers, p.pending = nil, nil
		p.failWaitersLocked(ErrNotLeader)
	}
	p.notifyLocked()
	return nil
}

// LeaderThrottled reports whether replication from this leader to
// follower counts against the leader-side replication quota: the replica
// is listed in leader.replication.throttled.replicas and the follower is
// not in the ISR.
func (p *Partition) LeaderThrottled(follower int32) bool {
	if !p.cfg.Load().leaderThrottled {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !slices.Contains(p.state.ISR, follower)
}

// FollowerThrottled reports whether this follower's fetching counts
// against the follower-side replication quota: it is listed in
// follower.replication.throttled.replicas and not in the ISR.
func (p *Partition) FollowerThrottled() bool {
	if !p.cfg.Load().followerThrottled {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !slices.Contains(p.state.ISR, p.self)
}

// State returns the partition's current metadata state.
func (p *Partition) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

// checkEpochLocked validates a client's leader epoch (KIP-320); -1 skips it.
// Like Kafka's Partition.getLocalLog, callers check it before leadership,
// so a stale client hears FENCED_LEADER_EPOCH even from a follower.
func (p *Partition) checkEpochLocked(epoch int32) error {
	switch {
	case epoch < 0 || epoch == p.state.LeaderEpoch:
		return nil
	case epoch < p.state.LeaderEpoch:
		return ErrFencedLeaderEpoch
	default:
		return ErrUnknownLeaderEpoch
	}
}

// HighWatermark is the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }
