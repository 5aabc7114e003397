package log

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"weir/internal/record"
)

// A segment is one .log file holding whole batches back to back, starting
// at offset base, with its .index, .timeindex and .txnindex. Only the last segment of
// a log is appended to, under the log's lock. size is published after each
// write, so concurrent readers never see a partial batch.
type segment struct {
	base      int64
	file      *SegmentFile
	index     *offsetIndex
	timeIndex *timeIndex
	txns      *txnIndex // aborted transactions whose marker is here
	size      atomic.Int64
	// synced is how much of the file is known durable (fsynced).
	synced atomic.Int64

	// Written under the log's lock only.
	nextOffset      int64 // offset after the last batch; base when empty
	bytesSinceIndex int64
	maxTimestamp    int64 // largest batch max timestamp; -1 when none
	maxTSOffset     int64 // last offset of the batch holding maxTimestamp
	firstTimestamp  int64 // first batch's max timestamp, for time-based rolls; -1 when empty
	created         int64 // ms, for time-based rolls of segments without timestamps
	// clearTxns: a leftover .txnindex at base is removed when the pending
	// segment's files are created (see materializeLocked).
	clearTxns bool
}

// openSegment opens (creating if needed) the segment at base. It does not
// validate contents: recover or loadIndexes does.
func openSegment(files *FileCache, dir string, base int64, now int64) (*segment, error) {
	f, err := files.create(segmentPath(dir, base, FileLog))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	s := &segment{base: base, file: f, nextOffset: base, maxTimestamp: -1, maxTSOffset: -1, firstTimestamp: -1, created: now}
	s.size.Store(st.Size())
	return s, nil
}

// newPendingSegment is an empty segment at base whose files are not
// created yet: the log creates them before its first write (see
// Log.materializeLocked), so a log never written costs no segment file.
func newPendingSegment(files *FileCache, dir string, base int64, now int64) *segment {
	return &segment{
		base:       base,
		file:       files.pendingFile(segmentPath(dir, base, FileLog), os.O_EXCL),
		index:      &offsetIndex{file: files.pendingFile(segmentPath(dir, base, FileIndex), os.O_TRUNC), base: base},
		timeIndex:  &timeIndex{file: files.pendingFile(segmentPath(dir, base, FileTimeIndex), os.O_TRUNC), base: base},
		nextOffset: base, maxTimestamp: -1, maxTSOffset: -1, firstTimestamp: -1, created: now,
	}
}

// pending reports whether the segment's .log is not created yet.
func (s *segment) pending() bool { return s.file.Pending() }

// header reads the fixed batch header at pos. io.EOF means pos is the end.
func (s *segment) header(pos int64, buf *[record.HeaderSize]byte) (record.Batch, error) {
	return readHeader(s.file, pos, buf)
}

func readHeader(r io.ReaderAt, pos int64, buf *[record.HeaderSize]byte) (record.Batch, error) {
	n, err := r.ReadAt(buf[:], pos)
	if n == 0 && (err == io.EOF || err == nil) {
		return nil, io.EOF
	}
	if n < record.HeaderSize {
		return nil, record.ErrShort
	}
	b := record.Batch(buf[:])
	if b.Magic() != record.CurrentMagic {
		return nil, record.ErrMagic
	}
	if b.Length() < record.HeaderSize-record.LengthOverhead {
		return nil, record.ErrCorrupt
	}
	return b, nil
}

// findBatch returns the position of the first batch whose last offset is
// >= offset, scanning from the index, and that batch's header. found is
// false when no such batch exists below limit (a byte position).
func (s *segment) findBatch(offset int64, limit int64, buf *[record.HeaderSize]byte) (pos int64, hdr record.Batch, found bool, err error) {
	pos = s.index.lookup(offset)
	for pos < limit {
		h, err := s.header(pos, buf)
		if err == io.EOF {
			return pos, nil, false, nil
		}
		if err != nil {
			return pos, nil, false, err
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.Length()) + record.LengthOverhead
	}
	return pos, nil, false, nil
}

// batchEnd returns the position just past the last batch whose base offset
// is below offset, within [from, limit): the end of data visible to a reader
// bounded by offset.
func (s *segment) batchEnd(from int64, offset int64, limit int64, buf *[record.HeaderSize]byte) (int64, error) {
	// Every batch before the indexed position ends below offset.
	pos := max(from, s.index.lookup(offset))
	for pos < limit {
		h, err := s.header(pos, buf)
		if err == io.EOF {
			return pos, nil
		}
		if err != nil {
			return pos, err
		}
		if h.BaseOffset() >= offset {
			return pos, nil
		}
		pos += int64(h.Length()) + record.LengthOverhead
	}
	return min(pos, limit), nil
}

