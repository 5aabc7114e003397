package log

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"weir/internal/record"
)

// AppendInfo describes an appended (or deduplicated) batch.
type AppendInfo struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	Duplicate      bool // an idempotent retry: nothing was written
}

// AppendAsLeader assigns offsets to a validated client batch, stamps the
// leader epoch, checks the producer's sequence, and appends it. The log
// takes ownership of b's bytes.
func (l *Log) AppendAsLeader(b record.Batch, leaderEpoch int32) (AppendInfo, error) {
	return l.AppendWith(b, LeaderAppend{LeaderEpoch: leaderEpoch})
}

// AppendWith is AppendAsLeader with the origin and KIP-890 verification
// of a.
func (l *Log) AppendWith(b record.Batch, a LeaderAppend) (AppendInfo, error) {
	l.mu.Lock()
	info, err := l.appendLeaderLocked(b, a)
	needFlush := err == nil && !info.Duplicate && l.unflushed >= l.config().FlushMessages
	l.mu.Unlock()
	if needFlush {
		if ferr := l.Flush(info.LastOffset + 1); ferr != nil {
			return info, ferr
		}
	}
	return info, err
}

func (l *Log) appendLeaderLocked(b record.Batch, a LeaderAppend) (AppendInfo, error) {
	if err := l.syncBeforeRollLocked(len(b), b.MaxTimestamp()); err != nil {
		return AppendInfo{}, err
	}
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	if err := l.producers.check(b, a); err != nil {
		var dup *DuplicateError
		if errors.As(err, &dup) {
			return AppendInfo{BaseOffset: dup.BaseOffset, LastOffset: dup.BaseOffset + int64(b.LastOffsetDelta()),
				LogAppendTime: -1, LogStartOffset: l.logStart.Load(), Duplicate: true}, nil
		}
		return AppendInfo{}, err
	}
	if pid := b.ProducerID(); pid >= 0 && a.ForeignBelow > 0 {
		l.producers.forgetForeign(pid, a.ForeignBelow)
	}
	base := l.logEnd.Load()
	b.SetBaseOffset(base)
	b.SetLeaderEpoch(a.LeaderEpoch)
	if err := l.appendLocked(b); err != nil {
		return AppendInfo{}, err
	}
	info := AppendInfo{BaseOffset: base, LastOffset: b.LastOffset(), LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	if b.Attributes().LogAppendTime() {
		info.LogAppendTime = b.MaxTimestamp()
	}
	return info, nil
}

// AppendAsFollower appends batches that already carry offsets and epochs,
// as fetched from the leader. The first batch must start at or after the
// log end.
func (l *Log) AppendAsFollower(data []byte) (AppendInfo, error) { return l.AppendFollowerWith(data, 0) }

// AppendFollowerWith is AppendAsFollower in a log whose own producers
// begin at foreignBelow (see LeaderAppend.ForeignBelow; 0: all are): a
// batch at or past it drops its producer's entry when all that entry's
// batches lie below, as the leader did when it appended it.
func (l *Log) AppendFollowerWith(data []byte, foreignBelow int64) (AppendInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	info := AppendInfo{BaseOffset: -1, LogAppendTime: -1}
	for buf := data; len(buf) > 0; {
		b, rest, err := record.Next(buf)
		if err != nil {
			return info, err
		}
		if b.BaseOffset() < l.logEnd.Load() {
			return info, fmt.Errorf("log %s: follower append at %d below log end %d", l.tp, b.BaseOffset(), l.logEnd.Load())
		}
		if !b.ValidCRC() {
			return info, record.ErrCorrupt
		}
		if info.BaseOffset < 0 {
			info.BaseOffset = b.BaseOffset()
		}
		if err := l.syncBeforeRollLocked(len(b), b.MaxTimestamp()); err != nil {
			return info, err
		}
		if l.closed {
			return info, ErrClosed
		}
		if b.BaseOffset() < l.logEnd.Load() {
			return info, fmt.Errorf("log %s: follower append at %d below log end %d", l.tp, b.BaseOffset(), l.logEnd.Load())
		}
		if pid := b.ProducerID(); pid >= 0 && foreignBelow > 0 && b.BaseOffset() >= foreignBelow {
			l.producers.forgetForeign(pid, foreignBelow)
		}
		if err := l.appendLocked(b); err != nil {
			return info, err
		}
		info.LastOffset = b.LastOffset()
		buf = rest
	}
	info.LogStartOffset = l.logStart.Load()
	return info, nil
}

// syncBeforeRollLocked makes the active segment durable before an append
// of size bytes rolls it (see rollLocked), releasing the lock during the
// fsync so appends and reads are not blocked by the disk. Other appends
// may land in the segment meanwhile; the loop syncs again until nothing
// unsynced is left or no roll is due. Called and returns with l.mu held.
func (l *Log) syncBeforeRollLocked(size int, maxTimestamp int64) error {
	for !l.closed {
		seg := l.active()
		if !l.rollDue(seg, int64(size), maxTimestamp, l.config()) || seg.synced.Load() >= seg.size.Load() {
			return nil
		}
		l.mu.Unlock()
		err := seg.file.Sync()
		l.mu.Lock()
		if err != nil {
			return err
		}
		// Appends are serialized by l.mu, which was released: only what
		// was there before the fsync is known durable.
		if l.active() != seg {
			return nil
		}
		seg.synced.Store(seg.size.Load())
	}
	return nil
}

// appendLocked writes one stamped batch, rolling first when needed.
func (l *Log) appendLocked(b record.Batch) error {
	cfg := l.config()
	seg := l.active()
	if l.shouldRoll(seg, b, cfg) {
		var err error
		if seg, err = l.rollLocked(b.BaseOffset()); err != nil {
			return err
		}
	}
	if err := l.materializeLocked(seg); err != nil {
		return err
	}
	// The epoch goes first: failing after the data was written would
	// leave a batch in the segment that the log end does not include.
	if err := l.epochs.assign(b.LeaderEpoch(), b.BaseOffset()); err != nil {
		return err
	}
	// An ABORT's transaction index entry goes first too, and is cut back
	// if the batch cannot be written.
	aborted, isAbort := l.producers.pendingAbort(b)
	if isAbort {
		if err := seg.txns.append(aborted); err != nil {
			return err
		}
	}
	if err := seg.appendBatches(b, cfg.IndexIntervalBytes); err != nil {
		if isAbort {
			err = errors.Join(err, seg.txns.truncateTo(b.BaseOffset()))
		}
		return err
	}
	l.producers.update(b)
	l.logEnd.Store(b.NextOffset())
	l.unflushed += int64(b.NumRecords())
	return nil
}

// shouldRoll follows Kafka's rules: the batch would overflow segment.bytes,
// the segment has aged past segment.ms (less jitter), an index is full, or
// the batch's offsets do not fit the index's 32-bit relative offsets.
func (l *Log) shouldRoll(s *segment, b record.Batch, cfg *Config) bool {
	return l.rollDue(s, int64(len(b)), b.MaxTimestamp(), cfg) || b.LastOffset()-s.base > math.MaxInt32
}

// rollDue is shouldRoll without the offset rule, for a batch of size bytes
// whose offsets are not assigned yet.
func (l *Log) rollDue(s *segment, size, maxTimestamp int64, cfg *Config) bool {
	cur := s.size.Load()
	if cur == 0 {
		return false
	}
	if cur+size > cfg.SegmentBytes {
		return true
	}
	waited := l.nowMs() - s.created
	if s.firstTimestamp >= 0 {
		waited = maxTimestamp - s.firstTimestamp
	}
	if waited > cfg.SegmentMs-cfg.SegmentJitterMs {
		return true
	}
	maxEntries := cfg.SegmentIndexBytes / offsetEntrySize
	return int64(s.index.entries()) >= maxEntries || int64(len(s.timeIndex.ents)) >= cfg.SegmentIndexBytes/timeEntrySize
}

// Roll starts a new segment at the log end (used by retention when the
// active segment itself has expired, and by tests).
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active().size.Load() == 0 {
		return nil
	}
	_, err := l.rollLocked(l.logEnd.Load())
	return err
}

