package log

import (
	"fmt"
	"os"
)

// DeleteOldSegments applies retention as Kafka does: whole segments are
// deleted, oldest first, while they are wholly below the log start offset,
// or older than retention.ms (by their largest timestamp), or while the log
// exceeds retention.bytes by at least their size; time and size only apply
// when cleanup.policy includes delete. Only segments wholly below
// the high watermark are deletable. Deleting the active segment rolls
// first. It also expires idle producers. It returns the number of segments
// deleted.
func (l *Log) DeleteOldSegments() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, nil
	}
	highWatermark := l.highWatermark.Load()
	cfg := l.config()
	now := l.nowMs()
	l.producers.expire(now - cfg.ProducerExpiryMs)

	segs := l.segments()
	excess := int64(-1)
	if cfg.Delete && cfg.RetentionBytes >= 0 {
		excess = l.Size() - cfg.RetentionBytes
	}
	logStart := l.logStart.Load()
	n := 0
	for n < len(segs) {
		s := segs[n]
		next := l.logEnd.Load()
		last := n+1 == len(segs)
		if !last {
			next = segs[n+1].base
		}
		size := s.size.Load()
		if last && size == 0 || highWatermark < next {
			break
		}
		byStart := !last && next <= logStart
		byTime := cfg.Delete && cfg.RetentionMs >= 0 && now-l.largestTimestamp(s) > cfg.RetentionMs
		bySize := excess >= 0 && excess-size >= 0
		if !byStart && !byTime && !bySize {
			break
		}
		// Whatever deleted it, the segment no longer counts against
		// retention.bytes (Kafka applies time first, then size).
		excess -= size
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		if _, err := l.rollLocked(l.logEnd.Load()); err != nil {
			return 0, err
		}
		segs = l.segments()
	}
	for _, s := range segs[:n] {
		l.deleteSegmentLater(s)
	}
	rest := append([]*segment(nil), segs[n:]...)
	l.setSegments(rest)
	if rest[0].base > l.logStart.Load() {
		l.logStart.Store(rest[0].base)
		if err := l.epochs.truncateFromStart(rest[0].base); err != nil {
			return n, err
		}
	}
	l.updateLSOLocked()
	l.lg.Info("deleted segments by retention", "count", n, "log_start_offset", l.logStart.Load())
	return n, l.deleteStaleSnapshots(rest[0].base)
}

// largestTimestamp is a segment's largest record timestamp, or its file's
// modification time when it has none (Kafka's rule).
func (l *Log) largestTimestamp(s *segment) int64 {
	if s.maxTimestamp >= 0 {
		return s.maxTimestamp
	}
	st, err := s.file.Stat()
	if err != nil {
		return l.nowMs()
	}
	if s.pending() {
		return s.created // no file yet
	}
	return st.ModTime().UnixMilli()
}

// deleteStaleSnapshots removes producer snapshots below the first segment,
// keeping the newest of them: it still describes the retained data's start.
func (l *Log) deleteStaleSnapshots(firstBase int64) error {
	offs, err := listSnapshots(l.fs, l.dir)
	if err != nil {
		return err
	}
	keep := -1
	for i, o := range offs {
		if o <= firstBase {
			keep = i
		}
	}
	for i := 0; i < keep; i++ {
		if err := l.fs.Remove(snapshotPath(l.dir, offs[i])); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// SetLogStartOffset raises the log start offset (DeleteRecords). Offsets
// below it become unreadable at once; segments wholly below it are deleted.
// It returns the new log start offset. offset must not exceed the high
// watermark.
func (l *Log) SetLogStartOffset(offset int64) (int64, error) {
	l.mu.Lock()
	highWatermark := l.highWatermark.Load()
	if offset > highWatermark || offset > l.logEnd.Load() {
		l.mu.Unlock()
		return l.logStart.Load(), fmt.Errorf("%w: cannot delete records up to %d above the high watermark %d", ErrOffsetOutOfRange, offset, highWatermark)
	}
	if offset <= l.logStart.Load() {
		l.mu.Unlock()
		return l.logStart.Load(), nil
	}
	l.logStart.Store(offset)
	l.updateLSOLocked()
	err := l.epochs.truncateFromStart(offset)
	l.mu.Unlock()
	if err != nil {
		return offset, err
	}
	if _, err := l.DeleteOldSegments(); err != nil {
		return offset, err
	}
	return l.logStart.Load(), nil
}
