package log

import (
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"sync/atomic"

	"weir/internal/record"
)

// Transactions on the partition side, as Kafka keeps them (KIP-98):
//
//   - A transactional data batch opens a transaction for its producer at
//     its base offset, unless one is open; a non-transactional batch from a
//     producer with an open transaction is refused (INVALID_TXN_STATE).
//   - A control batch holding one COMMIT or ABORT marker ends it. Markers
//     come from the transaction coordinator only; one with a producer epoch
//     below the producer's is refused (INVALID_PRODUCER_EPOCH), one with a
//     coordinator epoch below the last the producer's markers carried is
//     refused (TRANSACTION_COORDINATOR_FENCED). Followers apply what the
//     leader wrote without these checks.
//   - An ABORT of a transaction that wrote here adds an entry to the
//     transaction index of the segment holding the marker (txnindex.go).
//   - The last stable offset is the least of the high watermark and the
//     first offset of every transaction that is open or whose marker is not
//     yet below the high watermark.
//   - KIP-890 part 1: a client batch that would open a transaction must
//     present the VerificationGuard handed out when the leader began asking
//     the coordinator whether the partition is in the transaction; any
//     transactional append or marker of the producer retires the guard, so a
//     marker landing between the check and the append voids the check.

// Transaction errors, each one Kafka error code.
var (
	ErrInvalidTxnState   = errors.New("log: invalid transaction state")                          // INVALID_TXN_STATE
	ErrCoordinatorFenced = errors.New("log: transaction marker from a fenced coordinator epoch") // TRANSACTION_COORDINATOR_FENCED
)

// Origin is who appends a batch as leader (Kafka's AppendOrigin).
type Origin int8

const (
	// OriginClient is a producer's batch: duplicates are detected and
	// sequences checked.
	OriginClient Origin = iota
	// OriginCoordinator is a batch a coordinator of this broker writes
	// (transaction markers, transactional offset commits): producer epochs
	// are checked, sequences are not.
	OriginCoordinator
)

// VerificationGuard ties a transactional append to one verification of the
// partition with the transaction coordinator (KIP-890). NoGuard verifies
// nothing.
type VerificationGuard uint64

// NoGuard is the guard that verifies nothing.
const NoGuard VerificationGuard = 0

var lastGuard atomic.Uint64

// LeaderAppend says how a leader appends one batch.
type LeaderAppend struct {
	LeaderEpoch int32
	Origin      Origin
	// VerifyTxn requires a transactional data batch that opens a
	// transaction to present the producer's current Guard
	// (transaction.partition.verification.enable).
	VerifyTxn bool
	Guard     VerificationGuard
	// ForeignBelow, when above 0, is where the log's own producers begin:
	// the batches below it were copied from another cluster (a promoted
	// mirror topic), whose producer ids mean other producers. A producer
	// whose cached batches all lie below it is taken as new, and its
	// batches there are never duplicates of a retry.
	ForeignBelow int64
}

// Marker is a transaction marker: the single record of a control batch.
//
//	key:   version int16 (0) | type int16 (0 ABORT, 1 COMMIT)
//	value: version int16 (0) | coordinatorEpoch int32
type Marker struct {
	Commit           bool
	CoordinatorEpoch int32
}

const (
	markerAbort  = 0
	markerCommit = 1
)

// MarkerBatch builds the control batch of a marker for a producer, as
// Kafka's MemoryRecords.withEndTransactionMarker does: transactional and
// control attributes, no sequence, timestamp ts.
func MarkerBatch(producerID int64, epoch int16, m Marker, ts int64) record.Batch {
	key := binary.BigEndian.AppendUint16(make([]byte, 2, 4), markerAbort)
	if m.Commit {
		binary.BigEndian.PutUint16(key[2:], markerCommit)
	}
	value := binary.BigEndian.AppendUint32(make([]byte, 2, 6), uint32(m.CoordinatorEpoch))
	h := record.NewBatchHeader()
	h.Attributes = record.ControlAttributes | record.TransactionalAttributes
	h.ProducerID, h.ProducerEpoch = producerID, epoch
	h.BaseTimestamp, h.MaxTimestamp = ts, ts
	b, err := record.Build(h, []record.Record{{Key: key, Value: value}}, 0)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}

// ParseMarker reads the marker of a control batch. ok is false for a
// control batch that holds no transaction marker (an empty one, or
// another control type).
func ParseMarker(b record.Batch) (m Marker, ok bool) {
	if !b.Attributes().Control() || b.NumRecords() < 1 {
		return Marker{}, false
	}
	raw, err := b.Decoded(nil, 1<<20)
	if err != nil {
		return Marker{}, false
	}
	it := record.NewRecords(raw, b.NumRecords())
	r, ok := it.Next()
	if !ok || len(r.Key) < 4 || len(r.Value) < 6 {
		return Marker{}, false
	}
	switch binary.BigEndian.Uint16(r.Key[2:]) {
	case markerAbort:
	case markerCommit:
		m.Commit = true
	default:
		return Marker{}, false
	}
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
	return m, true
}

// completedTxn is a transaction a marker ended.
type completedTxn struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64 // the marker
	abort       bool
}

