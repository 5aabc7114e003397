package log

import (
	"errors"
	"strings"
	"testing"
	"time"

	"weir/internal/record"
	"weir/internal/vfs"
)

// fillSegments appends n segments of k one-record batches of 100-byte values.
func fillSegments(t *testing.T, e *testEnv, l *Log, n, k int) {
	t.Helper()
	for i := 0; i < n; i++ {
		for j := 0; j < k; j++ {
			mustAppend(t, l, valueBatch(t, 1, 100, e.clock.Ms()))
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
}

func segmentBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.segments() {
		out = append(out, s.base)
	}
	return out
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTruncateTo(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	fillSegments(t, e, l, 3, 4) // segments at 0, 4, 8, 12 (empty active)
	l.SetHighWatermark(12)
	want := readBatches(t, l, 0)

	// Within a segment.
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 10 || !equalInts(segmentBases(l), []int64{0, 4, 8}) || l.HighWatermark() != 10 {
		t.Fatalf("end %d segments %v hw %d", l.LogEndOffset(), segmentBases(l), l.HighWatermark())
	}
	checkEveryOffset(t, l, want[:10])
	// At a segment boundary: the segment at 8 goes (weir's choice; Kafka
	// keeps it, empty) and the one before becomes active.
	if err := l.TruncateTo(8); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 8 || !equalInts(segmentBases(l), []int64{0, 4}) {
		t.Fatalf("end %d segments %v", l.LogEndOffset(), segmentBases(l))
	}
	// Truncating at or past the end does nothing.
	if err := l.TruncateTo(100); err != nil || l.LogEndOffset() != 8 {
		t.Fatalf("truncate past end: %v end %d", err, l.LogEndOffset())
	}
	// The log keeps working: new data lands where the old was, and the
	// deleted segments' delayed removal does not touch the new files.
	for i := 0; i < 8; i++ {
		mustAppend(t, l, valueBatch(t, 1, 100, e.clock.Ms()))
	}
	l.Roll()
	e.delay.run()
	segmentFilesConsistent(t, e.fs, l)
	got := readBatches(t, l, 0)
	if len(got) != 16 {
		t.Fatalf("read %d batches", len(got))
	}
	l = e.reopen(l)
	if got := readBatches(t, l, 0); len(got) != 16 {
		t.Fatalf("after reopen: %d batches", len(got))
	}
	// Below the log start offset: the log is emptied and restarts there.
	l.SetHighWatermark(16)
	if _, err := l.SetLogStartOffset(6); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 3 || l.LogEndOffset() != 3 || l.NumSegments() != 1 {
		t.Fatalf("start %d end %d segments %d", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
	}
	l.Close()
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	fillSegments(t, e, l, 2, 3)
	// Restarting at the base of an existing segment: its replacement must
	// survive the delayed removal of the old files.
	if err := l.TruncateFullyAndStartAt(0); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 || l.NumSegments() != 1 || len(l.Epochs()) != 0 {
		t.Fatalf("start %d end %d segments %d", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
	}
	mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	e.delay.run()
	segmentFilesConsistent(t, e.fs, l)
	l = e.reopen(l)
	if l.LogEndOffset() != 1 || len(readBatches(t, l, 0)) != 1 {
		t.Fatalf("after reopen end %d", l.LogEndOffset())
	}
	if err := l.TruncateFullyAndStartAt(500); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, valueBatch(t, 2, 10, e.clock.Ms()))
	l = e.reopen(l)
	if l.LogStartOffset() != 500 || l.LogEndOffset() != 502 {
		t.Fatalf("start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	l.Close()
}

func TestSetLogStartOffset(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	fillSegments(t, e, l, 3, 4)
	if _, err := l.SetLogStartOffset(5); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("above the high watermark: %v", err)
	}
	l.SetHighWatermark(9)
	got, err := l.SetLogStartOffset(6)
	if err != nil || got != 6 {
		t.Fatalf("SetLogStartOffset: %d %v", got, err)
	}
	// The segment at 0 is wholly below 6 and deleted; reads below 6 fail.
	if !equalInts(segmentBases(l), []int64{4, 8, 12}) {
		t.Fatalf("segments %v", segmentBases(l))
	}
	if _, err := l.Read(5, 1000, 12, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if b, err := l.ReadBytes(6, 1000, 12); err != nil || record.Batch(b).BaseOffset() != 6 {
		t.Fatalf("read at log start: %v", err)
	}
	// Lowering is a no-op.
	if got, err := l.SetLogStartOffset(2); err != nil || got != 6 {
		t.Fatalf("lowering: %d %v", got, err)
	}
	l = e.reopen(l)
	if l.LogStartOffset() != 6 {
		t.Fatalf("log start after reopen %d", l.LogStartOffset())
	}
}

func TestRetentionBySize(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	l := e.open(cfg)
	defer l.Close()
	fillSegments(t, e, l, 5, 4)
	segSize := l.segments()[0].size.Load()
	cfg.RetentionBytes = 2*segSize + 10
	l.SetConfig(cfg)
	// Nothing goes while the high watermark is below the segments.
	l.SetHighWatermark(3)
	if n, err := l.DeleteOldSegments(); n != 0 || err != nil {
		t.Fatalf("deleted %d above the high watermark: %v", n, err)
	}
	l.SetHighWatermark(8)
	if n, _ := l.DeleteOldSegments(); n != 2 || l.LogStartOffset() != 8 {
		t.Fatalf("deleted %d, log start %d", n, l.LogStartOffset())
	}
	l.SetHighWatermark(l.LogEndOffset())
	if n, _ := l.DeleteOldSegments(); n != 0 {
		t.Fatalf("deleted %d segments while under retention.bytes by less than one", n)
	}
	cfg.RetentionBytes = 2*segSize - 10
	l.SetConfig(cfg)
	if n, _ := l.DeleteOldSegments(); n != 1 || !equalInts(segmentBases(l), []int64{12, 16, 20}) {
		t.Fatalf("deleted %d, segments %v", n, segmentBases(l))
	}
	// Kafka's rule: a segment goes only if the log stays at or above
	// retention.bytes without it.
	if l.Size() < cfg.RetentionBytes || l.Size() > cfg.RetentionBytes+segSize {
		t.Fatalf("size %d for retention.bytes %d", l.Size(), cfg.RetentionBytes)
	}
}

func TestRetentionByTime(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.RetentionMs = 10_000
	l := e.open(cfg)
	defer l.Close()
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			mustAppend(t, l, valueBatch(t, 1, 100, e.clock.Ms()))
		}
		l.Roll()
		e.clock.Advance(5 * time.Second)
	}
	mustAppend(t, l, valueBatch(t, 1, 100, e.clock.Ms()))
	l.SetHighWatermark(l.LogEndOffset())
	// Now: segments aged 15s, 10s, 5s and an active one aged 0.
	if n, _ := l.DeleteOldSegments(); n != 1 || l.LogStartOffset() != 4 {
		t.Fatalf("deleted %d, start %d", n, l.LogStartOffset())
	}
	// Old files are renamed .deleted and removed after the delay.
	if !hasFile(e, "00000000000000000000.log.deleted") || hasFile(e, "00000000000000000000.log") {
		t.Fatalf("files %v", e.fs.Files())
	}
	e.delay.run()
	if hasFile(e, "00000000000000000000.log.deleted") || hasFile(e, "00000000000000000000.index.deleted") {
		t.Fatalf("deleted files not removed: %v", e.fs.Files())
	}
	// When everything has expired, the active segment is rolled and deleted.
	e.clock.Advance(20 * time.Second)
	if n, _ := l.DeleteOldSegments(); n != 3 || l.NumSegments() != 1 || l.LogStartOffset() != 13 || l.active().base != 13 {
		t.Fatalf("deleted %d, %d segments, start %d", n, l.NumSegments(), l.LogStartOffset())
	}
	mustAppend(t, l, valueBatch(t, 1, 100, e.clock.Ms()))
	if b := readBatches(t, l, 13); len(b) != 1 {
		t.Fatalf("read %d batches", len(b))
	}
}

// TestRetentionTimeThenSize: a segment deleted for its age no longer counts
// against retention.bytes, so size retention does not delete more.
func TestRetentionTimeThenSize(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	l := e.open(cfg)
	defer l.Close()
	fillSegments(t, e, l, 1, 8) // one big old segment
	e.clock.Advance(time.Hour)
	fillSegments(t, e, l, 3, 2)
	l.SetHighWatermark(l.LogEndOffset())
	sizes := l.Size()
	cfg.RetentionMs = 30 * 60 * 1000
	cfg.RetentionBytes = sizes - l.segments()[0].size.Load()/2
	l.SetConfig(cfg)
	if n, _ := l.DeleteOldSegments(); n != 1 {
		t.Fatalf("deleted %d segments, want only the expired one", n)
	}
}

func TestRetentionByLogStartOnly(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.Delete, cfg.Compact = false, true
	cfg.RetentionBytes, cfg.RetentionMs = 1, 1
	l := e.open(cfg)
	defer l.Close()
	fillSegments(t, e, l, 3, 4)
	l.SetHighWatermark(l.LogEndOffset())
	e.clock.Advance(time.Hour)
	if n, _ := l.DeleteOldSegments(); n != 0 {
		t.Fatalf("compact-only log deleted %d segments by time or size", n)
	}
	if _, err := l.SetLogStartOffset(9); err != nil {
		t.Fatal(err)
	}
	if !equalInts(segmentBases(l), []int64{8, 12}) {
		t.Fatalf("segments %v", segmentBases(l))
	}
}

func hasFile(e *testEnv, name string) bool {
	for _, f := range e.fs.Files() {
		if strings.HasSuffix(f, "/"+name) {
			return true
		}
	}
	return false
}

func TestCheckpointRoundTrip(t *testing.T) {
	e := newEnv(t)
	offs := map[TopicPartition]int64{{"a", 0}: 5, {"a", 1}: 0, {"b-c", 12}: 1 << 40}
	path := "/data/" + RecoveryPointFile
	if err := WriteOffsetCheckpoint(e.fs, path, offs); err != nil {
		t.Fatal(err)
	}
	data, _ := vfs.ReadFile(e.fs, path)
	if string(data) != "0\n3\na 0 5\na 1 0\nb-c 12 1099511627776\n" {
		t.Fatalf("checkpoint text %q", data)
	}
	got, err := ReadOffsetCheckpoint(e.fs, path)
	if err != nil || len(got) != 3 || got[TopicPartition{"b-c", 12}] != 1<<40 {
		t.Fatalf("read back %v %v", got, err)
	}
	// It was written atomically and durably.
	if got, _ := ReadOffsetCheckpoint(e.fs.CrashClone(), path); len(got) != 3 {
		t.Fatalf("not durable: %v", got)
	}
	if got, err := ReadOffsetCheckpoint(e.fs, "/data/missing"); err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v", got, err)
	}
	for _, bad := range []string{"1\n0\n", "0\n2\na 0 1\n", "0\n1\na x 1\n", "0\n1\na 0\n"} {
		vfs.WriteFileAtomic(e.fs, path, []byte(bad))
		if _, err := ReadOffsetCheckpoint(e.fs, path); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
	// The epoch checkpoint.
	ep := []EpochEntry{{0, 0}, {3, 1450}}
	if err := writeEpochCheckpoint(e.fs, "/data/ep", ep); err != nil {
		t.Fatal(err)
	}
	if got, err := readEpochCheckpoint(e.fs, "/data/ep"); err != nil || len(got) != 2 || got[1] != ep[1] {
		t.Fatalf("epochs %v %v", got, err)
	}
}
