package log

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
)

// Logs found by Scan stay loading until LoadEach opens them: nothing
// creates or deletes them meanwhile, and checkpoints keep their offsets,
// also when the loading stops half way (the broker shuts down).
func TestScanThenLoadEach(t *testing.T) {
	e := newEnv(t)
	m := newTestManager(e, "/d1")
	if err := m.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatal(err)
	}
	tps := []TopicPartition{{"a", 0}, {"b", 0}}
	for _, tp := range tps {
		l, err := m.GetOrCreate(tp, [16]byte{1}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, valueBatch(t, 2, 300, e.clock.Ms()))
		l.SetHighWatermark(2)
		l.SetLogStartOffset(1)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m2 := NewManager(ManagerConfig{Dirs: []string{"/d1"}, RecoveryThreadsPerDir: 1}, e.opts())
	found, err := m2.Scan()
	if err != nil || len(found) != 2 {
		t.Fatalf("Scan found %v (%v)", found, err)
	}
	if !m2.Loading(tps[0]) || m2.Get(tps[0]) != nil {
		t.Fatal("a scanned log is not loading")
	}
	if _, err := m2.GetOrCreate(tps[0], [16]byte{1}, smallConfig()); !errors.Is(err, ErrLoading) {
		t.Fatalf("GetOrCreate of a loading log: %v", err)
	}
	if err := m2.Delete(tps[0]); err != nil || !m2.Loading(tps[0]) {
		t.Fatalf("Delete of a loading log: %v", err)
	}
	checkpointed := func() {
		t.Helper()
		if err := errors.Join(m2.CheckpointRecoveryPoints(), m2.CheckpointLogStartOffsets(), m2.CheckpointHighWatermarks()); err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			file string
			want int64
		}{{LogStartOffsetFile, 1}, {HighWatermarkFile, 2}, {RecoveryPointFile, 2}} {
			offs, err := ReadOffsetCheckpoint(e.fs, filepath.Join("/d1", f.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, tp := range tps {
				if offs[tp] != f.want {
					t.Fatalf("%s of %s = %d, want %d", f.file, tp, offs[tp], f.want)
				}
			}
		}
	}
	checkpointed()

	// One worker: the first log opened stops the loading.
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var opened []TopicPartition
	if err := m2.LoadEach(ctx, func(TopicPartition) Config { return smallConfig() }, func(tp TopicPartition, l *Log, err error) {
		if err != nil || l == nil || m2.Get(tp) != l || m2.Loading(tp) {
			t.Errorf("%s handed over as %v, %v", tp, l, err)
		}
		mu.Lock()
		opened = append(opened, tp)
		mu.Unlock()
		cancel()
	}); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 1 || len(m2.All()) != 1 {
		t.Fatalf("opened %v after the end, %d logs", opened, len(m2.All()))
	}
	checkpointed()
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	m3 := newTestManager(e, "/d1")
	if err := m3.Load(func(TopicPartition) Config { return smallConfig() }); err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	for _, tp := range tps {
		if l := m3.Get(tp); l == nil || l.LogStartOffset() != 1 || l.LogEndOffset() != 2 {
			t.Fatalf("%s after a loading cut short: %v", tp, l)
		}
	}
}
