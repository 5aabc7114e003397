package log

// Read-only decoders of a partition directory's files, for offline tools
// (weir dump-log): they read bytes and never repair or rewrite anything.

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// IndexEntry is one entry of an offset index (.index): the last offset of
// an indexed batch and the batch's position in the segment.
type IndexEntry struct {
	Offset   int64
	Position int64
}

// TimeIndexEntry is one entry of a time index (.timeindex).
type TimeIndexEntry struct {
	Timestamp int64
	Offset    int64
}

// DecodeOffsetIndex returns the entries of an offset index of the segment
// at base, all of them, as stored.
func DecodeOffsetIndex(buf []byte, base int64) ([]IndexEntry, error) {
	if len(buf)%offsetEntrySize != 0 {
		return nil, fmt.Errorf("index file size %d is not a multiple of %d", len(buf), offsetEntrySize)
	}
	out := make([]IndexEntry, 0, len(buf)/offsetEntrySize)
	for i := 0; i < len(buf); i += offsetEntrySize {
		out = append(out, IndexEntry{
			Offset:   base + int64(int32(binary.BigEndian.Uint32(buf[i:]))),
			Position: int64(int32(binary.BigEndian.Uint32(buf[i+4:]))),
		})
	}
	return out, nil
}

// DecodeTimeIndex returns the entries of a time index of the segment at
// base, all of them, as stored.
func DecodeTimeIndex(buf []byte, base int64) ([]TimeIndexEntry, error) {
	if len(buf)%timeEntrySize != 0 {
		return nil, fmt.Errorf("time index file size %d is not a multiple of %d", len(buf), timeEntrySize)
	}
	out := make([]TimeIndexEntry, 0, len(buf)/timeEntrySize)
	for i := 0; i < len(buf); i += timeEntrySize {
		out = append(out, TimeIndexEntry{
			Timestamp: int64(binary.BigEndian.Uint64(buf[i:])),
			Offset:    base + int64(int32(binary.BigEndian.Uint32(buf[i+8:]))),
		})
	}
	return out, nil
}

// DecodeTxnIndex returns the aborted transactions of a transaction index
// up to its first invalid entry; n is the number of valid bytes.
func DecodeTxnIndex(buf []byte) (ents []AbortedTxn, n int) {
	for ; n+txnEntrySize <= len(buf); n += txnEntrySize {
		e, ok := decodeAbortedTxn(buf[n:])
		if !ok {
			break
		}
		ents = append(ents, e)
	}
	return ents, n
}

// ProducerSnapshotEntry is one producer of a producer state snapshot
// (.snapshot): its epoch, coordinator epoch, open transaction and last
// batch (FirstSeq is -1 when it has none).
type ProducerSnapshotEntry struct {
	ProducerID            int64
	ProducerEpoch         int16
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
	LastTimestamp         int64
	HasBatch              bool
	FirstSeq, LastSeq     int32
	LastOffset            int64
	OffsetDelta           int32
	BatchTimestamp        int64
}

// DecodeProducerSnapshot returns the producers of a snapshot, by id; a bad
// header, CRC or length is an error.
func DecodeProducerSnapshot(buf []byte) ([]ProducerSnapshotEntry, error) {
	ps, err := decodeProducerSnapshot(buf, 0)
	if err != nil {
		return nil, err
	}
	out := make([]ProducerSnapshotEntry, 0, len(ps.entries))
	for _, e := range ps.entries {
		s := ProducerSnapshotEntry{ProducerID: e.id, ProducerEpoch: e.epoch, CoordinatorEpoch: e.coordEpoch,
			CurrentTxnFirstOffset: e.txnFirstOff, LastTimestamp: e.lastTimestamp}
		if len(e.batches) > 0 {
			b := e.batches[len(e.batches)-1]
			s.HasBatch = true
			s.FirstSeq, s.LastSeq, s.LastOffset, s.OffsetDelta, s.BatchTimestamp = b.firstSeq, b.lastSeq, b.lastOffset, b.delta, b.timestamp
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out, nil
}
