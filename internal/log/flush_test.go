package log

import (
	"testing"
	"time"

	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// flush.messages=1 fsyncs before an append returns, so a machine crash
// right after the acknowledgement keeps the batch; with the default the
// page cache is trusted and the crash loses it.
func TestFlushMessagesSyncsBeforeAck(t *testing.T) {
	for _, tc := range []struct {
		name          string
		flushMessages int64
		survives      bool
	}{
		{"flush.messages=1", 1, true},
		{"default", DefaultConfig().FlushMessages, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfstest.NewMem()
			cfg := smallConfig()
			cfg.FlushMessages = tc.flushMessages
			o := Options{FS: fs, Logger: quietLogger, AfterDelay: (&delayQueue{}).add}
			l, err := Open("/p", TopicPartition{"t", 0}, cfg, o)
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, valueBatch(t, 3, 100, 1))
			crashed := fs.CrashClone()
			l2, err := Open("/p", TopicPartition{"t", 0}, cfg, Options{FS: crashed, Logger: quietLogger, AfterDelay: (&delayQueue{}).add})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := l2.LogEndOffset(), map[bool]int64{true: 3, false: 0}[tc.survives]; got != want {
				t.Fatalf("log end after a crash = %d, want %d", got, want)
			}
		})
	}
}

// Index entries are kept in memory by appends and written to their files
// by a flush (and so by a clean close), in one write per file: a
// partition being written touches only its .log.
func TestIndexEntriesWrittenByFlush(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 0 // an entry for every batch after the first
	l := e.open(cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, valueBatch(t, 1, 50, e.clock.Ms()))
	}
	size := func(ft FileType) int {
		data, err := vfs.ReadFile(e.fs, segmentPath(l.dir, 0, ft))
		if err != nil {
			t.Fatal(err)
		}
		return len(data)
	}
	if n, m := size(FileIndex), size(FileTimeIndex); n != 0 || m != 0 {
		t.Fatalf("appends wrote %d bytes of offset index, %d of time index", n, m)
	}
	s := l.segments()[0]
	entries, timeEntries := s.index.entries(), len(s.timeIndex.ents)
	if entries != 9 || timeEntries == 0 {
		t.Fatalf("%d offset index entries, %d time index entries in memory", entries, timeEntries)
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if n, m := size(FileIndex), size(FileTimeIndex); n != entries*offsetEntrySize || m != timeEntries*timeEntrySize {
		t.Fatalf("after the flush: %d bytes of offset index, %d of time index", n, m)
	}
	mustAppend(t, l, valueBatch(t, 1, 50, e.clock.Ms()))
	want := readBatches(t, l, 0)
	l = e.reopen(l)
	defer l.Close()
	if got := l.segments()[0].index.entries(); got != entries+1 {
		t.Fatalf("after a clean close: %d offset index entries, want %d", got, entries+1)
	}
	checkEveryOffset(t, l, want)
}

// A roll writes the closed segment's last index entries even when a flush
// already covered its data (the recovery point at its end), which no later
// flush syncs again.
func TestRollWritesFinalIndexEntries(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 600
	cfg.IndexIntervalBytes = 1 << 20 // the roll's final entry is the only one
	l := e.open(cfg)
	for l.active().size.Load()+200 <= cfg.SegmentBytes {
		mustAppend(t, l, valueBatch(t, 1, 100, e.clock.Ms()))
		e.clock.Advance(time.Second)
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	old := l.active()
	mustAppend(t, l, valueBatch(t, 1, 100, e.clock.Ms())) // rolls
	if l.NumSegments() != 2 {
		t.Fatalf("%d segments, want 2", l.NumSegments())
	}
	last, ok := old.timeIndex.lastEntry()
	if !ok || last.ts != old.maxTimestamp {
		t.Fatalf("closed segment's last time index entry %v, max timestamp %d", last, old.maxTimestamp)
	}
	data, err := vfs.ReadFile(e.fs, segmentPath(l.dir, old.base, FileTimeIndex))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != len(old.timeIndex.ents)*timeEntrySize {
		t.Fatalf("time index file has %d bytes, %d entries kept", len(data), len(old.timeIndex.ents))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
