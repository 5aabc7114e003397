package group

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// Service runs a Coordinator on its own goroutine and does its I/O: it
// answers requests through callbacks, appends the coordinator's writes to
// __consumer_offsets, loads partitions when this broker becomes their
// leader, and fires the coordinator's timers. Its methods are safe for
// concurrent use.
type Service struct {
	coord *Coordinator
	log   OffsetsLog
	lg    *slog.Logger
	now   func() time.Time

	in chan func() // run on the loop goroutine

	// Completions of writes arrive from other goroutines (and possibly
	// from inside Append, on the loop goroutine itself), so they are
	// queued here rather than sent on in.
	mu        sync.Mutex
	completed []func()
	wake      chan struct{}
	// topics is the newest SetTopics not yet applied (under mu): a
	// metadata replay sets topics many times before Run starts, and
	// only the newest matters.
	topics        map[string]TopicInfo
	topicsPending bool

	// Owned by the loop goroutine.
	waiting   map[uint64]func(kmsg.Response)
	nextToken uint64
	loads     map[int32]int32 // partition -> leader epoch being served
	timer     *time.Timer
	inflight  map[int32]int  // writes of each partition not yet reported
	broken    map[int32]bool // a write failed; later ones are refused
	brokenNow map[int32]bool // failures seen by Append callbacks (under mu)
	skipped   func(n int)    // counts unreadable records skipped by loads
}

// errBrokenPartition fails writes queued behind a failed one; the
// coordinator undoes them as it does the failed write.
var errBrokenPartition = kerr.NotLeaderForPartition

// NewService returns a service; Run starts it. skipped is told how many
// unreadable records each load of a partition skipped (nil: not counted).
func NewService(cfg Config, log OffsetsLog, lg *slog.Logger, now func() time.Time, skipped func(n int)) *Service {
	if skipped == nil {
		skipped = func(int) {}
	}
	return &Service{coord: New(cfg), log: log, lg: lg, now: now, skipped: skipped,
		in: make(chan func(), 256), wake: make(chan struct{}, 1),
		waiting: map[uint64]func(kmsg.Response){}, loads: map[int32]int32{},
		inflight: map[int32]int{}, broken: map[int32]bool{}, brokenNow: map[int32]bool{}}
}

// PartitionFor is the __consumer_offsets partition owning a group.
func (s *Service) PartitionFor(groupID string) int32 { return s.coord.PartitionFor(groupID) }

// Handle submits a request; done receives its response, possibly much
// later (a JoinGroup waits for its rebalance). done must not block.
func (s *Service) Handle(ctx context.Context, clientID, clientHost string, body kmsg.Request, done func(kmsg.Response)) {
	s.handle(ctx, Request{ClientID: clientID, ClientHost: clientHost, Body: body}, done)
}

func (s *Service) handle(ctx context.Context, req Request, done func(kmsg.Response)) {
	select {
	case s.in <- func() {
		s.nextToken++
		req.Token = s.nextToken
		s.waiting[req.Token] = done
		s.process(s.coord.Handle(s.now(), req))
	}:
	case <-ctx.Done():
	}
}

// CommitTxnOffsets is Handle for a TxnOffsetCommit whose write carries the
// KIP-890 check (Write.VerifyTxn and Guard).
func (s *Service) CommitTxnOffsets(ctx context.Context, clientID, clientHost string, r *kmsg.TxnOffsetCommitRequest,
	verify bool, guard uint64, done func(kmsg.Response)) {
	s.handle(ctx, Request{ClientID: clientID, ClientHost: clientHost, Body: r, VerifyTxn: verify, Guard: guard}, done)
}

// Elected tells the service this broker leads __consumer_offsets-p in
// epoch: it loads the partition's groups and serves them once loaded.
func (s *Service) Elected(p, epoch int32) {
	s.in <- func() {
		s.loads[p] = epoch
		s.coord.BeginLoad(p)
		go func() {
			recs, err := s.log.ReadAll(p)
			s.in <- func() { s.loaded(p, epoch, recs, err) }
		}()
	}
}

