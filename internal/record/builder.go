package record

import "encoding/binary"

// BatchHeader carries the header fields of a batch to build. Attributes' codec
// bits choose the compression of the payload.
type BatchHeader struct {
	BaseOffset      int64
	LeaderEpoch     int32
	Attributes      Attributes
	LastOffsetDelta int32 // -1: derive from the last record
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
}

// NewBatchHeader returns a header for a batch with no producer, base offset 0.
func NewBatchHeader() BatchHeader {
	return BatchHeader{LeaderEpoch: NoPartitionEpoch, LastOffsetDelta: -1,
		ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch, BaseSequence: NoSequence}
}

// Build encodes recs into one batch. Offset and timestamp deltas are taken
// from the records as given (compaction keeps gaps). level is the codec's
// compression level (<= 0 for its default).
func Build(h BatchHeader, recs []Record, level int) (Batch, error) {
	var raw []byte
	for i := range recs {
		raw = AppendRecord(raw, &recs[i])
	}
	return BuildRaw(h, int32(len(recs)), raw, level)
}

// BuildRaw makes a batch from an uncompressed, already encoded records
// payload holding count records, compressing it with the header's codec.
func BuildRaw(h BatchHeader, count int32, raw []byte, level int) (Batch, error) {
	payload := raw
	if c := h.Attributes.Codec(); c != None {
		var err error
		if payload, err = Compress(c, raw, nil, level); err != nil {
			return nil, err
		}
	}
	if h.LastOffsetDelta < 0 {
		h.LastOffsetDelta = lastOffsetDelta(raw, count)
	}
	b := make(Batch, HeaderSize+len(payload))
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LengthOverhead))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(h.LeaderEpoch))
	b[offMagic] = CurrentMagic
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
	copy(b[HeaderSize:], payload)
	b.UpdateCRC()
	return b, nil
}

func lastOffsetDelta(raw []byte, count int32) int32 {
	last := int32(0)
	it := NewRecords(raw, count)
	for r, ok := it.Next(); ok; r, ok = it.Next() {
		last = r.OffsetDelta
	}
	return last
}

// HeaderOf returns the header fields of an existing batch.
func HeaderOf(b Batch) BatchHeader {
	return BatchHeader{
		BaseOffset:      b.BaseOffset(),
		LeaderEpoch:     b.LeaderEpoch(),
		Attributes:      b.Attributes(),
		LastOffsetDelta: b.LastOffsetDelta(),
		BaseTimestamp:   b.BaseTimestamp(),
		MaxTimestamp:    b.MaxTimestamp(),
		ProducerID:      b.ProducerID(),
		ProducerEpoch:   b.ProducerEpoch(),
		BaseSequence:    b.BaseSequence(),
	}
}

// WithCodec returns a copy of a with the codec bits replaced.
func (a Attributes) WithCodec(c Codec) Attributes { return a&^codecMask | Attributes(c) }

// Decoded returns the batch's uncompressed records payload, using scratch as
// the buffer when decompression is needed. limit bounds the result.
func (b Batch) Decoded(scratch []byte, limit int) ([]byte, error) {
	if b.Attributes().Codec() == None {
		return b.Payload(), nil
	}
	return Decompress(b.Attributes().Codec(), b.Payload(), scratch, limit)
}