// appendBatches writes whole batches (offsets already stamped) at the end of
// the segment and indexes them. On a write error the file is cut back to its
// previous size, so a failed append leaves nothing behind.
func (s *segment) appendBatches(data []byte, indexInterval int64) error {
	pos := s.size.Load()
	if _, err := s.file.WriteAt(data, pos); err != nil {
		if terr := s.file.Truncate(pos); terr != nil {
			return fmt.Errorf("%w (and truncating the torn write failed: %v)", err, terr)
		}
		return err
	}
	saved := s.bookkeeping()
	start := pos
	for buf := data; len(buf) > 0; {
		b, rest, err := record.Next(buf)
		if err == nil {
			err = s.indexBatch(b, pos, indexInterval)
		} else {
			err = fmt.Errorf("log: appending malformed batches: %w", err)
		}
		if err != nil {
			// Undo the write and any index entries it made, so a failed
			// append (an index write hitting a full disk) leaves nothing.
			s.restore(saved)
			return errors.Join(err, s.file.Truncate(start), s.index.truncateTo(start), s.timeIndex.truncateTo(saved.nextOffset))
		}
		pos += int64(len(b))
		buf = rest
	}
	s.size.Store(pos)
	return nil
}

// segState is the bookkeeping appendBatches restores when an append fails.
type segState struct {
	nextOffset, bytesSinceIndex, maxTimestamp, maxTSOffset, firstTimestamp int64
}

func (s *segment) bookkeeping() segState {
	return segState{s.nextOffset, s.bytesSinceIndex, s.maxTimestamp, s.maxTSOffset, s.firstTimestamp}
}

func (s *segment) restore(st segState) {
	s.nextOffset, s.bytesSinceIndex, s.maxTimestamp, s.maxTSOffset, s.firstTimestamp =
		st.nextOffset, st.bytesSinceIndex, st.maxTimestamp, st.maxTSOffset, st.firstTimestamp
}

