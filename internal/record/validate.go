package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Validation errors, each mapped to one Kafka error code by the protocol layer.
var (
	ErrBatchTooLarge    = errors.New("record: batch larger than max.message.bytes") // MESSAGE_TOO_LARGE
	ErrInvalidRecord    = errors.New("record: invalid record")                      // INVALID_RECORD
	ErrInvalidTimestamp = errors.New("record: timestamp out of range")              // INVALID_TIMESTAMP
)

// Policy is what a topic demands of batches appended by clients.
type Policy struct {
	MaxBatchBytes      int   // max.message.bytes
	Compacted          bool  // cleanup.policy contains compact: keys are required
	LogAppendTime      bool  // message.timestamp.type=LogAppendTime
	TimestampBeforeMax int64 // message.timestamp.before.max.ms
	TimestampAfterMax  int64 // message.timestamp.after.max.ms
	Recompress         bool  // compression.type is a codec, not "producer"
	Codec              Codec // the codec compression.type names, when Recompress
	CompressionLevel   int
}

// Validated summarizes a batch accepted by Validate.
type Validated struct {
	Batch        Batch // the batch to append: the input, or a recompressed copy
	NumRecords   int32
	MaxTimestamp int64
	// MaxTimestampDelta is the offset delta of the record with MaxTimestamp.
	MaxTimestampDelta int32
}

// Validate checks a batch sent by a client before it is appended, as Kafka's
// log validator does: size, framing, magic, CRC, the header's offset range
// against the record count, every record's framing and offset delta, keys
// for compacted topics, and timestamps. It may rewrite the batch in place
// (max timestamp, timestamp type) and returns a new batch when the topic's
// codec differs from the producer's. now is the append time in
// milliseconds. scratch, when not nil, is reused for decompression and may
// be grown.
//
// The timestamp type is the topic's to choose: on a CreateTime topic a batch
// a client marked LogAppendTime is re-marked CreateTime (as Kafka's
// setMaxTimestamp does), so its records' own timestamps are the ones checked
// and its max timestamp is recomputed from them.
func Validate(b Batch, p *Policy, now int64, scratch *[]byte) (Validated, error) {
	var v Validated
	if len(b) > p.MaxBatchBytes {
		return v, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes=%d", ErrBatchTooLarge, len(b), p.MaxBatchBytes)
	}
	if len(b) < HeaderSize || int64(b.Length())+LengthOverhead != int64(len(b)) {
		return v, fmt.Errorf("%w: batch of %d bytes does not match its length field", ErrCorrupt, len(b))
	}
	if b.Magic() != CurrentMagic {
		return v, fmt.Errorf("%w: magic %d", ErrInvalidRecord, b.Magic())
	}
	if !b.ValidCRC() {
		return v, fmt.Errorf("%w: CRC mismatch (stored %08x, computed %08x)", ErrCorrupt, b.CRC(), b.ComputeCRC())
	}
	attrs := b.Attributes()
	count := b.NumRecords()
	if count <= 0 || count > maxRecordsPerBatch {
		return v, fmt.Errorf("%w: invalid record count %d", ErrInvalidRecord, count)
	}
	if int64(b.LastOffsetDelta())+1 != int64(count) {
		return v, fmt.Errorf("%w: offset range %d does not match record count %d", ErrInvalidRecord, int64(b.LastOffsetDelta())+1, count)
	}
	if attrs.Control() {
		return v, fmt.Errorf("%w: clients may not write control records", ErrInvalidRecord)
	}
	if b.ProducerID() >= 0 && b.BaseSequence() < 0 {
		return v, fmt.Errorf("%w: producer id %d with sequence %d", ErrInvalidRecord, b.ProducerID(), b.BaseSequence())
	}
	if attrs.Codec() > Zstd {
		return v, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, attrs.Codec())
	}
	if scratch == nil {
		scratch = new([]byte)
	}
	raw, err := b.Decoded((*scratch)[:0], decompressLimit(p))
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return v, fmt.Errorf("%w: %v", ErrBatchTooLarge, err)
		}
		return v, err
	}
	if attrs.Codec() != None {
		*scratch = raw
	}
	maxTS, maxDelta, err := checkRecords(raw, count, b.BaseTimestamp(), p, now)
	if err != nil {
		return v, err
	}
	v = Validated{Batch: b, NumRecords: count, MaxTimestamp: maxTS, MaxTimestampDelta: maxDelta}
	if p.Recompress && p.Codec != attrs.Codec() {
		h := HeaderOf(b)
		h.Attributes = h.Attributes.WithCodec(p.Codec)
		if v.Batch, err = BuildRaw(h, count, raw, p.CompressionLevel); err != nil {
			return Validated{}, err
		}
		// Kafka re-checks the size of a batch whose bytes it changed.
		if len(v.Batch) > p.MaxBatchBytes {
			return Validated{}, fmt.Errorf("%w: batch of %d bytes after recompression with %s exceeds max.message.bytes=%d",
				ErrBatchTooLarge, len(v.Batch), p.Codec, p.MaxBatchBytes)
		}
	}
	switch {
	case p.LogAppendTime:
		v.Batch.SetLogAppendTime(now)
		v.MaxTimestamp, v.MaxTimestampDelta = now, 0
	case attrs.LogAppendTime() || v.Batch.MaxTimestamp() != maxTS:
		attrs := binary.BigEndian.Uint16(v.Batch[offAttributes:]) &^ timestampTypeBit
		binary.BigEndian.PutUint16(v.Batch[offAttributes:], attrs)
		binary.BigEndian.PutUint64(v.Batch[offMaxTimestamp:], uint64(maxTS))
		v.Batch.UpdateCRC()
	}
	return v, nil
}

