package log

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/internal/record"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

func newTestManager(e *testEnv, dirs ...string) *Manager {
	return NewManager(ManagerConfig{Dirs: dirs, SkipDirs: []string{"__cluster_metadata-0"}}, e.opts())
}

func TestManagerLifecycle(t *testing.T) {
	e := newEnv(t)
	m := newTestManager(e, "/d1", "/d2")
	if err := m.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatal(err)
	}
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	tps := []TopicPartition{{"orders", 0}, {"orders", 1}, {"my-topic", 2}}
	for _, tp := range tps {
		l, err := m.GetOrCreate(tp, id, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			mustAppend(t, l, valueBatch(t, 2, 300, e.clock.Ms()))
		}
		l.SetHighWatermark(6)
		if again, _ := m.GetOrCreate(tp, id, smallConfig()); again != l {
			t.Fatal("GetOrCreate made a second log")
		}
	}
	// Logs are spread over the directories.
	if m.DirOf(tps[0]) == m.DirOf(tps[1]) {
		t.Fatalf("both logs in %s", m.DirOf(tps[0]))
	}
	l0 := m.Get(tps[0])
	if got, err := l0.ReadTopicID(); err != nil || got != id {
		t.Fatalf("topic id %v %v", got, err)
	}
	l0.SetHighWatermark(10)
	l0.SetLogStartOffset(3)
	if err := m.CheckpointHighWatermarks(); err != nil {
		t.Fatal(err)
	}
	hw, _ := ReadOffsetCheckpoint(e.fs, filepath.Join(m.DirOf(tps[0]), HighWatermarkFile))
	if hw[tps[0]] != 10 {
		t.Fatalf("high watermark checkpoint %v", hw)
	}
	// A directory other components own, and a leftover of a deletion.
	e.fs.MkdirAll("/d1/__cluster_metadata-0", 0o755)
	e.fs.MkdirAll("/d1/gone-0.abc-delete", 0o755)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m2 := newTestManager(e, "/d1", "/d2")
	if err := m2.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatal(err)
	}
	if len(m2.All()) != 3 {
		t.Fatalf("loaded %d logs", len(m2.All()))
	}
	l0 = m2.Get(tps[0])
	if l0.LogStartOffset() != 3 || l0.HighWatermark() != 10 || l0.RecoveryPoint() != 10 || l0.LogEndOffset() != 10 {
		t.Fatalf("start %d hw %d rp %d end %d", l0.LogStartOffset(), l0.HighWatermark(), l0.RecoveryPoint(), l0.LogEndOffset())
	}
	if _, err := e.fs.Stat("/d1/gone-0.abc-delete"); err == nil {
		t.Fatal("deleted partition directory left behind")
	}
	if _, err := e.fs.Stat("/d1/__cluster_metadata-0"); err != nil {
		t.Fatal("skipped directory removed")
	}
	// No partition can claim it.
	if l, err := m2.GetOrCreate(TopicPartition{"__cluster_metadata", 0}, id, smallConfig()); err == nil || l != nil {
		t.Fatalf("GetOrCreate of a skipped directory: %v", err)
	}
	if got, err := l0.ReadTopicID(); err != nil || got != id {
		t.Fatalf("topic id after reload %v %v", got, err)
	}

	// Delete renames the directory at once and removes it after the delay.
	dir := l0.Dir()
	if err := m2.Delete(tps[0]); err != nil {
		t.Fatal(err)
	}
	if m2.Get(tps[0]) != nil {
		t.Fatal("deleted log still served")
	}
	if _, err := e.fs.Stat(dir); err == nil {
		t.Fatal("directory not renamed")
	}
	e.delay.run()
	for _, f := range e.fs.Files() {
		if strings.Contains(f, "-delete") {
			t.Fatalf("left behind: %s", f)
		}
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	m3 := newTestManager(e, "/d1", "/d2")
	if err := m3.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatal(err)
	}
	if len(m3.All()) != 2 || m3.Get(tps[0]) != nil {
		t.Fatalf("after delete: %d logs", len(m3.All()))
	}
	m3.Close()
}

func TestManagerRetentionAndFlush(t *testing.T) {
	e := newEnv(t)
	m := newTestManager(e, "/d1")
	m.Load(func(TopicPartition) Config { return smallConfig() })
	cfg := smallConfig()
	cfg.RetentionBytes = 0
	cfg.FlushMs = 1000
	l, _ := m.GetOrCreate(TopicPartition{"x", 0}, [16]byte{}, cfg)
	fillSegments(t, e, l, 3, 3)
	l.SetHighWatermark(l.LogEndOffset())
	m.RunRetention()
	if l.LogStartOffset() != 9 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	ls, _ := ReadOffsetCheckpoint(e.fs, "/d1/"+LogStartOffsetFile)
	if ls[TopicPartition{"x", 0}] != 9 {
		t.Fatalf("log start checkpoint %v", ls)
	}
	mustAppend(t, l, valueBatch(t, 1, 1, e.clock.Ms()))
	e.clock.Advance(2 * time.Second)
	m.flushByTime()
	if l.RecoveryPoint() != l.LogEndOffset() {
		t.Fatalf("recovery point %d, end %d", l.RecoveryPoint(), l.LogEndOffset())
	}
	m.Close()
}

