package log

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"weir/internal/record"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// segmentFileNames lists dir's segment files (.log, .index, .timeindex,
// .txnindex, in any state), sorted.
func segmentFileNames(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range ents {
		if f, ok := ParseFilename(de.Name()); ok && f.Type != FileProducerSnapshot {
			out = append(out, de.Name())
		}
	}
	sort.Strings(out)
	return out
}

func kafkaSegmentFiles(base int64) []string {
	return []string{
		filepath.Base(segmentPath("", base, FileIndex)),
		filepath.Base(segmentPath("", base, FileLog)),
		filepath.Base(segmentPath("", base, FileTimeIndex)),
	}
}

// queuedManager is a manager whose background work (the directories of
// new logs, the flushes of rolled segments) waits in the returned queue
// until the test runs it.
func queuedManager(e *testEnv, dirs ...string) (*Manager, *delayQueue) {
	for _, d := range dirs {
		if err := e.fs.MkdirAll(d, 0o755); err != nil {
			e.t.Fatal(err)
		}
	}
	e.fs.SyncDir("/")
	q := &delayQueue{}
	o := e.opts()
	o.Background = func(fn func()) { q.add(0, fn) }
	return NewManager(ManagerConfig{Dirs: dirs}, o), q
}

func exists(t *testing.T, fsys vfs.FS, path string) bool {
	t.Helper()
	_, err := fsys.Stat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// A new log has no directory until the background maker or its first
// write makes one, and no segment file until its first write: it reads as
// empty, flushes, rolls, truncates and closes without creating any, and
// its first append creates the three files Kafka has.
func TestNewLogCreatesSegmentFilesOnFirstWrite(t *testing.T) {
	e := newEnv(t)
	cfgFor := func(TopicPartition) Config { return smallConfig() }
	m, bg := queuedManager(e, "/d1")
	if err := m.Load(cfgFor); err != nil {
		t.Fatal(err)
	}
	tp, id := TopicPartition{"lazy", 0}, [16]byte{1}
	l, err := m.GetOrCreate(tp, id, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	dir := l.Dir()
	if exists(t, e.fs, dir) || l.dirMade() || m.OpenFiles() != 0 {
		t.Fatalf("creating a log made its directory (%v) or opened files (%d)", l.dirMade(), m.OpenFiles())
	}
	if got, err := l.ReadTopicID(); err != nil || got != id {
		t.Fatalf("topic id of a log without its directory: %x %v", got, err)
	}
	if sl, err := l.Read(0, 1<<20, math.MaxInt64, true); err != nil || sl.Size != 0 {
		t.Fatalf("read of a new log: %+v %v", sl, err)
	}
	if n, err := l.DeleteOldSegments(); err != nil || n != 0 {
		t.Fatalf("retention of a new log: %d %v", n, err)
	}
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if exists(t, e.fs, dir) {
		t.Fatal("a log never written made its directory")
	}
	// The background maker makes the directory (durably) and
	// partition.metadata (not fsynced: the partition manager repairs it
	// from the metadata image when a crash loses it), and no segment file.
	if bg.run() == 0 {
		t.Fatal("no background work queued for the new log's directory")
	}
	if !l.dirMade() || len(segmentFileNames(t, e.fs, dir)) != 0 {
		t.Fatalf("after the background maker: made %v, segment files %v", l.dirMade(), segmentFileNames(t, e.fs, dir))
	}
	crashed := e.fs.CrashClone()
	if _, err := crashed.Stat(dir); err != nil {
		t.Fatalf("the made directory is not durable: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := segmentFileNames(t, e.fs, dir); len(got) != 0 {
		t.Fatalf("a closed log never written has segment files %v", got)
	}

	m, _ = queuedManager(e, "/d1")
	if err := m.Load(cfgFor); err != nil {
		t.Fatal(err)
	}
	l = m.Get(tp)
	if l == nil || l.LogEndOffset() != 0 || l.LogStartOffset() != 0 || m.OpenFiles() != 0 {
		t.Fatalf("reopened: %v, %d files open", l, m.OpenFiles())
	}
	if got, err := l.ReadTopicID(); err != nil || got != id {
		t.Fatalf("topic id after reopening: %x %v", got, err)
	}
	if got := segmentFileNames(t, e.fs, dir); len(got) != 0 {
		t.Fatalf("opening a log never written created %v", got)
	}
	b := valueBatch(t, 3, 50, e.clock.Ms())
	mustAppend(t, l, b)
	if got, want := segmentFileNames(t, e.fs, dir), kafkaSegmentFiles(0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the first append: %v, want %v", got, want)
	}
	segmentFilesConsistent(t, e.fs, l)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = newTestManager(e, "/d1")
	if err := m.Load(cfgFor); err != nil {
		t.Fatal(err)
	}
	checkEveryOffset(t, m.Get(tp), []record.Batch{b})
	m.Close()
}

// A new log's first write makes its directory when the background maker
// has not yet; its first flush makes the directory durable in its log dir;
// a log closed before either is not on disk at all, and the next start
// knows nothing of it (the partition manager creates it again from the
// metadata image).
func TestFirstWriteMakesTheDirectory(t *testing.T) {
	e := newEnv(t)
	cfgFor := func(TopicPartition) Config { return smallConfig() }
	m, _ := queuedManager(e, "/d1")
	if err := m.Load(cfgFor); err != nil {
		t.Fatal(err)
	}
	written, never := TopicPartition{"written", 0}, TopicPartition{"never", 0}
	l, err := m.GetOrCreate(written, [16]byte{7}, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetOrCreate(never, [16]byte{8}, smallConfig()); err != nil {
		t.Fatal(err)
	}
	b := valueBatch(t, 2, 20, e.clock.Ms())
	mustAppend(t, l, b)
	if !l.dirMade() {
		t.Fatal("the first write did not make the directory")
	}
	if got, want := segmentFileNames(t, e.fs, l.Dir()), kafkaSegmentFiles(0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the first append: %v, want %v", got, want)
	}
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	// Durable: the directory in /d1, its files in it, the data in them.
	crashed := e.fs.CrashClone()
	m2 := NewManager(ManagerConfig{Dirs: []string{"/d1"}}, Options{FS: crashed, Now: e.clock.Now, Logger: quietLogger, AfterDelay: e.delay.add})
	if err := m2.Load(cfgFor); err != nil {
		t.Fatal(err)
	}
	checkEveryOffset(t, m2.Get(written), []record.Batch{b})
	if m2.Get(never) != nil {
		t.Fatal("a log never made is on disk after a crash")
	}
	m2.Abandon()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(t, e.fs, filepath.Join("/d1", never.String())) {
		t.Fatal("closing made the directory of a log never written")
	}
}

// A directory without segment files opens at the checkpointed log start
// offset, and its first append creates the segment there.
func TestOpenWithoutSegmentFilesAtLogStart(t *testing.T) {
	e := newEnv(t)
	o := e.opts()
	o.LogStartOffset, o.RecoveryPoint, o.HighWatermark = 42, 42, 42
	l := e.openWith(smallConfig(), o)
	if l.LogStartOffset() != 42 || l.LogEndOffset() != 42 || l.HighWatermark() != 42 {
		t.Fatalf("start %d end %d hw %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	}
	if got := segmentFileNames(t, e.fs, e.dir); len(got) != 0 {
		t.Fatalf("opening created %v", got)
	}
	if info := mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms())); info.BaseOffset != 42 {
		t.Fatalf("appended at %d", info.BaseOffset)
	}
	if got, want := segmentFileNames(t, e.fs, e.dir), kafkaSegmentFiles(42); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the first append: %v, want %v", got, want)
	}
	l.Close()
}

// Deleting or abandoning a log never written works without its files,
// and without its directory when it is not made yet.
func TestDeleteAndAbandonBeforeAnyWrite(t *testing.T) {
	e := newEnv(t)
	m, bg := queuedManager(e, "/d1")
	if err := m.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatal(err)
	}
	gone, kept, unmade, late := TopicPartition{"gone", 0}, TopicPartition{"kept", 0}, TopicPartition{"unmade", 0}, TopicPartition{"late", 0}
	create := func(tp TopicPartition) {
		if _, err := m.GetOrCreate(tp, [16]byte{2}, smallConfig()); err != nil {
			t.Fatal(err)
		}
	}
	create(gone)
	create(kept)
	bg.run()
	create(unmade)
	create(late)
	for _, tp := range []TopicPartition{gone, unmade} {
		if err := m.Delete(tp); err != nil {
			t.Fatal(err)
		}
		if exists(t, e.fs, filepath.Join("/d1", tp.String())) {
			t.Fatalf("the deleted log's directory %s is still there", tp)
		}
	}
	if e.delay.run() != 1 {
		t.Fatal("not one delayed removal (of the one directory made)")
	}
	if err := m.Abandon(); err != nil {
		t.Fatal(err)
	}
	bg.run() // the maker queued for unmade and late finds nothing to make
	ents, _ := e.fs.ReadDir("/d1")
	for _, de := range ents {
		if de.Name() != kept.String() && de.IsDir() {
			t.Fatalf("left behind: %s", de.Name())
		}
	}
	if got := segmentFileNames(t, e.fs, filepath.Join("/d1", kept.String())); len(got) != 0 {
		t.Fatalf("abandoning created %v", got)
	}
}

// Truncations leave a new segment pending until it is written, whether
// the log had files or not.
func TestTruncateFullyLeavesSegmentPending(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if got := segmentFileNames(t, e.fs, e.dir); len(got) != 0 {
		t.Fatalf("truncating a log never written created %v", got)
	}
	mustAppend(t, l, valueBatch(t, 2, 10, e.clock.Ms()))
	if err := l.TruncateFullyAndStartAt(200); err != nil {
		t.Fatal(err)
	}
	e.delay.run()
	if got := segmentFileNames(t, e.fs, e.dir); len(got) != 0 {
		t.Fatalf("after truncating fully and the delayed removal: %v", got)
	}
	b := valueBatch(t, 2, 10, e.clock.Ms())
	if info := mustAppend(t, l, b); info.BaseOffset != 200 {
		t.Fatalf("appended at %d", info.BaseOffset)
	}
	if got, want := segmentFileNames(t, e.fs, e.dir), kafkaSegmentFiles(200); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the first append: %v, want %v", got, want)
	}
	l = e.reopen(l)
	checkEveryOffset(t, l, []record.Batch{b})
	l.Close()
}

// A roll out of an empty segment never written (the next batch's offsets
// are beyond its index's reach) keeps the empty segment with its files,
// as Kafka does.
func TestRollFromPendingSegment(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	b := valueBatch(t, 1, 10, e.clock.Ms())
	base := int64(math.MaxInt32) + 10
	b.SetBaseOffset(base)
	b.SetLeaderEpoch(0)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(l); fmt.Sprint(got) != fmt.Sprint([]int64{0, base}) {
		t.Fatalf("segments %v", got)
	}
	want := append(kafkaSegmentFiles(0), kafkaSegmentFiles(base)...)
	sort.Strings(want)
	if got := segmentFileNames(t, e.fs, e.dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	segmentFilesConsistent(t, e.fs, l)
	l = e.reopen(l)
	if got := segmentBases(l); fmt.Sprint(got) != fmt.Sprint([]int64{0, base}) || l.LogEndOffset() != base+1 {
		t.Fatalf("reopened: segments %v, end %d", got, l.LogEndOffset())
	}
	l.Close()
}

// A pending file reads as empty and has nothing to send.
func TestPendingSegmentFile(t *testing.T) {
	e := newEnv(t)
	c := NewFileCache(e.fs, 0)
	path := filepath.Join(e.dir, "00000000000000000000.log")
	h := c.pendingFile(path, os.O_EXCL)
	if n, err := h.ReadAt(make([]byte, 4), 0); n != 0 || err != io.EOF {
		t.Fatalf("read: %d %v", n, err)
	}
	if st, err := h.Stat(); err != nil || st.Size() != 0 {
		t.Fatalf("stat: %v %v", st, err)
	}
	if _, _, err := h.Pin(); !errors.Is(err, io.EOF) {
		t.Fatalf("pin: %v", err)
	}
	if err := errors.Join(h.Sync(), h.Truncate(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Stat(path); !os.IsNotExist(err) || c.Open() != 0 {
		t.Fatalf("a pending file exists: %v, %d open", err, c.Open())
	}
	// Someone else's data at its name is kept, and the write refused.
	if err := vfs.WriteFileAtomic(e.fs, path, []byte("data")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt([]byte("x"), 0); !errors.Is(err, errNotEmpty) {
		t.Fatalf("write over another file: %v", err)
	}
	if data, _ := vfs.ReadFile(e.fs, path); string(data) != "data" {
		t.Fatalf("the other file holds %q", data)
	}
	e.fs.Remove(path)
	if _, err := h.WriteAt([]byte("x"), 0); err != nil || h.Pending() {
		t.Fatalf("first write: %v, pending %v", err, h.Pending())
	}
	if data, _ := vfs.ReadFile(e.fs, path); string(data) != "x" {
		t.Fatalf("file holds %q", data)
	}
	h.Close()
}

// A crash at any point of a new log's first append and flush leaves a
// log that opens: empty, or holding the batch; once the flush returned,
// holding it.
func TestFirstAppendCrash(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			m, cfgFor, _ := loadedManager(t, e)
			tp := TopicPartition{"first", 0}
			m.CreateAll([]NewLog{{TopicPartition: tp, Config: smallConfig()}})
			l := m.Get(tp)
			var clones []*vfstest.MemFS
			done := e.afterEachStep(func() {
				clones = append(clones, e.fs.CrashCloneWith(vfstest.CrashOptions{Rand: r, TornWrites: true, DirOps: true}))
			})
			b := valueBatch(t, 1+r.Intn(3), 30, e.clock.Ms())
			if _, err := l.AppendAsLeader(b, 1); err != nil {
				t.Fatal(err)
			}
			if err := l.Flush(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			done()
			if len(clones) < 4 {
				t.Fatalf("only %d crash points", len(clones))
			}
			for i, c := range clones {
				m2 := NewManager(ManagerConfig{Dirs: []string{"/d1"}}, Options{FS: c, Now: e.clock.Now, Logger: quietLogger})
				if err := m2.Load(cfgFor); err != nil {
					t.Fatalf("crash point %d: load: %v", i, err)
				}
				if f := m2.AllFailed(); len(f) > 0 {
					t.Fatalf("crash point %d: offline %v: %v", i, f, m2.Failed(f[0]))
				}
				l2 := m2.Get(tp)
				if l2 == nil {
					// The directory itself was not durable yet.
					continue
				}
				switch end := l2.LogEndOffset(); {
				case i == len(clones)-1 && end != b.NextOffset():
					t.Fatalf("after the flush the log ends at %d, files %v", end, c.Files())
				case end == 0:
				case end == b.NextOffset():
					checkEveryOffset(t, l2, []record.Batch{b})
				default:
					t.Fatalf("crash point %d: log end %d", i, end)
				}
				mustAppend(t, l2, valueBatch(t, 1, 10, e.clock.Ms()))
				if err := m2.Close(); err != nil {
					t.Fatal(err)
				}
			}
			m.Close()
		})
	}
}

// Opening a log after a clean close reads only what it must: the index
// files of the segment recovery scans are neither opened nor truncated
// (they are empty, as rebuilt), and no transaction index is asked for. An
// index a crash lost is created again by the next write, not by opening.
func TestOpenTouchesNoIndexToRebuild(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	b := valueBatch(t, 1, 20, e.clock.Ms())
	mustAppend(t, l, b)
	o := e.opts()
	o.RecoveryPoint, o.LogStartOffset, o.HighWatermark = l.LogEndOffset(), 0, l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var touched []string
	e.inject.Set(vfstest.InjectorFunc(func(op vfstest.Op) error {
		switch filepath.Ext(op.Path) {
		case ".index", ".timeindex", ".txnindex":
			touched = append(touched, op.Kind.String()+" "+filepath.Base(op.Path))
		}
		return nil
	}))
	l = e.openWith(smallConfig(), o)
	e.inject.Set(nil)
	if len(touched) > 0 {
		t.Fatalf("opening touched %v", touched)
	}
	checkEveryOffset(t, l, []record.Batch{b})
	l.Close()

	for _, ty := range []FileType{FileIndex, FileTimeIndex} {
		if err := e.fs.Remove(segmentPath(e.dir, 0, ty)); err != nil {
			t.Fatal(err)
		}
	}
	l = e.openWith(smallConfig(), o)
	if got, want := segmentFileNames(t, e.fs, e.dir), []string{filepath.Base(segmentPath(e.dir, 0, FileLog))}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("opening created %v", got)
	}
	b2 := valueBatch(t, 1, 20, e.clock.Ms())
	mustAppend(t, l, b2)
	if got, want := segmentFileNames(t, e.fs, e.dir), kafkaSegmentFiles(0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after an append: %v, want %v", got, want)
	}
	segmentFilesConsistent(t, e.fs, l)
	l = e.reopen(l)
	checkEveryOffset(t, l, []record.Batch{b, b2})
	l.Close()
}
