package txn

// A transactional id's metadata, its states and the transitions between
// them, as Kafka's TransactionMetadata keeps them: every change is first
// prepared (the transaction gets a pending transition, which blocks any
// other change) and applied only once its record is durable.

import (
	"math"
	"slices"
	"strings"
)

// State is a transaction's state; the values are Kafka's, as written in
// __transaction_state.
type State int8

// The states. PrepareCommit and PrepareAbort are durable decisions whose
// markers are not yet all written; Dead is an expiring transactional id
// (written as a tombstone); PrepareEpochFence is never written: it is the
// pending state of an epoch bump that aborts an ongoing transaction.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name of the state, as DescribeTransactions and
// ListTransactions show it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// stateByName is the state Kafka names so (ListTransactions filters).
func stateByName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// validPrevious lists, for each state, the states it may be entered from.
var validPrevious = map[State][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteCommit, CompleteAbort},
	PrepareEpochFence: {Ongoing},
}

// noProducerID and noEpoch are Kafka's "none" values.
const (
	noProducerID = -1
	noEpoch      = -1
)

// epochExhausted reports whether an epoch is too high to bump again: a
// producer at it gets a new producer id at its next InitProducerId.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) compare(o TopicPartition) int {
	if c := strings.Compare(tp.Topic, o.Topic); c != 0 {
		return c
	}
	return int(tp.Partition) - int(o.Partition)
}

// partitionSet is a set of partitions.
type partitionSet map[TopicPartition]struct{}

func (s partitionSet) sorted() []TopicPartition {
	out := make([]TopicPartition, 0, len(s))
	for tp := range s {
		out = append(out, tp)
	}
	slices.SortFunc(out, TopicPartition.compare)
	return out
}

func (s partitionSet) clone() partitionSet {
	out := make(partitionSet, len(s))
	for tp := range s {
		out[tp] = struct{}{}
	}
	return out
}

// txnMeta is the coordinator's view of one transactional id.
type txnMeta struct {
	id        string
	partition int32 // of __transaction_state

	producerID     int64
	prevProducerID int64 // the id before the last transition (Kafka's lastProducerId)
	epoch          int16
	lastEpoch      int16 // the epoch before a KIP-360 bump, for retries
	timeoutMs      int32
	state          State
	// partitions are those of the ongoing transaction; once it is
	// prepared, those whose markers are not yet written.
	partitions partitionSet
	startMs    int64 // when the transaction started (-1: none yet)
	updateMs   int64

	// pending is the transition waiting for its record to persist; while
	// it is set nothing else may change the transaction.
	pending *transit
	// failedFence: an epoch fence was bumped in memory but its record
	// failed; the next fence does not bump again.
	failedFence bool
	// markers are being written for the prepared transaction.
	markers *markerRound
}

// transit is a prepared transition: the metadata the transaction will
// have once its record persists.
type transit struct {
	producerID     int64
	prevProducerID int64
	epoch          int16
	lastEpoch      int16
	timeoutMs      int32
	state          State
	partitions     partitionSet
	startMs        int64
	updateMs       int64
}

// prepare sets up the transition to state and makes it pending. It
// returns nil if the transition is not allowed from the current state
// or another transition is pending; callers check both beforehand, so
// nil is a bug that the caller answers with UNKNOWN_SERVER_ERROR.
func (m *txnMeta) prepare(state State, producerID int64, epoch, lastEpoch int16, timeoutMs int32,
	partitions partitionSet, startMs, updateMs int64) *transit {
	// An id whose first InitProducerId never persisted has no epoch yet;
	// it may still expire.
	if m.pending != nil || producerID < 0 || (epoch < 0 && state != Dead) || !slices.Contains(validPrevious[state], m.state) {
		return nil
	}
	t := &transit{producerID: producerID, prevProducerID: m.producerID, epoch: epoch, lastEpoch: lastEpoch,
		timeoutMs: timeoutMs, state: state, partitions: partitions, startMs: startMs, updateMs: updateMs}
	m.pending = t
	return t
}

