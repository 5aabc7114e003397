package log

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"weir/internal/record"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// checkNoPartial checks that every file of the log holds exactly what the
// log accounts for: segment bytes, whole index entries.
func checkNoPartial(t *testing.T, e *testEnv, l *Log) {
	t.Helper()
	segmentFilesConsistent(t, e.fs, l)
	// No segment files beyond the log's own (a failed roll's would be
	// taken for the last segment by the next open).
	ents, _ := e.fs.ReadDir(l.dir)
	var logs []string
	for _, de := range ents {
		if strings.HasSuffix(de.Name(), ".log") {
			logs = append(logs, de.Name())
		}
	}
	created := 0
	for _, s := range l.segments() {
		if !s.pending() {
			created++
		}
	}
	if len(logs) != created {
		t.Fatalf("segment files %v, segments %v (%d created)", logs, segmentBases(l), created)
	}
	for _, s := range l.segments() {
		if s.pending() {
			continue // segmentFilesConsistent checked it has no file
		}
		// The index files hold the entries written so far, whole. The
		// indexes' locks keep a background flush (of a rolled segment)
		// from writing meanwhile.
		s.index.mu.Lock()
		s.timeIndex.mu.Lock()
		for ext, want := range map[FileType]int{FileIndex: s.index.written * offsetEntrySize, FileTimeIndex: s.timeIndex.written * timeEntrySize} {
			data, err := vfs.ReadFile(e.fs, segmentPath(l.dir, s.base, ext))
			if err != nil || len(data) != want {
				t.Fatalf("segment %d type %d: %d bytes, %d accounted (%v)", s.base, ext, len(data), want, err)
			}
		}
		if s.index.written > len(s.index.ents) || s.timeIndex.written > len(s.timeIndex.ents) {
			t.Fatalf("segment %d: more index entries written than kept", s.base)
		}
		s.timeIndex.mu.Unlock()
		s.index.mu.Unlock()
	}
}

func TestDiskFullRandom(t *testing.T) {
	for seed := int64(0); seed < 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			e.fs.SetPartialWrites(r.Intn(4) != 0)
			cfg := smallConfig()
			cfg.SegmentBytes = int64(500 + r.Intn(1500))
			cfg.IndexIntervalBytes = int64(r.Intn(300))
			l := e.open(cfg)
			var ok []record.Batch
			seqs := map[int64]int32{}
			epoch := int32(0)
			failures := 0
			for i := 0; i < 120; i++ {
				if r.Intn(8) == 0 {
					e.fs.SetWriteBudget(int64(r.Intn(400)))
				}
				var b record.Batch
				pid := int64(r.Intn(3))
				if pid > 0 {
					b = idemBatch(t, pid, 0, seqs[pid], 1+r.Intn(3), e.clock.Ms())
				} else {
					b = valueBatch(t, 1+r.Intn(3), r.Intn(200), e.clock.Ms())
				}
				ep := epoch
				if r.Intn(10) == 0 {
					ep++
				}
				end := l.LogEndOffset()
				_, err := l.AppendAsLeader(b, ep)

				if err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("append failed with %v", err)
					}
					failures++
					if l.LogEndOffset() != end {
						t.Fatal("a failed append moved the log end")
					}
					checkNoPartial(t, e, l)
					if r.Intn(3) == 0 {
						e.fs.SetWriteBudget(-1)
					}
					continue
				}
				epoch = ep
				if pid > 0 {
					seqs[pid] += b.NumRecords()
				}
				ok = append(ok, b)
			}
			if failures == 0 {
				t.Fatal("the disk never filled up")
			}
			got := readBatches(t, l, 0)
			if len(got) != len(ok) {
				t.Fatalf("%d batches readable, %d appended", len(got), len(ok))
			}
			checkEveryOffset(t, l, got)
			e.fs.SetWriteBudget(-1)
			l = e.reopen(l)
			defer l.Close()
			got = readBatches(t, l, 0)
			if len(got) != len(ok) {
				t.Fatalf("after reopen: %d batches, %d appended", len(got), len(ok))
			}
			for i := range ok {
				if !bytes.Equal(got[i], ok[i]) {
					t.Fatalf("after reopen, batch %d differs", i)
				}
			}
			// Producer state matches what was appended.
			for pid, seq := range seqs {
				if seq > 0 {
					produce(t, e, l, pid, 0, seq, 1, 1)
				}
			}
		})
	}
}