// indexBatch updates the in-memory bookkeeping and the indexes for a batch
// written at pos.
func (s *segment) indexBatch(b record.Batch, pos int64, indexInterval int64) error {
	ts := b.MaxTimestamp()
	if s.firstTimestamp < 0 {
		s.firstTimestamp = ts
	}
	if ts > s.maxTimestamp {
		s.maxTimestamp, s.maxTSOffset = ts, b.LastOffset()
	}
	if s.bytesSinceIndex > indexInterval {
		if err := s.index.append(b.LastOffset(), pos); err != nil {
			return err
		}
		if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.maxTSOffset); err != nil {
			return err
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(len(b))
	s.nextOffset = b.NextOffset()
	return nil
}

// errTornTail reports where a segment's valid data ends.
type errTornTail struct {
	pos    int64
	reason error
}

func (e *errTornTail) Error() string {
	return fmt.Sprintf("invalid batch at position %d: %v", e.pos, e.reason)
}

// recover scans the whole segment, checking framing, CRCs and offsets,
// rebuilding both indexes, and truncates the file at the first invalid
// batch. visit is called for each valid batch (producer state rebuild).
// It returns the number of bytes truncated.
func (s *segment) recover(indexInterval int64, visit func(record.Batch)) (int64, error) {
	if err := s.index.reset(); err != nil {
		return 0, err
	}
	if err := s.timeIndex.truncateTo(s.base); err != nil {
		return 0, err
	}
	s.bytesSinceIndex, s.maxTimestamp, s.maxTSOffset, s.firstTimestamp = 0, -1, -1, -1
	s.nextOffset = s.base
	size := s.size.Load()
	pos := int64(0)
	var bad error
	var buf []byte
	for pos < size {
		var hdr [record.HeaderSize]byte
		h, err := s.header(pos, &hdr)
		if err != nil {
			if !isFormatError(err) {
				return 0, err
			}
			bad = err
			break
		}
		n := int64(h.Length()) + record.LengthOverhead
		if pos+n > size {
			bad = record.ErrShort
			break
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		b := record.Batch(buf[:n])
		if _, err := s.file.ReadAt(b, pos); err != nil {
			return 0, err
		}
		if !b.ValidCRC() {
			bad = record.ErrCorrupt
			break
		}
		if b.BaseOffset() < s.nextOffset || b.LastOffsetDelta() < 0 {
			bad = fmt.Errorf("%w: offset %d does not follow %d", record.ErrCorrupt, b.BaseOffset(), s.nextOffset)
			break
		}
		if err := s.indexBatch(b, pos, indexInterval); err != nil {
			return 0, err
		}
		if visit != nil {
			visit(b)
		}
		pos += n
	}
	if bad == nil {
		return 0, nil
	}
	if err := s.file.Truncate(pos); err != nil {
		return 0, err
	}
	s.size.Store(pos)
	return size - pos, &errTornTail{pos: pos, reason: bad}
}

func isFormatError(err error) bool {
	return errors.Is(err, record.ErrShort) || errors.Is(err, record.ErrMagic) || errors.Is(err, record.ErrCorrupt)
}

// loadState derives nextOffset and timestamps for a segment whose indexes
// are trusted, by reading the batches after the last index entry.
func (s *segment) loadState(indexInterval int64) error {
	// Start from scratch: after a truncation the old values describe
	// batches that are gone.
	s.nextOffset, s.bytesSinceIndex = s.base, 0
	s.maxTimestamp, s.maxTSOffset, s.firstTimestamp = -1, -1, -1
	if e, ok := s.timeIndex.lastEntry(); ok {
		s.maxTimestamp, s.maxTSOffset = e.ts, s.base+int64(e.rel)
	}
	pos := int64(0)
	if n := s.index.entries(); n > 0 {
		s.index.mu.RLock()
		last := s.index.ents[n-1]
		s.index.mu.RUnlock()
		pos = int64(last.pos)
	}
	var hdr [record.HeaderSize]byte
	size := s.size.Load()
	if size > 0 {
		// Learn the first timestamp for time-based rolling.
		h, err := s.header(0, &hdr)
		if err != nil {
			return err
		}
		s.firstTimestamp = h.MaxTimestamp()
	}
	for pos < size {
		h, err := s.header(pos, &hdr)
		if err != nil {
			return err
		}
		if h.MaxTimestamp() > s.maxTimestamp {
			s.maxTimestamp, s.maxTSOffset = h.MaxTimestamp(), h.LastOffset()
		}
		s.nextOffset = h.NextOffset()
		pos += int64(h.Length()) + record.LengthOverhead
		s.bytesSinceIndex += int64(h.Length()) + record.LengthOverhead
	}
	if pos != size {
		return errors.New("log: segment ends inside a batch")
	}
	return nil
}

// truncateTo cuts the segment before the batch holding offset. Offsets are
// always batch boundaries when truncating (callers truncate to a batch start).
func (s *segment) truncateTo(offset int64) error {
	var hdr [record.HeaderSize]byte
	pos, _, found, err := s.findBatch(offset, s.size.Load(), &hdr)
	if err != nil {
		return err
	}
	if !found {
		return nil
	}
	if err := s.file.Truncate(pos); err != nil {
		return err
	}
	s.size.Store(pos)
	if err := s.index.truncateTo(pos); err != nil {
		return err
	}
	if err := s.timeIndex.truncateTo(offset); err != nil {
		return err
	}
	if err := s.txns.truncateTo(offset); err != nil {
		return err
	}
	return s.loadState(0)
}

// sync fsyncs the segment's files; its pending index entries must have
// been written first (flushIndexes, or the index's flush).
func (s *segment) sync() error {
	size := s.size.Load()
	if err := s.file.Sync(); err != nil {
		return err
	}
	if size > s.synced.Load() {
		s.synced.Store(size)
	}
	if err := s.index.file.Sync(); err != nil {
		return err
	}
	if err := s.txns.sync(); err != nil {
		return err
	}
	return s.timeIndex.file.Sync()
}

// close closes the segment's files. It is safe on a segment whose
// indexes were never (or only partly) opened, as a failed load leaves it.
func (s *segment) close() error {
	var errs []error
	if s.file != nil {
		errs = append(errs, s.file.Close())
	}
	if s.index != nil {
		errs = append(errs, s.index.file.Close())
	}
	if s.timeIndex != nil {
		errs = append(errs, s.timeIndex.file.Close())
	}
	return errors.Join(append(errs, s.txns.close())...)
}

// readAll reads the segment's bytes in [from, to).
func (s *segment) readRange(from, to int64) ([]byte, error) {
	buf := make([]byte, to-from)
	if _, err := s.file.ReadAt(buf, from); err != nil && !(err == io.EOF && len(buf) == 0) {
		return nil, err
	}
	return buf, nil
}

// batchesFrom calls fn for each whole batch from position pos to the end.
// fn receives a copy it may keep.
func (s *segment) batchesFrom(pos int64, fn func(record.Batch) error) error {
	size := s.size.Load()
	const chunk = 1 << 20
	for pos < size {
		end := min(size, pos+chunk)
		data, err := s.readRange(pos, end)
		if err != nil {
			return err
		}
		consumed := 0
		for {
			b, rest, err := record.Next(data[consumed:])
			if err == record.ErrShort {
				break
			}
			if err != nil {
				return err
			}
			if err := fn(b); err != nil {
				return err
			}
			consumed = len(data) - len(rest)
		}
		if consumed == 0 {
			// One batch larger than the chunk: read it whole.
			n, ok := record.PeekSize(data)
			if !ok || n <= 0 || pos+int64(n) > size {
				return fmt.Errorf("log: segment %d ends inside a batch at %d", s.base, pos)
			}
			whole, err := s.readRange(pos, pos+int64(n))
			if err != nil {
				return err
			}
			if err := fn(record.Batch(whole)); err != nil {
				return err
			}
			consumed = n
		}
		pos += int64(consumed)
	}
	return nil
}
