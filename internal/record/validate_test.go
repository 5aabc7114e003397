package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	testNow  = int64(1_700_000_000_000)
	testHour = int64(3_600_000)
)

func testPolicy() *Policy {
	return &Policy{MaxBatchBytes: 1 << 20, TimestampBeforeMax: testHour, TimestampAfterMax: testHour}
}

// clientBatch builds a batch as a producer would: base offset 0, offset
// deltas 0..n-1, timestamps around now, MaxTimestamp filled in correctly.
func clientBatch(t testing.TB, c Codec, recs []Record, edit func(*BatchHeader)) Batch {
	t.Helper()
	h := NewBatchHeader()
	h.Attributes = h.Attributes.WithCodec(c)
	h.BaseTimestamp = testNow - 1000
	h.MaxTimestamp = -1
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
		h.MaxTimestamp = max(h.MaxTimestamp, h.BaseTimestamp+recs[i].TimestampDelta)
	}
	if edit != nil {
		edit(&h)
	}
	b, err := Build(h, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawBatch builds a batch around an arbitrary records payload.
func rawBatch(t testing.TB, c Codec, count int32, raw []byte, edit func(*BatchHeader)) Batch {
	t.Helper()
	h := NewBatchHeader()
	h.Attributes = h.Attributes.WithCodec(c)
	h.BaseTimestamp, h.MaxTimestamp = testNow, testNow
	h.LastOffsetDelta = count - 1
	if edit != nil {
		edit(&h)
	}
	b, err := BuildRaw(h, count, raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func setField(b Batch, off int, v any) Batch {
	switch v := v.(type) {
	case int16:
		binary.BigEndian.PutUint16(b[off:], uint16(v))
	case int32:
		binary.BigEndian.PutUint32(b[off:], uint32(v))
	case int64:
		binary.BigEndian.PutUint64(b[off:], uint64(v))
	}
	b.UpdateCRC()
	return b
}

func TestValidateAccepts(t *testing.T) {
	for _, c := range allCodecs {
		recs := testRecords(30)
		b := clientBatch(t, c, recs, func(h *BatchHeader) {
			h.ProducerID, h.ProducerEpoch, h.BaseSequence = 7, 1, 0
		})
		orig := bytes.Clone(b)
		var scratch []byte
		v, err := Validate(b, testPolicy(), testNow, &scratch)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if &v.Batch[0] != &b[0] || !bytes.Equal(v.Batch, orig) {
			t.Fatalf("%v: an already valid batch was copied or changed", c)
		}
		if v.NumRecords != 30 || v.MaxTimestamp != b.MaxTimestamp() || v.MaxTimestampDelta != 29 {
			t.Fatalf("%v: %+v", c, v)
		}
		if c != None && len(scratch) == 0 {
			t.Fatalf("%v: scratch not used for decompression", c)
		}
		// A nil scratch pointer is allowed.
		if _, err := Validate(b, testPolicy(), testNow, nil); err != nil {
			t.Fatalf("%v, nil scratch: %v", c, err)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	good := func() Batch { return clientBatch(t, None, testRecords(4), nil) }
	withRaw := func(count int32, raw []byte) Batch { return rawBatch(t, None, count, raw, nil) }
	recs := testRecords(4)
	raw := encodeRecords(recs)
	outOfOrder := testRecords(3)
	outOfOrder[1].OffsetDelta, outOfOrder[2].OffsetDelta = 2, 1
	dup := testRecords(2)
	dup[1].OffsetDelta = 0
	gap := testRecords(3)
	gap[2].OffsetDelta = 3
	corruptGzip := rawBatch(t, Gzip, 4, raw, nil)
	corruptGzip[len(corruptGzip)-5] ^= 0xff
	corruptGzip.UpdateCRC()

	for _, tc := range []struct {
		name string
		b    Batch
		p    func(*Policy)
		want error
	}{
		{"too large", good(), func(p *Policy) { p.MaxBatchBytes = len(good()) - 1 }, ErrBatchTooLarge},
		{"shorter than a header", good()[:HeaderSize-1], nil, ErrCorrupt},
		{"length field too large", setField(good(), offLength, int32(1000)), nil, ErrCorrupt},
		{"length field too small", setField(good(), offLength, int32(49)), nil, ErrCorrupt},
		{"truncated", good()[:len(good())-1], nil, ErrCorrupt},
		{"magic 1", func() Batch { b := good(); b[offMagic] = 1; return b }(), nil, ErrInvalidRecord},
		{"magic 3", func() Batch { b := good(); b[offMagic] = 3; return b }(), nil, ErrInvalidRecord},
		{"bad CRC", func() Batch { b := good(); b[offCRC] ^= 1; return b }(), nil, ErrCorrupt},
		{"payload flipped", func() Batch { b := good(); b[len(b)-1] ^= 1; return b }(), nil, ErrCorrupt},
		{"zero records", rawBatch(t, None, 0, nil, func(h *BatchHeader) { h.LastOffsetDelta = -1 }), nil, ErrInvalidRecord},
		{"negative count", setField(good(), offRecordCount, int32(-1)), nil, ErrInvalidRecord},
		{"count above limit", setField(setField(good(), offRecordCount, int32(maxRecordsPerBatch+1)), offLastOffsetDelta, int32(maxRecordsPerBatch)), nil, ErrInvalidRecord},
		{"count above offset range", setField(good(), offRecordCount, int32(5)), nil, ErrInvalidRecord},
		{"count below offset range", setField(good(), offLastOffsetDelta, int32(4)), nil, ErrInvalidRecord},
		{"offset range overflow", setField(setField(good(), offLastOffsetDelta, int32(math.MaxInt32)), offRecordCount, int32(math.MinInt32)), nil, ErrInvalidRecord},
		{"control batch", setField(good(), offAttributes, int16(controlBit)), nil, ErrInvalidRecord},
		{"control transactional batch", setField(setField(good(), offAttributes, int16(controlBit|transactionalBit)), offProducerID, int64(1)), nil, ErrInvalidRecord},
		{"producer id without sequence", setField(good(), offProducerID, int64(5)), nil, ErrInvalidRecord},
		{"producer id with negative sequence", setField(setField(good(), offProducerID, int64(0)), offBaseSequence, int32(-7)), nil, ErrInvalidRecord},
		{"codec 5", setField(good(), offAttributes, int16(5)), nil, ErrCorrupt},
		{"codec 7", setField(good(), offAttributes, int16(7)), nil, ErrCorrupt},
		{"corrupt gzip payload", corruptGzip, nil, ErrCorrupt},
		{"payload not gzip", setField(good(), offAttributes, int16(Gzip)), nil, ErrCorrupt},
		{"offset deltas out of order", clientBatchRaw(t, outOfOrder), nil, ErrInvalidRecord},
		{"duplicate offset delta", clientBatchRaw(t, dup), nil, ErrInvalidRecord},
		{"offset delta gap", rawBatch(t, None, 3, encodeRecords(gap), nil), nil, ErrInvalidRecord},
		{"null key on compacted topic", good(), func(p *Policy) { p.Compacted = true }, ErrInvalidRecord},
		{"fewer records than count", withRaw(5, raw), nil, ErrInvalidRecord},
		{"more records than count", withRaw(3, raw), nil, ErrInvalidRecord},
		{"trailing byte", withRaw(4, append(bytes.Clone(raw), 0)), nil, ErrInvalidRecord},
		{"truncated record", withRaw(4, raw[:len(raw)-1]), nil, ErrInvalidRecord},
		{"null header key", withRaw(1, withBody([]byte{0, 0, 0, 2, 'k', 2, 'v', 2, 1, 2, 'x'})), nil, ErrInvalidRecord},
		{"negative header count", withRaw(1, withBody([]byte{0, 0, 0, 2, 'k', 2, 'v', 1})), nil, ErrInvalidRecord},
		{"bytes inside record after headers", withRaw(1, withBody([]byte{0, 0, 0, 2, 'k', 2, 'v', 0, 0})), nil, ErrInvalidRecord},
		{"key overruns record", withRaw(1, withBody([]byte{0, 0, 0, 20, 'k', 2, 'v', 0})), nil, ErrInvalidRecord},
		{"offset delta overflows int32", withRaw(1, withBody(append(append([]byte{0, 0}, binary.AppendVarint(nil, 1<<32)...), 1, 1, 0))), nil, ErrInvalidRecord},
		{"compressed payload too large", zstdBomb(t, true), nil, ErrBatchTooLarge},
		{"compressed payload too large, no declared size", zstdBomb(t, false), nil, ErrBatchTooLarge},
		{"gzip payload too large", func() Batch {
			big := Record{Value: make([]byte, 65<<20)}
			return rawBatch(t, Gzip, 1, AppendRecord(nil, &big), nil)
		}(), nil, ErrBatchTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy()
			if tc.p != nil {
				tc.p(p)
			}
			_, err := Validate(tc.b, p, testNow, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// clientBatchRaw is clientBatch without renumbering the offset deltas.
func clientBatchRaw(t testing.TB, recs []Record) Batch {
	return rawBatch(t, None, int32(len(recs)), encodeRecords(recs), nil)
}

// zstdBomb is a small zstd batch whose records expand past 64 MiB, the
// least Validate allows; fcs says whether the frame declares its size.
func zstdBomb(t testing.TB, fcs bool) Batch {
	big := Record{Value: make([]byte, 65<<20)}
	raw := AppendRecord(nil, &big)
	if fcs {
		return rawBatch(t, Zstd, 1, raw, nil)
	}
	// Built uncompressed around the compressed bytes, then relabelled.
	return setField(rawBatch(t, None, 1, zstdStream(t, raw), nil), offAttributes, int16(Zstd))
}

func TestDecompressLimitPolicy(t *testing.T) {
	for _, tc := range []struct{ max, want int }{
		{0, 64 << 20}, {1 << 20, 64 << 20}, {4 << 20, 256 << 20}, {math.MaxInt, math.MaxInt}, {math.MaxInt / 64, math.MaxInt / 64 * 64},
	} {
		if got := decompressLimit(&Policy{MaxBatchBytes: tc.max}); got != tc.want {
			t.Errorf("max.message.bytes %d: limit %d, want %d", tc.max, got, tc.want)
		}
	}
}

func TestValidateCompactedAcceptsEmptyKey(t *testing.T) {
	recs := []Record{{Key: []byte{}, Value: nil}, {Key: []byte("k")}}
	p := testPolicy()
	p.Compacted = true
	if _, err := Validate(clientBatch(t, Gzip, recs, nil), p, testNow, nil); err != nil {
		t.Fatal(err)
	}
}

func TestValidateProducerFields(t *testing.T) {
	for _, tc := range []struct {
		pid int64
		seq int32
	}{{-1, -1}, {-1, 5}, {0, 0}, {1 << 40, math.MaxInt32}} {
		b := clientBatch(t, None, testRecords(2), func(h *BatchHeader) { h.ProducerID, h.BaseSequence = tc.pid, tc.seq })
		if _, err := Validate(b, testPolicy(), testNow, nil); err != nil {
			t.Errorf("pid %d seq %d: %v", tc.pid, tc.seq, err)
		}
	}
}

func TestValidateTimestamps(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   int64
		p    func(*Policy)
		ok   bool
	}{
		{"now", testNow, nil, true},
		{"no timestamp", -1, nil, true},
		{"no timestamp, zero window", -1, func(p *Policy) { p.TimestampBeforeMax, p.TimestampAfterMax = 0, 0 }, true},
		{"now, zero window", testNow, func(p *Policy) { p.TimestampBeforeMax, p.TimestampAfterMax = 0, 0 }, true},
		{"at before max", testNow - testHour, nil, true},
		{"past before max", testNow - testHour - 1, nil, false},
		{"at after max", testNow + testHour, nil, true},
		{"past after max", testNow + testHour + 1, nil, false},
		{"zero", 0, nil, false},
		{"negative", -2, nil, false},
		{"min int64", math.MinInt64, nil, false},
		{"just before unbounded window", math.MinInt64 + testNow, func(p *Policy) { p.TimestampBeforeMax = math.MaxInt64 }, false},
		{"earliest in unbounded window", math.MinInt64 + testNow + 1, func(p *Policy) { p.TimestampBeforeMax = math.MaxInt64 }, true},
		{"max int64", math.MaxInt64, nil, false},
		{"max int64, unbounded window", math.MaxInt64, func(p *Policy) { p.TimestampAfterMax = math.MaxInt64 }, true},
		{"past before max, LogAppendTime topic", testNow - 10*testHour, func(p *Policy) { p.LogAppendTime = true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy()
			if tc.p != nil {
				tc.p(p)
			}
			// The bad timestamp is on the third record, as a delta from a
			// good base.
			recs := testRecords(4)
			h := func(h *BatchHeader) { h.BaseTimestamp, h.MaxTimestamp = testNow, max(tc.ts, testNow) }
			for i := range recs {
				recs[i].TimestampDelta = 0
			}
			recs[2].TimestampDelta = tc.ts - testNow
			b := clientBatch(t, None, recs, h)
			_, err := Validate(b, p, testNow, nil)
			if tc.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidTimestamp) {
				t.Fatalf("got %v, want ErrInvalidTimestamp", err)
			}
		})
	}
}

func TestValidateFixesMaxTimestamp(t *testing.T) {
	for _, c := range allCodecs {
		recs := testRecords(5)
		// Record 1 and 3 share the max; Kafka reports the first.
		for i, d := range []int64{5, 40, -20, 40, 0} {
			recs[i].TimestampDelta = d
		}
		for _, wrong := range []int64{-1, 0, testNow, testNow + 1000} {
			b := clientBatch(t, c, recs, func(h *BatchHeader) { h.MaxTimestamp = wrong })
			v, err := Validate(b, testPolicy(), testNow, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := b.BaseTimestamp() + 40
			if v.MaxTimestamp != want || v.MaxTimestampDelta != 1 || v.Batch.MaxTimestamp() != want {
				t.Fatalf("%v: max %d (batch %d) delta %d, want %d at 1", c, v.MaxTimestamp, v.Batch.MaxTimestamp(), v.MaxTimestampDelta, want)
			}
			if !v.Batch.ValidCRC() {
				t.Fatalf("%v: fix-up left an invalid CRC", c)
			}
			if v.Batch.Attributes().LogAppendTime() {
				t.Fatalf("%v: fix-up set LogAppendTime", c)
			}
		}
	}
	// Records without timestamps give max -1, as Kafka computes it.
	recs := testRecords(3)
	for i := range recs {
		recs[i].TimestampDelta = 0
	}
	b := clientBatch(t, None, recs, func(h *BatchHeader) { h.BaseTimestamp, h.MaxTimestamp = -1, 5 })
	v, err := Validate(b, testPolicy(), testNow, nil)
	if err != nil || v.MaxTimestamp != -1 || v.Batch.MaxTimestamp() != -1 || !v.Batch.ValidCRC() {
		t.Fatalf("no timestamps: max %d batch %d: %v", v.MaxTimestamp, v.Batch.MaxTimestamp(), err)
	}
}

func TestValidateLogAppendTime(t *testing.T) {
	for _, c := range allCodecs {
		recs := testRecords(6)
		recs[3].TimestampDelta = -100 * testHour // would be rejected under CreateTime
		b := clientBatch(t, c, recs, nil)
		base := b.BaseTimestamp()
		p := testPolicy()
		p.LogAppendTime = true
		v, err := Validate(b, p, testNow, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := v.Batch
		if !got.Attributes().LogAppendTime() || got.MaxTimestamp() != testNow || !got.ValidCRC() {
			t.Fatalf("%v: lat %v max %d crc %v", c, got.Attributes().LogAppendTime(), got.MaxTimestamp(), got.ValidCRC())
		}
		if v.MaxTimestamp != testNow || v.MaxTimestampDelta != 0 || got.BaseTimestamp() != base {
			t.Fatalf("%v: %+v base %d", c, v, got.BaseTimestamp())
		}
		if got.Attributes().Codec() != c {
			t.Fatalf("%v: codec changed to %v", c, got.Attributes().Codec())
		}
	}
}

func TestValidateClientLogAppendTimeOnCreateTimeTopic(t *testing.T) {
	// The timestamp type is the topic's: a client's LogAppendTime batch is
	// re-marked CreateTime, and its records' own timestamps are checked and
	// give the max timestamp.
	recs := testRecords(3)
	b := clientBatch(t, None, recs, func(h *BatchHeader) {
		h.Attributes |= timestampTypeBit
		h.BaseTimestamp = testNow - 10*testHour
		h.MaxTimestamp = testNow
	})
	if _, err := Validate(b, testPolicy(), testNow, nil); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("stale records in a LogAppendTime batch: %v, want ErrInvalidTimestamp", err)
	}
	b = clientBatch(t, Snappy, recs, func(h *BatchHeader) {
		h.Attributes |= timestampTypeBit
		h.MaxTimestamp = testNow - 10*testHour
	})
	want := b.BaseTimestamp() + recs[2].TimestampDelta
	v, err := Validate(b, testPolicy(), testNow, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Batch.Attributes().LogAppendTime() || v.Batch.MaxTimestamp() != want || !v.Batch.ValidCRC() ||
		v.MaxTimestamp != want || v.MaxTimestampDelta != 2 || v.Batch.Attributes().Codec() != Snappy {
		t.Fatalf("attrs %#x max %d crc %v; %+v", int16(v.Batch.Attributes()), v.Batch.MaxTimestamp(), v.Batch.ValidCRC(), v)
	}
}

func TestValidateRecompress(t *testing.T) {
	for _, from := range allCodecs {
		for _, to := range allCodecs {
			recs := append(testRecords(40), edgeRecords()[:3]...)
			b := clientBatch(t, from, recs, func(h *BatchHeader) {
				h.Attributes |= transactionalBit
				h.ProducerID, h.ProducerEpoch, h.BaseSequence = 123456789, 42, 1000
				h.MaxTimestamp = 0 // also needs fixing
			})
			orig := bytes.Clone(b)
			p := testPolicy()
			p.Recompress, p.Codec, p.CompressionLevel = true, to, 3
			v, err := Validate(b, p, testNow, nil)
			if err != nil {
				t.Fatalf("%v -> %v: %v", from, to, err)
			}
			got := v.Batch
			if got.Attributes().Codec() != to || !got.ValidCRC() {
				t.Fatalf("%v -> %v: codec %v crc %v", from, to, got.Attributes().Codec(), got.ValidCRC())
			}
			if from != to && !bytes.Equal(b, orig) {
				t.Fatalf("%v -> %v: the input batch was modified", from, to)
			}
			if got.ProducerID() != 123456789 || got.ProducerEpoch() != 42 || got.BaseSequence() != 1000 ||
				!got.Attributes().Transactional() || got.NumRecords() != int32(len(recs)) ||
				got.LastOffsetDelta() != int32(len(recs)-1) || got.BaseTimestamp() != b.BaseTimestamp() ||
				got.MaxTimestamp() != v.MaxTimestamp || v.MaxTimestamp <= 0 {
				t.Fatalf("%v -> %v: header not kept: %+v", from, to, HeaderOf(got))
			}
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(got); err != nil {
				t.Fatal(err)
			}
			raw := foreignDecompress(t, to, kb.Records)
			sameRecords(t, decodeAll(t, raw, got.NumRecords()), recs)
			// The result validates again unchanged.
			again, err := Validate(bytes.Clone(got), p, testNow, nil)
			if err != nil || !bytes.Equal(again.Batch, got) {
				t.Fatalf("%v -> %v: revalidation: %v", from, to, err)
			}
		}
	}
}

func TestValidateRecompressTooLarge(t *testing.T) {
	// Incompressible data grows under gzip; the recompressed batch is
	// checked against max.message.bytes again.
	r := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 10000)
	for i := range val {
		val[i] = byte(r.Uint32())
	}
	b := clientBatch(t, None, []Record{{Value: val}}, nil)
	p := testPolicy()
	p.MaxBatchBytes = len(b)
	p.Recompress, p.Codec = true, Gzip
	if _, err := Validate(b, p, testNow, nil); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("got %v, want ErrBatchTooLarge", err)
	}
}

func TestValidateScratchReuse(t *testing.T) {
	b := clientBatch(t, Zstd, testRecords(100), nil)
	scratch := make([]byte, 0, 1<<20)
	first := &scratch[:1][0]
	if _, err := Validate(b, testPolicy(), testNow, &scratch); err != nil {
		t.Fatal(err)
	}
	if &scratch[:1][0] != first {
		t.Fatal("scratch was reallocated although it was large enough")
	}
	// scratch now holds the decompressed records.
	if got := decodeAll(t, scratch, 100); len(got) != 100 {
		t.Fatalf("%d records in scratch", len(got))
	}
}
