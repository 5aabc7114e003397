package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"
)

// seedBatches are valid batches of every codec plus a few edge shapes.
func seedBatches(t testing.TB) [][]byte {
	var out [][]byte
	for _, c := range allCodecs {
		out = append(out, clientBatch(t, c, testRecords(3), nil))
	}
	out = append(out,
		clientBatch(t, None, edgeRecords()[:4], func(h *BatchHeader) { h.Attributes |= timestampTypeBit }),
		clientBatch(t, Gzip, testRecords(1), func(h *BatchHeader) { h.ProducerID, h.BaseSequence = 1, 0 }),
		rawBatch(t, None, 1, withBody([]byte{0, 0, 0, 2, 'k', 2, 'v', 2, 2, 'h', 1}), nil),
	)
	return out
}

func FuzzNext(f *testing.F) {
	var stream []byte
	for _, b := range seedBatches(f) {
		f.Add(b)
		f.Add(b[:len(b)-1])
		stream = append(stream, b...)
	}
	f.Add(stream)
	f.Add(legacySet(1, legacyRecs))
	f.Add([]byte{})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, data []byte) {
		buf := data
		for {
			b, rest, err := Next(buf)
			if err != nil {
				if b != nil || len(rest) != len(buf) {
					t.Fatalf("error %v returned a batch or consumed input", err)
				}
				if !errors.Is(err, ErrShort) && !errors.Is(err, ErrMagic) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("unexpected error %v", err)
				}
				if err == ErrShort && len(buf) >= HeaderSize {
					if n, _ := PeekSize(buf); n <= len(buf) {
						t.Fatalf("ErrShort with %d bytes for a %d-byte batch", len(buf), n)
					}
				}
				return
			}
			n, ok := PeekSize(buf)
			if !ok || n != len(b) || len(b) < HeaderSize || b.Magic() != CurrentMagic || !bytes.Equal(b, buf[:len(b)]) ||
				len(rest) != len(buf)-len(b) || cap(b) != len(b) {
				t.Fatalf("bad split: size %d ok %v len %d rest %d", n, ok, len(b), len(rest))
			}
			// Every accessor is safe on a batch Next returns.
			_ = HeaderOf(b)
			_, _, _, _ = b.ValidCRC(), b.LastSequence(), b.NextOffset(), b.Payload()
			buf = rest
		}
	})
}

// fuzzPolicy derives a policy from a fuzzed byte.
func fuzzPolicy(mode uint8) *Policy {
	p := &Policy{MaxBatchBytes: 1 << 20, TimestampBeforeMax: math.MaxInt64, TimestampAfterMax: math.MaxInt64}
	p.Compacted = mode&1 != 0
	p.LogAppendTime = mode&2 != 0
	if mode&4 != 0 {
		p.Recompress, p.Codec = true, Codec((mode>>3)%5)
	}
	if mode&0x80 != 0 {
		p.TimestampBeforeMax, p.TimestampAfterMax = testHour, testHour
	}
	return p
}

func FuzzValidate(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b, uint8(0))
		f.Add(b, uint8(4|3<<3))
		f.Add(b, uint8(2|0x80))
		f.Add(b, uint8(0x40))
		f.Add(b, uint8(0x40|4|1<<3))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		p := fuzzPolicy(mode)
		in := bytes.Clone(data)
		if mode&0x40 != 0 && len(in) >= HeaderSize {
			// Repair framing and CRC, so the fuzzer reaches the records.
			binary.BigEndian.PutUint32(in[offLength:], uint32(len(in)-LengthOverhead))
			in[offMagic] = CurrentMagic
			Batch(in).UpdateCRC()
		}
		v, err := Validate(Batch(in), p, testNow, nil)
		if err != nil {
			for _, want := range []error{ErrBatchTooLarge, ErrCorrupt, ErrInvalidRecord, ErrInvalidTimestamp} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("error %v wraps no validation sentinel", err)
		}
		// An accepted batch is well framed, has a valid CRC, and iterates
		// cleanly with the record count and offsets its header claims.
		b := v.Batch
		if nb, rest, err := Next(b); err != nil || len(rest) != 0 || len(nb) != len(b) {
			t.Fatalf("accepted batch does not frame: %v", err)
		}
		if !b.ValidCRC() || b.NumRecords() != v.NumRecords || b.LastOffsetDelta() != v.NumRecords-1 {
			t.Fatalf("accepted batch: crc %v count %d/%d lod %d", b.ValidCRC(), b.NumRecords(), v.NumRecords, b.LastOffsetDelta())
		}
		if p.Recompress && b.Attributes().Codec() != p.Codec {
			t.Fatalf("codec %v, policy wants %v", b.Attributes().Codec(), p.Codec)
		}
		if b.MaxTimestamp() != v.MaxTimestamp || p.LogAppendTime != b.Attributes().LogAppendTime() {
			t.Fatalf("max timestamp %d vs %d, lat %v", b.MaxTimestamp(), v.MaxTimestamp, b.Attributes().LogAppendTime())
		}
		raw, err := b.Decoded(nil, decompressLimit(p))
		if err != nil {
			t.Fatalf("accepted batch does not decompress: %v", err)
		}
		it := NewRecords(raw, b.NumRecords())
		i := int32(0)
		for r, ok := it.Next(); ok; r, ok = it.Next() {
			if r.OffsetDelta != i {
				t.Fatalf("record %d has offset delta %d", i, r.OffsetDelta)
			}
			if p.Compacted && r.Key == nil {
				t.Fatal("null key accepted on a compacted topic")
			}
			i++
		}
		if err := it.Err(); err != nil || i != b.NumRecords() {
			t.Fatalf("accepted batch iterates %d of %d records: %v", i, b.NumRecords(), err)
		}
		// Validation is idempotent.
		again, err := Validate(bytes.Clone(b), p, testNow, nil)
		if err != nil || !bytes.Equal(again.Batch, b) {
			t.Fatalf("revalidation: %v", err)
		}
	})
}

