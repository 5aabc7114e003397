package group

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
)

// OffsetsLog is __consumer_offsets as the Service needs it.
type OffsetsLog interface {
	// Append writes w.Records to partition w.Partition as its leader, in
	// one batch (transactional as w says), and calls done, from any
	// goroutine, once they are committed (the high watermark covers them),
	// with the offset of the first record, or once they have failed. done
	// may be called before Append returns.
	Append(w Write, done func(offset int64, err error))
	// ReadAll returns partition p's records from its log start to its high
	// watermark, in order, control records included.
	ReadAll(p int32) ([]LogRecord, error)
}

// Service runs a Coordinator on a coordinator.Runtime: it answers
// requests through callbacks, appends the coordinator's writes to
// __consumer_offsets, loads partitions when this broker becomes their
// leader, and fires the coordinator's timers. Its methods are safe for
// concurrent use; Elected, Resigned, SetTopics and TxnMarker never block.
type Service struct {
	coord *Coordinator
	rt    *coordinator.Runtime[Write, LogRecord]

	// topics are the SetTopics and UpdateTopics calls not yet applied,
	// folded into one (under mu; nil when none waits): a metadata replay
	// sets topics many times before Run starts.
	mu     sync.Mutex
	topics *topicChanges
}

// topicChanges folds topic updates: a whole set (full), or the changes
// since the last one applied.
type topicChanges struct {
	full    map[string]TopicInfo
	changed map[string]TopicInfo
	removed map[string]bool
}

// NewService returns a service; Run starts it. skipped is told how many
// unreadable records each load of a partition skipped (nil: not counted).
func NewService(cfg Config, log OffsetsLog, lg *slog.Logger, now func() time.Time, skipped func(n int)) *Service {
	c := New(cfg)
	// The coordinator's records are deltas: once a write of a partition
	// has failed, later writes must not reach the log before it has
	// undone them.
	return &Service{coord: c, rt: coordinator.New(coordinator.Config[Write, LogRecord]{
		Topic: "__consumer_offsets", Shard: shard{c}, Log: log, Lg: lg, Now: now, Skipped: skipped, Deltas: true})}
}

// shard is the Coordinator as the runtime drives it.
type shard struct{ *Coordinator }

func (s shard) Load(now time.Time, p, _ int32, recs []LogRecord) (Ready, []error) {
	return s.LoadPartition(now, p, recs)
}
func (s shard) Unload(now time.Time, p int32) Ready { return s.UnloadPartition(now, p) }

// Run serves until ctx is done.
func (s *Service) Run(ctx context.Context) { s.rt.Run(ctx) }

// PartitionFor is the __consumer_offsets partition owning a group.
func (s *Service) PartitionFor(groupID string) int32 { return s.coord.PartitionFor(groupID) }

// Handle submits a request; done receives its response, possibly much
// later (a JoinGroup waits for its rebalance). done must not block.
func (s *Service) Handle(ctx context.Context, clientID, clientHost string, body kmsg.Request, done func(kmsg.Response)) {
	s.handle(ctx, Request{ClientID: clientID, ClientHost: clientHost, Body: body}, done)
}

func (s *Service) handle(ctx context.Context, req Request, done func(kmsg.Response)) {
	s.rt.Request(ctx, done, func(now time.Time, token uint64) Ready {
		req.Token = token
		return s.coord.Handle(now, req)
	})
}

// CommitTxnOffsets is Handle for a TxnOffsetCommit whose write carries the
// KIP-890 check (Write.VerifyTxn and Guard).
func (s *Service) CommitTxnOffsets(ctx context.Context, clientID, clientHost string, r *kmsg.TxnOffsetCommitRequest,
	verify bool, guard uint64, done func(kmsg.Response)) {
	s.handle(ctx, Request{ClientID: clientID, ClientHost: clientHost, Body: r, VerifyTxn: verify, Guard: guard}, done)
}

