package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"sort"

	"weir/internal/record"
	"weir/internal/vfs"
)

// Idempotence errors, each one Kafka error code.
var (
	ErrOutOfOrderSequence   = errors.New("log: out of order sequence number") // OUT_OF_ORDER_SEQUENCE_NUMBER
	ErrInvalidProducerEpoch = errors.New("log: producer epoch is stale")      // INVALID_PRODUCER_EPOCH
)

// maxCachedBatches is how many recent batches per producer are remembered
// for duplicate detection: clients keep at most 5 requests in flight.
const maxCachedBatches = 5

// batchMeta identifies an appended idempotent batch.
type batchMeta struct {
	firstSeq   int32
	lastSeq    int32
	lastOffset int64
	delta      int32 // lastOffset - baseOffset
	timestamp  int64
}

func (m batchMeta) baseOffset() int64 { return m.lastOffset - int64(m.delta) }

// producerEntry is the state kept per producer id in one partition.
type producerEntry struct {
	id            int64
	epoch         int16
	batches       []batchMeta // oldest first, at most maxCachedBatches
	coordEpoch    int32
	txnFirstOff   int64 // first offset of the open transaction, -1 if none
	lastTimestamp int64
}

// foreign reports whether the entry is another cluster's producer: all
// its batches lie below below (see LeaderAppend.ForeignBelow), and it has
// no transaction open.
func (e *producerEntry) foreign(below int64) bool {
	return e != nil && below > 0 && e.txnFirstOff < 0 && (len(e.batches) == 0 || e.batches[len(e.batches)-1].lastOffset < below)
}

// forgetForeign drops producer pid's entry if it is foreign (see
// producerEntry.foreign), so that its next batch starts a fresh one.
func (ps *producerState) forgetForeign(pid, below int64) {
	if e := ps.entries[pid]; e.foreign(below) {
		delete(ps.entries, pid)
	}
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return record.NoSequence
	}
	return e.batches[len(e.batches)-1].lastSeq
}

// producerState is the idempotent-producer state of one partition: for each
// producer id, its epoch and last few batches. It is updated under the log's
// lock, snapshotted at segment rolls and on close, and rebuilt on open from
// the newest snapshot plus the batches after it.
type producerState struct {
	entries map[int64]*producerEntry
	// mapEnd is the offset the state covers up to (exclusive).
	mapEnd int64
	// ongoing maps each producer with an open transaction to the
	// transaction's first offset (producerEntry.txnFirstOff >= 0).
	ongoing map[int64]int64
	// unreplicated are the transactions completed since the state was
	// loaded whose marker may not be below the high watermark yet, in
	// marker order (the log prunes them, see updateLSOLocked).
	unreplicated []completedTxn
	// verifying are the open KIP-890 checks by producer id; not persisted.
	verifying map[int64]*verification
}

func newProducerState() *producerState {
	return &producerState{entries: make(map[int64]*producerEntry), ongoing: make(map[int64]int64),
		verifying: make(map[int64]*verification)}
}

// DuplicateError reports an idempotent retry of an already appended batch;
// the append must answer with the original offsets and write nothing.
type DuplicateError struct {
	BaseOffset int64
	Timestamp  int64
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("log: duplicate batch, originally at offset %d", e.BaseOffset)
}