// verification is an open KIP-890 check of a producer.
type verification struct {
	guard     VerificationGuard
	epoch     int16
	timestamp int64 // ms, for expiry with the producer ids
}

// StartTxnVerification begins (or continues) the check that a transactional
// batch of producerID at epoch belongs to a transaction the coordinator
// knows. It returns the guard the append must present, or NoGuard when the
// producer already has a transaction open here at that epoch.
func (l *Log) StartTxnVerification(producerID int64, epoch int16) VerificationGuard {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.producers
	if e := ps.entries[producerID]; e != nil && e.txnFirstOff >= 0 && e.epoch == epoch {
		return NoGuard
	}
	v := ps.verifying[producerID]
	if v == nil {
		v = &verification{guard: VerificationGuard(lastGuard.Add(1))}
		ps.verifying[producerID] = v
	}
	v.epoch, v.timestamp = epoch, l.nowMs()
	return v.guard
}

// ProducerInfo is an active producer of a partition (DescribeProducers).
type ProducerInfo struct {
	ProducerID       int64
	Epoch            int16
	LastSequence     int32 // -1 when none
	LastTimestamp    int64
	CoordinatorEpoch int32
	TxnStartOffset   int64 // first offset of the open transaction, -1 if none
}

// ActiveProducers lists the producers the partition keeps state for,
// ordered by producer id.
func (l *Log) ActiveProducers() []ProducerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ProducerInfo, 0, len(l.producers.entries))
	for _, e := range l.producers.entries {
		out = append(out, ProducerInfo{ProducerID: e.id, Epoch: e.epoch, LastSequence: e.lastSeq(),
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordEpoch, TxnStartOffset: e.txnFirstOff})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// LastStableOffset is the offset below which every transaction is decided
// and its marker replicated: what read_committed consumers may read.
func (l *Log) LastStableOffset() int64 { return l.lso.Load() }

// updateLSOLocked drops completed transactions whose marker is below the
// high watermark (or the log start) and recomputes the last stable offset.
// Called with l.mu held whenever the HW, the log start or the producer
// state changes.
func (l *Log) updateLSOLocked() {
	ps := l.producers
	hw, start := l.highWatermark.Load(), l.logStart.Load()
	n := 0
	for n < len(ps.unreplicated) && (ps.unreplicated[n].lastOffset < hw || ps.unreplicated[n].lastOffset < start) {
		n++
	}
	ps.unreplicated = ps.unreplicated[n:]
	first := int64(math.MaxInt64)
	for _, o := range ps.ongoing {
		first = min(first, o)
	}
	for _, t := range ps.unreplicated {
		first = min(first, t.firstOffset)
	}
	l.lso.Store(min(max(first, start), hw))
}

// AbortedTxns returns the aborted transactions that may cover the batches
// of sl, a Read at offset: those whose marker is at or after offset and
// whose first offset is before the first index entry past sl (as Kafka
// bounds them), from sl's segment on. It is safe to call without locks.
// ok is false when sl's segment has left the log since the Read (replaced
// by compaction, or deleted): its batches may no longer match the indexes,
// so the caller must read again.
func (l *Log) AbortedTxns(offset int64, sl Slice) (txns []AbortedTxn, ok bool) {
	out := []AbortedTxn{}
	if sl.Size == 0 {
		return out, true
	}
	segs := l.segments()
	i := 0
	for i < len(segs) && segs[i].file != sl.File {
		i++
	}
	if i == len(segs) {
		return nil, false
	}
	upTo := l.logEnd.Load()
	if i+1 < len(segs) {
		upTo = segs[i+1].base
	}
	if o, ok := segs[i].index.offsetAtOrAfter(sl.Pos + int64(sl.Size)); ok {
		upTo = o
	}
	for ; i < len(segs); i++ {
		var done bool
		if out, done = segs[i].txns.collect(out, offset, upTo); done {
			break
		}
	}
	return out, true
}

func (l *Log) markDirUnsynced() { l.dirUnsynced.Store(true) }

// abortedTracker tells, batch by batch in offset order, which transactional
// batches belong to aborted transactions (Kafka's cleaner does the same).
type abortedTracker struct {
	pending []AbortedTxn // not started yet, by first offset
	active  map[int64]bool
}

// newAbortedTracker gathers the aborted transactions of txns (every
// segment's, the active one's too: a marker may follow its data there)
// whose marker is at or after from.
func newAbortedTracker(txns []AbortedTxn, from int64) *abortedTracker {
	t := &abortedTracker{active: map[int64]bool{}}
	for _, e := range txns {
		if e.LastOffset >= from {
			t.pending = append(t.pending, e)
		}
	}
	sort.Slice(t.pending, func(i, j int) bool { return t.pending[i].FirstOffset < t.pending[j].FirstOffset })
	return t
}

// skip reports whether b is a data batch of an aborted transaction. Batches
// must be passed in offset order, markers included.
func (t *abortedTracker) skip(b record.Batch) bool {
	if t == nil {
		return false
	}
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= b.BaseOffset() {
		t.active[t.pending[0].ProducerID] = true
		t.pending = t.pending[1:]
	}
	pid := b.ProducerID()
	if !t.active[pid] || !b.Attributes().Transactional() {
		return false
	}
	if b.Attributes().Control() {
		delete(t.active, pid)
		return false
	}
	return true
}
