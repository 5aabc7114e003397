package txn

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
)

// Request is one transaction request.
type Request struct {
	// Token identifies the request to the caller; its Response carries it.
	Token uint64
	// Body is the decoded request, Version set.
	Body kmsg.Request
}

// Response is the answer to the Request with the same Token. Body has the
// request's version.
type Response = coordinator.Response

// Write asks the driver to append Records to __transaction_state-Partition
// and to report the outcome with Persisted(ID, err).
type Write struct {
	ID        uint64
	Partition int32
	Records   []Record
}

// Target is the write's id and partition, for the runtime.
func (w Write) Target() (id uint64, partition int32) { return w.ID, w.Partition }

// WithID is w numbered id, for the coordinator's coordinator.Output.
func (w Write) WithID(id uint64) Write { w.ID = id; return w }

// MarkerRequest asks the driver to write a transaction marker (COMMIT if
// Commit, else ABORT) of ProducerID at ProducerEpoch to each of
// Partitions, with WriteTxnMarkers to each partition's leader, and to
// report every partition's outcome with MarkersWritten(ID, ...).
type MarkerRequest struct {
	ID               uint64
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32 // leader epoch of the __transaction_state partition
	Partitions       []TopicPartition
}

// MarkerResult is the outcome of one partition of a MarkerRequest: Code
// is the partition's error code in the WriteTxnMarkers response (0: the
// marker is written), or the error that kept the request from being
// answered (NOT_LEADER_OR_FOLLOWER when the partition has no reachable
// leader, NETWORK_EXCEPTION or REQUEST_TIMED_OUT when the request failed).
// Gone means the partition no longer exists: it needs no marker.
type MarkerResult struct {
	Partition TopicPartition
	Code      int16
	Gone      bool
}

// Ready is what one input produced: the runtime's part (responses, writes
// and the deadline) and the service's. See the package comment.
type Ready struct {
	coordinator.Ready[Write]
	Markers []MarkerRequest
	// NeedProducerIDs asks the driver for a block of producer ids, to be
	// given with SupplyProducerIDs (or ProducerIDsFailed). It is set once
	// until one of those is called.
	NeedProducerIDs bool
}

// Coordinator holds the transactions of the __transaction_state
// partitions this broker leads.
type Coordinator struct {
	cfg Config

	parts  map[int32]*statePartition
	txns   map[string]*txnMeta
	topics map[string]int32 // topic -> partition count, as SetTopics gave them

	markerReqs map[uint64]*markerReq
	lastMarker uint64

	pids         []pidBlock
	pidRequested bool
	parked       []Request // InitProducerId waiting for producer ids

	timers     coordinator.Timers[*timer]
	lastSeq    uint64
	nextAbort  time.Time // timed-out transactions are aborted; zero while no partition is led
	nextExpire time.Time // expired transactional ids are removed

	// out holds the input's time, the runtime's part of the Ready being
	// built and the writes not yet reported by Persisted; markers and
	// needPIDs are the rest of that Ready.
	out      *coordinator.Output[Write]
	markers  []MarkerRequest
	needPIDs bool

	// dirty are the transactional ids the input being handled may have
	// changed, counted the state each adds to cfg.Stats (stats.go); both
	// empty without it.
	dirty   map[string]struct{}
	counted map[string]State
}

// statePartition is a __transaction_state partition led here.
type statePartition struct {
	loading bool
	epoch   int32 // its leader epoch: the coordinator epoch of its markers
}

type pidBlock struct{ next, end, size int64 }

// New returns a Coordinator that leads no partition yet.
func New(cfg Config) *Coordinator {
	if cfg.StatePartitions < 1 || cfg.OffsetsPartitions < 1 {
		panic("txn: StatePartitions and OffsetsPartitions must be positive")
	}
	c := &Coordinator{
		cfg:        cfg,
		parts:      map[int32]*statePartition{},
		txns:       map[string]*txnMeta{},
		topics:     map[string]int32{},
		markerReqs: map[uint64]*markerReq{},
		dirty:      map[string]struct{}{},
		counted:    map[string]State{},
	}
	c.out = coordinator.NewOutput[Write](coordinator.OutputHooks{Serves: c.serves, Settle: c.recount, Deadline: c.deadline})
	return c
}

// PartitionFor is the __transaction_state partition of a transactional
// id.
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	return coordinator.PartitionFor(transactionalID, c.cfg.StatePartitions)
}

// Handle processes one request. It panics if Body is not one of
// InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
// DescribeTransactions or ListTransactions.
func (c *Coordinator) Handle(now time.Time, req Request) Ready {
	c.begin(now)
	c.dispatch(req)
	return c.end()
}

func (c *Coordinator) dispatch(req Request) {
	switch r := req.Body.(type) {
	case *kmsg.InitProducerIDRequest:
		c.initProducerID(req, r)
	case *kmsg.AddPartitionsToTxnRequest:
		c.addPartitionsToTxn(req, r)
	case *kmsg.AddOffsetsToTxnRequest:
		c.addOffsetsToTxn(req, r)
	case *kmsg.EndTxnRequest:
		c.endTxn(req, r)
	case *kmsg.DescribeTransactionsRequest:
		c.describeTransactions(req, r)
	case *kmsg.ListTransactionsRequest:
		c.listTransactions(req, r)
	default:
		panic(fmt.Sprintf("txn: Handle of %T", req.Body))
	}
}