func TestPartitionMetadata(t *testing.T) {
	e := newEnv(t)
	id := [16]byte{0xff, 0, 0xfe}
	if err := writePartitionMetadata(e.fs, e.dir, id, false); err != nil {
		t.Fatal(err)
	}
	data, _ := vfs.ReadFile(e.fs, e.dir+"/partition.metadata")
	if !strings.HasPrefix(string(data), "version: 0\ntopic_id: ") {
		t.Fatalf("metadata %q", data)
	}
	l := e.open(smallConfig())
	defer l.Close()
	if got, err := l.ReadTopicID(); err != nil || got != id {
		t.Fatalf("topic id %v %v", got, err)
	}
	vfs.WriteFileAtomic(e.fs, e.dir+"/partition.metadata", []byte("version: 0\ntopic_id: nope\n"))
	if _, err := l.ReadTopicID(); err == nil {
		t.Fatal("bad topic id accepted")
	}
	// The repair is durable.
	if err := l.WriteTopicID(id); err != nil {
		t.Fatal(err)
	}
	crashed := e.fs.CrashClone()
	data, _ = vfs.ReadFile(crashed, e.dir+"/partition.metadata")
	if !strings.Contains(string(data), "topic_id: _wD-") {
		t.Fatalf("partition.metadata after a crash: %q", data)
	}
}

func TestParseDirName(t *testing.T) {
	for name, want := range map[string]TopicPartition{"a-0": {"a", 0}, "my-topic-12": {"my-topic", 12}} {
		if got, ok := ParseDirName(name); !ok || got != want {
			t.Fatalf("%s: %v %v", name, got, ok)
		}
	}
	for _, bad := range []string{"a", "-1", "a-", "a-x"} {
		if _, ok := ParseDirName(bad); ok {
			t.Fatalf("%s parsed", bad)
		}
	}
}

// CreateAll touches no disk; the background maker makes the new
// partitions' directories and fsyncs their log dir, and a new partition's
// directory is fsynced by its log's first flush too. A crash right after
// the creation, with or without the maker's work, loses nothing that was
// acknowledged (a log found again opens, empty), and one after a flush
// keeps what was flushed.
func TestCreateAllCrash(t *testing.T) {
	for seed := int64(0); seed < 30; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			m, cfgFor, bg := loadedManager(t, e)
			var ls []NewLog
			for i := int32(0); i < 4; i++ {
				ls = append(ls, NewLog{TopicPartition: TopicPartition{"c", i}, Config: smallConfig()})
			}
			m.CreateAll(ls)
			if r.Intn(2) == 0 {
				bg.run()
			}
			crash := func() *vfstest.MemFS {
				return e.fs.CrashCloneWith(vfstest.CrashOptions{Rand: r, TornWrites: true, DirOps: true})
			}
			reload := func(fsys *vfstest.MemFS) *Manager {
				t.Helper()
				m := NewManager(ManagerConfig{Dirs: []string{"/d1"}}, Options{FS: fsys, Now: e.clock.Now, Logger: quietLogger})
				if err := m.Load(cfgFor); err != nil {
					t.Fatalf("load after a crash: %v", err)
				}
				if f := m.AllFailed(); len(f) > 0 {
					t.Fatalf("logs offline after a crash: %v", f)
				}
				return m
			}
			after := reload(crash())
			for _, l := range after.All() {
				if l.LogEndOffset() != 0 {
					t.Fatalf("%s: log end %d after a crash before any write", l.TopicPartition(), l.LogEndOffset())
				}
			}
			after.Close()

			b := valueBatch(t, 2, 30, e.clock.Ms())
			l := m.Get(TopicPartition{"c", 0})
			mustAppend(t, l, b)
			if err := l.Flush(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, m.Get(TopicPartition{"c", 1}), valueBatch(t, 1, 30, e.clock.Ms()))
			after = reload(crash())
			got := after.Get(TopicPartition{"c", 0})
			if got == nil {
				t.Fatal("a flushed log is gone after a crash")
			}
			checkEveryOffset(t, got, []record.Batch{b})
			after.Close()
		})
	}
}

// loadedManager is a manager of one durable log dir, /d1, on e's
// filesystem, loaded (empty), and the small config its logs use.
func loadedManager(t *testing.T, e *testEnv) (*Manager, func(TopicPartition) Config, *delayQueue) {
	t.Helper()
	if err := e.fs.MkdirAll("/d1", 0o755); err != nil {
		t.Fatal(err)
	}
	e.fs.SyncDir("/")
	cfgFor := func(TopicPartition) Config { return smallConfig() }
	// Background work (new logs' directories, rolled segments' flushes)
	// waits in the queue returned until the test runs it.
	bg := &delayQueue{}
	o := e.opts()
	o.Background = func(fn func()) { bg.add(0, fn) }
	m := NewManager(ManagerConfig{Dirs: []string{"/d1"}}, o)
	if err := m.Load(cfgFor); err != nil {
		t.Fatal(err)
	}
	return m, cfgFor, bg
}
