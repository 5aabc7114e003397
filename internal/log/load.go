package log

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"weir/internal/record"
)

// load takes the directory's entries, removes leftovers of interrupted
// operations, opens the segments, recovers those from the recovery point
// on, and rebuilds the producer state and epoch cache to match. Without
// segment files the log is one pending segment (newPendingSegment) at the
// log start offset: nothing is created or read.
func (l *Log) load(ents []fs.DirEntry, recoveryPoint, logStart int64) error {
	var err error
	var bases, swapped []int64
	swapping := map[int64]bool{}
	// txns are the segments with a transaction index in the listing, which
	// holds until a swap is finished (finishSwaps moves them).
	txns := map[int64]bool{}
	for _, de := range ents {
		f, ok := ParseFilename(de.Name())
		if ok && f.Type == FileLog && f.State == Swap {
			swapping[f.Offset] = true
		}
		if ok && f.Type == FileTxnIndex && f.State == Live {
			txns[f.Offset] = true
		}
	}
	for _, de := range ents {
		name := de.Name()
		f, parsed := ParseFilename(name)
		base, st := FileStateOf(name)
		switch {
		case parsed && f.Type == FileTxnIndex && st == Cleaned && swapping[f.Offset]:
			// The merged transaction index of a swap to finish (finishSwaps).
		case st == Deleted, st == Cleaned, st == Temp:
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return err
			}
		case st == Swap:
			// A compaction swap that was written and synced completely:
			// finish it by renaming the file into place.
			if err := l.fs.Rename(filepath.Join(l.dir, name), filepath.Join(l.dir, base)); err != nil {
				return err
			}
			if parsed && f.Type == FileLog {
				swapped = append(swapped, f.Offset)
				if !contains(bases, f.Offset) {
					bases = append(bases, f.Offset)
				}
			}
		case parsed && f.Type == FileLog:
			if !contains(bases, f.Offset) {
				bases = append(bases, f.Offset)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	if bases, err = l.finishSwaps(bases, swapped); err != nil {
		return err
	}
	// An index whose segment is gone is an orphan of an interrupted deletion.
	for _, de := range ents {
		f, ok := ParseFilename(de.Name())
		if !ok || f.State != Live || contains(bases, f.Offset) {
			continue
		}
		switch f.Type {
		case FileIndex, FileTimeIndex, FileTxnIndex:
			if err := l.fs.Remove(filepath.Join(l.dir, de.Name())); err != nil && !os.IsNotExist(err) {
				l.lg.Warn("removing orphan index", "file", de.Name(), "err", err)
			}
		}
	}
	now := l.nowMs()
	cfg := l.config()
	var segs []*segment
	for _, b := range bases {
		s, err := openSegment(l.files, l.dir, b, now)
		if err != nil {
			return errors.Join(err, closeAll(segs))
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		// Orphan indexes are removed above: no .txnindex is left at base.
		s := newPendingSegment(l.files, l.dir, max(logStart, 0), now)
		s.txns = &txnIndex{fs: l.fs, path: segmentPath(l.dir, s.base, FileTxnIndex), created: l.markDirUnsynced}
		segs = []*segment{s}
	}
	l.setSegments(segs)
	if l.epochs, err = loadEpochCache(l.fs, l.dir, hasEntry(ents, epochCheckpointFile)); err != nil {
		return err
	}

	// Segments wholly below the recovery point are trusted if their
	// indexes are sane; from the segment holding the recovery point on,
	// every batch is checked.
	recoverFrom := len(segs) - 1
	for i := range segs {
		if i+1 < len(segs) && segs[i+1].base <= recoveryPoint {
			continue
		}
		recoverFrom = i
		break
	}
	// The last segment, when it holds the recovery point, is trusted as
	// the segments below it are if the recovery point is its end (after a
	// clean shutdown, or a crash of an idle log): its indexes are checked
	// and only the batches after its last index entry are read, instead
	// of the whole segment (up to segment.bytes). Its end is known only
	// once it is loaded; when that is past the recovery point, or its
	// indexes are not sane, it is recovered as usual. A small segment is
	// recovered outright: scanning it costs less than reading its indexes.
	last := segs[len(segs)-1]
	tryTrusted := recoverFrom == len(segs)-1 && len(swapping) == 0 && recoveryPoint > last.base &&
		!last.pending() && last.size.Load() >= trustedTailMinBytes
	for i, s := range segs {
		if s.pending() {
			continue // empty, its indexes too
		}
		nextBase := int64(math.MaxInt64)
		if i+1 < len(segs) {
			nextBase = segs[i+1].base
		}
		mayHaveTxns := len(swapping) > 0 || txns[s.base]
		if i == recoverFrom && tryTrusted {
			sane, err := l.openIndexes(s, nextBase, mayHaveTxns)
			if err != nil {
				return err
			}
			if sane && s.loadState(cfg.IndexIntervalBytes) == nil && s.nextOffset == recoveryPoint {
				recoverFrom++ // nothing past the recovery point
			}
			continue
		}
		if i >= recoverFrom && len(swapping) == 0 {
			// Recovery rebuilds the indexes: they are not read, and
			// opened only if they must change (see indexesToRebuild).
			if err := l.indexesToRebuild(s, ents, mayHaveTxns); err != nil {
				return err
			}
			continue
		}
		if err := l.loadIndexes(s, i >= recoverFrom, nextBase, cfg.IndexIntervalBytes, mayHaveTxns); err != nil {
			return err
		}
	}
	for i := recoverFrom; i < len(segs); i++ {
		s := segs[i]
		truncated, err := s.recover(cfg.IndexIntervalBytes, nil)
		var torn *errTornTail
		if errors.As(err, &torn) {
			l.lg.Warn("recovered torn log tail", "segment", s.base, "position", torn.pos, "bytes_dropped", truncated, "reason", torn.reason)
			// Everything after a torn batch is unreachable: drop later segments.
			for _, later := range segs[i+1:] {
				l.removeSegmentFiles(later)
			}
			if i+1 < len(segs) {
				// Durable before new data is appended and flushed, or a
				// crash could bring them back behind it.
				if err := l.fs.SyncDir(l.dir); err != nil {
					return err
				}
			}
			segs = segs[:i+1]
			l.setSegments(segs)
			break
		}
		if err != nil {
			return err
		}
	}
	// The log end is the last segment's next offset (its base when empty).
	l.logEnd.Store(segs[len(segs)-1].nextOffset)
	l.logStart.Store(max(logStart, segs[0].base))
	if l.logStart.Load() > l.logEnd.Load() {
		l.logStart.Store(l.logEnd.Load())
	}
	// Recovered data is not known to be flushed: keep the recovery point
	// where it was (clamped), so a later crash scans it again.
	l.recoveryPoint.Store(min(max(recoveryPoint, 0), l.logEnd.Load()))
	l.epochs.dropFromEnd(l.logEnd.Load())
	// Opening removed nothing of the producer snapshots it listed.
	return l.rebuildProducerState(l.logEnd.Load(), l.recoveryPoint.Load(), snapshotsIn(ents))
}

func hasEntry(ents []fs.DirEntry, name string) bool {
	for _, de := range ents {
		if de.Name() == name {
			return true
		}
	}
	return false
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// indexesToRebuild gives a segment that recovery will scan its indexes
// without reading them: an index file in the listing ents is known by its
// length (one lstat) and opened when recovery changes it, one missing is
// pending (created by the segment's next write, see materializeLocked).
func (l *Log) indexesToRebuild(s *segment, ents []fs.DirEntry, mayHaveTxns bool) error {
	lengthOf := func(t FileType) (int64, bool, error) {
		name := filepath.Base(segmentPath(l.dir, s.base, t))
		i := slices.IndexFunc(ents, func(de fs.DirEntry) bool { return de.Name() == name })
		if i < 0 {
			return 0, false, nil
		}
		info, err := ents[i].Info()
		if os.IsNotExist(err) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		return info.Size(), true, nil
	}
	index := func(t FileType) (*SegmentFile, int64, error) {
		path := segmentPath(l.dir, s.base, t)
		n, ok, err := lengthOf(t)
		if err != nil || !ok {
			return l.files.pendingFile(path, os.O_TRUNC), 0, err
		}
		return l.files.closedFile(path), n, nil
	}
	f, n, err := index(FileIndex)
	if err != nil {
		return err
	}
	s.index = &offsetIndex{file: f, base: s.base, fileLen: n}
	if f, n, err = index(FileTimeIndex); err != nil {
		return err
	}
	s.timeIndex = &timeIndex{file: f, base: s.base, fileLen: n}
	if !mayHaveTxns {
		s.txns = &txnIndex{fs: l.fs, path: segmentPath(l.dir, s.base, FileTxnIndex)}
	} else if s.txns, err = loadTxnIndex(l.fs, segmentPath(l.dir, s.base, FileTxnIndex)); err != nil {
		return err
	}
	s.txns.created = l.markDirUnsynced
	return nil
}

// trustedTailMinBytes is the size from which the last segment, flushed
// to its end, is trusted rather than scanned at open (see load).
const trustedTailMinBytes = 1 << 20

// openIndexes opens a segment's indexes, its transaction index only when
// mayHaveTxns (the directory's listing shows one), and reports whether
// the offset and time indexes look sane. An empty offset index on a
// non-empty segment may be one a crash emptied: it is not.
func (l *Log) openIndexes(s *segment, nextBase int64, mayHaveTxns bool) (bool, error) {
	var ok1, ok2 bool
	var err error
	if s.index, ok1, err = loadOffsetIndex(l.files, segmentPath(l.dir, s.base, FileIndex), s.base, s.size.Load()); err != nil {
		return false, err
	}
	if s.timeIndex, ok2, err = loadTimeIndex(l.files, segmentPath(l.dir, s.base, FileTimeIndex), s.base, nextBase); err != nil {
		return false, err
	}
	if !mayHaveTxns {
		s.txns = &txnIndex{fs: l.fs, path: segmentPath(l.dir, s.base, FileTxnIndex)}
	} else if s.txns, err = loadTxnIndex(l.fs, segmentPath(l.dir, s.base, FileTxnIndex)); err != nil {
		return false, err
	}
	s.txns.created = l.markDirUnsynced
	return ok1 && ok2 && !(s.index.entries() == 0 && s.size.Load() > 0), nil
}

// loadIndexes opens a segment's indexes (openIndexes); unless recovering
// (recover rebuilds them), it checks them and learns the segment's end
// from the batches after the last index entry, rebuilding them from the
// whole segment when they are not sane.
func (l *Log) loadIndexes(s *segment, recovering bool, nextBase int64, interval int64, mayHaveTxns bool) error {
	sane, err := l.openIndexes(s, nextBase, mayHaveTxns)
	if err != nil || recovering {
		return err
	}
	if sane {
		if err := s.loadState(interval); err == nil {
			return nil
		}
	}
	l.lg.Info("rebuilding index", "segment", s.base)
	_, err = s.recover(interval, nil)
	var torn *errTornTail
	if errors.As(err, &torn) {
		// Data below the recovery point was flushed; corruption there is
		// not a torn write. Keep what is valid and say so loudly.
		l.lg.Error("corrupt flushed segment truncated", "segment", s.base, "position", torn.pos, "reason", torn.reason)
		return nil
	}
	return err
}

// rebuildProducerState loads the newest snapshot at or below end and
// replays the batches after it. It also mends the transaction indexes:
// their entries are durable below trustedBelow (flushed) and below the
// snapshot (written after the data before it was synced, see rollLocked);
// entries from there on may be missing or describe lost batches, so they
// are dropped and written again by the replay. snaps are the producer
// snapshots' offsets when the caller listed the directory already, else
// nil.
func (l *Log) rebuildProducerState(end, trustedBelow int64, snaps []int64) error {
	ps, err := loadProducerSnapshot(l.fs, l.dir, end, snaps)
	if err != nil {
		return err
	}
	if ps == nil || ps.mapEnd < l.logStart.Load() && ps.mapEnd < l.segments()[0].base {
		ps = newProducerState()
		ps.mapEnd = l.segments()[0].base
	}
	from := ps.mapEnd
	redo := max(trustedBelow, from)
	below := l.foreignBelowLocked()
	blind := false
	for _, s := range l.segments() {
		if err := s.txns.truncateTo(redo); err != nil {
			return err
		}
	}
	for _, s := range l.segments() {
		if s.nextOffset <= from {
			continue
		}
		var hdr [record.HeaderSize]byte
		pos, _, found, err := s.findBatch(from, s.size.Load(), &hdr)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		if err := s.batchesFrom(pos, func(b record.Batch) error {
			if b.BaseOffset() < from || b.BaseOffset() >= end {
				return nil
			}
			if pid := b.ProducerID(); pid >= 0 && below > 0 && b.BaseOffset() >= below {
				ps.forgetForeign(pid, below) // as the append did
			} else if pid >= 0 && !l.ownKnown {
				blind = true
			}
			aborted, isAbort := ps.pendingAbort(b)
			ps.update(b)
			if isAbort && aborted.LastOffset >= redo {
				return s.txns.append(aborted)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	ps.mapEnd = end
	l.producers, l.blind = ps, blind
	return nil
}

// SetOwnProducersFrom says where the log's own producers begin: at leader
// epoch epoch, the batches before it having been copied from another
// cluster whose producer ids mean other producers (a promoted mirror
// topic, see LeaderAppend.ForeignBelow); epoch < 0: all are the log's
// own. Appends take the boundary from their caller; a rebuild of the
// producer state (at open, after a truncation) takes it from here, and
// one that ran before it was known is done again.
func (l *Log) SetOwnProducersFrom(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	epoch = max(epoch, -1)
	if l.ownKnown && l.ownFrom == epoch {
		return nil
	}
	l.ownFrom, l.ownKnown = epoch, true
	if !l.blind {
		return nil
	}
	if l.foreignBelowLocked() == 0 {
		l.blind = false
		return nil
	}
	// The earlier rebuild mended the transaction indexes: all trusted.
	if err := l.rebuildProducerState(l.logEnd.Load(), l.logEnd.Load(), nil); err != nil {
		return err
	}
	l.updateLSOLocked()
	return nil
}

// foreignBelowLocked is where the log's own producers begin (see
// SetOwnProducersFrom), as LeaderAppend.ForeignBelow: 0 when all are its
// own or that is not known.
func (l *Log) foreignBelowLocked() int64 {
	if !l.ownKnown || l.ownFrom < 0 {
		return 0
	}
	return l.epochStartFromLocked(l.ownFrom)
}
