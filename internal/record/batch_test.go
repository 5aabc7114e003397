package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sampleKmsgBatch is a batch encoded by kmsg with every header field set to
// a distinct value.
func sampleKmsgBatch(t testing.TB, codec Codec, recs []Record) (kmsg.RecordBatch, []byte) {
	t.Helper()
	var raw []byte
	for i := range recs {
		raw = append(raw, kmsgRecord(&recs[i])...)
	}
	kb := kmsg.RecordBatch{
		FirstOffset:          0x0102030405060708,
		PartitionLeaderEpoch: 0x11121314,
		Attributes:           int16(codec) | 0x08 | 0x10 | 0x40,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       1_700_000_000_000,
		MaxTimestamp:         1_700_000_000_123,
		ProducerID:           0x2122232425262728,
		ProducerEpoch:        0x3132,
		FirstSequence:        0x41424344,
		NumRecords:           int32(len(recs)),
	}
	enc := kmsgBatch(kb, foreignCompress(t, codec, raw))
	kb.Records = enc[HeaderSize:]
	kb.Length = int32(len(enc) - LengthOverhead)
	kb.CRC = int32(binary.BigEndian.Uint32(enc[17:]))
	kb.Magic = 2
	return kb, enc
}

func TestBatchAccessorsMatchKmsg(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			recs := testRecords(7)
			kb, enc := sampleKmsgBatch(t, codec, recs)
			b, rest, err := Next(enc)
			if err != nil || len(rest) != 0 {
				t.Fatalf("Next: %v, %d left", err, len(rest))
			}
			checkAgainstKmsg(t, b, &kb)
			a := b.Attributes()
			if a.Codec() != codec || !a.LogAppendTime() || !a.Transactional() || a.Control() || !a.HasDeleteHorizon() {
				t.Fatalf("attributes %#x decode wrong: codec %v lat %v txn %v ctl %v dh %v",
					int16(a), a.Codec(), a.LogAppendTime(), a.Transactional(), a.Control(), a.HasDeleteHorizon())
			}
			if b.LastOffset() != kb.FirstOffset+6 || b.NextOffset() != kb.FirstOffset+7 {
				t.Fatalf("LastOffset %d NextOffset %d", b.LastOffset(), b.NextOffset())
			}
			if b.LastSequence() != kb.FirstSequence+6 {
				t.Fatalf("LastSequence %d", b.LastSequence())
			}
			if !bytes.Equal(b.Payload(), kb.Records) {
				t.Fatal("payload differs")
			}
			if !b.ValidCRC() || b.ComputeCRC() != uint32(kb.CRC) {
				t.Fatalf("CRC: stored %08x computed %08x kmsg %08x", b.CRC(), b.ComputeCRC(), uint32(kb.CRC))
			}
			raw, err := b.Decoded(nil, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, decodeAll(t, raw, b.NumRecords()), recs)
		})
	}
}

// checkAgainstKmsg compares every accessor with kmsg's view of the same bytes.
func checkAgainstKmsg(t testing.TB, b Batch, kb *kmsg.RecordBatch) {
	t.Helper()
	type field struct {
		name      string
		got, want int64
	}
	for _, f := range []field{
		{"BaseOffset", b.BaseOffset(), kb.FirstOffset},
		{"Length", int64(b.Length()), int64(kb.Length)},
		{"LeaderEpoch", int64(b.LeaderEpoch()), int64(kb.PartitionLeaderEpoch)},
		{"Magic", int64(b.Magic()), int64(kb.Magic)},
		{"CRC", int64(b.CRC()), int64(uint32(kb.CRC))},
		{"Attributes", int64(b.Attributes()), int64(kb.Attributes)},
		{"LastOffsetDelta", int64(b.LastOffsetDelta()), int64(kb.LastOffsetDelta)},
		{"BaseTimestamp", b.BaseTimestamp(), kb.FirstTimestamp},
		{"MaxTimestamp", b.MaxTimestamp(), kb.MaxTimestamp},
		{"ProducerID", b.ProducerID(), kb.ProducerID},
		{"ProducerEpoch", int64(b.ProducerEpoch()), int64(kb.ProducerEpoch)},
		{"BaseSequence", int64(b.BaseSequence()), int64(kb.FirstSequence)},
		{"NumRecords", int64(b.NumRecords()), int64(kb.NumRecords)},
		{"Size", int64(b.Size()), int64(kb.Length) + LengthOverhead},
	} {
		if f.got != f.want {
			t.Errorf("%s = %d, kmsg says %d", f.name, f.got, f.want)
		}
	}
	if !bytes.Equal(b.Payload(), kb.Records) {
		t.Error("Payload differs from kmsg's Records")
	}
}