// SetTopics gives the coordinator the cluster's topics (name -> partition
// count): AddPartitionsToTxn refuses partitions that do not exist. Call it
// before serving and whenever topics change.
func (c *Coordinator) SetTopics(topics map[string]int32) {
	c.topics = topics
}

// Persisted reports the outcome of the Write with this id: nil once its
// records are durable, else the append error (ideally wrapping a
// *kerr.Error). Unknown ids, such as writes of an unloaded partition, are
// ignored.
func (c *Coordinator) Persisted(now time.Time, id uint64, err error) Ready {
	c.begin(now)
	c.out.Persisted(id, -1, err)
	return c.end()
}

// SupplyProducerIDs gives the coordinator the block of n producer ids
// starting at first, as NeedProducerIDs asked. InitProducerId requests
// waiting for ids are served.
func (c *Coordinator) SupplyProducerIDs(now time.Time, first int64, n int32) Ready {
	c.begin(now)
	c.pidRequested = false
	if n > 0 {
		c.pids = append(c.pids, pidBlock{next: first, end: first + int64(n), size: int64(n)})
	}
	parked := c.parked
	c.parked = nil
	for _, req := range parked {
		c.dispatch(req)
	}
	return c.end()
}

// ProducerIDsFailed reports that no block of producer ids could be had:
// the InitProducerId requests waiting for one are answered
// COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers when its block is
// exhausted, and the client retries.
func (c *Coordinator) ProducerIDsFailed(now time.Time) Ready {
	c.begin(now)
	c.pidRequested = false
	parked := c.parked
	c.parked = nil
	for _, req := range parked {
		r := req.Body.(*kmsg.InitProducerIDRequest)
		c.out.Respond(req.Token, initProducerIDResponse(r.Version, codeLoadInProgress, -1, -1))
	}
	return c.end()
}

// takePID returns a new producer id; ok is false when none is at hand
// (NeedProducerIDs is then set and the caller parks its request).
func (c *Coordinator) takePID() (int64, bool) {
	for len(c.pids) > 0 && c.pids[0].next >= c.pids[0].end {
		c.pids = c.pids[1:]
	}
	if len(c.pids) == 0 {
		c.askPIDs()
		return 0, false
	}
	b := &c.pids[0]
	id := b.next
	b.next++
	// Ask for the next block when this one is 90% used, as Kafka's
	// producer id manager prefetches.
	if len(c.pids) == 1 && (b.end-b.next)*10 <= b.size {
		c.askPIDs()
	}
	return id, true
}

func (c *Coordinator) askPIDs() {
	if !c.pidRequested {
		c.pidRequested = true
		c.needPIDs = true
	}
}

// park keeps a request until producer ids arrive; it is then handled
// afresh.
func (c *Coordinator) park(req Request) {
	c.parked = append(c.parked, req)
	c.askPIDs()
}

// begin starts an input at now; end returns what it produced.
func (c *Coordinator) begin(now time.Time) {
	c.out.Begin(now)
	c.markers, c.needPIDs = nil, false
}

func (c *Coordinator) end() Ready {
	r := Ready{Ready: c.out.End(), Markers: c.markers, NeedProducerIDs: c.needPIDs}
	c.markers, c.needPIDs = nil, false
	return r
}

// emitWrite emits records for partition p; done runs with the outcome,
// translated into the error a transaction request answers (0: durable),
// when Persisted reports them. Writes for a partition not served here
// fail at once with NOT_COORDINATOR.
func (c *Coordinator) emitWrite(p int32, recs []Record, done func(code int16)) {
	c.out.Emit(Write{Partition: p, Records: recs}, func(code int16, _ int64) { done(appendToTxnCode(code)) })
}

// serves reports whether partition p is led here and loaded.
func (c *Coordinator) serves(p int32) bool {
	ps, ok := c.parts[p]
	return ok && !ps.loading
}

// persist writes the transition t of m (pending on m) and applies it once
// durable; on failure the pending transition is dropped. done gets the
// outcome, NOT_COORDINATOR if m was unloaded meanwhile.
func (c *Coordinator) persist(m *txnMeta, t *transit, done func(code int16)) {
	c.emitWrite(m.partition, []Record{encodeTransit(m.id, t)}, func(code int16) {
		if c.txns[m.id] != m {
			done(codeNotCoordinator)
			return
		}
		if m.pending == t {
			if code == 0 {
				m.complete(t)
				c.touch(m.id)
			} else {
				m.pending = nil
			}
		}
		done(code)
	})
}

// route returns the partition of a transactional id and the error to
// answer if this broker does not serve it now.
func (c *Coordinator) route(id string) (int32, int16) {
	p := c.PartitionFor(id)
	ps, ok := c.parts[p]
	switch {
	case !ok:
		return p, codeNotCoordinator
	case ps.loading:
		return p, codeLoadInProgress
	}
	return p, 0
}

