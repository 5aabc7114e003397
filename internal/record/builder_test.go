package record

import (
	"bytes"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBuildParsesWithKmsg(t *testing.T) {
	for _, c := range allCodecs {
		for _, level := range []int{0, 1, 9} {
			t.Run(c.String(), func(t *testing.T) {
				recs := append(testRecords(50), edgeRecords()[:4]...)
				for i := range recs {
					recs[i].OffsetDelta = int32(i)
				}
				h := BatchHeader{
					BaseOffset: 42, LeaderEpoch: 7, Attributes: Attributes(0).WithCodec(c) | transactionalBit,
					LastOffsetDelta: -1, BaseTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_500,
					ProducerID: 99, ProducerEpoch: 3, BaseSequence: 1000,
				}
				b, err := Build(h, recs, level)
				if err != nil {
					t.Fatal(err)
				}
				if !b.ValidCRC() {
					t.Fatal("invalid CRC")
				}
				if _, rest, err := Next(b); err != nil || len(rest) != 0 {
					t.Fatalf("Next: %v", err)
				}
				var kb kmsg.RecordBatch
				if err := kb.ReadFrom(b); err != nil {
					t.Fatalf("kmsg: %v", err)
				}
				checkAgainstKmsg(t, b, &kb)
				if kb.LastOffsetDelta != int32(len(recs)-1) || kb.NumRecords != int32(len(recs)) {
					t.Fatalf("kmsg: lod %d count %d", kb.LastOffsetDelta, kb.NumRecords)
				}
				want := h
				want.LastOffsetDelta = int32(len(recs) - 1)
				if got := HeaderOf(b); got != want {
					t.Fatalf("HeaderOf = %+v, want %+v", got, want)
				}
				// Decompress the payload with another implementation and
				// read the records with kmsg.
				raw := foreignDecompress(t, c, kb.Records)
				if !bytes.Equal(raw, encodeRecords(recs)) {
					t.Fatal("payload differs from the encoded records")
				}
				kr := kmsgRecords(t, raw, len(recs))
				for i := range recs {
					sameBytes(t, "kmsg value", kr[i].Value, recs[i].Value)
				}
				raw2, err := b.Decoded(nil, len(raw))
				if err != nil {
					t.Fatal(err)
				}
				sameRecords(t, decodeAll(t, raw2, b.NumRecords()), recs)
			})
		}
	}
}

func TestBuildRawAndHeaderOf(t *testing.T) {
	recs := testRecords(5)
	recs[4].OffsetDelta = 9 // a compacted batch keeps gaps
	raw := encodeRecords(recs)
	for _, c := range allCodecs {
		h := NewBatchHeader()
		h.Attributes = h.Attributes.WithCodec(c)
		b, err := BuildRaw(h, 5, raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		if b.LastOffsetDelta() != 9 || b.NumRecords() != 5 || !b.ValidCRC() {
			t.Fatalf("%v: lod %d count %d crc %v", c, b.LastOffsetDelta(), b.NumRecords(), b.ValidCRC())
		}
		if b.ProducerID() != NoProducerID || b.ProducerEpoch() != NoProducerEpoch || b.BaseSequence() != NoSequence ||
			b.LeaderEpoch() != NoPartitionEpoch || b.BaseOffset() != 0 {
			t.Fatalf("%v: NewBatchHeader defaults not kept: %+v", c, HeaderOf(b))
		}
		// Rebuilding from HeaderOf with the same payload gives the same
		// bytes for uncompressed batches, and the same records for all.
		b2, err := BuildRaw(HeaderOf(b), b.NumRecords(), raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		if c == None && !bytes.Equal(b, b2) {
			t.Fatal("rebuild differs")
		}
		got, err := b2.Decoded(nil, len(raw))
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("%v: %v", c, err)
		}
	}
	// Decoded of an uncompressed batch aliases the batch.
	b, _ := BuildRaw(NewBatchHeader(), 5, raw, 0)
	if got, _ := b.Decoded(nil, 0); &got[0] != &b[HeaderSize] {
		t.Fatal("uncompressed Decoded copied the payload")
	}
}

func TestBuildExplicitLastOffsetDelta(t *testing.T) {
	h := NewBatchHeader()
	h.LastOffsetDelta = 100
	b, err := Build(h, testRecords(2), 0)
	if err != nil || b.LastOffsetDelta() != 100 {
		t.Fatalf("lod %d: %v", b.LastOffsetDelta(), err)
	}
}

func TestBuildEmpty(t *testing.T) {
	for _, c := range allCodecs {
		h := NewBatchHeader()
		h.Attributes = h.Attributes.WithCodec(c)
		h.MaxTimestamp = math.MaxInt64
		b, err := Build(h, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil || !b.ValidCRC() || b.NumRecords() != 0 {
			t.Fatalf("%v: %v", c, err)
		}
		raw, err := b.Decoded(nil, 0)
		if err != nil || len(raw) != 0 {
			t.Fatalf("%v: %v", c, err)
		}
	}
}

func TestWithCodec(t *testing.T) {
	a := Attributes(0x7f)
	for _, c := range allCodecs {
		got := a.WithCodec(c)
		if got.Codec() != c || got&^codecMask != a&^codecMask {
			t.Errorf("WithCodec(%v) = %#x", c, int16(got))
		}
	}
}