// FuzzDecompress decodes fuzzed data with each codec (the codec byte
// picks gzip, snappy, lz4 or zstd) under a fuzzed output limit.
func FuzzDecompress(f *testing.F) {
	seeds := map[Codec][][]byte{
		Gzip:   {stdGzip(f, []byte("hello"), 1)},
		Snappy: {snappy.Encode(nil, testData(300, 1)), xerialFrame(testData(300, 2), 100)},
		LZ4:    {pierrecLZ4(f, testData(300, 3), lz4.BlockChecksumOption(true)), pierrecLZ4(f, testData(300, 4), lz4.SizeOption(300))},
		Zstd:   {foreignCompress(f, Zstd, testData(300, 5))},
	}
	for c, extra := range seeds {
		for _, size := range []int{0, 1, 100, 5000} {
			comp, err := Compress(c, testData(size, uint64(size)), nil, 0)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(comp, uint8(c-Gzip), uint32(size))
			f.Add(comp, uint8(c-Gzip), uint32(size/2))
		}
		for _, s := range extra {
			f.Add(s, uint8(c-Gzip), uint32(1<<16))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, codec uint8, limit uint32) {
		c := Gzip + Codec(codec%4)
		limit %= 1 << 22
		out, err := Decompress(c, data, nil, int(limit))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor ErrTooLarge", err)
			}
			return
		}
		if len(out) > int(limit) {
			t.Fatalf("%d bytes out with limit %d", len(out), limit)
		}
		// The limit is exact: one byte less is refused, and a larger limit
		// or a reused buffer gives the same output.
		if len(out) > 0 {
			if _, err := Decompress(c, data, nil, len(out)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("limit %d for %d bytes: %v", len(out)-1, len(out), err)
			}
		}
		again, err := Decompress(c, data, make([]byte, 3, 64), int(limit)+1000)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("second decode differs: %v", err)
		}
	})
}

func FuzzCompressRoundTrip(f *testing.F) {
	f.Add([]byte("hello hello hello"), uint8(0), int8(0))
	f.Add([]byte{}, uint8(3), int8(9))
	f.Fuzz(func(t *testing.T, data []byte, codec uint8, level int8) {
		c := Codec(codec % 5)
		comp, err := Compress(c, data, nil, int(level))
		if err != nil {
			t.Fatal(err)
		}
		out, err := Decompress(c, comp, nil, len(data))
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("%v level %d: %v", c, level, err)
		}
	})
}

func FuzzConvertLegacy(f *testing.F) {
	f.Add(legacySet(0, legacyRecs))
	f.Add(legacySet(1, legacyRecs))
	for _, c := range []Codec{Gzip, Snappy, LZ4} {
		f.Add(wrap(f, 0, c, 5, 0, legacySet(0, legacyRecs)))
		f.Add(wrap(f, 1, c, 5, 0x08, legacySet(1, legacyRecs)))
	}
	f.Add(legacyMessage(0, 1, 1, nil, snappy.Encode(nil, legacySet(1, legacyRecs)), byte(Snappy)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 && data[0]&1 != 0 {
			// Repair the outer CRCs, so the fuzzer reaches the messages.
			data = bytes.Clone(data)
			for set := data; len(set) >= 12+14; {
				size := int(int32(binary.BigEndian.Uint32(set[8:])))
				if size < 14 || size > len(set)-12 {
					break
				}
				msg := set[12 : 12+size]
				binary.BigEndian.PutUint32(msg, crc32.ChecksumIEEE(msg[4:]))
				set = set[12+size:]
			}
		}
		b, err := ConvertLegacy(data, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps no expected sentinel", err)
			}
			return
		}
		if _, rest, err := Next(b); err != nil || len(rest) != 0 || !b.ValidCRC() {
			t.Fatalf("converted batch: %v", err)
		}
		if b.NumRecords() < 1 || b.LastOffsetDelta() != b.NumRecords()-1 {
			t.Fatalf("count %d lod %d", b.NumRecords(), b.LastOffsetDelta())
		}
		raw, err := b.Decoded(nil, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		it := NewRecords(raw, b.NumRecords())
		for _, ok := it.Next(); ok; _, ok = it.Next() {
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		p := &Policy{MaxBatchBytes: math.MaxInt32, TimestampBeforeMax: math.MaxInt64, TimestampAfterMax: math.MaxInt64}
		if _, err := Validate(b, p, testNow, nil); err != nil && !errors.Is(err, ErrInvalidTimestamp) {
			t.Fatalf("converted batch fails validation: %v", err)
		}
	})
}