// live reports whether m is still the transaction served under its id.
func (c *Coordinator) live(m *txnMeta) bool { return c.txns[m.id] == m }

// BeginLoad tells the coordinator this broker became leader of
// __transaction_state-p: its transactional ids answer
// COORDINATOR_LOAD_IN_PROGRESS until LoadPartition. If p was served here
// (re-elected in a new epoch without resigning), its transactions are
// forgotten and the requests waiting on its writes answered
// NOT_COORDINATOR, as Kafka answers a write whose coordinator epoch
// changed.
func (c *Coordinator) BeginLoad(now time.Time, p int32) Ready {
	c.begin(now)
	if ps := c.parts[p]; ps == nil || !ps.loading {
		c.dropPartition(p)
		c.parts[p] = &statePartition{loading: true}
	}
	return c.end()
}

// LoadPartition makes this broker the coordinator of the transactional
// ids of __transaction_state-p, rebuilt from records (the partition's
// records in log order), with epoch, p's leader epoch, as coordinator
// epoch. Transactions found prepared resume writing their markers. A
// record that cannot be decoded is skipped: skipped has one error
// (wrapping ErrBadRecord) for each, for the caller to report.
func (c *Coordinator) LoadPartition(now time.Time, p, epoch int32, records []Record) (r Ready, skipped []error) {
	c.begin(now)
	c.dropPartition(p)
	ps := &statePartition{loading: true, epoch: epoch}
	c.parts[p] = ps
	loaded := map[string]*txnMeta{}
	for i, r := range records {
		id, m, ok, err := decodeRecord(r)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("record %d: %w", i, err))
			continue
		}
		switch {
		case !ok:
		case m == nil || m.state == Dead:
			delete(loaded, id)
		case m.state == PrepareEpochFence:
			// Never written (the fence is consumed by the abort it
			// starts); a record of it is ignored.
		default:
			m.partition = p
			loaded[id] = m
		}
	}
	ps.loading = false
	if c.nextAbort.IsZero() {
		c.nextAbort = now.Add(c.cfg.AbortTimedOutInterval)
		c.nextExpire = now.Add(c.cfg.RemoveExpiredInterval)
	}
	for _, id := range sortedIDs(loaded) {
		m := loaded[id]
		c.txns[id] = m
		c.touch(id)
		if m.state == PrepareCommit || m.state == PrepareAbort {
			c.startMarkers(m, m.prepareComplete(c.out.NowMs()))
		}
	}
	return c.end(), skipped
}

// UnloadPartition gives up __transaction_state-p: its transactions are
// forgotten, their waiting requests answered NOT_COORDINATOR, and their
// markers no longer sent.
func (c *Coordinator) UnloadPartition(now time.Time, p int32) Ready {
	c.begin(now)
	c.dropPartition(p)
	delete(c.parts, p)
	if len(c.parts) == 0 {
		c.nextAbort, c.nextExpire = time.Time{}, time.Time{}
	}
	return c.end()
}

func (c *Coordinator) dropPartition(p int32) {
	for _, id := range sortedIDs(c.txns) {
		if m := c.txns[id]; m.partition == p {
			delete(c.txns, id)
			c.touch(id)
			m.markers = nil
		}
	}
	for id, mr := range c.markerReqs {
		if mr.txn.partition == p {
			delete(c.markerReqs, id)
		}
	}
	c.out.FailWrites(p, codeNotCoordinator)
}

// Codes used here.
var (
	codeNotCoordinator       = kerr.NotCoordinator.Code
	codeLoadInProgress       = kerr.CoordinatorLoadInProgress.Code
	codeNotAvailable         = kerr.CoordinatorNotAvailable.Code
	codeConcurrent           = kerr.ConcurrentTransactions.Code
	codeProducerFenced       = kerr.ProducerFenced.Code
	codeInvalidProducerEpoch = kerr.InvalidProducerEpoch.Code
	codeInvalidMapping       = kerr.InvalidProducerIDMapping.Code
	codeInvalidTxnState      = kerr.InvalidTxnState.Code
	codeInvalidRequest       = kerr.InvalidRequest.Code
	codeInvalidTimeout       = kerr.InvalidTransactionTimeout.Code
	codeUnknownServerError   = kerr.UnknownServerError.Code
)

// appendToTxnCode translates an append failure of __transaction_state into
// the error a transaction request answers, as Kafka's
// TransactionStateManager does.
func appendToTxnCode(code int16) int16 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
		return codeNotAvailable
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return codeNotCoordinator
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		return codeUnknownServerError
	}
	return code
}

// fencedCode is PRODUCER_FENCED as a client of this version understands
// it: versions before KIP-588's get INVALID_PRODUCER_EPOCH.
func fencedCode(code int16, version, firstWithFenced int16) int16 {
	if code == codeProducerFenced && version < firstWithFenced {
		return codeInvalidProducerEpoch
	}
	return code
}
