package log

import (
	"os"
	"time"
)

// TruncateTo removes every batch at or after offset (a follower whose log
// diverged from its leader's). offset must be a batch boundary. At or past
// the log end no batch goes, but epochs starting at the log end do.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if offset >= l.logEnd.Load() {
		// An epoch starting at the log end holds no batch: this replica
		// became leader and was deposed before it appended. A follower
		// must forget it, or it keeps fetching with it as its last epoch
		// and the leader keeps answering with the same divergence (found
		// by internal/replsim; Kafka's UnifiedLog.truncateTo does this).
		return l.epochs.truncateFromEnd(l.logEnd.Load())
	}
	if offset < l.logStart.Load() {
		return l.truncateFullyLocked(offset)
	}
	l.truncatedTo = min(l.truncatedTo, offset)
	segs := l.segments()
	keep := len(segs)
	for keep > 1 && segs[keep-1].base >= offset {
		keep--
	}
	for _, s := range segs[keep:] {
		l.deleteSegmentLater(s)
	}
	if keep < len(segs) {
		// Durable before data appended after the truncation point is, or
		// a crash could bring back segments overlapping it.
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	segs = append([]*segment(nil), segs[:keep]...)
	last := segs[keep-1]
	if err := last.truncateTo(offset); err != nil {
		return err
	}
	// The cut is durable before batches are appended over it. Otherwise a
	// crash could keep the old bytes and lose the cut and what followed:
	// the diverged batches would come back under the epoch checkpoint
	// (synced already) that says they are gone, so the replica would keep
	// them below its high watermark for good (found by internal/replsim).
	// And synced must not exceed the new size, or a roll would skip the
	// sync of data appended since.
	if err := last.file.Sync(); err != nil {
		return err
	}
	last.synced.Store(last.size.Load())
	l.setSegments(segs)
	l.logEnd.Store(segs[keep-1].nextOffset)
	if l.logEnd.Load() < segs[keep-1].base {
		l.logEnd.Store(segs[keep-1].base)
	}
	if l.recoveryPoint.Load() > l.logEnd.Load() {
		l.recoveryPoint.Store(l.logEnd.Load())
	}
	if l.highWatermark.Load() > l.logEnd.Load() {
		l.highWatermark.Store(l.logEnd.Load())
	}
	// An offset inside a batch cuts the whole batch, possibly below a log
	// start offset set inside it: keep start <= end.
	if l.logStart.Load() > l.logEnd.Load() {
		l.logStart.Store(l.logEnd.Load())
	}
	if err := l.epochs.truncateFromEnd(l.logEnd.Load()); err != nil {
		return err
	}
	if err := l.rebuildProducerState(l.logEnd.Load(), l.logEnd.Load(), nil); err != nil {
		return err
	}
	l.updateLSOLocked()
	return nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	if l.closed {
		return ErrClosed
	}
	l.truncatedTo = min(l.truncatedTo, offset)
	for _, s := range l.segments() {
		l.deleteSegmentLater(s)
	}
	s := l.newEmptySegment(offset)
	l.setSegments([]*segment{s})
	l.logEnd.Store(offset)
	l.logStart.Store(offset)
	l.recoveryPoint.Store(offset)
	l.highWatermark.Store(offset)
	l.epochs.entries = nil
	if err := l.epochs.flush(); err != nil {
		return err
	}
	snaps, _ := listSnapshots(l.fs, l.dir)
	for _, o := range snaps {
		l.fs.Remove(snapshotPath(l.dir, o))
	}
	l.producers = newProducerState()
	l.producers.mapEnd = offset
	l.updateLSOLocked()
	return nil
}

// deleteSegmentLater renames a segment's files to *.deleted and closes and
// removes them after file.delete.delay.ms, so reads in flight complete.
func (l *Log) deleteSegmentLater(s *segment) {
	for _, err := range l.renameSegment(s, Deleted) {
		l.lg.Warn("renaming deleted segment", "segment", s.base, "err", err)
	}
	delay := time.Duration(l.config().FileDeleteDelayMs) * time.Millisecond
	l.wait(delay, func() { l.removeDeletedFiles(s) })
}

// renameSegment renames the live files of s to their names in state st,
// returning the errors (a missing file is none).
func (l *Log) renameSegment(s *segment, st FileState) []error {
	var errs []error
	pending := s.pending()
	for _, t := range segmentTypes {
		to := statePath(l.dir, s.base, t, st)
		var err error
		switch t {
		case FileLog:
			err = s.file.rename(to)
		case FileIndex:
			err = s.index.file.rename(to)
		case FileTimeIndex:
			err = s.timeIndex.file.rename(to)
		default:
			if pending {
				continue // created with the segment's .log, if at all
			}
			err = l.fs.Rename(segmentPath(l.dir, s.base, t), to)
		}
		if err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errs
}

// removeDeletedFiles closes a segment deleted by deleteSegmentLater and
// removes its *.deleted files. It must not touch the plain names: by now a
// new segment (after a truncation, or a compaction swap) may own them.
func (l *Log) removeDeletedFiles(s *segment) {
	s.close()
	if s.pending() {
		return // never created
	}
	for _, t := range segmentTypes {
		p := statePath(l.dir, s.base, t, Deleted)
		if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) {
			l.lg.Warn("removing deleted segment", "file", p, "err", err)
		}
	}
}

func (l *Log) removeSegmentFiles(s *segment) {
	s.close()
	if s.pending() {
		return // never created
	}
	for _, t := range segmentTypes {
		for _, q := range []string{segmentPath(l.dir, s.base, t), statePath(l.dir, s.base, t, Deleted)} {
			if err := l.fs.Remove(q); err != nil && !os.IsNotExist(err) {
				l.lg.Warn("removing deleted segment", "file", q, "err", err)
			}
		}
	}
}