// check validates a leader's batch against the producer's state, as
// Kafka does. Markers: a stale producer epoch or coordinator epoch is
// fenced. Data: a client's retry of any of the last five batches is a
// duplicate; a transactional batch opening a transaction must present the
// producer's verification guard when a.VerifyTxn; stale epochs are fenced;
// a client's sequence must follow on (or start at 0 for a new epoch); a
// non-transactional batch may not interleave with an open transaction. A
// producer with no state may start anywhere, because retention may have
// removed its history.
func (ps *producerState) check(b record.Batch, a LeaderAppend) error {
	pid := b.ProducerID()
	if pid < 0 {
		return nil
	}
	epoch, first, last := b.ProducerEpoch(), b.BaseSequence(), b.LastSequence()
	e := ps.entries[pid]
	if e.foreign(a.ForeignBelow) {
		e = nil // another cluster's producer of the same id
	}
	if b.Attributes().Control() {
		m, ok := ParseMarker(b)
		switch {
		case !ok || e == nil:
			return nil
		case epoch < e.epoch:
			return fmt.Errorf("%w: marker of producer %d with epoch %d, older than %d", ErrInvalidProducerEpoch, pid, epoch, e.epoch)
		case m.CoordinatorEpoch < e.coordEpoch:
			return fmt.Errorf("%w: marker of producer %d from coordinator epoch %d, older than %d", ErrCoordinatorFenced, pid, m.CoordinatorEpoch, e.coordEpoch)
		}
		return nil
	}
	if a.Origin == OriginClient && e != nil && epoch == e.epoch {
		for _, m := range e.batches {
			if m.firstSeq == first && m.lastSeq == last && m.lastOffset >= a.ForeignBelow {
				return &DuplicateError{BaseOffset: m.baseOffset(), Timestamp: m.timestamp}
			}
		}
	}
	txn := b.Attributes().Transactional()
	if txn && !(e != nil && e.txnFirstOff >= 0 && e.epoch == epoch) {
		if e != nil && epoch < e.epoch {
			return fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, pid, epoch, e.epoch)
		}
		if v := ps.verifying[pid]; a.VerifyTxn && (v == nil || a.Guard == NoGuard || v.guard != a.Guard) {
			return fmt.Errorf("%w: the batch of producer %d is not part of an ongoing transaction", ErrInvalidTxnState, pid)
		}
	}
	if e == nil {
		return nil
	}
	if epoch < e.epoch {
		return fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, pid, epoch, e.epoch)
	}
	if a.Origin == OriginClient {
		if epoch != e.epoch {
			if first != 0 {
				return fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d", ErrOutOfOrderSequence, pid, epoch, first)
			}
		} else if lastSeq := e.lastSeq(); lastSeq != record.NoSequence && !inSequence(lastSeq, first) {
			return fmt.Errorf("%w: producer %d expected sequence %d, got %d", ErrOutOfOrderSequence, pid, nextSeq(lastSeq), first)
		}
	}
	if e.txnFirstOff >= 0 && !txn {
		return fmt.Errorf("%w: producer %d has a transaction open since offset %d; expected a transactional batch", ErrInvalidTxnState, pid, e.txnFirstOff)
	}
	return nil
}

func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

func inSequence(last, next int32) bool { return next == nextSeq(last) }

// update records an appended batch. A marker that ends a transaction
// returns it.
func (ps *producerState) update(b record.Batch) *completedTxn {
	ps.mapEnd = b.NextOffset()
	pid := b.ProducerID()
	if pid < 0 {
		return nil
	}
	e := ps.entries[pid]
	if e == nil {
		e = &producerEntry{id: pid, epoch: b.ProducerEpoch(), coordEpoch: -1, txnFirstOff: -1}
		ps.entries[pid] = e
	}
	if b.ProducerEpoch() != e.epoch {
		e.epoch = b.ProducerEpoch()
		e.batches = e.batches[:0]
	}
	e.lastTimestamp = b.MaxTimestamp()
	if b.Attributes().Transactional() {
		// The check this producer's verification stood for is used up.
		delete(ps.verifying, pid)
	}
	if b.Attributes().Control() {
		m, ok := ParseMarker(b)
		if !ok {
			return nil
		}
		e.coordEpoch = m.CoordinatorEpoch
		if e.txnFirstOff < 0 {
			return nil // no data of the transaction here
		}
		t := completedTxn{producerID: pid, firstOffset: e.txnFirstOff, lastOffset: b.BaseOffset(), abort: !m.Commit}
		e.txnFirstOff = -1
		delete(ps.ongoing, pid)
		ps.unreplicated = append(ps.unreplicated, t)
		return &t
	}
	m := batchMeta{firstSeq: b.BaseSequence(), lastSeq: b.LastSequence(), lastOffset: b.LastOffset(), delta: b.LastOffsetDelta(), timestamp: b.MaxTimestamp()}
	if len(e.batches) == maxCachedBatches {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:maxCachedBatches-1]
	}
	e.batches = append(e.batches, m)
	if b.Attributes().Transactional() && e.txnFirstOff < 0 {
		e.txnFirstOff = b.BaseOffset()
		ps.ongoing[pid] = e.txnFirstOff
	}
	return nil
}

