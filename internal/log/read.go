package log

import (
	"fmt"
	"io"
	"sort"

	"weir/internal/record"
)

// Slice is a range of a segment file holding whole batches from the one
// that contains the requested offset (the last may be cut by maxBytes, as
// Kafka does). File.Pin gives an *os.File on the real filesystem, for
// sendfile.
type Slice struct {
	File *SegmentFile
	Pos  int64
	Size int
}

// Read returns up to maxBytes of batches starting with the batch holding
// offset and ending before maxOffset (an exclusive bound such as the high
// watermark). With minOneBatch, a first batch larger than maxBytes is
// returned whole. A read returns data from one segment only.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (Slice, error) {
	segs := l.segments()
	end := l.logEnd.Load()
	if offset < l.logStart.Load() || offset > end {
		return Slice{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, l.logStart.Load(), end)
	}
	if offset >= maxOffset {
		return Slice{}, nil
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	if i < 0 {
		i = 0
	}
	var hdr [record.HeaderSize]byte
	for ; i < len(segs); i++ {
		s := segs[i]
		limit := s.size.Load()
		pos, h, found, err := s.findBatch(offset, limit, &hdr)
		if err != nil {
			return Slice{}, err
		}
		if !found {
			continue // offset is past this segment (a compacted gap)
		}
		if h.BaseOffset() >= maxOffset {
			return Slice{}, nil
		}
		// h aliases hdr, which batchEnd reuses: take the size first.
		first := int64(h.Length()) + record.LengthOverhead
		stop := limit
		if maxOffset < end {
			if stop, err = s.batchEnd(pos, maxOffset, limit, &hdr); err != nil {
				return Slice{}, err
			}
		}
		size := min(stop-pos, int64(maxBytes))
		if first > int64(maxBytes) {
			if !minOneBatch {
				return Slice{}, nil
			}
			size = first
		}
		return Slice{File: s.file, Pos: pos, Size: int(size)}, nil
	}
	return Slice{}, nil
}

// ReadBytes is Read into memory, for callers that need the batches
// themselves (compaction, the metadata log, tests).
func (l *Log) ReadBytes(offset int64, maxBytes int, maxOffset int64) ([]byte, error) {
	sl, err := l.Read(offset, maxBytes, maxOffset, true)
	if err != nil || sl.Size == 0 {
		return nil, err
	}
	buf := make([]byte, sl.Size)
	if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// LatestEpoch is the last leader epoch in the log, or -1.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, _ := l.epochs.latest()
	return e.Epoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (see epochCache.endOffsetFor).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.logEnd.Load())
}

// EpochStartFrom is the offset where the first epoch at or above epoch
// starts in the lineage, or the log end offset when there is none.
func (l *Log) EpochStartFrom(epoch int32) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochStartFromLocked(epoch)
}

func (l *Log) epochStartFromLocked(epoch int32) int64 {
	for _, e := range l.epochs.entries {
		if e.Epoch >= epoch {
			return e.StartOffset
		}
	}
	return l.logEnd.Load()
}

// Epochs returns a copy of the leader epoch lineage.
func (l *Log) Epochs() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.snapshot()
}

// AssignEpoch records that a new leader epoch starts at the log end (a new
// leader does this before its first append in the epoch). The checkpoint
// is written before the epoch's first batch lands (see assignAtEnd).
func (l *Log) AssignEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epochs.assignAtEnd(epoch, l.logEnd.Load())
	return nil
}