// Elected tells the service this broker leads __consumer_offsets-p in
// epoch: it loads the partition's groups and serves them once loaded.
func (s *Service) Elected(p, epoch int32) { s.rt.Elected(p, epoch) }

// Resigned tells the service this broker no longer leads
// __consumer_offsets-p.
func (s *Service) Resigned(p int32) { s.rt.Resigned(p) }

// SetTopics gives the coordinator the cluster's topics (name -> id and
// partition count) for KIP-848 assignments; call it with the first
// metadata image, before partitions are loaded, and with every snapshot,
// then UpdateTopics with each change. It keeps topics. Calls made before
// the loop gets to them are folded into one.
func (s *Service) SetTopics(topics map[string]TopicInfo) {
	s.queueTopics(func(tc *topicChanges) { *tc = topicChanges{full: topics} })
}

// UpdateTopics gives the coordinator a metadata change's topics: changed
// (created or changed) and removed (deleted), copied.
func (s *Service) UpdateTopics(changed map[string]TopicInfo, removed []string) {
	s.queueTopics(func(tc *topicChanges) {
		for name, t := range changed {
			if tc.full != nil {
				tc.full[name] = t
			} else {
				tc.changed[name] = t
				delete(tc.removed, name)
			}
		}
		for _, name := range removed {
			if tc.full != nil {
				delete(tc.full, name)
			} else {
				delete(tc.changed, name)
				tc.removed[name] = true
			}
		}
	})
}

// queueTopics folds a topic update into the pending one, and has the
// loop apply it unless it already will.
func (s *Service) queueTopics(fold func(*topicChanges)) {
	s.mu.Lock()
	queued := s.topics != nil
	if !queued {
		s.topics = &topicChanges{changed: map[string]TopicInfo{}, removed: map[string]bool{}}
	}
	fold(s.topics)
	s.mu.Unlock()
	if queued {
		return
	}
	s.rt.Do(func(now time.Time) Ready {
		s.mu.Lock()
		tc := s.topics
		s.topics = nil
		s.mu.Unlock()
		if tc.full != nil {
			return s.coord.SetTopics(now, tc.full)
		}
		removed := make([]string, 0, len(tc.removed))
		for name := range tc.removed {
			removed = append(removed, name)
		}
		return s.coord.UpdateTopics(now, tc.changed, removed)
	})
}

// SetGroupSettings gives the coordinator the groups' own settings, as
// Coordinator.SetGroupSettings takes them (settings is not copied: the
// caller must not change it). It never blocks.
func (s *Service) SetGroupSettings(settings map[string]GroupSettings, whole bool) {
	s.rt.Do(func(now time.Time) Ready { return s.coord.SetGroupSettings(now, settings, whole) })
}

// TxnMarker tells the service that a COMMIT (commit) or ABORT marker of
// producerID is committed at offset in __consumer_offsets-p: the
// producer's pending transactional offsets there are committed or
// dropped. The WriteTxnMarkers handler calls it for each
// __consumer_offsets partition once the marker's append is committed
// (acks=all), before answering. Requests submitted after TxnMarker returns
// see its effect.
func (s *Service) TxnMarker(p int32, producerID int64, commit bool, offset int64) {
	s.rt.Do(func(now time.Time) Ready { return s.coord.TxnMarker(now, p, producerID, commit, offset) })
}

// CommittedOffset is one committed offset of a group served here.
type CommittedOffset struct {
	Group, Topic string
	Partition    int32
	Offset       int64
}

// CommittedOffsets reads, through the runtime, the committed offsets of
// every group this broker coordinates, in group, topic and partition order.
// It waits for the loop until ctx ends.
func (s *Service) CommittedOffsets(ctx context.Context) ([]CommittedOffset, error) {
	ch := make(chan []CommittedOffset, 1)
	s.rt.Do(func(time.Time) Ready {
		ch <- s.coord.committedOffsets()
		return Ready{Deadline: s.coord.deadline()}
	})
	select {
	case out := <-ch:
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