func TestBatchNegativeFields(t *testing.T) {
	kb := kmsg.RecordBatch{
		FirstOffset: -1, PartitionLeaderEpoch: -1, Attributes: -1, LastOffsetDelta: -1,
		FirstTimestamp: -1, MaxTimestamp: math.MinInt64, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: -1,
	}
	enc := kmsgBatch(kb, nil)
	kb.Magic, kb.Length, kb.CRC = 2, 49, int32(binary.BigEndian.Uint32(enc[17:]))
	b, _, err := Next(enc)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstKmsg(t, b, &kb)
	if b.LastSequence() != NoSequence {
		t.Fatalf("LastSequence with no sequence = %d", b.LastSequence())
	}
}

func TestLastSequenceWraps(t *testing.T) {
	for _, tc := range []struct {
		base, delta, want int32
	}{
		{0, 0, 0},
		{5, 3, 8},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 2, 5, 2},
	} {
		h := NewBatchHeader()
		h.BaseSequence, h.LastOffsetDelta = tc.base, tc.delta
		b, err := BuildRaw(h, tc.delta+1, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.LastSequence(); got != tc.want {
			t.Errorf("base %d delta %d: LastSequence %d, want %d", tc.base, tc.delta, got, tc.want)
		}
	}
}

func TestCRCCoverage(t *testing.T) {
	_, enc := sampleKmsgBatch(t, None, testRecords(3))
	b := Batch(enc)
	if !b.ValidCRC() {
		t.Fatal("kmsg batch has an invalid CRC")
	}
	// Fields before the CRC are not covered; everything after it is.
	for i := range b {
		if i >= offCRC && i < offAttributes {
			continue
		}
		c := Batch(bytes.Clone(b))
		c[i] ^= 0x01
		if got, want := c.ValidCRC(), i < offCRC; got != want {
			t.Errorf("flipping byte %d: ValidCRC %v, want %v", i, got, want)
		}
	}
	c := Batch(bytes.Clone(b))
	c.SetBaseOffset(12345)
	c.SetLeaderEpoch(77)
	if !c.ValidCRC() || c.BaseOffset() != 12345 || c.LeaderEpoch() != 77 {
		t.Fatal("stamping offset and epoch broke the CRC or did not stick")
	}
	c.SetLogAppendTime(999)
	if !c.ValidCRC() || c.MaxTimestamp() != 999 || !c.Attributes().LogAppendTime() {
		t.Fatal("SetLogAppendTime left an invalid CRC or did not stick")
	}
	if c.Attributes().WithCodec(None) != c.Attributes() {
		t.Fatal("WithCodec(None) changed an uncompressed batch's attributes")
	}
	c[offCRC] ^= 0xff
	if c.ValidCRC() {
		t.Fatal("corrupted CRC accepted")
	}
	c.UpdateCRC()
	if !c.ValidCRC() {
		t.Fatal("UpdateCRC did not fix the CRC")
	}
}

func TestNextSplitsConcatenatedBatches(t *testing.T) {
	var stream []byte
	var want [][]byte
	for i, codec := range allCodecs {
		_, enc := sampleKmsgBatch(t, codec, testRecords(i+1))
		binary.BigEndian.PutUint64(enc, uint64(100*i))
		stream = append(stream, enc...)
		want = append(want, enc)
	}
	buf := stream
	for i := range want {
		b, rest, err := Next(buf)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if !bytes.Equal(b, want[i]) || b.BaseOffset() != int64(100*i) {
			t.Fatalf("batch %d differs", i)
		}
		if cap(b) != len(b) {
			t.Fatalf("batch %d: cap %d exceeds len %d, appending would clobber the next batch", i, cap(b), len(b))
		}
		buf = rest
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left", len(buf))
	}
	if _, rest, err := Next(buf); !errors.Is(err, ErrShort) || len(rest) != 0 {
		t.Fatalf("Next on empty input: %v", err)
	}
}