// SetTopics gives the coordinator the cluster's topics (name -> id and
// partition count) for KIP-848 assignments; call it with every metadata
// image, before partitions are loaded. Calls made before the loop gets to
// them are folded into the newest, so it never blocks on more than one
// queued update, even before Run starts.
func (s *Service) SetTopics(topics map[string]TopicInfo) {
	s.mu.Lock()
	queued := s.topicsPending
	s.topics, s.topicsPending = topics, true
	s.mu.Unlock()
	if queued {
		return
	}
	s.in <- func() {
		s.mu.Lock()
		topics := s.topics
		s.topics, s.topicsPending = nil, false
		s.mu.Unlock()
		s.process(s.coord.SetTopics(s.now(), topics))
	}
}

// Resigned tells the service this broker no longer leads
// __consumer_offsets-p.
func (s *Service) Resigned(p int32) {
	s.in <- func() {
		delete(s.loads, p)
		s.process(s.coord.UnloadPartition(s.now(), p))
	}
}

// TxnMarker tells the service that a COMMIT (commit) or ABORT marker of
// producerID is committed at offset in __consumer_offsets-p: the
// producer's pending transactional offsets there are committed or
// dropped. The WriteTxnMarkers handler calls it for each
// __consumer_offsets partition once the marker's append is committed
// (acks=all), before answering. Requests submitted after TxnMarker returns
// see its effect.
func (s *Service) TxnMarker(p int32, producerID int64, commit bool, offset int64) {
	s.in <- func() { s.process(s.coord.TxnMarker(s.now(), p, producerID, commit, offset)) }
}

func (s *Service) loaded(p, epoch int32, recs []LogRecord, err error) {
	if e, ok := s.loads[p]; !ok || e != epoch {
		return // resigned or re-elected meanwhile; the newer load wins
	}
	if err != nil {
		s.lg.Error("reading __consumer_offsets failed; its groups stay unavailable", "partition", p, "err", err)
		return
	}
	ready, skipped := s.coord.LoadPartition(s.now(), p, recs)
	if len(skipped) > 0 {
		s.lg.Error("skipped unreadable __consumer_offsets records while loading", "partition", p,
			"skipped", len(skipped), "first", skipped[0])
		s.skipped(len(skipped))
	}
	s.process(ready)
}

// Run serves until ctx is done.
func (s *Service) Run(ctx context.Context) {
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	defer s.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-s.in:
			f()
		case <-s.wake:
			s.mu.Lock()
			done := s.completed
			s.completed = nil
			s.mu.Unlock()
			for _, f := range done {
				f()
			}
		case <-s.timer.C:
			s.process(s.coord.Tick(s.now()))
		}
	}
}

// process carries out a Ready: answers, writes, and the next timer.
func (s *Service) process(r Ready) {
	for _, resp := range r.Responses {
		if done := s.waiting[resp.Token]; done != nil {
			delete(s.waiting, resp.Token)
			done(resp.Body)
		}
	}
	for _, w := range r.Writes {
		id, p := w.ID, w.Partition
		s.inflight[p]++
		report := func(offset int64, err error) {
			s.mu.Lock()
			s.completed = append(s.completed, func() {
				s.inflight[p]--
				if err != nil {
					s.broken[p] = true
				}
				if s.inflight[p] == 0 {
					// Every failure of p has reached the coordinator,
					// which undid the writes after it: p is whole again.
					delete(s.broken, p)
					s.mu.Lock()
					delete(s.brokenNow, p)
					s.mu.Unlock()
				}
				s.process(s.coord.Persisted(s.now(), id, offset, err))
			})
			s.mu.Unlock()
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
		// The coordinator's records are deltas: once a write of p has
		// failed, later writes of p must not reach the log before the
		// coordinator has undone them.
		if s.broken[p] {
			report(-1, errBrokenPartition)
			continue
		}
		s.log.Append(w, func(offset int64, err error) {
			if err != nil {
				s.mu.Lock()
				s.brokenNow[p] = true
				s.mu.Unlock()
			}
			report(offset, err)
		})
		s.mu.Lock()
		if s.brokenNow[p] {
			s.broken[p] = true
			delete(s.brokenNow, p)
		}
		s.mu.Unlock()
	}
	// Deadline is the coordinator's next timer overall; zero means none.
	s.timer.Stop()
	if !r.Deadline.IsZero() {
		s.timer.Reset(max(r.Deadline.Sub(s.now()), 0))
	}
}
