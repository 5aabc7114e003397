package partition

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"weir/internal/log"
)

// Isolation levels of a fetch.
const (
	ReadUncommitted = 0
	ReadCommitted   = 1
)

// FetchParams describe one partition of a fetch.
type FetchParams struct {
	Offset      int64
	MaxBytes    int
	LeaderEpoch int32 // the client's current leader epoch, -1 if unknown
	Isolation   int8
	MinOne      bool
}

// FetchResult is a partition's part of a fetch response.
type FetchResult struct {
	Slice            log.Slice
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	// AbortedTxns, for read_committed only (nil otherwise), are the
	// aborted transactions the consumer must skip in Slice.
	AbortedTxns []log.AbortedTxn
}

// Read serves a consumer's fetch from the leader, up to the high watermark
// (read_uncommitted) or the last stable offset (read_committed, with the
// aborted transactions of what it returns). Followers fetch with
// ReadForFollower.
func (p *Partition) Read(fp FetchParams) (FetchResult, error) {
	p.mu.Lock()
	if err := p.checkEpochLocked(fp.LeaderEpoch); err != nil {
		p.mu.Unlock()
		return FetchResult{}, err
	}
	if !p.leader {
		p.mu.Unlock()
		return FetchResult{}, ErrNotLeader
	}
	p.mu.Unlock()
	// The LSO first: it never passes the HW read after it.
	lso := p.log.LastStableOffset()
	hw := p.log.HighWatermark()
	res := FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: p.log.LogStartOffset()}
	bound := hw
	if fp.Isolation == ReadCommitted {
		bound = lso
	}
	// A read_committed read is retried when compaction replaced its
	// segment before its aborted transactions were looked up.
	for range maxReadAttempts {
		sl, err := p.log.Read(fp.Offset, fp.MaxBytes, bound, fp.MinOne)
		if err != nil {
			if errors.Is(err, log.ErrOffsetOutOfRange) {
				return res, err
			}
			return res, storageErr(err)
		}
		res.Slice = sl
		if fp.Isolation != ReadCommitted {
			return res, nil
		}
		var ok bool
		if res.AbortedTxns, ok = p.log.AbortedTxns(fp.Offset, sl); ok {
			return res, nil
		}
	}
	// Still replaced: answer with no records, and the consumer fetches again.
	res.Slice, res.AbortedTxns = log.Slice{}, []log.AbortedTxn{}
	return res, nil
}

// maxReadAttempts bounds the retries of a read_committed read whose
// segment compaction keeps replacing (each swap takes a whole clean).
const maxReadAttempts = 5

// Watcher is a waiting fetch's registration on the partitions it reads: a
// partition signals C when the fetch can complete, not on every append.
// Each partition counts the bytes made readable to the watcher (per its
// Bound) into a counter shared by all of them and signals once the count
// reaches what the fetch still needs (Arm) and the partition has data past
// the watcher's offset, so an append wakes only the waiters it completes;
// a change of state (leadership, ISR, truncation, a leader gone) signals
// every watcher. The count is an estimate that errs high: a woken fetch
// reads again and re-arms if it still has too little.
type Watcher struct {
	C    chan struct{}
	got  atomic.Int64 // bytes counted since Reset
	need atomic.Int64 // the count that signals; math.MaxInt64 while disarmed
}

// NewWatcher returns a disarmed watcher with a one-slot channel;
// signals coalesce.
func NewWatcher() *Watcher {
	w := &Watcher{C: make(chan struct{}, 1)}
	w.need.Store(math.MaxInt64)
	return w
}

// Reset disarms w and zeroes its count, before the fetch reads.
func (w *Watcher) Reset() {
	w.need.Store(math.MaxInt64)
	w.got.Store(0)
}

// Arm makes w signal once need more bytes are counted, after a read that
// found too little. It reports whether they already are (bytes that came
// during the read): then the fetch reads again at once.
func (w *Watcher) Arm(need int64) bool {
	w.need.Store(max(need, 1))
	return w.got.Load() >= max(need, 1)
}

func (w *Watcher) signal() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// Bound is the offset a watcher's fetch reads up to.
type Bound int8

const (
	BoundHighWatermark Bound = iota // a consumer's read_uncommitted fetch
	BoundStable                     // read_committed: the last stable offset
	BoundLogEnd                     // a follower's fetch
)

