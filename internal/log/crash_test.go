package log

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"testing"

	"weir/internal/record"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// crashWorkload appends random batches (some idempotent, some compressed,
// with rising leader epochs), flushing now and then. It returns the
// batches as stored and the epochs as they were before the crash.
func crashWorkload(t *testing.T, r *rand.Rand, e *testEnv, l *Log) []record.Batch {
	t.Helper()
	var out []record.Batch
	seqs := map[int64]int32{}
	epoch := int32(0)
	for i, n := 0, 5+r.Intn(60); i < n; i++ {
		var b record.Batch
		if pid := int64(r.Intn(3)); pid > 0 {
			b = idemBatch(t, pid, 0, seqs[pid], 1+r.Intn(4), e.clock.Ms())
			seqs[pid] += b.NumRecords()
		} else {
			recs := make([]rec, 1+r.Intn(5))
			for j := range recs {
				recs[j] = rec{key: []byte{byte(j)}, value: make([]byte, r.Intn(250)), ts: e.clock.Ms()}
				r.Read(recs[j].value)
			}
			b = buildBatch(t, batchSpec{recs: recs, codec: record.Codec(r.Intn(5))})
		}
		if r.Intn(15) == 0 {
			epoch++
		}
		if _, err := l.AppendAsLeader(b, epoch); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		if r.Intn(12) == 0 {
			if err := l.Flush(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// crashClone simulates a crash in one of three modes: only synced data,
// torn unsynced file tails, or torn tails plus a prefix of unsynced
// directory changes.
func crashClone(r *rand.Rand, fsys *vfstest.MemFS) *vfstest.MemFS {
	switch r.Intn(3) {
	case 0:
		return fsys.CrashClone()
	case 1:
		return fsys.CrashCloneRandom(r)
	}
	return fsys.CrashCloneWith(vfstest.CrashOptions{Rand: r, TornWrites: true, DirOps: true})
}

func openOn(t *testing.T, e *testEnv, fsys vfs.FS, cfg Config, rp int64) *Log {
	t.Helper()
	o := e.opts()
	o.FS, o.RecoveryPoint = fsys, rp
	l, err := Open(e.dir, e.tp, cfg, o)
	if err != nil {
		t.Fatalf("open after crash: %v (files %v)", err, fsFiles(fsys))
	}
	return l
}

func fsFiles(fsys vfs.FS) []string {
	if m, ok := fsys.(*vfstest.MemFS); ok {
		return m.Files()
	}
	return nil
}

// checkRecovered checks a log opened after a crash against what was
// appended: a prefix of whole batches, holding at least everything below
// the recovery point, readable at every offset, with producer state and
// epochs matching the surviving batches.
func checkRecovered(t *testing.T, e *testEnv, l *Log, fsys vfs.FS, appended []record.Batch, rp int64, epochs []EpochEntry) []record.Batch {
	t.Helper()
	got := readBatches(t, l, 0)
	if len(got) > len(appended) {
		t.Fatalf("%d batches after crash, %d appended", len(got), len(appended))
	}
	for i := range got {
		if !bytes.Equal(got[i], appended[i]) {
			t.Fatalf("batch %d differs after crash", i)
		}
	}
	end := int64(0)
	if len(got) > 0 {
		end = got[len(got)-1].NextOffset()
	}
	if l.LogEndOffset() != end || end < rp {
		t.Fatalf("log end %d, surviving batches end at %d, recovery point %d", l.LogEndOffset(), end, rp)
	}
	if l.RecoveryPoint() > end {
		t.Fatalf("recovery point %d past the log end %d", l.RecoveryPoint(), end)
	}
	checkEveryOffset(t, l, got)
	segmentFilesConsistent(t, fsys, l)
	for i, ep := range l.Epochs() {
		if i >= len(epochs) || ep != epochs[i] || ep.StartOffset >= end {
			t.Fatalf("epochs after crash %v, before %v, end %d", l.Epochs(), epochs, end)
		}
	}
	// Producer state: the last surviving batch of each producer is a
	// duplicate, and its next sequence is accepted.
	last := map[int64]record.Batch{}
	for _, b := range got {
		if b.ProducerID() >= 0 {
			last[b.ProducerID()] = b
		}
	}
	pids := []int64{1, 2}
	for _, pid := range pids {
		b, ok := last[pid]
		if !ok {
			produce(t, e, l, pid, 0, 1000, 1, 1) // unknown: any sequence
			continue
		}
		retry(t, e, l, pid, 0, sentBatch{b.BaseSequence(), int(b.NumRecords()),
			AppendInfo{BaseOffset: b.BaseOffset(), LastOffset: b.LastOffset()}})
		expectErr(t, l, idemBatch(t, pid, 0, b.LastSequence()+2, 1, e.clock.Ms()), ErrOutOfOrderSequence)
		produce(t, e, l, pid, 0, b.LastSequence()+1, 1, 1)
	}
	return got
}

func TestCrashRecovery(t *testing.T) {
	for seed := int64(0); seed < crashSeeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			cfg := smallConfig()
			cfg.SegmentBytes = int64(400 + r.Intn(2500))
			cfg.IndexIntervalBytes = int64(30 + r.Intn(400))
			l := e.open(cfg)
			appended := crashWorkload(t, r, e, l)
			rp, epochs := l.RecoveryPoint(), l.Epochs()
			crashed := crashClone(r, e.fs)
			l.Close()
			l2 := openOn(t, e, crashed, cfg, rp)
			got := checkRecovered(t, e, l2, crashed, appended, rp, epochs)
			// A second, clean, reopen changes nothing.
			end := l2.LogEndOffset()
			if err := l2.Close(); err != nil {
				t.Fatal(err)
			}
			l3 := openOn(t, e, crashed, cfg, end)
			defer l3.Close()
			if again := readBatches(t, l3, 0); len(again) != len(got)+2 {
				t.Fatalf("after clean reopen: %d batches, want %d", len(again), len(got)+2)
			}
		})
	}
}

// segmentBatchAt finds the segment file and position of the batch at base.
func segmentBatchAt(t *testing.T, fsys vfs.FS, dir string, base int64) (string, int64, int) {
	t.Helper()
	ents, _ := fsys.ReadDir(dir)
	var logs []string
	for _, de := range ents {
		if strings.HasSuffix(de.Name(), ".log") {
			logs = append(logs, dir+"/"+de.Name())
		}
	}
	sort.Strings(logs)
	for _, p := range logs {
		data, _ := vfs.ReadFile(fsys, p)
		for pos := 0; pos < len(data); {
			b, _, err := record.Next(data[pos:])
			if err != nil {
				break
			}
			if b.BaseOffset() == base {
				return p, int64(pos), len(b)
			}
			pos += len(b)
		}
	}
	t.Fatalf("batch %d not found", base)
	return "", 0, 0
}

func TestCrashCorruptTail(t *testing.T) {
	tested := 0
	for seed := int64(0); seed < crashSeeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			cfg := smallConfig()
			cfg.SegmentBytes = int64(400 + r.Intn(2500))
			l := e.open(cfg)
			appended := crashWorkload(t, r, e, l)
			rp := l.RecoveryPoint()
			crashed := e.fs.CrashCloneRandom(r)
			l.Close()
			// What recovery keeps without corruption, on an exact copy.
			probe := openOn(t, e, crashed.CrashClone(), cfg, rp)
			survivors := readBatches(t, probe, 0)
			probe.Close()
			var tail []int
			for i, b := range survivors {
				if b.BaseOffset() >= rp {
					tail = append(tail, i)
				}
			}
			if len(tail) == 0 {
				return
			}
			tested++
			victim := tail[r.Intn(len(tail))]
			path, pos, size := segmentBatchAt(t, crashed, e.dir, survivors[victim].BaseOffset())
			f, err := crashed.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			at := pos + 17 + r.Int63n(int64(size-17)) // CRC or what it covers
			var one [1]byte
			f.ReadAt(one[:], at)
			one[0] ^= byte(1 + r.Intn(255))
			f.WriteAt(one[:], at)
			f.Close()
			l2 := openOn(t, e, crashed, cfg, rp)
			defer l2.Close()
			if l2.LogEndOffset() != survivors[victim].BaseOffset() {
				t.Fatalf("log end %d, corrupt batch at %d", l2.LogEndOffset(), survivors[victim].BaseOffset())
			}
			checkRecovered(t, e, l2, crashed, appended[:victim], rp, l2.Epochs())
		})
	}
	if tested < 30 {
		t.Fatalf("only %d seeds had an unflushed tail to corrupt", tested)
	}
}

var crashSeeds = int64(150)

// TestCrashAfterTruncation: segments removed by a truncation must not come
// back after a crash once data appended after the truncation was flushed.
func TestCrashAfterTruncation(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	l := e.open(cfg)
	fillSegments(t, e, l, 3, 4) // segments 0, 4, 8, 12
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		mustAppend(t, l, valueBatch(t, 1, 30, e.clock.Ms()))
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	want := readBatches(t, l, 0)
	crashed := e.fs.CrashClone()
	l.Close()
	l2 := openOn(t, e, crashed, cfg, 11)
	defer l2.Close()
	got := readBatches(t, l2, 0)
	if l2.LogEndOffset() != 11 || len(got) != len(want) || !equalInts(segmentBases(l2), []int64{0, 4}) {
		t.Fatalf("end %d, %d batches, segments %v", l2.LogEndOffset(), len(got), segmentBases(l2))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}
