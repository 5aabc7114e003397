package txn

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
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

// Service runs a Coordinator on a coordinator.Runtime: it answers
// requests through callbacks, appends the coordinator's writes to
// __transaction_state, loads partitions when this broker becomes their
// leader, sends the markers (one sender per destination broker, which
// batches the markers queued while a request is in flight), fetches
// producer id blocks and fires the coordinator's timers. Its methods are
// safe for concurrent use; Elected and Resigned never block.
type Service struct {
	coord   *Coordinator
	rt      *coordinator.Runtime[Write, Record]
	cl      Cluster
	lg      *slog.Logger
	timeout time.Duration // of a WriteTxnMarkers request

	// Owned by the loop goroutine.
	ctx          context.Context
	image        *metadata.Image // the image whose topics the coordinator has
	fetchingPIDs bool
	senders      map[int32]*markerSender
}

// NewService returns a service; Run starts it. requestTimeout bounds each
// WriteTxnMarkers request. skipped is told how many unreadable records
// each load of a partition skipped (nil: not counted).
func NewService(cfg Config, log StateLog, cl Cluster, lg *slog.Logger, now func() time.Time, requestTimeout time.Duration,
	skipped func(n int)) *Service {
	s := &Service{coord: New(cfg), cl: cl, lg: lg, timeout: requestTimeout, senders: map[int32]*markerSender{}}
	s.rt = coordinator.New(coordinator.Config[Write, Record]{Topic: "__transaction_state", Shard: shard{s},
		Log: stateLog{log}, Lg: lg, Now: now, Skipped: skipped})
	return s
}

// shard is the Coordinator as the runtime drives it; the service carries
// out the markers and producer id requests of each Ready.
type shard struct{ s *Service }

func (h shard) BeginLoad(now time.Time, p int32) coordinator.Ready[Write] {
	return h.s.carry(h.s.coord.BeginLoad(now, p))
}
func (h shard) Load(now time.Time, p, epoch int32, recs []Record) (coordinator.Ready[Write], []error) {
	r, skipped := h.s.coord.LoadPartition(now, p, epoch, recs)
	return h.s.carry(r), skipped
}
func (h shard) Unload(now time.Time, p int32) coordinator.Ready[Write] {
	return h.s.carry(h.s.coord.UnloadPartition(now, p))
}
func (h shard) Tick(now time.Time) coordinator.Ready[Write] { return h.s.carry(h.s.coord.Tick(now)) }
func (h shard) Persisted(now time.Time, id uint64, _ int64, err error) coordinator.Ready[Write] {
	return h.s.carry(h.s.coord.Persisted(now, id, err))
}

// stateLog is a StateLog as the runtime appends to it.
type stateLog struct{ StateLog }

func (l stateLog) Append(w Write, done func(offset int64, err error)) {
	l.StateLog.Append(w.Partition, w.Records, func(err error) { done(-1, err) })
}

// PartitionFor is the __transaction_state partition of a transactional
// id.
func (s *Service) PartitionFor(transactionalID string) int32 {
	return s.coord.PartitionFor(transactionalID)
}

// Handle submits a request; done receives its response, possibly later
// (once its record is durable). done must not block.
func (s *Service) Handle(ctx context.Context, body kmsg.Request, done func(kmsg.Response)) {
	s.rt.Request(ctx, done, func(now time.Time, token uint64) coordinator.Ready[Write] {
		if _, ok := body.(*kmsg.AddPartitionsToTxnRequest); ok {
			s.refreshTopics()
		}
		return s.carry(s.coord.Handle(now, Request{Token: token, Body: body}))
	})
}

// refreshTopics gives the coordinator the topics of a newer image.
func (s *Service) refreshTopics() {
	img := s.cl.Image()
	if img == s.image {
		return
	}
	s.image = img
	topics := make(map[string]int32, img.Topics.Len())
	for name, t := range img.Topics.All() {
		topics[name] = int32(len(t.Partitions))
	}
	s.coord.SetTopics(topics)
}

// Elected tells the service this broker leads __transaction_state-p in
// epoch: it loads the partition's transactions and serves them once
// loaded.
func (s *Service) Elected(p, epoch int32) { s.rt.Elected(p, epoch) }

// Resigned tells the service this broker no longer leads
// __transaction_state-p.
func (s *Service) Resigned(p int32) { s.rt.Resigned(p) }

// complete queues f, an outcome of the service's own I/O, for the loop.
func (s *Service) complete(f func(now time.Time) Ready) {
	s.rt.Do(func(now time.Time) coordinator.Ready[Write] { return s.carry(f(now)) })
}

// Run serves until ctx is done.
func (s *Service) Run(ctx context.Context) {
	s.ctx = ctx
	s.rt.Run(ctx)
}

// carry sends a Ready's markers and asks for its producer ids, and returns
// the rest for the runtime: answers, writes and the next timer.
func (s *Service) carry(r Ready) coordinator.Ready[Write] {
	if len(r.Markers) > 0 {
		s.sendMarkers(r.Markers)
	}
	if r.NeedProducerIDs && !s.fetchingPIDs {
		s.fetchingPIDs = true
		go func() {
			first, n, err := s.cl.AllocateProducerIDs()
			s.complete(func(now time.Time) Ready {
				s.fetchingPIDs = false
				if err != nil {
					s.lg.Warn("allocating producer ids failed", "err", err)
					return s.coord.ProducerIDsFailed(now)
				}
				s.coord.cfg.Stats.pidBlock(n)
				return s.coord.SupplyProducerIDs(now, first, n)
			})
		}()
	}
	return r.Ready
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
			t := img.Topics.Get(tp.Topic)
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
			s.complete(func(t time.Time) Ready { return s.coord.MarkersWritten(t, id, now) })
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
	ms.s.coord.cfg.Stats.queued(len(e.partitions))
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
		for _, e := range batch {
			ms.s.coord.cfg.Stats.queued(-len(e.partitions))
		}
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
		ms.s.complete(func(now time.Time) Ready { return ms.s.coord.MarkersWritten(now, id, results) })
	}
}
