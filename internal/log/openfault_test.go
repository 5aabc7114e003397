package log

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"weir/internal/record"
	"weir/internal/testwait"
	"weir/internal/vfs/vfstest"
)

// openFails opens the log with the open at position skip (and later
// ones, n of them) failing, syncs failing too when syncs > 0. It checks
// that the failure is a clear error naming the partition and the cause,
// and that nothing stays open.
func openFails(t *testing.T, e *testEnv, o Options, skip, n, syncs int) (*Log, error) {
	t.Helper()
	before := e.fs.OpenFiles()
	e.fs.FailOpens(skip, n, nil)
	e.fs.FailSyncs(syncs, nil)
	l, err := Open(e.dir, e.tp, smallConfig(), o)
	e.fs.FailOpens(0, 0, nil)
	e.fs.FailSyncs(0, nil)
	if err != nil {
		if !strings.Contains(err.Error(), e.tp.String()) && !errors.Is(err, syscall.EIO) {
			t.Fatalf("open error does not name the partition: %v", err)
		}
		if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.EIO) {
			t.Fatalf("open error lost its cause: %v", err)
		}
		if got := e.fs.OpenFiles(); got != before {
			t.Fatalf("a failed open left %d files open", got-before)
		}
		return nil, err
	}
	return l, nil
}

// Creating a log with an open (or directory fsync) failing at every point
// fails cleanly, and a later open without faults gives a whole, empty log.
func TestOpenFaultsOnCreate(t *testing.T) {
	for skip := 0; skip < 8; skip++ {
		for _, syncs := range []int{0, 1} {
			t.Run(fmt.Sprintf("skip%d-syncs%d", skip, syncs), func(t *testing.T) {
				e := newEnv(t)
				e.dir = "/data/new-0"
				e.tp = TopicPartition{"new", 0}
				l, err := openFails(t, e, e.opts(), skip, 1, syncs)
				if err == nil {
					l.Close()
				}
				l = e.open(smallConfig())
				defer l.Close()
				mustAppend(t, l, valueBatch(t, 3, 10, e.clock.Ms()))
				if got := len(readBatches(t, l, 0)); got != 1 {
					t.Fatalf("read %d batches", got)
				}
			})
		}
	}
}

// Reopening a log of several segments with an open failing at a random
// point of recovery (or index loading) fails cleanly, and a later open
// without faults finds every batch.
func TestOpenFaultsOnRecovery(t *testing.T) {
	for seed := int64(0); seed < 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			cfg := smallConfig()
			l := e.open(cfg)
			var batches []record.Batch
			for i := 0; i < 10+r.Intn(30); i++ {
				b := valueBatch(t, 1+r.Intn(3), 50+r.Intn(200), e.clock.Ms())
				mustAppend(t, l, b)
				batches = append(batches, b)
			}
			o := e.opts()
			if r.Intn(2) == 0 { // a clean close: only the last segment is recovered
				o.RecoveryPoint = l.LogEndOffset()
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else if err := l.Abandon(); err != nil {
				t.Fatal(err)
			}
			files := 4 * l.NumSegments()
			if _, err := openFails(t, e, o, r.Intn(files), 1+r.Intn(3), 0); err == nil {
				t.Logf("open succeeded (the failures hit no open)")
			}
			l = e.openWith(cfg, o)
			defer l.Close()
			checkEveryOffset(t, l, batches)
		})
	}
}

// A first write to a rolled segment whose files cannot be created fails
// the append and leaves no file of the new segment behind (it stays
// pending, see materializeLocked); the log goes on.
func TestOpenFaultOnRoll(t *testing.T) {
	for skip := 0; skip < 4; skip++ {
		t.Run(fmt.Sprint(skip), func(t *testing.T) {
			e := newEnv(t)
			cfg := smallConfig()
			l := e.open(cfg)
			defer l.Close()
			var batches []record.Batch
			for l.NumSegments() == 1 {
				b := valueBatch(t, 1, 200, e.clock.Ms())
				mustAppend(t, l, b)
				batches = append(batches, b)
			}
			// Fill the active segment up to the next roll.
			segs := l.NumSegments()
			before := e.fs.OpenFiles()
			e.fs.FailOpens(skip, 1, syscall.EIO)
			var failed bool
			for i := 0; i < 100 && l.NumSegments() == segs; i++ {
				b := valueBatch(t, 1, 200, e.clock.Ms())
				if _, err := l.AppendAsLeader(b, 0); err != nil {
					if !errors.Is(err, syscall.EIO) {
						t.Fatalf("append error %v", err)
					}
					failed = true
					break
				}
				batches = append(batches, b)
			}
			e.fs.FailOpens(0, 0, nil)
			if !failed {
				t.Fatal("no append failed")
			}
			if got := e.fs.OpenFiles(); got != before {
				t.Fatalf("the failed roll left %d files open", got-before)
			}
			checkNoPartial(t, e, l)
			b := valueBatch(t, 1, 200, e.clock.Ms())
			mustAppend(t, l, b)
			checkEveryOffset(t, l, append(batches, b))
		})
	}
}

