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
	"github.com/twmb/franz-go/pkg/kmsg"
)

// legacyMessage builds one entry of a magic 0/1 message set by hand:
// offset, size, then the message with its CRC-32 (IEEE).
func legacyMessage(offset int64, magic byte, ts int64, key, value []byte, attrs byte) []byte {
	msg := []byte{0, 0, 0, 0, magic, attrs}
	if magic == 1 {
		msg = binary.BigEndian.AppendUint64(msg, uint64(ts))
	}
	for _, b := range [][]byte{key, value} {
		if b == nil {
			msg = binary.BigEndian.AppendUint32(msg, math.MaxUint32) // -1
		} else {
			msg = binary.BigEndian.AppendUint32(msg, uint32(len(b)))
			msg = append(msg, b...)
		}
	}
	binary.BigEndian.PutUint32(msg, crc32.ChecksumIEEE(msg[4:]))
	out := binary.BigEndian.AppendUint64(nil, uint64(offset))
	out = binary.BigEndian.AppendUint32(out, uint32(len(msg)))
	return append(out, msg...)
}

type legacyRec struct {
	key, value []byte
	ts         int64
}

var legacyRecs = []legacyRec{
	{[]byte("k0"), []byte("v0"), 1_600_000_000_000},
	{nil, []byte("null key"), 1_600_000_000_500},
	{[]byte{}, nil, 1_599_999_999_000}, // empty key, null value, earlier timestamp
	{[]byte("k3"), []byte{}, 1_600_000_000_100},
}

func legacySet(magic byte, recs []legacyRec) []byte {
	var set []byte
	for i, r := range recs {
		set = append(set, legacyMessage(int64(i), magic, r.ts, r.key, r.value, 0)...)
	}
	return set
}

// wrap compresses set into one wrapper message with codec c.
func wrap(t testing.TB, magic byte, c Codec, ts int64, attrs byte, set []byte) []byte {
	t.Helper()
	var comp []byte
	switch c {
	case Snappy:
		comp = xerialFrame(set, 32<<10)
	case LZ4:
		comp = pierrecLZ4(t, set, lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false))
		if magic == 0 {
			// Pre-0.10 clients hash the magic number too.
			comp[6] = byte(xxh32Small(comp[:6]) >> 8)
		}
	default:
		comp = foreignCompress(t, c, set)
	}
	return legacyMessage(int64(len(set)), magic, ts, nil, comp, attrs|byte(c))
}