// stableAfter is the last stable offset recorded with a completed
// transaction: the first offset of the earliest transaction of another
// producer still open, else the offset after the marker.
func (ps *producerState) stableAfter(t completedTxn) int64 {
	lso := int64(math.MaxInt64)
	for pid, o := range ps.ongoing {
		if pid != t.producerID {
			lso = min(lso, o)
		}
	}
	if lso == math.MaxInt64 {
		lso = t.lastOffset + 1
	}
	return lso
}

// pendingAbort returns the transaction index entry an appended batch b
// would add: b is an ABORT marker (stamped with its offset) ending a
// transaction that wrote here.
func (ps *producerState) pendingAbort(b record.Batch) (AbortedTxn, bool) {
	pid := b.ProducerID()
	if pid < 0 || !b.Attributes().Control() {
		return AbortedTxn{}, false
	}
	e := ps.entries[pid]
	if e == nil || e.txnFirstOff < 0 {
		return AbortedTxn{}, false
	}
	if m, ok := ParseMarker(b); !ok || m.Commit {
		return AbortedTxn{}, false
	}
	t := completedTxn{producerID: pid, firstOffset: e.txnFirstOff, lastOffset: b.BaseOffset(), abort: true}
	return AbortedTxn{ProducerID: pid, FirstOffset: t.firstOffset, LastOffset: t.lastOffset, LastStableOffset: ps.stableAfter(t)}, true
}

// expire drops producers idle since before cutoff (ms), except those with
// an open transaction, and verifications begun before it.
func (ps *producerState) expire(cutoff int64) {
	for id, e := range ps.entries {
		if e.lastTimestamp < cutoff && e.txnFirstOff < 0 {
			delete(ps.entries, id)
		}
	}
	for id, v := range ps.verifying {
		if v.timestamp < cutoff {
			delete(ps.verifying, id)
		}
	}
}

// clone copies what a snapshot holds: the producers and the open
// transactions.
func (ps *producerState) clone() *producerState {
	c := newProducerState()
	c.mapEnd = ps.mapEnd
	for id, e := range ps.entries {
		ce := *e
		ce.batches = append([]batchMeta(nil), e.batches...)
		c.entries[id] = &ce
	}
	for id, o := range ps.ongoing {
		c.ongoing[id] = o
	}
	return c
}

// Snapshot files, <offset>.snapshot, hold the state as of offset (all
// batches below it applied). Like Kafka's, a snapshot keeps each producer's
// last batch only:
//
//	version int16 (1) | crc uint32 (CRC-32C of what follows) | count int32 |
//	count x [producerId int64 | epoch int16 | lastSequence int32 |
//	         lastOffset int64 | offsetDelta int32 | timestamp int64 |
//	         coordinatorEpoch int32 | currentTxnFirstOffset int64]
const (
	snapshotVersion   = 1
	snapshotEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
)

func snapshotPath(dir string, offset int64) string {
	return segmentPath(dir, offset, FileProducerSnapshot)
}

