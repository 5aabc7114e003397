package txn

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// StateLog is __transaction_state as the Service needs it.
type StateLog interface {
	// Append writes records to partition p as its leader and calls done,
	// from any goroutine, once they are committed (the high watermark
	// covers them) or have failed. done may be called before Append
	// returns.
	Append(p int32, records []Record, done func(error))
	// ReadAll returns partition p's records from its log start to its log
	// end, in order. A new leader's log end holds every record the old
	// leader acknowledged, even before its high watermark has caught up
	// (Kafka loads to the log end for this reason).
	ReadAll(p int32) ([]Record, error)
}

// Cluster is what the Service needs of the rest of the broker.
type Cluster interface {
	// Image is the latest metadata image: topics for AddPartitionsToTxn,
	// partition leaders for markers.
	Image() *metadata.Image
	// WriteTxnMarkers sends req to broker's inter-broker listener and
	// returns its answer.
	WriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
	// AllocateProducerIDs returns a new block of producer ids from the
	// controller.
	AllocateProducerIDs() (first int64, n int32, err error)
}

// Service runs a Coordinator on its own goroutine and does its I/O: it
// answers requests through callbacks, appends the coordinator's writes to
// __transaction_state, loads partitions when this broker becomes their
// leader, sends the markers (one sender per destination broker, which
// batches the markers queued while a request is in flight), fetches
// producer id blocks and fires the coordinator's timers. Its methods are
// safe for concurrent use.
type Service struct {
	coord   *Coordinator
	log     StateLog
	cl      Cluster
	lg      *slog.Logger
	now     func() time.Time
	timeout time.Duration // of a WriteTxnMarkers request

	in      chan func()   // run on the loop goroutine
	stopped chan struct{} // closed when Run returns

	// Completions arrive from other goroutines (and possibly from inside
	// Append, on the loop goroutine itself), so they are queued here
	// rather than sent on in.
	mu        sync.Mutex
	completed []func()
	wake      chan struct{}

	// Owned by the loop goroutine.
	ctx          context.Context
	waiting      map[uint64]func(kmsg.Response)
	nextToken    uint64
	loads        map[int32]int32 // partition -> leader epoch being loaded or served
	timer        *time.Timer
	image        *metadata.Image // the image whose topics the coordinator has
	fetchingPIDs bool
	senders      map[int32]*markerSender
	skipped      func(n int) // counts unreadable records skipped by loads
}

// NewService returns a service; Run starts it. requestTimeout bounds each
// WriteTxnMarkers request. skipped is told how many unreadable records
// each load of a partition skipped (nil: not counted).
func NewService(cfg Config, log StateLog, cl Cluster, lg *slog.Logger, now func() time.Time, requestTimeout time.Duration,
	skipped func(n int)) *Service {
	if skipped == nil {
		skipped = func(int) {}
	}
	return &Service{coord: New(cfg), log: log, cl: cl, lg: lg, now: now, timeout: requestTimeout, skipped: skipped,
		in: make(chan func(), 256), stopped: make(chan struct{}), wake: make(chan struct{}, 1),
		waiting: map[uint64]func(kmsg.Response){}, loads: map[int32]int32{}, senders: map[int32]*markerSender{}}
}

// PartitionFor is the __transaction_state partition of a transactional
// id.
func (s *Service) PartitionFor(transactionalID string) int32 {
	return s.coord.PartitionFor(transactionalID)
}

// Handle submits a request; done receives its response, possibly later
// (once its record is durable). done must not block.
func (s *Service) Handle(ctx context.Context, body kmsg.Request, done func(kmsg.Response)) {
	select {
	case <-s.stopped:
	case s.in <- func() {
		s.nextToken++
		tok := s.nextToken
		s.waiting[tok] = done
		if _, ok := body.(*kmsg.AddPartitionsToTxnRequest); ok {
			s.refreshTopics()
		}
		s.process(s.coord.Handle(s.now(), Request{Token: tok, Body: body}))
	}:
	case <-ctx.Done():
	}
}