// checkConverted checks the batch made from recs: one v2 batch whose records
// carry the keys, values and timestamps of the legacy messages.
func checkConverted(t *testing.T, b Batch, codec Codec, magic byte, recs []legacyRec) {
	t.Helper()
	if _, rest, err := Next(b); err != nil || len(rest) != 0 {
		t.Fatalf("Next: %v", err)
	}
	if !b.ValidCRC() || b.Attributes().Codec() != codec || b.NumRecords() != int32(len(recs)) ||
		b.LastOffsetDelta() != int32(len(recs)-1) || b.ProducerID() != NoProducerID || b.BaseSequence() != NoSequence {
		t.Fatalf("header: crc %v codec %v count %d lod %d pid %d seq %d", b.ValidCRC(), b.Attributes().Codec(),
			b.NumRecords(), b.LastOffsetDelta(), b.ProducerID(), b.BaseSequence())
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg: %v", err)
	}
	raw, err := b.Decoded(nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeAll(t, raw, b.NumRecords())
	maxTS := int64(-1)
	for i, r := range recs {
		ts := r.ts
		if magic == 0 {
			ts = -1
		}
		maxTS = max(maxTS, ts)
		g := got[i]
		if g.OffsetDelta != int32(i) || b.BaseTimestamp()+g.TimestampDelta != ts {
			t.Fatalf("record %d: offset delta %d timestamp %d, want %d", i, g.OffsetDelta, b.BaseTimestamp()+g.TimestampDelta, ts)
		}
		sameBytes(t, "key", g.Key, r.key)
		sameBytes(t, "value", g.Value, r.value)
	}
	if b.MaxTimestamp() != maxTS {
		t.Fatalf("max timestamp %d, want %d", b.MaxTimestamp(), maxTS)
	}
	p := &Policy{MaxBatchBytes: 1 << 20, TimestampBeforeMax: math.MaxInt64, TimestampAfterMax: math.MaxInt64}
	if _, err := Validate(bytes.Clone(b), p, 1_700_000_000_000, nil); err != nil {
		t.Fatalf("converted batch fails validation: %v", err)
	}
}

func TestConvertLegacyUncompressed(t *testing.T) {
	for _, magic := range []byte{0, 1} {
		b, err := ConvertLegacy(legacySet(magic, legacyRecs), 1<<20)
		if err != nil {
			t.Fatalf("magic %d: %v", magic, err)
		}
		checkConverted(t, b, None, magic, legacyRecs)
	}
}

func TestConvertLegacyMatchesKmsgEncoding(t *testing.T) {
	// The hand-built layout agrees with kmsg's MessageV0/V1 encoders.
	m0 := kmsg.MessageV0{Offset: 3, Magic: 0, Key: nil, Value: []byte("v")}
	m1 := kmsg.MessageV1{Offset: 4, Magic: 1, Timestamp: 12345, Key: []byte("k"), Value: nil}
	for _, enc := range [][]byte{m0.AppendTo(nil), m1.AppendTo(nil)} {
		binary.BigEndian.PutUint32(enc[8:], uint32(len(enc)-12))
		binary.BigEndian.PutUint32(enc[12:], crc32.ChecksumIEEE(enc[16:]))
		if _, err := ConvertLegacy(enc, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(legacyMessage(4, 1, 12345, []byte("k"), nil, 0), func() []byte {
		e := m1.AppendTo(nil)
		binary.BigEndian.PutUint32(e[8:], uint32(len(e)-12))
		binary.BigEndian.PutUint32(e[12:], crc32.ChecksumIEEE(e[16:]))
		return e
	}()) {
		t.Fatal("hand-built magic 1 message differs from kmsg's")
	}
}

func TestConvertLegacyCompressed(t *testing.T) {
	for _, magic := range []byte{0, 1} {
		for _, c := range []Codec{Gzip, Snappy, LZ4} {
			set := wrap(t, magic, c, 1_600_000_000_999, 0, legacySet(magic, legacyRecs))
			b, err := ConvertLegacy(set, 1<<20)
			if err != nil {
				t.Fatalf("magic %d %v: %v", magic, c, err)
			}
			checkConverted(t, b, c, magic, legacyRecs)
		}
	}
	// Raw (unframed) snappy wrappers, as some non-Java clients wrote them.
	inner := legacySet(1, legacyRecs)
	set := legacyMessage(0, 1, 0, nil, snappy.Encode(nil, inner), byte(Snappy))
	b, err := ConvertLegacy(set, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkConverted(t, b, Snappy, 1, legacyRecs)
}

func TestConvertLegacyMixedAndMultipleWrappers(t *testing.T) {
	// Plain messages and several wrappers in one set keep their order; the
	// batch takes the first wrapper's codec.
	a, b := legacyRecs[:2], legacyRecs[2:]
	set := legacySet(1, a[:1])
	set = append(set, wrap(t, 1, LZ4, 0, 0, legacySet(1, a[1:]))...)
	set = append(set, wrap(t, 1, Gzip, 0, 0, legacySet(1, b))...)
	batch, err := ConvertLegacy(set, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkConverted(t, batch, LZ4, 1, legacyRecs)
}

func TestConvertLegacyLogAppendTime(t *testing.T) {
	const wrapperTS = 1_650_000_000_000
	set := wrap(t, 1, Gzip, wrapperTS, 0x08, legacySet(1, legacyRecs))
	b, err := ConvertLegacy(set, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Attributes().LogAppendTime() || b.MaxTimestamp() != wrapperTS {
		t.Fatalf("LogAppendTime %v, max timestamp %d", b.Attributes().LogAppendTime(), b.MaxTimestamp())
	}
	raw, _ := b.Decoded(nil, 1<<20)
	for i, r := range decodeAll(t, raw, b.NumRecords()) {
		if b.BaseTimestamp()+r.TimestampDelta != wrapperTS {
			t.Fatalf("record %d has timestamp %d, want the wrapper's", i, b.BaseTimestamp()+r.TimestampDelta)
		}
	}
}

func TestConvertLegacyPartialTrailingMessage(t *testing.T) {
	full := legacySet(1, legacyRecs)
	last := legacyMessage(9, 1, 5, []byte("cut"), []byte("off"), 0)
	for n := 1; n < len(last); n++ {
		b, err := ConvertLegacy(append(bytes.Clone(full), last[:n]...), 1<<20)
		if err != nil {
			t.Fatalf("cut at %d: %v", n, err)
		}
		checkConverted(t, b, None, 1, legacyRecs)
	}
	// Only a partial message: nothing to append.
	if _, err := ConvertLegacy(last[:len(last)-1], 1<<20); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("lone partial message: %v", err)
	}
	// Inside a compressed wrapper a cut message is corruption.
	inner := append(legacySet(1, legacyRecs), last[:len(last)-3]...)
	if _, err := ConvertLegacy(wrap(t, 1, Gzip, 0, 0, inner), 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("partial inner message: %v", err)
	}
	inner = append(legacySet(1, legacyRecs), last[:11]...)
	if _, err := ConvertLegacy(wrap(t, 1, Gzip, 0, 0, inner), 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("partial inner message header: %v", err)
	}
}

func TestConvertLegacyErrors(t *testing.T) {
	good := legacyMessage(0, 1, 1, []byte("k"), []byte("v"), 0)
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	badInner := wrap(t, 1, Gzip, 0, 0, badCRC)
	nested := wrap(t, 1, Gzip, 0, 0, wrap(t, 1, Gzip, 0, 0, good))
	zstdWrapper := legacyMessage(0, 1, 0, nil, foreignCompress(t, Zstd, good), byte(Zstd))
	mismatch := wrap(t, 1, Gzip, 0, 0, legacyMessage(0, 0, 0, nil, []byte("v0 inside v1"), 0))
	magic2 := legacyMessage(0, 2, 0, nil, []byte("v"), 0)
	tooSmall := bytes.Clone(good)
	binary.BigEndian.PutUint32(tooSmall[8:], 13)
	negative := bytes.Clone(good)
	binary.BigEndian.PutUint32(negative[8:], 0xfffffff0)
	keyOverrun := legacyMessage(0, 0, 0, []byte("key"), []byte("v"), 0)
	binary.BigEndian.PutUint32(keyOverrun[18:], 1000) // key length past the message
	binary.BigEndian.PutUint32(keyOverrun[12:], crc32.ChecksumIEEE(keyOverrun[16:]))
	shortV1 := legacyMessage(0, 0, 0, nil, []byte{}, 0) // 14 bytes, relabelled magic 1
	shortV1[16] = 1
	binary.BigEndian.PutUint32(shortV1[12:], crc32.ChecksumIEEE(shortV1[16:]))
	corruptGzip := legacyMessage(0, 1, 0, nil, []byte("not gzip at all"), byte(Gzip))
	// Only magic 0 wrappers get the pre-0.10 LZ4 header checksum excused.
	brokenLZ4 := pierrecLZ4(t, good, lz4.ChecksumOption(false))
	brokenLZ4[6] = byte(xxh32Small(brokenLZ4[:6]) >> 8)
	brokenLZ4v1 := legacyMessage(0, 1, 0, nil, brokenLZ4, byte(LZ4))

	for _, tc := range []struct {
		name string
		set  []byte
		want error
	}{
		{"bad CRC", badCRC, ErrCorrupt},
		{"bad CRC after good", append(bytes.Clone(good), badCRC...), ErrCorrupt},
		{"bad inner CRC", badInner, ErrCorrupt},
		{"nested compression", nested, ErrInvalidRecord},
		{"zstd wrapper", zstdWrapper, ErrInvalidRecord},
		{"inner magic differs", mismatch, ErrInvalidRecord},
		{"magic 2 message", magic2, ErrInvalidRecord},
		{"size below minimum", tooSmall, ErrCorrupt},
		{"negative size", negative, ErrCorrupt},
		{"key overruns message", keyOverrun, ErrCorrupt},
		{"magic 1 too short for a timestamp", shortV1, ErrCorrupt},
		{"corrupt gzip", corruptGzip, ErrCorrupt},
		{"magic 1 LZ4 with a pre-0.10 header checksum", brokenLZ4v1, ErrCorrupt},
		{"empty", nil, ErrInvalidRecord},
		{"empty wrapper", wrap(t, 1, Gzip, 0, 0, nil), ErrInvalidRecord},
	} {
		if _, err := ConvertLegacy(tc.set, 1<<20); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestConvertLegacyLimit(t *testing.T) {
	inner := legacySet(1, []legacyRec{{nil, make([]byte, 10000), 1}})
	one := wrap(t, 1, Gzip, 0, 0, inner)
	if _, err := ConvertLegacy(one, len(inner)); err != nil {
		t.Fatalf("exact limit: %v", err)
	}
	if _, err := ConvertLegacy(one, len(inner)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("limit one short: %v", err)
	}
	// The limit bounds the total over all wrappers.
	two := append(bytes.Clone(one), one...)
	if _, err := ConvertLegacy(two, 2*len(inner)); err != nil {
		t.Fatalf("two wrappers, exact limit: %v", err)
	}
	if _, err := ConvertLegacy(two, 2*len(inner)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("two wrappers, limit one short: %v", err)
	}
}

func TestXXH32(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
	}{
		{"", 0x02CC5D05},
		{"a", 0x550D7456},
		{"abc", 0x32D153FF},
	} {
		if got := xxh32Small([]byte(tc.in)); got != tc.want {
			t.Errorf("xxh32(%q) = %08x, want %08x", tc.in, got, tc.want)
		}
	}
	// The header checksum pierrec writes is what fixLZ4HeaderChecksum computes.
	for _, opts := range [][]lz4.Option{nil, {lz4.SizeOption(100)}, {lz4.BlockChecksumOption(true)}} {
		f := pierrecLZ4(t, testData(100, 1), opts...)
		if got := fixLZ4HeaderChecksum(f); &got[0] != &f[0] {
			t.Errorf("opts %v: a correct header checksum was rewritten", opts)
		}
		broken := bytes.Clone(f)
		end := 6
		if f[4]&0x08 != 0 {
			end += 8
		}
		broken[end] ^= 0x5a
		if _, err := Decompress(LZ4, broken, nil, 1000); !errors.Is(err, ErrCorrupt) {
			t.Errorf("broken header checksum accepted by Decompress: %v", err)
		}
		if !bytes.Equal(fixLZ4HeaderChecksum(broken), f) {
			t.Errorf("opts %v: checksum not restored", opts)
		}
	}
	for _, junk := range [][]byte{nil, {1, 2, 3}, {0x04, 0x22, 0x4d, 0x18, 0x68}, {0x04, 0x22, 0x4d, 0x18, 0x68, 0x40, 0x00},
		{0x04, 0x22, 0x4d, 0x18, 0x69, 0x40, 0, 0, 0, 0, 0}} { // dictionary id
		fixLZ4HeaderChecksum(junk) // no panic on short or odd frames
	}
}
