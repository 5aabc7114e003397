package perf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Offsets of the RecordBatch (magic 2) header fields that CountBatches reads.
const (
	batchBaseOffset      = 0  // int64
	batchLength          = 8  // int32, bytes after this field
	batchMagic           = 16 // int8
	batchAttributes      = 21 // int16
	batchLastOffsetDelta = 23 // int32
	batchRecordCount     = 57 // int32
	batchHeaderSize      = 61
	batchLogOverhead     = 12 // base offset and length precede the counted length

	attrControl = 0x20
)

// BatchCount is what CountBatches learned from a run of record batches.
type BatchCount struct {
	// Records is the number of records in data batches (control batches,
	// such as transaction markers, are skipped as a consumer skips them).
	Records int64
	// Bytes is the sum of the full sizes of the data batches, headers
	// included.
	Bytes int64
	// Batches is the number of complete batches seen, control ones too.
	Batches int64
	// NextOffset is the offset after the last complete batch, or -1 when
	// there was no complete batch.
	NextOffset int64
}

// CountBatches walks the record batches a fetch returned for one partition
// and counts records and bytes from the batch headers alone: the batch length
// at byte 8 and the record count at byte 57. Nothing is decompressed or
// decoded. A truncated batch at the end, which brokers may send when a
// partition's byte limit cuts one off, is ignored. Batches older than magic
// 2 cannot be counted this way and are an error.
func CountBatches(b []byte) (BatchCount, error) {
	return CountBatchesFrom(b, math.MinInt64)
}

// CountBatchesFrom is CountBatches for a fetch at offset from: batches that
// end before from (a broker may answer with the batch holding from and
// anything before it in the same read) are skipped but still advance
// NextOffset.
func CountBatchesFrom(b []byte, from int64) (BatchCount, error) {
	c := BatchCount{NextOffset: -1}
	for len(b) >= batchLogOverhead {
		length := int32(binary.BigEndian.Uint32(b[batchLength:]))
		size := int64(length) + batchLogOverhead
		if length < 0 || int64(len(b)) < size {
			break // partial batch at the end of the response
		}
		if size < batchHeaderSize {
			return c, fmt.Errorf("record batch of %d bytes is shorter than a batch header", size)
		}
		if magic := b[batchMagic]; magic != 2 {
			return c, fmt.Errorf("record batch with magic %d: only magic 2 batches can be counted from headers", magic)
		}
		base := int64(binary.BigEndian.Uint64(b[batchBaseOffset:]))
		last := int32(binary.BigEndian.Uint32(b[batchLastOffsetDelta:]))
		attrs := binary.BigEndian.Uint16(b[batchAttributes:])
		if attrs&attrControl == 0 && base+int64(last) >= from {
			c.Records += int64(int32(binary.BigEndian.Uint32(b[batchRecordCount:])))
			c.Bytes += size
		}
		c.Batches++
		c.NextOffset = base + int64(last) + 1
		b = b[size:]
	}
	return c, nil
}
