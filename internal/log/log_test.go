package log

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"weir/internal/record"
)

// appendMixed appends n batches of 1-5 records with varied sizes and codecs
// and returns them as stored.
func appendMixed(t *testing.T, e *testEnv, l *Log, n int) []record.Batch {
	t.Helper()
	r := seeded(t, 1)
	codecs := []record.Codec{record.None, record.None, record.Gzip, record.Snappy, record.LZ4, record.Zstd}
	var out []record.Batch
	for i := 0; i < n; i++ {
		recs := make([]rec, 1+r.Intn(5))
		for j := range recs {
			recs[j] = rec{key: []byte{byte(r.Intn(10))}, value: bytes.Repeat([]byte{byte(i)}, r.Intn(200)), ts: e.clock.Ms()}
		}
		b := buildBatch(t, batchSpec{recs: recs, codec: codecs[r.Intn(len(codecs))]})
		info := mustAppend(t, l, b)
		if info.BaseOffset != l.LogEndOffset()-int64(len(recs)) || info.LastOffset != l.LogEndOffset()-1 {
			t.Fatalf("append info %+v, log end %d", info, l.LogEndOffset())
		}
		out = append(out, b)
		e.clock.Advance(time.Millisecond)
	}
	return out
}

func TestAppendReadEveryOffset(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	want := appendMixed(t, e, l, 60)
	if l.NumSegments() < 3 {
		t.Fatalf("expected rolls, have %d segments", l.NumSegments())
	}
	checkEveryOffset(t, l, want)
	got := readBatches(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, appended %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	end := l.LogEndOffset()
	if sl, err := l.Read(end, 1000, end, true); err != nil || sl.Size != 0 {
		t.Fatalf("read at log end: %+v %v", sl, err)
	}
	if _, err := l.Read(end+1, 1000, end+1, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past log end: %v", err)
	}
	if _, err := l.Read(-1, 1000, end, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read at -1: %v", err)
	}
	segmentFilesConsistent(t, e.fs, l)
	// The same after a clean reopen.
	l = e.reopen(l)
	checkEveryOffset(t, l, want)
}

func TestReadBounds(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	l := e.open(cfg)
	defer l.Close()
	var bs []record.Batch
	for i := 0; i < 10; i++ {
		b := valueBatch(t, 2, 100, e.clock.Ms())
		mustAppend(t, l, b)
		bs = append(bs, b)
	}
	size := len(bs[0])
	// maxOffset: an exclusive bound at a batch boundary and inside a batch.
	for _, maxOff := range []int64{4, 5} {
		data, err := l.ReadBytes(0, 1<<20, maxOff)
		if err != nil {
			t.Fatal(err)
		}
		wantBatches := int((maxOff + 1) / 2)
		if len(data) != wantBatches*size {
			t.Fatalf("maxOffset %d: read %d bytes, want %d batches of %d", maxOff, len(data), wantBatches, size)
		}
	}
	if sl, err := l.Read(6, 1<<20, 6, true); err != nil || sl.Size != 0 {
		t.Fatalf("read at maxOffset: %+v %v", sl, err)
	}
	// maxBytes cuts the data, possibly inside a batch (Kafka does the same).
	sl, err := l.Read(0, size+10, l.LogEndOffset(), false)
	if err != nil || sl.Size != size+10 {
		t.Fatalf("maxBytes cut: %+v %v", sl, err)
	}
	// A first batch larger than maxBytes: nothing, unless minOneBatch.
	if sl, err := l.Read(3, size-1, l.LogEndOffset(), false); err != nil || sl.Size != 0 {
		t.Fatalf("small maxBytes: %+v %v", sl, err)
	}
	sl, err = l.Read(3, 1, l.LogEndOffset(), true)
	if err != nil || sl.Size != size || sl.Pos != int64(size) {
		t.Fatalf("minOneBatch: %+v %v", sl, err)
	}
	// Reads return data of one segment only.
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, valueBatch(t, 2, 100, e.clock.Ms()))
	data, err := l.ReadBytes(18, 1<<20, l.LogEndOffset())
	if err != nil || len(data) != size {
		t.Fatalf("read across segments returned %d bytes: %v", len(data), err)
	}
	data, err = l.ReadBytes(20, 1<<20, l.LogEndOffset())
	if err != nil || len(data) != size || record.Batch(data).BaseOffset() != 20 {
		t.Fatalf("read in the next segment: %d bytes: %v", len(data), err)
	}
}

