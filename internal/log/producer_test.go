package log

import (
	"errors"
	"math"
	"testing"
	"time"

	"weir/internal/record"
)

type sentBatch struct {
	seq  int32
	n    int
	info AppendInfo
}

// produce appends count batches of n records for pid/epoch from seq on.
func produce(t *testing.T, e *testEnv, l *Log, pid int64, epoch int16, seq int32, count, n int) []sentBatch {
	t.Helper()
	var out []sentBatch
	for i := 0; i < count; i++ {
		info, err := l.AppendAsLeader(idemBatch(t, pid, epoch, seq, n, e.clock.Ms()), 0)
		if err != nil || info.Duplicate {
			t.Fatalf("append seq %d: %+v %v", seq, info, err)
		}
		out = append(out, sentBatch{seq, n, info})
		seq = int32((int64(seq) + int64(n)) % (1 << 31))
	}
	return out
}

// retry resends a batch and checks it is reported as the original.
func retry(t *testing.T, e *testEnv, l *Log, pid int64, epoch int16, s sentBatch) {
	t.Helper()
	end, size := l.LogEndOffset(), l.Size()
	info, err := l.AppendAsLeader(idemBatch(t, pid, epoch, s.seq, s.n, e.clock.Ms()), 0)
	if err != nil || !info.Duplicate || info.BaseOffset != s.info.BaseOffset || info.LastOffset != s.info.LastOffset {
		t.Fatalf("retry of seq %d: %+v %v, original %+v", s.seq, info, err, s.info)
	}
	if l.LogEndOffset() != end || l.Size() != size {
		t.Fatal("a duplicate wrote data")
	}
}

func expectErr(t *testing.T, l *Log, b record.Batch, want error) {
	t.Helper()
	end := l.LogEndOffset()
	if _, err := l.AppendAsLeader(b, 0); !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	if l.LogEndOffset() != end {
		t.Fatal("a rejected batch was written")
	}
}

func TestIdempotentDuplicates(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	sent := produce(t, e, l, 7, 0, 0, 6, 3)
	for _, s := range sent[1:] {
		retry(t, e, l, 7, 0, s)
	}
	// The sixth-most-recent batch is no longer remembered: out of order.
	expectErr(t, l, idemBatch(t, 7, 0, sent[0].seq, 3, e.clock.Ms()), ErrOutOfOrderSequence)
	// A gap, or a sequence going back inside a batch.
	expectErr(t, l, idemBatch(t, 7, 0, 19, 1, e.clock.Ms()), ErrOutOfOrderSequence)
	expectErr(t, l, idemBatch(t, 7, 0, 16, 1, e.clock.Ms()), ErrOutOfOrderSequence)
	// Other producers and non-idempotent batches are independent.
	produce(t, e, l, 8, 3, 1000, 2, 1)
	mustAppend(t, l, valueBatch(t, 1, 5, e.clock.Ms()))
	produce(t, e, l, 7, 0, 18, 1, 1)
	// A new epoch must start at sequence 0; then the old epoch is fenced.
	expectErr(t, l, idemBatch(t, 7, 1, 5, 1, e.clock.Ms()), ErrOutOfOrderSequence)
	produce(t, e, l, 7, 1, 0, 1, 2)
	expectErr(t, l, idemBatch(t, 7, 0, 19, 1, e.clock.Ms()), ErrInvalidProducerEpoch)
	expectErr(t, l, idemBatch(t, 7, 0, sent[5].seq, 3, e.clock.Ms()), ErrInvalidProducerEpoch)
}

func TestSequenceWrap(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	// An unknown producer may start anywhere.
	a := produce(t, e, l, 1, 0, math.MaxInt32-4, 1, 3) // ..MaxInt32-2
	b := produce(t, e, l, 1, 0, math.MaxInt32-1, 1, 4) // MaxInt32-1, MaxInt32, 0, 1
	c := produce(t, e, l, 1, 0, 2, 1, 1)
	retry(t, e, l, 1, 0, a[0])
	retry(t, e, l, 1, 0, b[0])
	retry(t, e, l, 1, 0, c[0])
	expectErr(t, l, idemBatch(t, 1, 0, 0, 1, e.clock.Ms()), ErrOutOfOrderSequence)
	produce(t, e, l, 1, 0, 3, 1, 1)
}

func TestProducerStateSurvivesReopen(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	sent := produce(t, e, l, 5, 2, 0, 8, 2)
	l = e.reopen(l)
	// The snapshot written on close keeps each producer's last batch.
	retry(t, e, l, 5, 2, sent[7])
	expectErr(t, l, idemBatch(t, 5, 2, 20, 1, e.clock.Ms()), ErrOutOfOrderSequence)
	expectErr(t, l, idemBatch(t, 5, 1, 0, 1, e.clock.Ms()), ErrInvalidProducerEpoch)
	more := produce(t, e, l, 5, 2, 16, 3, 2)
	retry(t, e, l, 5, 2, more[0])
	l.Close()
}