// refreshTopics gives the coordinator the topics of a newer image.
func (s *Service) refreshTopics() {
	img := s.cl.Image()
	if img == s.image {
		return
	}
	s.image = img
	topics := make(map[string]int32, len(img.Topics))
	for name, t := range img.Topics {
		topics[name] = int32(len(t.Partitions))
	}
	s.coord.SetTopics(topics)
}

// Elected tells the service this broker leads __transaction_state-p in
// epoch: it loads the partition's transactions and serves them once
// loaded.
func (s *Service) Elected(p, epoch int32) {
	s.run(func() {
		s.loads[p] = epoch
		s.coord.BeginLoad(p)
		go func() {
			recs, err := s.log.ReadAll(p)
			s.complete(func() { s.loaded(p, epoch, recs, err) })
		}()
	})
}

// Resigned tells the service this broker no longer leads
// __transaction_state-p.
func (s *Service) Resigned(p int32) {
	s.run(func() {
		delete(s.loads, p)
		s.process(s.coord.UnloadPartition(s.now(), p))
	})
}

// run queues f for the loop goroutine; once Run has returned, f is
// dropped.
func (s *Service) run(f func()) {
	select {
	case s.in <- f:
	case <-s.stopped:
	}
}

func (s *Service) loaded(p, epoch int32, recs []Record, err error) {
	if e, ok := s.loads[p]; !ok || e != epoch {
		return // resigned or re-elected meanwhile; the newer load wins
	}
	if err != nil {
		s.lg.Error("reading __transaction_state failed; its transactions stay unavailable", "partition", p, "err", err)
		return
	}
	ready, skipped := s.coord.LoadPartition(s.now(), p, epoch, recs)
	if len(skipped) > 0 {
		s.lg.Error("skipped unreadable __transaction_state records while loading", "partition", p,
			"skipped", len(skipped), "first", skipped[0])
		s.skipped(len(skipped))
	}
	s.process(ready)
}