func TestRollBySize(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 1000
	l := e.open(cfg)
	defer l.Close()
	for i := 0; i < 30; i++ {
		mustAppend(t, l, valueBatch(t, 1, 100+i*3, e.clock.Ms()))
	}
	big := valueBatch(t, 1, 1500, e.clock.Ms())
	mustAppend(t, l, big)
	mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	segs := l.segments()
	for i, s := range segs {
		sz := s.size.Load()
		if sz > cfg.SegmentBytes && sz != int64(len(big)) {
			t.Fatalf("segment %d has %d bytes", s.base, sz)
		}
		if i+1 < len(segs) && s.nextOffset != segs[i+1].base {
			t.Fatalf("segment %d ends at %d, next starts at %d", s.base, s.nextOffset, segs[i+1].base)
		}
	}
	// The oversized batch sits alone in its segment.
	last := segs[len(segs)-2]
	if last.size.Load() != int64(len(big)) {
		t.Fatalf("oversized batch segment has %d bytes", last.size.Load())
	}
}

func TestRollByTime(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentMs = 1000
	l := e.open(cfg)
	defer l.Close()
	mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	e.clock.Advance(999 * time.Millisecond)
	mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	if l.NumSegments() != 1 {
		t.Fatal("rolled before segment.ms")
	}
	e.clock.Advance(2 * time.Millisecond)
	mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	if l.NumSegments() != 2 || l.active().base != 2 {
		t.Fatalf("no roll after segment.ms: %d segments", l.NumSegments())
	}
	// Jitter shortens the wait.
	cfg.SegmentJitterMs = 500
	l.SetConfig(cfg)
	e.clock.Advance(600 * time.Millisecond)
	mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	if l.NumSegments() != 3 {
		t.Fatalf("jitter not applied: %d segments", l.NumSegments())
	}
	// The roll rule survives a reopen: the first timestamp is learned again.
	l = e.reopen(l)
	e.clock.Advance(600 * time.Millisecond)
	mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	if l.NumSegments() != 4 {
		t.Fatalf("no time roll after reopen: %d segments", l.NumSegments())
	}
}

func TestRollByIndexFull(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 10
	cfg.SegmentIndexBytes = 3 * offsetEntrySize
	l := e.open(cfg)
	defer l.Close()
	var want []record.Batch
	for i := 0; i < 20; i++ {
		b := valueBatch(t, 1, 50, e.clock.Ms())
		mustAppend(t, l, b)
		want = append(want, b)
	}
	for _, s := range l.segments() {
		if n := s.index.entries(); n > 3 {
			t.Fatalf("segment %d has %d index entries", s.base, n)
		}
	}
	if l.NumSegments() < 4 {
		t.Fatalf("index full did not roll: %d segments", l.NumSegments())
	}
	checkEveryOffset(t, l, want)
}

func TestIndexContent(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	l := e.open(cfg)
	defer l.Close()
	r := seeded(t, 2)
	for i := 0; i < 100; i++ {
		ts := e.clock.Ms() + int64(r.Intn(1000)) - 500
		mustAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{value: make([]byte, r.Intn(150)), ts: ts}, {ts: ts - 1}}}))
	}
	check := func(l *Log) {
		s := l.segments()[0]
		if len(s.index.ents) < 10 {
			t.Fatalf("only %d index entries", len(s.index.ents))
		}
		var hdr [record.HeaderSize]byte
		lastPos := int64(-1)
		for _, ent := range s.index.ents {
			h, err := s.header(int64(ent.pos), &hdr)
			if err != nil {
				t.Fatal(err)
			}
			if h.LastOffset() != s.base+int64(ent.rel) {
				t.Fatalf("index entry %+v points at batch ending %d", ent, h.LastOffset())
			}
			if lastPos >= 0 && int64(ent.pos)-lastPos < cfg.IndexIntervalBytes {
				t.Fatalf("index entries %d bytes apart", int64(ent.pos)-lastPos)
			}
			lastPos = int64(ent.pos)
		}
		// Time index: increasing timestamps; each the max up to its offset.
		batches := readBatches(t, l, 0)
		for i, ent := range s.timeIndex.ents {
			if i > 0 && ent.ts <= s.timeIndex.ents[i-1].ts {
				t.Fatal("time index not increasing")
			}
			maxTS := int64(-1)
			for _, b := range batches {
				if b.LastOffset() <= s.base+int64(ent.rel) {
					maxTS = max(maxTS, b.MaxTimestamp())
				}
			}
			if maxTS != ent.ts {
				t.Fatalf("time index entry %+v, max timestamp up to it is %d", ent, maxTS)
			}
		}
	}
	check(l)
	l = e.reopen(l)
	check(l)
}

