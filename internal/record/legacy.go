package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// Legacy message sets (magic 0 and 1) arrive only in Produce v0-v2. They are
// converted once, on produce, to a single v2 batch; nothing else in weir
// knows about them.
//
//	message set: [offset int64 | size int32 | message]...
//	message v0:  crc uint32 (IEEE, over the rest) | magic int8 | attributes int8 |
//	             key bytes(int32 len, -1 null) | value bytes
//	message v1:  as v0 with timestamp int64 after attributes
//
// A compressed message's value is itself a message set, compressed with the
// codec in the attribute bits.

// ConvertLegacy turns a magic 0/1 message set into one v2 batch, compressed
// with the codec of the (first) wrapper message, or uncompressed. limit
// bounds the total bytes decompressed from wrapper messages. A partial
// message at the end of set is dropped, as Kafka drops it; inside a
// compressed wrapper it is corruption.
func ConvertLegacy(set []byte, limit int) (Batch, error) {
	w := legacyWalk{budget: limit}
	if err := w.walk(set, 0, -1); err != nil {
		return nil, err
	}
	recs := w.recs
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: empty message set", ErrInvalidRecord)
	}
	h := NewBatchHeader()
	h.Attributes = Attributes(0).WithCodec(w.codec)
	if w.appendTime {
		h.Attributes |= timestampTypeBit
	}
	h.BaseTimestamp = recs[0].TimestampDelta
	h.MaxTimestamp = -1
	for i := range recs {
		ts := recs[i].TimestampDelta
		h.MaxTimestamp = max(h.MaxTimestamp, ts)
		recs[i].TimestampDelta = ts - h.BaseTimestamp
		recs[i].OffsetDelta = int32(i)
	}
	return Build(h, recs, 0)
}

// legacyWalk collects the records of a legacy message set; timestamps are
// absolute in TimestampDelta until ConvertLegacy rebases them.
type legacyWalk struct {
	recs       []Record
	codec      Codec
	appendTime bool
	budget     int // decompressed bytes still allowed
}

// walk reads the messages of set. depth is 0 for the outer set and 1 inside
// a wrapper, whose magic (wrapperMagic) the inner messages must share.
func (w *legacyWalk) walk(set []byte, depth int, wrapperMagic int) error {
	for len(set) > 0 {
		if len(set) < 12 {
			if depth > 0 {
				return fmt.Errorf("%w: partial legacy message in a compressed wrapper", ErrCorrupt)
			}
			// A partial trailing message is allowed on the wire; Kafka drops it.
			return nil
		}
		size := int(int32(binary.BigEndian.Uint32(set[8:])))
		if size < 14 {
			return fmt.Errorf("%w: legacy message size %d", ErrCorrupt, size)
		}
		if len(set) < 12+size {
			if depth > 0 {
				return fmt.Errorf("%w: partial legacy message in a compressed wrapper", ErrCorrupt)
			}
			return nil
		}
		msg := set[12 : 12+size]
		set = set[12+size:]
		if crc32.ChecksumIEEE(msg[4:]) != binary.BigEndian.Uint32(msg) {
			return fmt.Errorf("%w: legacy message CRC mismatch", ErrCorrupt)
		}
		magic, attrs := msg[4], msg[5]
		d := decoder{b: msg[6:]}
		ts := int64(-1)
		switch magic {
		case 0:
		case 1:
			if len(d.b) < 8 {
				return fmt.Errorf("%w: short legacy message", ErrCorrupt)
			}
			ts = int64(binary.BigEndian.Uint64(d.b))
			d.b = d.b[8:]
			if attrs&timestampTypeBit != 0 {
				w.appendTime = true
			}
		default:
			return fmt.Errorf("%w: magic %d in a legacy message set", ErrInvalidRecord, magic)
		}
		if depth > 0 && int(magic) != wrapperMagic {
			return fmt.Errorf("%w: inner message magic %d differs from wrapper magic %d", ErrInvalidRecord, magic, wrapperMagic)
		}
		key, okK := legacyBytes(&d)
		value, okV := legacyBytes(&d)
		if !okK || !okV || len(d.b) != 0 {
			return fmt.Errorf("%w: malformed legacy message", ErrCorrupt)
		}
		c := Codec(attrs & codecMask)
		if c == None {
			w.recs = append(w.recs, Record{TimestampDelta: ts, Key: key, Value: value})
			continue
		}
		if depth > 0 {
			return fmt.Errorf("%w: nested compressed legacy message", ErrInvalidRecord)
		}
		if c > LZ4 {
			return fmt.Errorf("%w: codec %s needs a v2 batch", ErrInvalidRecord, c)
		}
		if c == LZ4 && magic == 0 {
			// Kafka clients before 0.10 computed the LZ4 frame's header
			// checksum over the wrong bytes; Kafka ignores it for magic 0.
			value = fixLZ4HeaderChecksum(value)
		}
		inner, err := Decompress(c, value, nil, w.budget)
		if err != nil {
			return err
		}
		w.budget -= len(inner)
		if w.codec == None {
			w.codec = c
		}
		start := len(w.recs)
		if err := w.walk(inner, depth+1, int(magic)); err != nil {
			return err
		}
		if magic == 1 && attrs&timestampTypeBit != 0 {
			for i := start; i < len(w.recs); i++ {
				w.recs[i].TimestampDelta = ts
			}
		}
	}
	return nil
}

func legacyBytes(d *decoder) ([]byte, bool) {
	if len(d.b) < 4 {
		return nil, false
	}
	n := int32(binary.BigEndian.Uint32(d.b))
	d.b = d.b[4:]
	if n == -1 {
		return nil, true
	}
	if n < 0 || int(n) > len(d.b) {
		return nil, false
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v, true
}

// fixLZ4HeaderChecksum returns frame with the header checksum byte of its
// (first) frame descriptor set to the correct value, copying frame when it
// changes it. Data that is not an LZ4 frame is returned as is.
func fixLZ4HeaderChecksum(frame []byte) []byte {
	const magic = 0x184D2204
	if len(frame) < 7 || binary.LittleEndian.Uint32(frame) != magic {
		return frame
	}
	end := 6 // FLG and BD follow the magic
	if frame[4]&0x08 != 0 {
		end += 8 // content size
	}
	if frame[4]&0x01 != 0 {
		end += 4 // dictionary id
	}
	if len(frame) <= end {
		return frame
	}
	hc := byte(xxh32Small(frame[4:end]) >> 8)
	if frame[end] == hc {
		return frame
	}
	fixed := append([]byte(nil), frame...)
	fixed[end] = hc
	return fixed
}

// xxh32Small is XXH32 with seed 0 for inputs shorter than 16 bytes, which is
// all an LZ4 frame descriptor needs.
func xxh32Small(b []byte) uint32 {
	const (
		p1 = 2654435761
		p2 = 2246822519
		p3 = 3266489917
		p4 = 668265263
		p5 = 374761393
	)
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * p3
		h = bits.RotateLeft32(h, 17) * p4
	}
	for _, c := range b {
		h += uint32(c) * p5
		h = bits.RotateLeft32(h, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}