// newEmptySegment is a new, empty segment at base whose files are
// created by its first write (materializeLocked). Its transaction index
// is new too: a leftover one describes batches that are gone, and is
// removed when the segment is created.
func (l *Log) newEmptySegment(base int64) *segment {
	s := newPendingSegment(l.files, l.dir, base, l.nowMs())
	s.txns = &txnIndex{fs: l.fs, path: segmentPath(l.dir, base, FileTxnIndex), created: l.markDirUnsynced}
	s.clearTxns = true
	return s
}

// materializeLocked creates the files of a pending segment (.log, .index
// and .timeindex, as Kafka lays out a segment), before anything is written
// to it, or those of them missing (an index a crash lost); when one cannot
// be created, those created are removed and the segment stays pending. A .log holding data already is someone else's:
// it is kept and the write refused. The directory is fsynced by the next
// flush.
func (l *Log) materializeLocked(s *segment) error {
	if !s.pending() && !s.index.file.Pending() && !s.timeIndex.file.Pending() {
		return nil
	}
	if err := l.makeDirLocked(); err != nil {
		return err
	}
	if s.clearTxns {
		if err := l.fs.Remove(s.txns.path); err != nil && !os.IsNotExist(err) {
			return err
		}
		s.clearTxns = false
	}
	// The .log first: its indexes are not truncated (O_TRUNC) when it
	// turns out to be someone else's.
	files := []*SegmentFile{s.file, s.index.file, s.timeIndex.file}
	var made []*SegmentFile
	for _, f := range files {
		created, err := f.materialize()
		if created {
			l.dirUnsynced.Store(true)
			made = append(made, f)
		}
		if err != nil {
			errs := []error{fmt.Errorf("log %s: creating segment %d: %w", l.tp, s.base, err)}
			for _, g := range made {
				errs = append(errs, g.unmaterialize())
			}
			return errors.Join(errs...)
		}
	}
	return nil
}