// complete queues f to run on the loop goroutine.
func (s *Service) complete(f func()) {
	s.mu.Lock()
	s.completed = append(s.completed, f)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run serves until ctx is done.
func (s *Service) Run(ctx context.Context) {
	defer close(s.stopped)
	s.ctx = ctx
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

// process carries out a Ready: answers, writes, markers, producer ids and
// the next timer.
func (s *Service) process(r Ready) {
	for _, resp := range r.Responses {
		if done := s.waiting[resp.Token]; done != nil {
			delete(s.waiting, resp.Token)
			done(resp.Body)
		}
	}
	for _, w := range r.Writes {
		id := w.ID
		s.log.Append(w.Partition, w.Records, func(err error) {
			s.complete(func() { s.process(s.coord.Persisted(s.now(), id, err)) })
		})
	}
	if len(r.Markers) > 0 {
		s.sendMarkers(r.Markers)
	}
	if r.NeedProducerIDs && !s.fetchingPIDs {
		s.fetchingPIDs = true
		go func() {
			first, n, err := s.cl.AllocateProducerIDs()
			s.complete(func() {
				s.fetchingPIDs = false
				if err != nil {
					s.lg.Warn("allocating producer ids failed", "err", err)
					s.process(s.coord.ProducerIDsFailed(s.now()))
					return
				}
				s.process(s.coord.SupplyProducerIDs(s.now(), first, n))
			})
		}()
	}
	s.timer.Stop()
	if !r.Deadline.IsZero() {
		s.timer.Reset(max(r.Deadline.Sub(s.now()), 0))
	}
}

// sendMarkers routes each marker request's partitions to their leaders'
// senders; partitions without a live leader are reported at once (the
// coordinator retries them), deleted ones as gone.
func (s *Service) sendMarkers(reqs []MarkerRequest) {
	img := s.cl.Image()
	for _, m := range reqs {
		var now []MarkerResult
		byLeader := map[int32][]TopicPartition{}
		var leaders []int32
		for _, tp := range m.Partitions {
			t := img.Topics[tp.Topic]
			var p *metadata.Partition
			if t != nil {
				p = t.Partitions[tp.Partition]
			}
			switch {
			case p == nil:
				now = append(now, MarkerResult{Partition: tp, Gone: true})
			case p.Leader < 0 || img.Brokers[p.Leader] == nil || img.Brokers[p.Leader].Fenced:
				now = append(now, MarkerResult{Partition: tp, Code: kerr.NotLeaderForPartition.Code})
			default:
				if byLeader[p.Leader] == nil {
					leaders = append(leaders, p.Leader)
				}
				byLeader[p.Leader] = append(byLeader[p.Leader], tp)
			}
		}
		if len(now) > 0 {
			id := m.ID
			s.complete(func() { s.process(s.coord.MarkersWritten(s.now(), id, now)) })
		}
		for _, b := range leaders {
			s.sender(b).enqueue(markerEntry{req: m, partitions: byLeader[b]})
		}
	}
}

func (s *Service) sender(broker int32) *markerSender {
	ms := s.senders[broker]
	if ms == nil {
		ms = &markerSender{s: s, broker: broker, signal: make(chan struct{}, 1)}
		s.senders[broker] = ms
		go ms.run(s.ctx)
	}
	return ms
}

// markerEntry is the part of a MarkerRequest bound for one broker.
type markerEntry struct {
	req        MarkerRequest
	partitions []TopicPartition
}

// markerSender sends the markers bound for one broker, one
// WriteTxnMarkers request at a time, each carrying everything queued
// meanwhile (Kafka's TransactionMarkerChannelManager drains per-broker
// queues the same way).
type markerSender struct {
	s      *Service
	broker int32
	signal chan struct{}

	mu    sync.Mutex
	queue []markerEntry
}

func (ms *markerSender) enqueue(e markerEntry) {
	ms.mu.Lock()
	ms.queue = append(ms.queue, e)
	ms.mu.Unlock()
	select {
	case ms.signal <- struct{}{}:
	default:
	}
}

func (ms *markerSender) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ms.signal:
		}
		ms.mu.Lock()
		batch := ms.queue
		ms.queue = nil
		ms.mu.Unlock()
		if len(batch) > 0 {
			ms.send(ctx, batch)
		}
	}
}

func (ms *markerSender) send(ctx context.Context, batch []markerEntry) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	for _, e := range batch {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = e.req.ProducerID, e.req.ProducerEpoch, e.req.Commit, e.req.CoordinatorEpoch
		for _, tp := range e.partitions {
			if n := len(m.Topics); n == 0 || m.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				t.Topic = tp.Topic
				m.Topics = append(m.Topics, t)
			}
			last := &m.Topics[len(m.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
		req.Markers = append(req.Markers, m)
	}
	rctx, cancel := context.WithTimeout(ctx, ms.s.timeout+5*time.Second)
	resp, err := ms.s.cl.WriteTxnMarkers(rctx, ms.broker, req)
	cancel()
	if err != nil && ctx.Err() == nil {
		ms.s.lg.Info("sending transaction markers failed; retrying", "broker", ms.broker, "err", err)
	}
	type key struct {
		pid int64
		tp  TopicPartition
	}
	codes := map[key]int16{}
	if err == nil {
		for _, m := range resp.Markers {
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					codes[key{m.ProducerID, TopicPartition{t.Topic, p.Partition}}] = p.ErrorCode
				}
			}
		}
	}
	for _, e := range batch {
		results := make([]MarkerResult, len(e.partitions))
		for i, tp := range e.partitions {
			code, ok := codes[key{e.req.ProducerID, tp}]
			if !ok {
				code = kerr.NetworkException.Code // no answer for it: retried
			}
			results[i] = MarkerResult{Partition: tp, Code: code}
		}
		id := e.req.ID
		ms.s.complete(func() { ms.s.process(ms.s.coord.MarkersWritten(ms.s.now(), id, results)) })
	}
}