func TestOffsetForTimestamp(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	r := seeded(t, 3)
	base := e.clock.Ms()
	for i := 0; i < 80; i++ {
		recs := make([]rec, 1+r.Intn(4))
		for j := range recs {
			recs[j] = rec{value: make([]byte, r.Intn(100)), ts: base + int64(r.Intn(2000))}
		}
		mustAppend(t, l, buildBatch(t, batchSpec{recs: recs, logAppendTime: i%17 == 5}))
	}
	all := records(t, readBatches(t, l, 0))
	check := func(ts, maxOffset int64) {
		t.Helper()
		wantOff, wantTS := int64(-1), int64(-1)
		for _, rc := range all {
			if rc.offset >= l.LogStartOffset() && rc.offset < maxOffset && rc.ts >= ts {
				wantOff, wantTS = rc.offset, rc.ts
				break
			}
		}
		off, gotTS, ok, err := l.OffsetForTimestamp(ts, maxOffset)
		if err != nil || ok != (wantOff >= 0) || ok && (off != wantOff || gotTS != wantTS) {
			t.Fatalf("OffsetForTimestamp(%d, %d) = %d %d %v %v, want %d %d", ts, maxOffset, off, gotTS, ok, err, wantOff, wantTS)
		}
	}
	for i := 0; i < 300; i++ {
		check(base+int64(r.Intn(2200))-100, int64(r.Intn(int(l.LogEndOffset())+1)))
	}
	check(base+5000, l.LogEndOffset())
	// Max timestamp: the earliest record holding the largest timestamp.
	maxRec := all[0]
	for _, rc := range all {
		if rc.ts > maxRec.ts {
			maxRec = rc
		}
	}
	off, ts, ok, err := l.MaxTimestampOffset(l.LogEndOffset())
	if err != nil || !ok || off != maxRec.offset || ts != maxRec.ts {
		t.Fatalf("MaxTimestampOffset = %d %d %v %v, want %v", off, ts, ok, err, maxRec)
	}
	// Below the log start offset, nothing is found.
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.SetLogStartOffset(maxRec.offset + 1); err != nil {
		t.Fatal(err)
	}
	check(base, l.LogEndOffset())
	if off, _, ok, _ := l.MaxTimestampOffset(l.LogEndOffset()); ok && off <= maxRec.offset {
		t.Fatalf("MaxTimestampOffset below log start: %d", off)
	}
}