func (l *Log) rollLocked(base int64) (*segment, error) {
	old := l.active()
	if base < l.logEnd.Load() {
		base = l.logEnd.Load()
	}
	// An empty segment rolled (offsets past its index's reach) stays in
	// the log as Kafka keeps it: with its files.
	if err := l.materializeLocked(old); err != nil {
		return nil, err
	}
	// The old segment's data must be durable before the new segment's
	// file can be: the snapshot below syncs the directory, and a crash
	// that kept the new segment but lost the old one's tail would leave a
	// hole below the log end that recovery cannot see. Appends sync it
	// beforehand without the lock (syncBeforeRollLocked), so this is
	// normally a no-op.
	if old.synced.Load() < old.size.Load() {
		if err := old.file.Sync(); err != nil {
			return nil, err
		}
		old.synced.Store(old.size.Load())
	}
	// So is its transaction index: recovery trusts the entries below the
	// snapshot written here (see rebuildProducerState).
	if err := old.txns.sync(); err != nil {
		return nil, err
	}
	s := l.newEmptySegment(base)
	// The producer snapshot at the roll offset bounds replay after a crash.
	snap := l.producers.clone()
	snap.mapEnd = l.logEnd.Load()
	if err := writeProducerSnapshot(l.fs, l.dir, snap); err != nil {
		l.removeSegmentFiles(s) // else the next open takes it for the last segment
		return nil, err
	}
	// Closed segments' time index gets its final entry, as Kafka does,
	// written now: a flush that already covered the old segment's data
	// (the recovery point at its end) would not sync it again.
	if old.maxTimestamp >= 0 {
		if err := old.timeIndex.maybeAppend(old.maxTimestamp, old.maxTSOffset); err != nil {
			l.removeSegmentFiles(s)
			return nil, err
		}
	}
	if err := errors.Join(old.index.flush(), old.timeIndex.flush()); err != nil {
		l.removeSegmentFiles(s)
		return nil, err
	}
	segs := append(append([]*segment(nil), l.segments()...), s)
	l.setSegments(segs)
	// The rolled segment is flushed in the background, as Kafka does.
	l.background(func() { l.Flush(base) })
	return s, nil
}

// Flush fsyncs everything below upTo (at least) and advances the recovery
// point. Concurrent callers share one fsync.
func (l *Log) Flush(upTo int64) error {
	if l.recoveryPoint.Load() >= upTo {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.recoveryPoint.Load() >= upTo {
		return nil
	}
	start := l.now()
	l.mu.Lock()
	end := l.logEnd.Load()
	segs := l.segments()
	l.unflushed = 0
	from := l.recoveryPoint.Load()
	// The index entries of what is synced reach their files here, under
	// the lock, so none is written after the log is closed or abandoned
	// (a crash) or races a truncation.
	var err error
	if !l.closed {
		err = flushIndexes(segs, from)
	}
	l.mu.Unlock()
	if err != nil {
		return err
	}
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= from {
			continue
		}
		if err := s.sync(); err != nil {
			if errors.Is(err, os.ErrClosed) {
				continue // deleted meanwhile
			}
			return err
		}
	}
	// A segment created since the last flush is durable only once its
	// directory entry is: fsyncing the file alone does not make it so;
	// nor is a new log's directory until its log dir's entry is.
	if err := l.syncParent(); err != nil {
		return err
	}
	if l.dirUnsynced.Swap(false) {
		if err := l.fs.SyncDir(l.dir); err != nil {
			l.dirUnsynced.Store(true)
			return err
		}
	}
	if end > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(end)
	}
	now := l.now()
	l.lastFlush.Store(now.UnixMilli())
	if l.flushed != nil {
		l.flushed(now.Sub(start))
	}
	return nil
}

// flushIndexes writes the pending index entries of segs from the one
// holding offset from on.
func flushIndexes(segs []*segment, from int64) error {
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= from {
			continue
		}
		if err := errors.Join(s.index.flush(), s.timeIndex.flush()); err != nil && !errors.Is(err, os.ErrClosed) {
			return err
		}
	}
	return nil
}

func (l *Log) lastFlushed() time.Time { return time.UnixMilli(l.lastFlush.Load()) }