func TestProducerStateUncleanReopen(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 600
	l := e.open(cfg)
	sent := produce(t, e, l, 5, 0, 0, 30, 2)
	produce(t, e, l, 6, 0, 0, 1, 1)
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments (roll snapshots), have %d", l.NumSegments())
	}
	// No Close: no snapshot at the log end, only those of the rolls.
	snaps, _ := listSnapshots(e.fs, e.dir)
	if snaps[len(snaps)-1] >= l.LogEndOffset() {
		t.Fatalf("snapshots %v reach the log end", snaps)
	}
	o := e.opts()
	o.RecoveryPoint = l.RecoveryPoint()
	l2 := e.openWith(cfg, o)
	defer l2.Close()
	// The batches after the newest snapshot were replayed: the last five
	// (all after the snapshot) are duplicates again.
	lastSnap := snaps[len(snaps)-1]
	for _, s := range sent[len(sent)-5:] {
		if s.info.BaseOffset >= lastSnap {
			retry(t, e, l2, 5, 0, s)
		}
	}
	retry(t, e, l2, 5, 0, sent[len(sent)-1])
	expectErr(t, l2, idemBatch(t, 5, 0, 100, 1, e.clock.Ms()), ErrOutOfOrderSequence)
	produce(t, e, l2, 5, 0, 60, 1, 1)
	produce(t, e, l2, 6, 0, 1, 1, 1)
}

func TestProducerStateAfterTruncation(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 500
	l := e.open(cfg)
	defer l.Close()
	sent := produce(t, e, l, 9, 0, 0, 20, 2)
	// Truncate to the start of batch 12: batches 12.. are gone.
	if err := l.TruncateTo(sent[12].info.BaseOffset); err != nil {
		t.Fatal(err)
	}
	retry(t, e, l, 9, 0, sent[11])
	// Batch 12 is no longer a duplicate: it is the next in sequence.
	info, err := l.AppendAsLeader(idemBatch(t, 9, 0, sent[12].seq, 2, e.clock.Ms()), 0)
	if err != nil || info.Duplicate || info.BaseOffset != sent[12].info.BaseOffset {
		t.Fatalf("re-append after truncation: %+v %v", info, err)
	}
	// Truncating below every batch of a producer forgets it.
	if err := l.TruncateTo(sent[3].info.BaseOffset); err != nil {
		t.Fatal(err)
	}
	retry(t, e, l, 9, 0, sent[2])
	l.TruncateTo(0)
	produce(t, e, l, 9, 0, 500, 1, 1)
}

func TestProducerExpiry(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.ProducerExpiryMs = 60_000
	l := e.open(cfg)
	defer l.Close()
	sent := produce(t, e, l, 4, 0, 0, 2, 1)
	e.clock.Advance(2 * time.Minute)
	l.DeleteOldSegments()
	// Forgotten: a retry is appended anew, any sequence is accepted.
	info, err := l.AppendAsLeader(idemBatch(t, 4, 0, sent[1].seq, 1, e.clock.Ms()), 0)
	if err != nil || info.Duplicate {
		t.Fatalf("after expiry: %+v %v", info, err)
	}
	produce(t, e, l, 4, 0, 2, 1, 1)
}

func TestProducerSnapshotEncoding(t *testing.T) {
	ps := newProducerState()
	for i, pid := range []int64{3, 1, 2} {
		b := idemBatch(t, pid, int16(i), math.MaxInt32-1, 3, 1000)
		b.SetBaseOffset(int64(10 * i))
		ps.update(b)
	}
	ps.entries[2].txnFirstOff, ps.entries[2].coordEpoch = 7, 4
	data := ps.encode()
	got, err := decodeProducerSnapshot(data, 42)
	if err != nil || got.mapEnd != 42 || len(got.entries) != 3 {
		t.Fatalf("decode: %v %+v", err, got)
	}
	for id, e := range ps.entries {
		g := got.entries[id]
		if g.epoch != e.epoch || g.lastSeq() != e.lastSeq() || g.batches[0] != e.batches[0] ||
			g.txnFirstOff != e.txnFirstOff || g.coordEpoch != e.coordEpoch || g.lastTimestamp != e.lastTimestamp {
			t.Fatalf("producer %d: %+v != %+v", id, g, e)
		}
	}
	data[len(data)-1] ^= 1
	if _, err := decodeProducerSnapshot(data, 42); err == nil {
		t.Fatal("corrupt snapshot accepted")
	}
}