func TestEpochs(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	for _, ep := range []int32{0, 0, 2, 2, 2, 5} {
		if _, err := l.AppendAsLeader(valueBatch(t, 2, 10, e.clock.Ms()), ep); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.Epochs(); len(got) != 3 || got[1] != (EpochEntry{2, 4}) || got[2] != (EpochEntry{5, 10}) {
		t.Fatalf("epochs %v", got)
	}
	if err := l.AssignEpoch(7); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		req  int32
		ep   int32
		next int64
	}{{0, 0, 4}, {1, 0, 4}, {2, 2, 10}, {3, 2, 10}, {5, 5, 12}, {6, 5, 12}, {7, 7, 12}, {8, -1, -1}, {-1, -1, -1}}
	for _, c := range cases {
		if ep, next := l.EndOffsetForEpoch(c.req); ep != c.ep || next != c.next {
			t.Fatalf("EndOffsetForEpoch(%d) = %d %d, want %d %d", c.req, ep, next, c.ep, c.next)
		}
	}
	if l.LatestEpoch() != 7 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
	// Truncation drops the epochs that start at or after the new end.
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if got := l.Epochs(); len(got) != 2 || got[1] != (EpochEntry{2, 4}) {
		t.Fatalf("epochs after truncation %v", got)
	}
	// Epochs persist; one starting at the log end, with no data yet, is
	// dropped on open (Kafka truncates the cache to the log end on load).
	l.AssignEpoch(9)
	if got := l.Epochs(); len(got) != 3 || got[2] != (EpochEntry{9, 6}) {
		t.Fatalf("epochs after assign %v", got)
	}
	l = e.reopen(l)
	if got := l.Epochs(); len(got) != 2 || got[1] != (EpochEntry{2, 4}) {
		t.Fatalf("epochs after reopen %v", got)
	}
	mustAppend(t, l, valueBatch(t, 1, 1, e.clock.Ms()))
	l.AppendAsLeader(valueBatch(t, 1, 1, e.clock.Ms()), 9)
	l = e.reopen(l)
	if got := l.Epochs(); len(got) != 3 || got[2] != (EpochEntry{9, 7}) {
		t.Fatalf("epochs after append and reopen %v", got)
	}
	// Advancing the log start offset moves the first epoch up.
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.SetLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	if got := l.Epochs(); got[0] != (EpochEntry{2, 5}) {
		t.Fatalf("epochs after log start moved %v", got)
	}
	l.Close()
}

func TestFollowerAppend(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	var data []byte
	for i := int64(0); i < 5; i++ {
		b := valueBatch(t, 2, 20, e.clock.Ms())
		b.SetBaseOffset(10 + 2*i)
		b.SetLeaderEpoch(3)
		data = append(data, b...)
	}
	l.TruncateFullyAndStartAt(10)
	info, err := l.AppendAsFollower(data)
	if err != nil || info.BaseOffset != 10 || info.LastOffset != 19 || l.LogEndOffset() != 20 {
		t.Fatalf("follower append %+v %v end %d", info, err, l.LogEndOffset())
	}
	if _, err := l.AppendAsFollower(data[:len(data)/5]); err == nil {
		t.Fatal("follower append below the log end accepted")
	}
	bad := append([]byte(nil), data[:len(data)/5]...)
	record.Batch(bad).SetBaseOffset(20)
	bad[len(bad)-1] ^= 1
	if _, err := l.AppendAsFollower(bad); !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("corrupt follower batch: %v", err)
	}
	if got := l.Epochs(); len(got) != 1 || got[0] != (EpochEntry{3, 10}) {
		t.Fatalf("epochs %v", got)
	}
}

// TestIndexRebuiltOnOpen: indexes that are empty, torn or missing are
// rebuilt on open, even for segments below the recovery point.
func TestIndexRebuiltOnOpen(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	l := e.open(cfg)
	want := appendMixed(t, e, l, 40)
	l.Roll()
	mustAppend(t, l, valueBatch(t, 1, 10, e.clock.Ms()))
	entries := l.segments()[0].index.entries()
	tsEntries := len(l.segments()[0].timeIndex.ents)
	if entries < 3 {
		t.Fatalf("only %d index entries", entries)
	}
	end := l.LogEndOffset()
	l.Close()
	idx := segmentPath(e.dir, 0, FileIndex)
	tidx := segmentPath(e.dir, 0, FileTimeIndex)
	damage := []func(){
		func() { truncateFile(t, e, idx, 0) },                 // emptied by a crash
		func() { truncateFile(t, e, idx, offsetEntrySize+3) }, // torn entry
		func() { e.fs.Remove(idx); e.fs.Remove(tidx) },        // missing
		func() { truncateFile(t, e, tidx, 5) },
	}
	for i, d := range damage {
		d()
		o := e.opts()
		o.RecoveryPoint = end // the segment is trusted: only its indexes are checked
		l = e.openWith(cfg, o)
		s := l.segments()[0]
		if s.index.entries() != entries || len(s.timeIndex.ents) != tsEntries {
			t.Fatalf("damage %d: %d index entries (want %d), %d time entries (want %d)", i, s.index.entries(), entries, len(s.timeIndex.ents), tsEntries)
		}
		checkEveryOffset(t, l, want)
		l.Close()
	}
}

func truncateFile(t *testing.T, e *testEnv, path string, size int64) {
	t.Helper()
	f, err := e.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(size)
	f.Sync()
	f.Close()
}
