// Package record is a zero-copy view of Kafka's RecordBatch (magic v2), the
// unit weir stores, replicates and serves without re-encoding.
//
// A batch on the wire and on disk (all integers big-endian):
//
//	offset  size  field
//	0       8     baseOffset            stamped by the leader on append
//	8       4     batchLength           bytes after this field
//	12      4     partitionLeaderEpoch  stamped by the leader on append
//	16      1     magic                 always 2
//	17      4     crc                   CRC-32C of bytes [21, end)
//	21      2     attributes            codec(0-2) tsType(3) txn(4) control(5) deleteHorizon(6)
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61      ...   records (compressed as a whole when codec != none)
//
// Because the CRC starts at attributes, stamping baseOffset and the leader
// epoch never invalidates it: the bytes a producer sent are the bytes a
// consumer reads.
package record

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Header field offsets and sizes.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of a v2 batch header; records follow it.
	HeaderSize = 61
	// LengthOverhead is the bytes of a batch not counted by batchLength.
	LengthOverhead = 12
	// MagicOffset is where the magic byte sits in both v2 batches and legacy
	// message sets, so a reader can tell them apart.
	MagicOffset = offMagic
)

// Attribute bits.
const (
	codecMask          = 0x07
	timestampTypeBit   = 0x08
	transactionalBit   = 0x10
	controlBit         = 0x20
	deleteHorizonBit   = 0x40
	NoProducerID       = int64(-1)
	NoProducerEpoch    = int16(-1)
	NoSequence         = int32(-1)
	NoPartitionEpoch   = int32(-1)
	CurrentMagic       = 2
	maxRecordsPerBatch = 1 << 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors returned by parsing. ErrCorrupt maps to Kafka's CORRUPT_MESSAGE.
var (
	ErrShort   = errors.New("record: truncated batch")
	ErrCorrupt = errors.New("record: corrupt batch")
	ErrMagic   = errors.New("record: unsupported magic")
)

// Batch is one complete RecordBatch; len(b) == LengthOverhead + batchLength.
// Setters write into the underlying bytes.
type Batch []byte

// Attributes are a batch's attribute bits.
type Attributes int16

// Attribute bits for building batches.
const (
	// ControlAttributes marks a batch of control records (transaction
	// markers, Raft leader changes, snapshot headers and footers).
	ControlAttributes Attributes = controlBit
	// TransactionalAttributes marks a batch written in a transaction.
	TransactionalAttributes Attributes = transactionalBit
)

// Codec is the compression codec stored in the low attribute bits.
func (a Attributes) Codec() Codec { return Codec(a & codecMask) }

// LogAppendTime reports whether timestamps are the broker's append time.
func (a Attributes) LogAppendTime() bool { return a&timestampTypeBit != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (a Attributes) Transactional() bool { return a&transactionalBit != 0 }

// Control reports whether the batch holds control records (txn markers).
func (a Attributes) Control() bool { return a&controlBit != 0 }

// HasDeleteHorizon reports whether baseTimestamp is the compaction delete horizon.
func (a Attributes) HasDeleteHorizon() bool { return a&deleteHorizonBit != 0 }

func (b Batch) BaseOffset() int64      { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }
func (b Batch) Length() int32          { return int32(binary.BigEndian.Uint32(b[offLength:])) }
func (b Batch) LeaderEpoch() int32     { return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])) }
func (b Batch) Magic() int8            { return int8(b[offMagic]) }
func (b Batch) CRC() uint32            { return binary.BigEndian.Uint32(b[offCRC:]) }
func (b Batch) Attributes() Attributes { return Attributes(binary.BigEndian.Uint16(b[offAttributes:])) }
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])) }
func (b Batch) BaseTimestamp() int64   { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }
func (b Batch) MaxTimestamp() int64    { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }
func (b Batch) ProducerID() int64      { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }
func (b Batch) ProducerEpoch() int16   { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }
func (b Batch) BaseSequence() int32    { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }
func (b Batch) NumRecords() int32      { return int32(binary.BigEndian.Uint32(b[offRecordCount:])) }

// LastOffset is the offset of the batch's last record.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset is the offset that follows the batch.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// LastSequence is the sequence number of the batch's last record, wrapping
// at MaxInt32 as Kafka does.
func (b Batch) LastSequence() int32 {
	seq := b.BaseSequence()
	if seq == NoSequence {
		return NoSequence
	}
	return int32((int64(seq) + int64(b.LastOffsetDelta())) % (1 << 31))
}

// Payload is the records section (compressed when the codec is not None).
func (b Batch) Payload() []byte { return b[HeaderSize:] }

// SetBaseOffset stamps the base offset; the CRC stays valid.
func (b Batch) SetBaseOffset(o int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(o)) }

// SetLeaderEpoch stamps the partition leader epoch; the CRC stays valid.
func (b Batch) SetLeaderEpoch(e int32) { binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e)) }

// SetMaxTimestamp and SetLogAppendTime rewrite CRC-covered fields, so they
// recompute the CRC; they serve message.timestamp.type=LogAppendTime.
func (b Batch) SetLogAppendTime(ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | timestampTypeBit
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	b.UpdateCRC()
}

// ComputeCRC returns the CRC-32C of the CRC-covered bytes.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// ValidCRC reports whether the stored CRC matches the contents.
func (b Batch) ValidCRC() bool { return b.CRC() == b.ComputeCRC() }

// UpdateCRC recomputes and stores the CRC.
func (b Batch) UpdateCRC() { binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC()) }

// Size is the total number of bytes of the batch.
func (b Batch) Size() int { return len(b) }

// PeekSize returns the total size of the batch (or legacy message) that starts
// buf, reading only the length field; ok is false when buf is shorter than
// the fixed prefix.
func PeekSize(buf []byte) (size int, ok bool) {
	if len(buf) < LengthOverhead {
		return 0, false
	}
	n := int32(binary.BigEndian.Uint32(buf[offLength:]))
	if n < 0 {
		return -1, true
	}
	return LengthOverhead + int(n), true
}

// Next splits the first batch off buf. It checks framing only (lengths,
// magic), not the CRC. It returns ErrShort when buf ends inside the batch,
// which for a log file means a torn tail and for a fetch response a partial
// trailing batch.
func Next(buf []byte) (Batch, []byte, error) {
	size, ok := PeekSize(buf)
	if !ok {
		return nil, buf, ErrShort
	}
	if size < HeaderSize {
		if len(buf) > offMagic && buf[offMagic] != CurrentMagic {
			return nil, buf, ErrMagic
		}
		return nil, buf, ErrCorrupt
	}
	if len(buf) <= offMagic {
		return nil, buf, ErrShort
	}
	if buf[offMagic] != CurrentMagic {
		return nil, buf, ErrMagic
	}
	if len(buf) < size {
		return nil, buf, ErrShort
	}
	return Batch(buf[:size:size]), buf[size:], nil
}