func (ps *producerState) encode() []byte {
	ids := make([]int64, 0, len(ps.entries))
	for id := range ps.entries {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	buf := make([]byte, 10, 10+len(ids)*snapshotEntrySize)
	binary.BigEndian.PutUint16(buf, snapshotVersion)
	binary.BigEndian.PutUint32(buf[6:], uint32(len(ids)))
	for _, id := range ids {
		e := ps.entries[id]
		m := batchMeta{firstSeq: record.NoSequence, lastSeq: record.NoSequence, lastOffset: -1}
		if len(e.batches) > 0 {
			m = e.batches[len(e.batches)-1]
		}
		buf = binary.BigEndian.AppendUint64(buf, uint64(id))
		buf = binary.BigEndian.AppendUint16(buf, uint16(e.epoch))
		buf = binary.BigEndian.AppendUint32(buf, uint32(m.lastSeq))
		buf = binary.BigEndian.AppendUint64(buf, uint64(m.lastOffset))
		buf = binary.BigEndian.AppendUint32(buf, uint32(m.delta))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.lastTimestamp))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.coordEpoch))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.txnFirstOff))
	}
	binary.BigEndian.PutUint32(buf[2:], crc32.Checksum(buf[6:], castagnoli))
	return buf
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func decodeProducerSnapshot(buf []byte, mapEnd int64) (*producerState, error) {
	if len(buf) < 10 || binary.BigEndian.Uint16(buf) != snapshotVersion {
		return nil, errors.New("log: bad producer snapshot header")
	}
	if crc32.Checksum(buf[6:], castagnoli) != binary.BigEndian.Uint32(buf[2:]) {
		return nil, errors.New("log: producer snapshot CRC mismatch")
	}
	n := int(binary.BigEndian.Uint32(buf[6:]))
	buf = buf[10:]
	if len(buf) != n*snapshotEntrySize {
		return nil, errors.New("log: producer snapshot length mismatch")
	}
	ps := newProducerState()
	ps.mapEnd = mapEnd
	for i := 0; i < n; i++ {
		e := &producerEntry{
			id:    int64(binary.BigEndian.Uint64(buf)),
			epoch: int16(binary.BigEndian.Uint16(buf[8:])),
		}
		lastSeq := int32(binary.BigEndian.Uint32(buf[10:]))
		lastOff := int64(binary.BigEndian.Uint64(buf[14:]))
		delta := int32(binary.BigEndian.Uint32(buf[22:]))
		e.lastTimestamp = int64(binary.BigEndian.Uint64(buf[26:]))
		e.coordEpoch = int32(binary.BigEndian.Uint32(buf[34:]))
		e.txnFirstOff = int64(binary.BigEndian.Uint64(buf[38:]))
		if lastSeq != record.NoSequence {
			first := int32((int64(lastSeq) - int64(delta) + (1 << 31)) % (1 << 31))
			e.batches = append(e.batches, batchMeta{firstSeq: first, lastSeq: lastSeq, lastOffset: lastOff, delta: delta, timestamp: e.lastTimestamp})
		}
		ps.entries[e.id] = e
		if e.txnFirstOff >= 0 {
			ps.ongoing[e.id] = e.txnFirstOff
		}
		buf = buf[snapshotEntrySize:]
	}
	return ps, nil
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(fsys vfs.FS, dir string) ([]int64, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return snapshotsIn(ents), nil
}

// snapshotsIn returns the offsets of the snapshot files among a
// directory's entries, ascending (never nil).
func snapshotsIn(ents []fs.DirEntry) []int64 {
	out := []int64{}
	for _, de := range ents {
		if f, ok := ParseFilename(de.Name()); ok && f.Type == FileProducerSnapshot && f.State == Live {
			out = append(out, f.Offset)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func writeProducerSnapshot(fsys vfs.FS, dir string, ps *producerState) error {
	return vfs.WriteFileAtomic(fsys, snapshotPath(dir, ps.mapEnd), ps.encode())
}

// loadProducerSnapshot loads the newest valid snapshot at or below maxOffset,
// deleting snapshots above it (they describe truncated data) and corrupt
// ones. offs are the snapshots' offsets when the caller listed the
// directory already, else nil.
func loadProducerSnapshot(fsys vfs.FS, dir string, maxOffset int64, offs []int64) (*producerState, error) {
	if offs == nil {
		var err error
		if offs, err = listSnapshots(fsys, dir); err != nil {
			return nil, err
		}
	}
	for i := len(offs) - 1; i >= 0; i-- {
		path := snapshotPath(dir, offs[i])
		if offs[i] > maxOffset {
			if err := fsys.Remove(path); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
			continue
		}
		data, err := vfs.ReadFile(fsys, path)
		if err != nil {
			return nil, err
		}
		ps, err := decodeProducerSnapshot(data, offs[i])
		if err != nil {
			if err := fsys.Remove(path); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
			continue
		}
		return ps, nil
	}
	return nil, nil
}
