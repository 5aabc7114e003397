package log

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"weir/internal/vfs/vfstest"
)

// The cleaner reports its last run, the dirtiest log's ratio as of that
// run (all dirty before the first clean, nothing after it) and how long
// its last clean took.
func TestCleanerStats(t *testing.T) {
	e := newEnv(t)
	created := e.clock.Now()
	m, l := newCompacted(t, e, compactConfig())
	if st := m.CleanerStats(); !st.LastRun.Equal(created) || st.MaxDirtyPercent != 0 || st.LastCleanTime != 0 {
		t.Fatalf("before any run: %+v, want last run %v and zeros", st, created)
	}
	for i := range 60 {
		put(t, e, l, fmt.Sprintf("k%d=v%d", i%5, i))
	}
	l.Roll()
	put(t, e, l, "k1=active")
	l.SetHighWatermark(l.LogEndOffset())
	e.clock.Advance(time.Minute)
	ran := e.clock.Now()
	// The clean takes 3 s by the clock: the swap's rename advances it.
	e.inject.Set(vfstest.InjectorFunc(func(op vfstest.Op) error {
		if op.Kind == vfstest.OpRename && strings.HasSuffix(op.Path, ".log.cleaned") {
			e.clock.Advance(3 * time.Second)
		}
		return nil
	}))
	cleanNow(t, m, l)
	e.inject.Set(nil)
	if st := m.CleanerStats(); !st.LastRun.Equal(ran) || st.MaxDirtyPercent != 100 || st.LastCleanTime != 3*time.Second {
		t.Fatalf("after the first clean: %+v, want last run %v, 100%% dirty, 3s", st, ran)
	}
	e.clock.Advance(time.Minute)
	cleanNow(t, m, nil)
	if st := m.CleanerStats(); !st.LastRun.Equal(e.clock.Now()) || st.MaxDirtyPercent != 0 || st.LastCleanTime != 3*time.Second {
		t.Fatalf("after a run with nothing dirty: %+v, want 0%% dirty and the last clean's 3s", st)
	}
}

// Options.Flushed is told of each flush that synced data, with its time
// by the log's clock, and not of one that had nothing to sync.
func TestFlushedReportsEachSync(t *testing.T) {
	e := newEnv(t)
	var got []time.Duration
	o := e.opts()
	o.Flushed = func(d time.Duration) { got = append(got, d) }
	l := e.openWith(smallConfig(), o)
	defer l.Close()
	mustAppend(t, l, valueBatch(t, 3, 100, e.clock.Ms()))
	e.inject.Set(vfstest.InjectorFunc(func(op vfstest.Op) error {
		if op.Kind == vfstest.OpSync {
			e.clock.Advance(5 * time.Millisecond)
		}
		return nil
	}))
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	e.inject.Set(nil)
	if err := l.Flush(l.LogEndOffset()); err != nil { // nothing new
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] < 5*time.Millisecond {
		t.Fatalf("Flushed saw %v, want one flush of at least 5ms", got)
	}
}