// watch is a watcher's registration on one partition: the offset its fetch
// reads from, its bound, and the partition's byte count (visibleBytes of
// its bound) already counted to it.
type watch struct {
	offset  int64
	bound   Bound
	counted int64
}

// byteMark is a range of appended offsets above the high watermark and
// its bytes: [start, end) holds bytes.
type byteMark struct {
	start, end, bytes int64
}

// Watch registers w for a fetch from offset up to bound; Unwatch must
// follow.
func (p *Partition) Watch(w *Watcher, offset int64, bound Bound) {
	p.mu.Lock()
	p.watchers[w] = &watch{offset: offset, bound: bound, counted: p.visibleBytesLocked(bound)}
	p.mu.Unlock()
}

// Unwatch removes w.
func (p *Partition) Unwatch(w *Watcher) {
	p.mu.Lock()
	delete(p.watchers, w)
	p.mu.Unlock()
}

// appendedLocked notes bytes appended at offsets [start, end), for the
// watchers' counts.
func (p *Partition) appendedLocked(start, end int64, bytes int) {
	if end <= start || bytes <= 0 {
		return
	}
	p.appendedBytes += int64(bytes)
	m := byteMark{start: start, end: end, bytes: int64(bytes)}
	// Concurrent appends may note their ranges out of order.
	i := len(p.marks)
	for i > 0 && p.marks[i-1].start > start {
		i--
	}
	p.marks = slices.Insert(p.marks, i, m)
}

// countVisibleLocked moves the appended ranges the high watermark has
// passed into hwBytes: a range it is inside of counts in proportion,
// at least a byte and, until it is passed, short of one. Ranges a
// truncation removed are dropped.
func (p *Partition) countVisibleLocked() {
	leo := p.log.LogEndOffset()
	for n := len(p.marks); n > 0 && p.marks[n-1].start >= leo; n = len(p.marks) {
		p.marks = p.marks[:n-1]
	}
	hw := p.log.HighWatermark()
	i := 0
	for ; i < len(p.marks) && p.marks[i].start < hw; i++ {
		m := &p.marks[i]
		if m.end <= hw {
			p.hwBytes += m.bytes
			continue
		}
		part := m.bytes * (hw - m.start) / (m.end - m.start)
		part = min(max(part, 1), m.bytes-1)
		if part > 0 {
			p.hwBytes += part
			m.bytes -= part
			m.start = hw
		}
		break
	}
	if i > 0 {
		p.marks = p.marks[:copy(p.marks, p.marks[i:])]
	}
}

// visibleBytesLocked is the count of bytes readable up to bound, as the
// watchers count them (since the partition was opened).
func (p *Partition) visibleBytesLocked(b Bound) int64 {
	if b == BoundLogEnd {
		return p.appendedBytes
	}
	return p.hwBytes
}

// boundLocked is the offset bound stands at.
func (p *Partition) boundLocked(b Bound) int64 {
	switch b {
	case BoundLogEnd:
		return p.log.LogEndOffset()
	case BoundStable:
		return p.log.LastStableOffset()
	}
	return p.log.HighWatermark()
}

// notifyDataLocked tells the watchers of new readable data (an append, a
// high watermark moved): each is counted the bytes its bound passed, and
// signalled if that completes it.
func (p *Partition) notifyDataLocked() {
	p.countVisibleLocked()
	if len(p.watchers) == 0 {
		return
	}
	var bounds [3]int64
	for b := range Bound(len(bounds)) {
		bounds[b] = p.boundLocked(b)
	}
	for w, wt := range p.watchers {
		if v := p.visibleBytesLocked(wt.bound); v > wt.counted {
			w.got.Add(v - wt.counted)
			wt.counted = v
		}
		if bounds[wt.bound] > wt.offset && w.got.Load() >= w.need.Load() {
			w.signal()
		}
	}
}

// notifyLocked signals every watcher: the partition's state changed.
func (p *Partition) notifyLocked() {
	p.countVisibleLocked()
	for w, wt := range p.watchers {
		wt.counted = p.visibleBytesLocked(wt.bound)
		w.signal()
	}
}

// Special timestamps of ListOffsets.
const (
	LatestTimestamp   = -1
	EarliestTimestamp = -2
	MaxTimestamp      = -3
	// EarliestLocalTimestamp (KIP-405) is the earliest offset here: every
	// segment is local. LatestTieredTimestamp, the end of what is in
	// remote storage, is offset -1 (leader epoch -1): nothing is, as in
	// Kafka with remote storage disabled.
	EarliestLocalTimestamp = -4
	LatestTieredTimestamp  = -5
)