func TestNextShortAtEveryTruncation(t *testing.T) {
	_, one := sampleKmsgBatch(t, Gzip, testRecords(4))
	_, two := sampleKmsgBatch(t, None, testRecords(2))
	stream := append(bytes.Clone(one), two...)
	for n := 0; n < len(one); n++ {
		b, rest, err := Next(one[:n])
		if err != ErrShort || b != nil || len(rest) != n {
			t.Fatalf("truncated to %d of %d bytes: batch %v err %v rest %d", n, len(one), b != nil, err, len(rest))
		}
	}
	// A torn second batch: the first still splits off, then ErrShort.
	for n := len(one); n < len(stream); n++ {
		b, rest, err := Next(stream[:n])
		if err != nil || !bytes.Equal(b, one) {
			t.Fatalf("stream cut at %d: first batch: %v", n, err)
		}
		if _, _, err := Next(rest); err != ErrShort {
			t.Fatalf("stream cut at %d: second batch: %v, want ErrShort", n, err)
		}
	}
}

func TestNextMagicAndFraming(t *testing.T) {
	_, enc := sampleKmsgBatch(t, None, testRecords(1))
	for _, magic := range []byte{0, 1, 3, 0xff} {
		c := bytes.Clone(enc)
		c[MagicOffset] = magic
		if _, _, err := Next(c); !errors.Is(err, ErrMagic) {
			t.Errorf("magic %d: %v, want ErrMagic", magic, err)
		}
		// Even truncated, a visible wrong magic is reported as such.
		if _, _, err := Next(c[:MagicOffset+1]); !errors.Is(err, ErrMagic) {
			t.Errorf("magic %d, truncated: %v, want ErrMagic", magic, err)
		}
	}
	// A legacy message (magic 0/1) is smaller than a v2 header.
	legacy := legacyMessage(0, 0, -1, []byte("k"), []byte("v"), 0)
	if _, _, err := Next(legacy); !errors.Is(err, ErrMagic) {
		t.Errorf("legacy message: %v, want ErrMagic", err)
	}
	for _, length := range []int32{-1, 0, 48, math.MinInt32} {
		c := bytes.Clone(enc)
		binary.BigEndian.PutUint32(c[offLength:], uint32(length))
		if _, _, err := Next(c); !errors.Is(err, ErrCorrupt) {
			t.Errorf("length %d: %v, want ErrCorrupt", length, err)
		}
	}
	// A huge length is a short buffer, not a panic.
	c := bytes.Clone(enc)
	binary.BigEndian.PutUint32(c[offLength:], math.MaxInt32)
	if _, _, err := Next(c); err != ErrShort {
		t.Errorf("length MaxInt32: %v, want ErrShort", err)
	}
}

func TestPeekSize(t *testing.T) {
	_, enc := sampleKmsgBatch(t, None, testRecords(2))
	if n, ok := PeekSize(enc[:LengthOverhead]); !ok || n != len(enc) {
		t.Fatalf("PeekSize = %d, %v; want %d", n, ok, len(enc))
	}
	if _, ok := PeekSize(enc[:LengthOverhead-1]); ok {
		t.Fatal("PeekSize ok on a short prefix")
	}
	c := bytes.Clone(enc)
	binary.BigEndian.PutUint32(c[offLength:], 0xffffffff)
	if n, ok := PeekSize(c); !ok || n != -1 {
		t.Fatalf("negative length: PeekSize = %d, %v", n, ok)
	}
}

func TestCodecNames(t *testing.T) {
	for _, c := range allCodecs {
		got, err := ParseCodec(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCodec(%q) = %v, %v", c.String(), got, err)
		}
	}
	if c, err := ParseCodec("uncompressed"); err != nil || c != None {
		t.Errorf("uncompressed: %v %v", c, err)
	}
	if _, err := ParseCodec("producer"); err == nil {
		t.Error("producer parsed as a codec")
	}
	if Codec(6).String() != "codec(6)" {
		t.Errorf("unknown codec name %q", Codec(6).String())
	}
}
