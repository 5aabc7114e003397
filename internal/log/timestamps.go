package log

import (
	"errors"

	"weir/internal/record"
)

var errStop = errors.New("stop")

// OffsetForTimestamp finds the first record at or after the log start
// offset and below maxOffset whose timestamp is >= ts (ListOffsets by
// time). ok is false when there is none.
func (l *Log) OffsetForTimestamp(ts, maxOffset int64) (offset, timestamp int64, ok bool, err error) {
	logStart := l.logStart.Load()
	for _, st := range l.segmentTimes() {
		s := st.seg
		if st.maxTimestamp < ts || st.nextOffset <= logStart {
			continue
		}
		start := max(s.timeIndex.lookup(ts), logStart)
		var hdr [record.HeaderSize]byte
		pos, _, found, err := s.findBatch(start, s.size.Load(), &hdr)
		if err != nil {
			return 0, 0, false, err
		}
		if !found {
			continue
		}
		err = s.batchesFrom(pos, func(b record.Batch) error {
			if b.BaseOffset() >= maxOffset {
				return errStop
			}
			if b.MaxTimestamp() < ts {
				return nil
			}
			o, t, hit, err := firstRecordAtOrAfter(b, ts, start, maxOffset)
			if err != nil || !hit {
				return err
			}
			offset, timestamp, ok = o, t, true
			return errStop
		})
		if err != nil && err != errStop {
			return 0, 0, false, err
		}
		if ok {
			return offset, timestamp, true, nil
		}
		if err == errStop {
			break
		}
	}
	return -1, -1, false, nil
}

// MaxTimestampOffset returns the offset and timestamp of the earliest record
// holding the log's largest timestamp (ListOffsets MAX_TIMESTAMP), below
// maxOffset. ok is false for an empty log.
func (l *Log) MaxTimestampOffset(maxOffset int64) (offset, timestamp int64, ok bool, err error) {
	var best *segTimes
	for _, st := range l.segmentTimes() {
		if st.maxTimestamp >= 0 && st.nextOffset > l.logStart.Load() && (best == nil || st.maxTimestamp > best.maxTimestamp) {
			best = &st
		}
	}
	if best == nil {
		return -1, -1, false, nil
	}
	var hdr [record.HeaderSize]byte
	pos, _, found, err := best.seg.findBatch(best.maxTSOffset, best.seg.size.Load(), &hdr)
	if err != nil || !found {
		return -1, -1, false, err
	}
	err = best.seg.batchesFrom(pos, func(b record.Batch) error {
		o, t, hit, err := firstRecordAtOrAfter(b, best.maxTimestamp, l.logStart.Load(), maxOffset)
		if err != nil {
			return err
		}
		offset, timestamp, ok = o, t, hit
		return errStop
	})
	if err != nil && err != errStop {
		return -1, -1, false, err
	}
	return offset, timestamp, ok, nil
}

// segTimes is a segment with the fields appends change, read under the
// log's lock so that lookups by time can run beside appends.
type segTimes struct {
	seg                                   *segment
	maxTimestamp, maxTSOffset, nextOffset int64
}

func (l *Log) segmentTimes() []segTimes {
	l.mu.Lock()
	defer l.mu.Unlock()
	segs := l.segments()
	out := make([]segTimes, len(segs))
	for i, s := range segs {
		out[i] = segTimes{s, s.maxTimestamp, s.maxTSOffset, s.nextOffset}
	}
	return out
}

// firstRecordAtOrAfter finds the first record of b with offset in
// [minOffset, maxOffset) and timestamp >= ts.
func firstRecordAtOrAfter(b record.Batch, ts, minOffset, maxOffset int64) (int64, int64, bool, error) {
	if b.Attributes().Control() {
		return 0, 0, false, nil
	}
	if b.Attributes().LogAppendTime() {
		o := max(b.BaseOffset(), minOffset)
		if o > b.LastOffset() || o >= maxOffset {
			return 0, 0, false, nil
		}
		return o, b.MaxTimestamp(), true, nil
	}
	raw, err := b.Decoded(nil, 1<<30)
	if err != nil {
		return 0, 0, false, err
	}
	it := record.NewRecords(raw, b.NumRecords())
	for r, more := it.Next(); more; r, more = it.Next() {
		o := b.BaseOffset() + int64(r.OffsetDelta)
		t := b.BaseTimestamp() + r.TimestampDelta
		if o >= maxOffset {
			return 0, 0, false, nil // stopping early is not an error
		}
		if o >= minOffset && t >= ts {
			return o, t, true, nil
		}
	}
	return 0, 0, false, it.Err()
}