// TestDiskFullOnIndexWrite fills the disk just after two batches' bytes,
// so their index entries, written when the log is flushed, cannot be: the
// flush fails, leaves no torn entry, and writes them all once there is
// room.
func TestDiskFullOnIndexWrite(t *testing.T) {
	e := newEnv(t)
	e.fs.SetPartialWrites(true)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 0 // an index entry for every batch after the first
	l := e.open(cfg)
	mustAppend(t, l, valueBatch(t, 1, 50, e.clock.Ms()))
	b2, b3 := valueBatch(t, 2, 50, e.clock.Ms()), valueBatch(t, 1, 10, e.clock.Ms())
	e.fs.SetWriteBudget(int64(len(b2) + len(b3) + 3))
	mustAppend(t, l, b2)
	mustAppend(t, l, b3)
	if err := l.Flush(l.LogEndOffset()); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("flush: %v", err)
	}
	checkNoPartial(t, e, l)
	e.fs.SetWriteBudget(-1)
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	s := l.segments()[0]
	if s.index.written != 2 || s.index.entries() != 2 {
		t.Fatalf("index entries: %d written, %d kept", s.index.written, s.index.entries())
	}
	checkNoPartial(t, e, l)
	want := readBatches(t, l, 0)
	checkEveryOffset(t, l, want)
	l = e.reopen(l)
	defer l.Close()
	if got := l.segments()[0].index.entries(); got != 2 {
		t.Fatalf("after reopen: %d index entries, want 2", got)
	}
	checkEveryOffset(t, l, want)
}

func TestDiskFullOnRollAndEpoch(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 300
	l := e.open(cfg)
	defer l.Close()
	mustAppend(t, l, valueBatch(t, 1, 200, e.clock.Ms()))
	// The next batch rolls; the roll's producer snapshot cannot be written.
	e.fs.SetWriteBudget(0)
	if _, err := l.AppendAsLeader(valueBatch(t, 1, 200, e.clock.Ms()), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append: %v", err)
	}
	if l.NumSegments() != 1 || l.LogEndOffset() != 1 {
		t.Fatalf("segments %d end %d", l.NumSegments(), l.LogEndOffset())
	}
	// A new leader epoch cannot be checkpointed: nothing is written.
	if _, err := l.AppendAsLeader(valueBatch(t, 1, 10, e.clock.Ms()), 4); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append with a new epoch: %v", err)
	}
	if len(l.Epochs()) != 1 || l.LogEndOffset() != 1 {
		t.Fatalf("epochs %v end %d", l.Epochs(), l.LogEndOffset())
	}
	e.fs.SetWriteBudget(-1)
	if _, err := l.AppendAsLeader(valueBatch(t, 1, 10, e.clock.Ms()), 4); err != nil {
		t.Fatal(err)
	}
	// The roll that failed happens now.
	if got := l.Epochs(); len(got) != 2 || got[1] != (EpochEntry{4, 1}) || l.NumSegments() != 2 {
		t.Fatalf("epochs %v segments %d", got, l.NumSegments())
	}
	checkNoPartial(t, e, l)
}

// TestFaultyOSLog runs a log on the real filesystem with the fault
// injection wrapper: ENOSPC and a failing fsync surface as errors, and the
// log keeps working afterwards.
func TestFaultyOSLog(t *testing.T) {
	ffs := vfstest.Faulty(vfs.OS)
	dir := t.TempDir()
	o := Options{FS: ffs, Logger: quietLogger, AfterDelay: (&delayQueue{}).add}
	cfg := smallConfig()
	cfg.FlushMessages = 1
	l, err := Open(dir, TopicPartition{"t", 0}, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, valueBatch(t, 1, 100, 1))
	ffs.SetPartialWrites(true)
	ffs.SetWriteBudget(10)
	if _, err := l.AppendAsLeader(valueBatch(t, 1, 100, 1), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append: %v", err)
	}
	ffs.SetWriteBudget(-1)
	ffs.FailSyncs(1, nil)
	if _, err := l.AppendAsLeader(valueBatch(t, 1, 100, 1), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing fsync: %v", err)
	}
	mustAppend(t, l, valueBatch(t, 1, 100, 1))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, TopicPartition{"t", 0}, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := readBatches(t, l, 0); len(got) != 3 {
		t.Fatalf("%d batches after reopen", len(got))
	}
}