func decompressLimit(p *Policy) int {
	// A compressed batch may expand well beyond max.message.bytes; bound the
	// expansion so a small request cannot exhaust memory.
	if p.MaxBatchBytes > math.MaxInt/64 {
		return math.MaxInt
	}
	return max(64<<20, 64*p.MaxBatchBytes)
}

// checkRecords walks raw's records without copying them. It returns the
// max timestamp (-1, Kafka's NO_TIMESTAMP, when no record has a larger
// one) and the offset delta of the first record carrying it.
func checkRecords(raw []byte, count int32, baseTS int64, p *Policy, now int64) (int64, int32, error) {
	maxTS, maxDelta := int64(-1), int32(0)
	buf := raw
	var r Record
	for i := int32(0); i < count; i++ {
		length, n := binary.Varint(buf)
		if n <= 0 || length < 0 || int64(len(buf)-n) < length {
			return 0, 0, fmt.Errorf("%w: record %d has a bad length", ErrInvalidRecord, i)
		}
		body := buf[n : n+int(length)]
		buf = buf[n+int(length):]
		if err := decodeRecordBody(body, &r, false); err != nil {
			// A record that does not parse under a valid CRC was built
			// wrong, not damaged in transit: INVALID_RECORD, which clients
			// do not retry, as Kafka answers.
			return 0, 0, fmt.Errorf("%w: record %d: %v", ErrInvalidRecord, i, err)
		}
		if r.OffsetDelta != i {
			return 0, 0, fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, r.OffsetDelta)
		}
		if p.Compacted && r.Key == nil {
			return 0, 0, fmt.Errorf("%w: compacted topic cannot accept a record without a key", ErrInvalidRecord)
		}
		ts := baseTS + r.TimestampDelta
		if !p.LogAppendTime && ts != -1 && !timestampInRange(ts, now, p) {
			return 0, 0, fmt.Errorf("%w: record %d timestamp %d is too far from broker time %d", ErrInvalidTimestamp, i, ts, now)
		}
		if ts > maxTS {
			maxTS, maxDelta = ts, i
		}
	}
	if len(buf) != 0 {
		return 0, 0, fmt.Errorf("%w: %d bytes after the last record", ErrInvalidRecord, len(buf))
	}
	return maxTS, maxDelta, nil
}

// timestampInRange reports whether ts is within the policy's window around
// now. The distances are computed unsigned, so extreme timestamps cannot
// overflow into the window.
func timestampInRange(ts, now int64, p *Policy) bool {
	if ts < now {
		return p.TimestampBeforeMax >= 0 && uint64(now)-uint64(ts) <= uint64(p.TimestampBeforeMax)
	}
	return p.TimestampAfterMax >= 0 && uint64(ts)-uint64(now) <= uint64(p.TimestampAfterMax)
}