// ListOffset answers ListOffsets for one partition: the offset (and
// timestamp) for a target timestamp, bounded by the high watermark (or
// the last stable offset for read_committed). found is false when no
// record qualifies.
func (p *Partition) ListOffset(ts int64, leaderEpoch int32, isolation int8) (offset, timestamp int64, epoch int32, found bool, err error) {
	p.mu.Lock()
	if err := p.checkEpochLocked(leaderEpoch); err != nil {
		p.mu.Unlock()
		return 0, 0, 0, false, err
	}
	if !p.leader {
		p.mu.Unlock()
		return 0, 0, 0, false, ErrNotLeader
	}
	epoch = p.state.LeaderEpoch
	if p.state.Mirror.ReadOnly {
		// The lineage is the source's: the latest epoch in the log, as
		// Kafka answers from its epoch cache.
		epoch = p.log.LatestEpoch()
	}
	p.mu.Unlock()
	bound := p.log.HighWatermark()
	if isolation == ReadCommitted {
		bound = p.log.LastStableOffset()
	}
	switch ts {
	case LatestTimestamp:
		return bound, -1, epoch, true, nil
	case LatestTieredTimestamp:
		return -1, -1, -1, true, nil
	case EarliestTimestamp, EarliestLocalTimestamp:
		return p.log.LogStartOffset(), -1, p.epochAt(p.log.LogStartOffset()), true, nil
	case MaxTimestamp:
		o, t, ok, err := p.log.MaxTimestampOffset(bound)
		if err != nil {
			return 0, 0, 0, false, storageErr(err)
		}
		return o, t, p.epochAt(o), ok, nil
	}
	o, t, ok, err := p.log.OffsetForTimestamp(ts, bound)
	if err != nil {
		return 0, 0, 0, false, storageErr(err)
	}
	return o, t, p.epochAt(o), ok, nil
}

// LogEndForReplica answers a follower's ListOffsets for the latest offset:
// the leader's log end offset, not its high watermark.
func (p *Partition) LogEndForReplica(leaderEpoch int32) (int64, int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkEpochLocked(leaderEpoch); err != nil {
		return 0, 0, err
	}
	if !p.leader {
		return 0, 0, ErrNotLeader
	}
	return p.log.LogEndOffset(), p.state.LeaderEpoch, nil
}

// epochAt is the leader epoch that wrote offset, from the epoch lineage.
func (p *Partition) epochAt(offset int64) int32 {
	epoch := int32(-1)
	for _, e := range p.log.Epochs() {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}

// DeleteRecords raises the log start offset to offset (-1: the high
// watermark) and returns the new low watermark. A log whose cleanup.policy
// lacks delete refuses with ErrPolicyViolation, as Kafka does.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	p.mu.Lock()
	leader := p.leader
	var mirrorErr error
	if p.state.Mirror.ReadOnly {
		mirrorErr = fmt.Errorf("%w: %s is a mirror of cluster link %q; its log start follows the source's",
			ErrMirrorReadOnly, p.tp.Topic, p.state.Mirror.Link)
	}
	p.mu.Unlock()
	if !leader {
		return -1, ErrNotLeader
	}
	if mirrorErr != nil {
		return -1, mirrorErr
	}
	if offset == -1 {
		offset = p.log.HighWatermark()
	}
	if offset < 0 {
		return -1, log.ErrOffsetOutOfRange
	}
	if !p.log.Config().Delete {
		// As Kafka: only a delete cleanup policy lets the log start move
		// (compaction relies on it staying put, see log/cleaner.go).
		return -1, ErrPolicyViolation
	}
	return p.log.SetLogStartOffset(offset)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch.
func (p *Partition) EndOffsetForEpoch(currentEpoch, epoch int32) (int32, int64, error) {
	p.mu.Lock()
	if err := p.checkEpochLocked(currentEpoch); err != nil {
		p.mu.Unlock()
		return -1, -1, err
	}
	if !p.leader {
		p.mu.Unlock()
		return -1, -1, ErrNotLeader
	}
	p.mu.Unlock()
	e, o := p.log.EndOffsetForEpoch(epoch)
	return e, o, nil
}