// complete applies a persisted transition.
func (m *txnMeta) complete(t *transit) {
	m.producerID, m.prevProducerID = t.producerID, t.prevProducerID
	m.epoch, m.lastEpoch = t.epoch, t.lastEpoch
	m.timeoutMs, m.state = t.timeoutMs, t.state
	m.partitions = t.partitions.clone()
	m.startMs, m.updateMs = t.startMs, t.updateMs
	m.pending = nil
}

// prepareIncrementEpoch is InitProducerId's epoch bump (Kafka's
// prepareIncrementProducerEpoch): with no expected epoch, a new
// incarnation fences the old one; with one (KIP-360), a producer that
// lost its epoch continues, and a retry of a bump that succeeded gets the
// same epoch again. Anything else is PRODUCER_FENCED.
func (m *txnMeta) prepareIncrementEpoch(timeoutMs int32, expected *int16, nowMs int64) (*transit, int16) {
	bumped := m.epoch + 1
	epoch, last := bumped, int16(noEpoch)
	if expected != nil {
		switch {
		case m.epoch == noEpoch || *expected == m.epoch:
			epoch, last = bumped, m.epoch
		case *expected == m.lastEpoch:
			epoch, last = m.epoch, m.lastEpoch
		default:
			return nil, codeProducerFenced
		}
	}
	t := m.prepare(Empty, m.producerID, epoch, last, timeoutMs, partitionSet{}, -1, nowMs)
	if t == nil {
		return nil, codeUnknownServerError
	}
	return t, 0
}

// prepareRotate gives the transactional id a new producer id at epoch 0,
// when its epoch is exhausted. recordLast keeps the old epoch so that the
// producer's retry is recognized.
func (m *txnMeta) prepareRotate(producerID int64, timeoutMs int32, nowMs int64, recordLast bool) *transit {
	last := int16(noEpoch)
	if recordLast {
		last = m.epoch
	}
	return m.prepare(Empty, producerID, 0, last, timeoutMs, partitionSet{}, -1, nowMs)
}

// prepareAddPartitions adds partitions to the (possibly new) transaction.
func (m *txnMeta) prepareAddPartitions(add []TopicPartition, nowMs int64) *transit {
	start := m.startMs
	switch m.state {
	case Empty, CompleteCommit, CompleteAbort:
		start = nowMs
	}
	ps := m.partitions.clone()
	for _, tp := range add {
		ps[tp] = struct{}{}
	}
	return m.prepare(Ongoing, m.producerID, m.epoch, m.lastEpoch, m.timeoutMs, ps, start, nowMs)
}

// prepareFence bumps the epoch to abort the ongoing transaction (a new
// incarnation, or the transaction timed out), so that the old producer is
// fenced at every partition by the abort markers. The pending
// PrepareEpochFence is consumed at once by the abort.
func (m *txnMeta) prepareFence() *transit {
	epoch := m.epoch
	if !m.failedFence && epoch < math.MaxInt16 {
		epoch++
	}
	return m.prepare(PrepareEpochFence, m.producerID, epoch, noEpoch, m.timeoutMs, m.partitions.clone(), m.startMs, m.updateMs)
}

// prepareEnd moves an ongoing transaction to PrepareCommit or
// PrepareAbort.
func (m *txnMeta) prepareEnd(state State, nowMs int64) *transit {
	return m.prepare(state, m.producerID, m.epoch, m.lastEpoch, m.timeoutMs, m.partitions.clone(), m.startMs, nowMs)
}

// prepareComplete moves a prepared transaction to CompleteCommit or
// CompleteAbort, once its markers are written.
func (m *txnMeta) prepareComplete(nowMs int64) *transit {
	state := CompleteCommit
	if m.state == PrepareAbort {
		state = CompleteAbort
	}
	m.failedFence = false
	return m.prepare(state, m.producerID, m.epoch, m.lastEpoch, m.timeoutMs, partitionSet{}, m.startMs, nowMs)
}

// prepareDead expires the transactional id.
func (m *txnMeta) prepareDead() *transit {
	return m.prepare(Dead, m.producerID, m.epoch, m.lastEpoch, m.timeoutMs, partitionSet{}, m.startMs, m.updateMs)
}