// With too few file handles for every log's files, the manager opens them
// all, closing idle files to open others. Logs whose files cannot be
// opened for another reason are reported offline with the cause (at load
// and at creation), and deleting an offline partition removes its
// directory.
func TestManagerOfflineLogs(t *testing.T) {
	e := newEnv(t)
	m := newTestManager(e, "/d1")
	if err := m.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatal(err)
	}
	var id [16]byte
	var tps []TopicPartition
	for i := int32(0); i < 10; i++ {
		tp := TopicPartition{"t", i}
		tps = append(tps, tp)
		l, err := m.GetOrCreate(tp, id, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Each log has 3 segment files (.log, .index, .timeindex): not all fit.
	e.fs.SetOpenLimit(3 * 6)
	m = newTestManager(e, "/d1")
	if err := m.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatal(err)
	}
	if len(m.All()) != len(tps) || len(m.AllFailed()) != 0 {
		t.Fatalf("%d logs online and %d offline under the open-file limit, want all %d online", len(m.All()), len(m.AllFailed()), len(tps))
	}
	for _, tp := range tps {
		mustAppend(t, m.Get(tp), valueBatch(t, 1, 10, e.clock.Ms()))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	e.fs.SetOpenLimit(0)

	// Opens failing with EIO take logs offline.
	e.fs.FailOpens(12, 1000, syscall.EIO)
	m = newTestManager(e, "/d1")
	if err := m.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatalf("load failed instead of leaving logs offline: %v", err)
	}
	e.fs.FailOpens(0, 0, nil)
	online, offline := len(m.All()), len(m.AllFailed())
	if online == 0 || offline == 0 || online+offline != len(tps) {
		t.Fatalf("%d logs online, %d offline, of %d", online, offline, len(tps))
	}
	for _, tp := range tps {
		l, ferr := m.Get(tp), m.Failed(tp)
		switch {
		case l == nil && ferr == nil:
			t.Fatalf("%s is neither open nor offline", tp)
		case l != nil && ferr != nil:
			t.Fatalf("%s is both open and offline", tp)
		case ferr != nil && (!errors.Is(ferr, ErrOffline) || !errors.Is(ferr, syscall.EIO) || !strings.Contains(ferr.Error(), tp.String())):
			t.Fatalf("offline error of %s: %v", tp, ferr)
		case ferr != nil:
			// Offline stays offline, without touching the disk.
			if _, err := m.GetOrCreate(tp, id, smallConfig()); !errors.Is(err, ErrOffline) {
				t.Fatalf("GetOrCreate of offline %s: %v", tp, err)
			}
		default:
			mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
		}
	}
	// A new partition costs no file at its creation: one whose directory
	// cannot be made fails its first write with the cause and goes
	// offline, as a log that cannot be opened.
	e.fs.FailOpens(0, 1000, syscall.EIO)
	fresh := TopicPartition{"fresh", 0}
	l, err := m.GetOrCreate(fresh, id, smallConfig())
	if err != nil {
		t.Fatalf("creating with failing opens: %v", err)
	}
	if _, err := l.AppendAsLeader(valueBatch(t, 1, 10, e.clock.Ms()), 0); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), fresh.String()) {
		t.Fatalf("first write with failing opens: %v", err)
	}
	testwait.For(t, 30*time.Second, "the new partition to go offline", func() error {
		if err := m.Failed(fresh); !errors.Is(err, ErrOffline) || !errors.Is(err, syscall.EIO) {
			return fmt.Errorf("offline error %v", err)
		}
		return nil
	})
	e.fs.FailOpens(0, 0, nil)
	if m.Get(fresh) != nil {
		t.Fatal("the offline partition's log is still served")
	}
	if _, err := m.GetOrCreate(fresh, id, smallConfig()); !errors.Is(err, ErrOffline) {
		t.Fatalf("GetOrCreate of the offline new partition: %v", err)
	}
	// Deleting offline partitions removes their directories.
	for _, tp := range m.AllFailed() {
		if err := m.Delete(tp); err != nil {
			t.Fatal(err)
		}
		if m.Failed(tp) != nil {
			t.Fatalf("%s still offline after its deletion", tp)
		}
		if _, err := e.fs.Stat("/d1/" + tp.String()); err == nil {
			t.Fatalf("directory of deleted %s is still there", tp)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// Creating logs and then loading them with opens, file creations and
// fsyncs (of files and directories) failing at random points leaves every
// partition either open or offline with an error naming it and its cause;
// nothing panics, and loading without faults finds every log that was
// created online, with its records.
func TestManagerFaultsAtRandomPoints(t *testing.T) {
	const n = 12
	kinds := [][]vfstest.OpKind{{vfstest.OpOpen}, {vfstest.OpSync, vfstest.OpSyncDir}, {vfstest.OpOpen, vfstest.OpSync, vfstest.OpSyncDir, vfstest.OpMkdirAll, vfstest.OpRename}}
	for seed := int64(0); seed < 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			manager := func() *Manager {
				return NewManager(ManagerConfig{Dirs: []string{"/d1", "/d2"}, CreateWorkers: 1, RecoveryThreadsPerDir: 1}, e.opts())
			}
			load := func(m *Manager) {
				t.Helper()
				if err := m.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
					t.Fatalf("load: %v", err)
				}
			}
			// Faults only within partition directories: a log dir that
			// cannot be read fails the load as a whole.
			inPartition := func(k []vfstest.OpKind) func(vfstest.Op) bool {
				return func(op vfstest.Op) bool { return vfstest.Kinds(k...)(op) && strings.Contains(op.Path, "/p-") }
			}
			// check: every partition is open or offline with a clear error.
			check := func(m *Manager, when string) map[TopicPartition]bool {
				t.Helper()
				online := map[TopicPartition]bool{}
				for i := int32(0); i < n; i++ {
					tp := TopicPartition{"p", i}
					l, ferr := m.Get(tp), m.Failed(tp)
					switch {
					case l != nil && ferr != nil:
						t.Fatalf("%s: %s is both open and offline", when, tp)
					case l != nil:
						online[tp] = true
					case ferr != nil && (!errors.Is(ferr, ErrOffline) || !errors.Is(ferr, syscall.EIO) || !strings.Contains(ferr.Error(), tp.String())):
						t.Fatalf("%s: unclear offline error of %s: %v", when, tp, ferr)
					}
				}
				return online
			}

			m := manager()
			load(m)
			var ls []NewLog
			for i := int32(0); i < n; i++ {
				ls = append(ls, NewLog{TopicPartition: TopicPartition{"p", i}, Config: smallConfig()})
			}
			e.inject.Set(vfstest.Failing(inPartition(kinds[r.Intn(len(kinds))]), r.Intn(8*n), 1+r.Intn(4), syscall.EIO))
			m.CreateAll(ls)
			e.inject.Set(nil)
			created := check(m, "after creating")
			for i := int32(0); i < n; i++ {
				tp := TopicPartition{"p", i}
				if !created[tp] && m.Failed(tp) == nil {
					t.Fatalf("%s is silently missing after CreateAll", tp)
				}
			}
			written := map[TopicPartition]record.Batch{}
			for tp := range created {
				b := valueBatch(t, 1, 20, e.clock.Ms())
				mustAppend(t, m.Get(tp), b)
				written[tp] = b
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}

			// Recovery with faults: the logs created online are open or
			// offline, never missing.
			m = manager()
			e.inject.Set(vfstest.Failing(inPartition(kinds[r.Intn(len(kinds))]), r.Intn(6*n), 1+r.Intn(4), syscall.EIO))
			load(m)
			e.inject.Set(nil)
			check(m, "after a faulty load")
			for tp := range written {
				if m.Get(tp) == nil && m.Failed(tp) == nil {
					t.Fatalf("%s is silently missing after a faulty load", tp)
				}
			}
			for _, l := range m.All() {
				l.Abandon()
			}

			// Without faults every log written is back with its records.
			m = manager()
			load(m)
			for tp, b := range written {
				l := m.Get(tp)
				if l == nil {
					t.Fatalf("%s not open after a clean load: %v", tp, m.Failed(tp))
				}
				checkEveryOffset(t, l, []record.Batch{b})
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
