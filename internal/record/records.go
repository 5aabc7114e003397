package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record is one decoded record of a v2 batch. Key, Value and header slices
// alias the batch (or its decompressed payload); a nil Key or Value is null.
//
// Each record is encoded as (varints are zigzag):
//
//	length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
//	keyLen varint | key | valueLen varint | value | headerCount varint |
//	headers: [keyLen varint | key | valueLen varint | value]...
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []Header
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Records walks the records of a payload; Next returns false at the end or
// on error, after which Err says which.
type Records struct {
	buf []byte
	n   int32 // records left per the batch header
	err error
	rec Record
}

// NewRecords iterates over an uncompressed payload holding count records.
// A negative count is an error.
func NewRecords(payload []byte, count int32) *Records {
	it := &Records{buf: payload, n: count}
	if count < 0 {
		it.err = fmt.Errorf("%w: negative record count %d", ErrCorrupt, count)
	}
	return it
}

// Next decodes the next record. The returned pointer is reused by the next call.
func (it *Records) Next() (*Record, bool) {
	if it.err != nil || it.n <= 0 {
		if it.err == nil && it.n == 0 && len(it.buf) != 0 {
			it.err = fmt.Errorf("%w: %d trailing bytes after last record", ErrCorrupt, len(it.buf))
		}
		return nil, false
	}
	it.n--
	length, n := binary.Varint(it.buf)
	if n <= 0 || length < 0 || int64(len(it.buf)-n) < length {
		it.err = fmt.Errorf("%w: bad record length", ErrCorrupt)
		return nil, false
	}
	body := it.buf[n : n+int(length)]
	it.buf = it.buf[n+int(length):]
	if err := decodeRecordBody(body, &it.rec, true); err != nil {
		it.err = err
		return nil, false
	}
	return &it.rec, true
}

// Err is the error that stopped iteration, or nil.
func (it *Records) Err() error {
	if it.err == nil && it.n > 0 {
		return fmt.Errorf("%w: batch has fewer records than its header says", ErrCorrupt)
	}
	return it.err
}

// decodeRecordBody decodes a record (without its length prefix) into r. It
// checks all of the record's framing, as Kafka's DefaultRecord.readFrom
// does, whether or not it keeps the headers: validation, which does not
// need them, then accepts exactly what iteration accepts, without
// allocating header keys.
func decodeRecordBody(b []byte, r *Record, keepHeaders bool) error {
	d := decoder{b: b}
	r.Attributes = int8(d.byte())
	r.TimestampDelta = d.varint()
	off := d.varint()
	if d.err == nil && (off < math.MinInt32 || off > math.MaxInt32) {
		d.err = fmt.Errorf("%w: offset delta %d overflows int32", ErrCorrupt, off)
	}
	r.OffsetDelta = int32(off)
	r.Key = d.bytes()
	r.Value = d.bytes()
	nh := d.varint()
	if d.err == nil && (nh < 0 || nh > int64(len(d.b))) {
		d.err = fmt.Errorf("%w: bad header count", ErrCorrupt)
	}
	r.Headers = r.Headers[:0]
	for i := int64(0); i < nh && d.err == nil; i++ {
		k := d.bytes()
		v := d.bytes()
		if d.err == nil && k == nil {
			d.err = fmt.Errorf("%w: null header key", ErrCorrupt)
		}
		if keepHeaders {
			r.Headers = append(r.Headers, Header{Key: string(k), Value: v})
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: trailing bytes in record", ErrCorrupt)
	}
	return d.err
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.err = fmt.Errorf("%w: truncated record", ErrCorrupt)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	// Most varints in records (deltas, lengths under 64) are one byte.
	if len(d.b) > 0 && d.b[0] < 0x80 {
		u := d.b[0]
		d.b = d.b[1:]
		return int64(u>>1) ^ -int64(u&1)
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad varint", ErrCorrupt)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.varint()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < -1 || n > int64(len(d.b)) {
		d.err = fmt.Errorf("%w: bad field length", ErrCorrupt)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// AppendRecord appends the encoding of r (with its length prefix) to dst.
func AppendRecord(dst []byte, r *Record) []byte {
	body := recordBodySize(r)
	dst = binary.AppendVarint(dst, int64(body))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func bytesSize(b []byte) int {
	if b == nil {
		return 1
	}
	return varintSize(int64(len(b))) + len(b)
}

func recordBodySize(r *Record) int {
	n := 1 + varintSize(r.TimestampDelta) + varintSize(int64(r.OffsetDelta)) +
		bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	return n
}
