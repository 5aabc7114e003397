package log

import (
	"errors"
	"fmt"
	"testing"

	"weir/internal/record"
)

// Many logs under a small log.open.files.max keep at most that many
// segment files open, and every operation still works on files the cache
// closed: appends, rolls, reads, retention (renaming segments), deleting a
// whole log (renaming its directory), and closing and loading again.
func TestFileCacheBoundsOpenFiles(t *testing.T) {
	const max = 9
	e := newEnv(t)
	cfgs := func(TopicPartition) Config { return smallConfig() }
	// Background flushes of rolled segments run between appends, so the
	// count of open files is not caught in the middle of one.
	var background []func()
	o := e.opts()
	o.Background = func(fn func()) { background = append(background, fn) }
	newManager := func() *Manager {
		m := NewManager(ManagerConfig{Dirs: []string{"/d1"}, OpenFilesMax: max}, o)
		if err := m.Load(cfgs); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := newManager()
	var id [16]byte
	var nls []NewLog
	for i := range 40 {
		nls = append(nls, NewLog{TopicPartition: TopicPartition{"t", int32(i)}, TopicID: id, Config: smallConfig()})
	}
	m.CreateAll(nls)
	if got := e.fs.OpenFiles(); got > max {
		t.Fatalf("%d files open after creating 40 logs, want at most %d", got, max)
	}
	written := map[TopicPartition][]record.Batch{}
	for round := range 6 {
		for _, nl := range nls {
			l := m.Get(nl.TopicPartition)
			if l == nil {
				t.Fatalf("%s not created: %v", nl.TopicPartition, m.Failed(nl.TopicPartition))
			}
			b := valueBatch(t, 2, 300, e.clock.Ms())
			mustAppend(t, l, b)
			for _, fn := range background {
				fn()
			}
			background = nil
			written[nl.TopicPartition] = append(written[nl.TopicPartition], b)
			l.SetHighWatermark(l.LogEndOffset())
			if got := e.fs.OpenFiles(); got > max {
				t.Fatalf("round %d: %d files open, want at most %d", round, got, max)
			}
		}
	}
	for tp, bs := range written {
		checkEveryOffset(t, m.Get(tp), bs)
	}
	if m.Get(nls[0].TopicPartition).NumSegments() < 2 {
		t.Fatal("the test wants logs of several segments")
	}

	// Retention renames the first segments of a log whose files are
	// closed, and removes them after the delay.
	l := m.Get(nls[1].TopicPartition)
	segs := l.NumSegments()
	if _, err := l.SetLogStartOffset(l.LogEndOffset() - 2); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() >= segs {
		t.Fatalf("%d segments before DeleteRecords, %d after", segs, l.NumSegments())
	}
	// Deleting a whole log renames its directory under closed files.
	if err := m.Delete(nls[2].TopicPartition); err != nil {
		t.Fatal(err)
	}
	e.delay.run()
	delete(written, nls[2].TopicPartition)
	if got := readBatches(t, l, l.LogStartOffset()); len(got) != 1 {
		t.Fatalf("read %d batches after retention, want the last one", len(got))
	}
	segmentFilesConsistent(t, e.fs, l)
	written[nls[1].TopicPartition] = written[nls[1].TopicPartition][5:]

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.fs.OpenFiles(); got != 0 {
		t.Fatalf("%d files open after Close", got)
	}
	m = newManager()
	defer m.Close()
	if got := e.fs.OpenFiles(); got > max {
		t.Fatalf("%d files open after loading 39 logs, want at most %d", got, max)
	}
	if len(m.All()) != len(written) {
		t.Fatalf("loaded %d logs, want %d", len(m.All()), len(written))
	}
	for tp, bs := range written {
		checkEveryOffset(t, m.Get(tp), bs)
	}
}

// A pinned file stays open (for sendfile) while the cache closes others,
// and a file closed for good refuses operations.
func TestSegmentFilePin(t *testing.T) {
	e := newEnv(t)
	c := NewFileCache(e.fs, 1)
	a, err := c.create("/data/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	f, release, err := a.Pin()
	if err != nil {
		t.Fatal(err)
	}
	var others []*SegmentFile
	for i := range 3 {
		h, err := c.create(fmt.Sprintf("/data/f%d", i))
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, h)
	}
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "hello" {
		t.Fatalf("pinned file read %q, %v", buf, err)
	}
	if got := c.Open(); got != 1 {
		t.Fatalf("%d files open, want only the pinned one", got)
	}
	release()
	if got := c.Open(); got != 1 {
		t.Fatalf("%d files open after release, want 1", got)
	}
	// Reopened on use.
	if _, err := a.ReadAt(buf, 0); err != nil || string(buf) != "hello" {
		t.Fatalf("reopened file read %q, %v", buf, err)
	}
	for _, h := range append(others, a) {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.ReadAt(buf, 0); !errors.Is(err, errFileClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if got := e.fs.OpenFiles(); got != 0 {
		t.Fatalf("%d files open after closing all", got)
	}
}

// Opening a log drops the epochs starting at or after its end in memory
// only; the checkpoint is rewritten before the next batch lands, even a
// batch of an epoch already known, so a crash never leaves a lineage that
// names the dropped epoch for offsets written in an earlier one.
func TestEpochsDroppedAtOpenAreWrittenBeforeAppends(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	mustAppendEpoch := func(epoch int32) {
		t.Helper()
		if _, err := l.AppendAsLeader(valueBatch(t, 1, 10, e.clock.Ms()), epoch); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AssignEpoch(1); err != nil {
		t.Fatal(err)
	}
	mustAppendEpoch(1)
	if err := l.AssignEpoch(2); err != nil { // epoch 2 starts at 1, and nothing is written in it
		t.Fatal(err)
	}
	l = e.reopen(l)
	if got := l.Epochs(); len(got) != 1 || got[0] != (EpochEntry{Epoch: 1, StartOffset: 0}) {
		t.Fatalf("epochs after reopening %v, want epoch 2 dropped", got)
	}
	mustAppendEpoch(1)
	// A crash now: the checkpoint on disk must agree.
	ents, err := readEpochCheckpoint(e.fs, l.epochs.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0] != (EpochEntry{Epoch: 1, StartOffset: 0}) {
		t.Fatalf("checkpoint after an append in epoch 1: %v", ents)
	}
	l.Close()
}
