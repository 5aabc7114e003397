package perf

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batch encodes a v2 record batch with kmsg, with recordBytes of opaque
// record data (CountBatches never looks inside).
func batch(base int64, records int32, recordBytes int, control bool) []byte {
	b := kmsg.RecordBatch{
		FirstOffset:     base,
		Magic:           2,
		LastOffsetDelta: records - 1,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      records,
		Records:         bytes.Repeat([]byte{'x'}, recordBytes),
	}
	if control {
		b.Attributes = 0x20
	}
	out := b.AppendTo(nil)
	// Fix the length field: bytes after the offset and length fields.
	b.Length = int32(len(out) - 12)
	return b.AppendTo(nil)
}

func TestCountBatches(t *testing.T) {
	a := batch(0, 10, 1000, false)
	b := batch(10, 5, 300, false)
	ctl := batch(15, 1, 20, true)
	c := batch(16, 7, 50, false)
	var wire []byte
	for _, x := range [][]byte{a, b, ctl, c} {
		wire = append(wire, x...)
	}
	got, err := CountBatches(wire)
	if err != nil {
		t.Fatal(err)
	}
	want := BatchCount{Records: 22, Bytes: int64(len(a) + len(b) + len(c)), Batches: 4, NextOffset: 23}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if len(a) != 61+1000 {
		t.Fatalf("test batch is %d bytes, want header 61 + 1000", len(a))
	}
}

func TestCountBatchesPartialTail(t *testing.T) {
	a := batch(100, 3, 64, false)
	b := batch(103, 4, 64, false)
	for cut := 1; cut < len(b); cut++ {
		wire := append(append([]byte{}, a...), b[:cut]...)
		got, err := CountBatches(wire)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		want := BatchCount{Records: 3, Bytes: int64(len(a)), Batches: 1, NextOffset: 103}
		if got != want {
			t.Fatalf("cut %d: got %+v, want %+v", cut, got, want)
		}
	}
	got, err := CountBatches(nil)
	if err != nil || got != (BatchCount{NextOffset: -1}) {
		t.Fatalf("empty: %+v %v", got, err)
	}
}

func TestCountBatchesFromSkipsEarlierBatches(t *testing.T) {
	wire := append(batch(0, 10, 10, false), batch(10, 10, 10, false)...)
	got, err := CountBatchesFrom(wire, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got.Records != 10 || got.Batches != 2 || got.NextOffset != 20 || got.Bytes != int64(len(wire)/2) {
		t.Fatalf("got %+v", got)
	}
}

func TestCountBatchesRejectsOldMagic(t *testing.T) {
	wire := batch(0, 1, 10, false)
	wire[16] = 1
	if _, err := CountBatches(wire); err == nil {
		t.Fatal("magic 1 accepted")
	}
	short := batch(0, 1, 10, false)[:30]
	short[11] = 18 // claims 18 bytes after the length: a complete but too-short batch
	if _, err := CountBatches(short); err == nil {
		t.Fatal("short batch accepted")
	}
}

func TestCountBatchesDoesNotAllocate(t *testing.T) {
	wire := append(batch(0, 10, 1000, false), batch(10, 10, 1000, false)...)
	if n := testing.AllocsPerRun(100, func() { _, _ = CountBatches(wire) }); n != 0 {
		t.Fatalf("allocates %v times", n)
	}
}
