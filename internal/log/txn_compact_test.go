package log

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"weir/internal/record"
	"weir/internal/vfs/vfstest"
)

// putTxn appends a transactional batch of pid with the given "k=v" records.
func putTxn(t *testing.T, e *testEnv, l *Log, pid int64, epoch int16, seq int32, kvs ...string) AppendInfo {
	t.Helper()
	var recs []rec
	for _, p := range kvs {
		k, v, _ := strings.Cut(p, "=")
		recs = append(recs, kv(k, v, e.clock.Ms()))
	}
	b := buildBatch(t, batchSpec{recs: recs, pid: pid, epoch: epoch, seq: seq})
	h := record.HeaderOf(b)
	h.Attributes |= record.TransactionalAttributes
	tb, err := record.BuildRaw(h, b.NumRecords(), b.Payload(), 0)
	if err != nil {
		t.Fatal(err)
	}
	info := mustAppend(t, l, tb)
	e.clock.Advance(time.Millisecond)
	return info
}

// A marker rewritten with a delete horizon is a valid batch that the rest
// of the code accepts.
func TestCleanerRewrittenMarkerIsValid(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	m, l := newCompacted(t, e, cfg)
	putTxn(t, e, l, 9, 3, 0, "a=1") // 0
	mts := e.clock.Ms() - 12345
	orig := MarkerBatch(9, 3, Marker{Commit: true, CoordinatorEpoch: 77}, mts)
	if _, err := l.AppendWith(orig, LeaderAppend{Origin: OriginCoordinator, LeaderEpoch: 0}); err != nil { // 1
		t.Fatal(err)
	}
	put(t, e, l, "a=2")              // 2 supersedes 0
	putTxn(t, e, l, 9, 3, 1, "b=1")  // 3: producer 9's last batch
	mustMarker(t, l, 9, 3, true, 77) // 4
	l.Roll()
	put(t, e, l, "z=1")
	l.SetHighWatermark(l.LogEndOffset())
	now := e.clock.Ms()
	cleanNow(t, m, l)
	var mk record.Batch
	for _, b := range readBatches(t, l, 0) {
		if b.Attributes().Control() && b.BaseOffset() == 1 {
			mk = b
		}
	}
	if mk == nil {
		t.Fatal("marker gone after the first clean")
	}
	a := mk.Attributes()
	if !mk.ValidCRC() || !a.Control() || !a.Transactional() || !a.HasDeleteHorizon() || a.Codec() != record.None ||
		mk.ProducerID() != 9 || mk.ProducerEpoch() != 3 || mk.BaseSequence() != record.NoSequence ||
		mk.BaseOffset() != 1 || mk.LastOffsetDelta() != 0 || mk.NumRecords() != 1 || mk.LeaderEpoch() != orig.LeaderEpoch() ||
		mk.MaxTimestamp() != mts || mk.BaseTimestamp() != now+cfg.DeleteRetentionMs {
		t.Fatalf("rewritten marker header wrong: attrs %x pid %d epoch %d seq %d base %d max %d", a, mk.ProducerID(), mk.ProducerEpoch(), mk.BaseSequence(), mk.BaseTimestamp(), mk.MaxTimestamp())
	}
	if got, ok := ParseMarker(mk); !ok || got != (Marker{Commit: true, CoordinatorEpoch: 77}) {
		t.Fatalf("parsed %+v %v", got, ok)
	}
	rs := records(t, []record.Batch{mk})
	if len(rs) != 1 || rs[0].ts != mts {
		t.Fatalf("marker record timestamp %v, want %d", rs, mts)
	}
	// A follower copying the cleaned log accepts it and ends up with no
	// open transaction.
	all := readBatches(t, l, 0)
	e2 := newEnv(t)
	f := e2.open(cfg)
	defer f.Close()
	for _, b := range all {
		if _, err := f.AppendAsFollower(b); err != nil {
			t.Fatalf("follower append %d: %v", b.BaseOffset(), err)
		}
	}
	f.SetHighWatermark(f.LogEndOffset())
	if f.LastStableOffset() != f.LogEndOffset() {
		t.Fatalf("follower LSO %d, LEO %d", f.LastStableOffset(), f.LogEndOffset())
	}
	// Recovery from scratch (no snapshot, recovery point 0) accepts it.
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	e.delay.run()
	c := e.fs.CrashCloneWith(vfstest.CrashOptions{})
	for _, n := range c.Files() {
		if strings.HasSuffix(n, ".snapshot") {
			c.Remove(n)
		}
	}
	l2 := openOn(t, e, c, cfg, 0)
	defer l2.Close()
	l2.SetHighWatermark(l2.LogEndOffset())
	if l2.LastStableOffset() != l2.LogEndOffset() {
		t.Fatalf("recovered LSO %d, LEO %d", l2.LastStableOffset(), l2.LogEndOffset())
	}
	if got := activeProducerOf(l2, 9); got.CoordinatorEpoch != 77 || got.Epoch != 3 {
		t.Fatalf("recovered producer 9: %+v", got)
	}
	m.Close()
}

func activeProducerOf(l *Log, pid int64) ProducerInfo {
	for _, p := range l.ActiveProducers() {
		if p.ProducerID == pid {
			return p
		}
	}
	return ProducerInfo{}
}

// Truncating to an offset whose newest producer snapshot predates a dropped
// marker must not leave the marker's transaction open: the snapshots that
// hold it open go when the marker does.
func TestCleanerTruncateBelowDroppedMarker(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	m, l := newCompacted(t, e, cfg)
	defer m.Close()
	putTxn(t, e, l, 5, 0, 0, "k=txn")                                       // 0: producer 5 opens a transaction
	l.Roll()                                                                // snapshot at 1: open at 0
	if _, err := appendMarker(l, 5, 0, true, 0, e.clock.Ms()); err != nil { // 1
		t.Fatal(err)
	}
	put(t, e, l, "k=later")                                                 // 2: replaces 0
	put(t, e, l, "x=1")                                                     // 3
	put(t, e, l, "x=2")                                                     // 4
	l.Roll()                                                                // snapshot at 5
	putTxn(t, e, l, 5, 0, 1, "y=t")                                         // 5: producer 5's last batch
	if _, err := appendMarker(l, 5, 0, true, 0, e.clock.Ms()); err != nil { // 6
		t.Fatal(err)
	}
	l.SetHighWatermark(4) // a follower's high watermark
	cleanNow(t, m, l)
	e.clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	cleanNow(t, m, l)
	for _, b := range readBatches(t, l, 0) {
		if b.Attributes().Control() && b.BaseOffset() == 1 {
			t.Fatal("the marker at 1 was not dropped")
		}
	}
	// As a follower truncating to its high watermark.
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	put(t, e, l, "y=1")
	l.SetHighWatermark(l.LogEndOffset())
	if lso := l.LastStableOffset(); lso != l.LogEndOffset() {
		t.Fatalf("LSO stuck at %d (LEO %d): producers %+v", lso, l.LogEndOffset(), l.ActiveProducers())
	}
}

// A crash after the swap of a clean that dropped an ABORT marker and its
// index entry must not leave the entry behind: a read_committed reader
// would skip the producer's later committed records, and the cleaner would
// drop them.
func TestCleanerCrashAfterDroppingMarkerEntries(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	m, l := newCompacted(t, e, cfg)
	putTxn(t, e, l, 5, 0, 0, "a=aborted") // 0
	mustMarker(t, l, 5, 0, false, 0)      // 1 abort: entry {5 0 1}
	put(t, e, l, "a=1")                   // 2
	putTxn(t, e, l, 5, 0, 1, "b=1")       // 3
	mustMarker(t, l, 5, 0, true, 0)       // 4
	l.Roll()
	put(t, e, l, "z=1") // 5
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l) // marker 1 gets its horizon
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	// The crash comes once the swap is durable: the .log.swap rename and
	// the directory sync after it are done.
	var clone *vfstest.MemFS
	swapped, synced := false, false
	e.inject.Set(vfstest.InjectorFunc(func(op vfstest.Op) error {
		switch {
		case synced:
			if clone == nil {
				clone = e.fs.CrashClone()
			}
		case swapped && op.Kind == vfstest.OpSyncDir:
			synced = true
		case op.Kind == vfstest.OpRename && strings.HasSuffix(op.NewPath, ".log.swap"):
			swapped = true
		}
		return nil
	}))
	cleanNow(t, m, l) // drops marker 1 and its entry
	e.inject.Set(nil)
	if got := allAborted(l); len(got) != 0 {
		t.Fatalf("live log keeps %v", got)
	}
	m.Close()
	if clone == nil {
		t.Fatal("no swap")
	}
	// Restart from the crash.
	e.fs = clone
	m, l = newCompacted(t, e, cfg)
	defer m.Close()
	t.Logf("after crash: txn index %v, files %v", allAborted(l), clone.Files())
	// Producer 5 commits a new transaction; everything is cleaned again.
	l.SetHighWatermark(l.LogEndOffset())
	putTxn(t, e, l, 5, 0, 2, "c=committed")
	mustMarker(t, l, 5, 0, true, 0)
	put(t, e, l, "d=1")
	l.Roll()
	put(t, e, l, "z=2")
	l.SetHighWatermark(l.LogEndOffset())
	if v := rcView(t, l); v["b"] != "1" || v["c"] != "committed" {
		t.Errorf("before clean: read_committed view %v, want b=1 and c=committed", v)
	}
	cleanNow(t, m, l)
	if v := rcView(t, l); v["b"] != "1" || v["c"] != "committed" {
		t.Errorf("after clean: read_committed view %v, want b=1 and c=committed (log %v)", v, view(t, l))
	}
}

// An ABORT marker in the active segment still makes its data (in a
// cleaned segment) aborted for the cleaner: the aborted record must not
// replace the committed one.
func TestCleanerAbortMarkerInActiveSegment(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	m, l := newCompacted(t, e, cfg)
	defer m.Close()
	put(t, e, l, "k=committed")           // 0
	putTxn(t, e, l, 5, 0, 0, "k=aborted") // 1
	l.Roll()
	mustMarker(t, l, 5, 0, false, 0) // 2 abort, in the active segment
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l)
	vis := rcView(t, l)
	if vis["k"] != "committed" {
		t.Fatalf("read_committed view of k: %q (log %v)", vis["k"], view(t, l))
	}
}

// rcView reads l from its start to its LSO as a read_committed consumer
// (Kafka's CompletedFetch logic, one aborted list per fetch) and returns
// the last value of each key, plus the offsets of visible records.
func rcViewDetail(l *Log, maxBytes int) (map[string]string, map[int64]bool, error) {
	out := map[string]string{}
	seen := map[int64]bool{}
	lso := l.LastStableOffset()
	for off := l.LogStartOffset(); off < lso; {
		sl, err := l.Read(off, maxBytes, lso, true)
		if err != nil {
			return nil, nil, err
		}
		if sl.Size == 0 {
			break
		}
		buf := make([]byte, sl.Size)
		if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil {
			return nil, nil, err
		}
		ab, ok := l.AbortedTxns(off, sl)
		if !ok {
			return nil, nil, errors.New("segment replaced during the read")
		}
		sort.Slice(ab, func(i, j int) bool { return ab[i].FirstOffset < ab[j].FirstOffset })
		abortedPids := map[int64]bool{}
		progressed := false
		for data := []byte(buf); len(data) > 0; {
			b, rest, err := record.Next(data)
			if errors.Is(err, record.ErrShort) {
				break
			}
			if err != nil {
				return nil, nil, err
			}
			data = rest
			progressed = true
			next := b.NextOffset()
			if b.ProducerID() >= 0 {
				for len(ab) > 0 && ab[0].FirstOffset <= b.LastOffset() {
					abortedPids[ab[0].ProducerID] = true
					ab = ab[1:]
				}
				if b.Attributes().Control() {
					if mk, ok := ParseMarker(b); ok && !mk.Commit {
						delete(abortedPids, b.ProducerID())
					}
				} else if b.Attributes().Transactional() && abortedPids[b.ProducerID()] {
					off = next
					continue
				}
			}
			if !b.Attributes().Control() {
				raw, err := b.Decoded(nil, 1<<30)
				if err != nil {
					return nil, nil, err
				}
				it := record.NewRecords(raw, b.NumRecords())
				for r, ok := it.Next(); ok; r, ok = it.Next() {
					o := b.BaseOffset() + int64(r.OffsetDelta)
					if o < off || o >= lso {
						continue
					}
					out[string(r.Key)] = string(r.Value)
					seen[o] = true
				}
			}
			off = next
		}
		if !progressed {
			return nil, nil, fmt.Errorf("no whole batch at %d", off)
		}
	}
	return out, seen, nil
}

func rcView(t *testing.T, l *Log) map[string]string {
	t.Helper()
	v, _, err := rcViewDetail(l, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type modelRec struct {
	offset int64
	key    string
	value  string
	pid    int64 // -1 for non-transactional
	marker int64 // offset of its transaction's marker, -1 while open
	abort  bool
}

// A random transactional workload with compaction, a small key map, merged
// groups, delete horizons passing, restarts and crashes during cleans; the
// read_committed view and the LSO are checked against a model, and every
// producer snapshot left after a clean must rebuild the live state.
func TestCleanerRandomTransactions(t *testing.T) {
	for seed := int64(0); seed < 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandomTxnCompaction(t, seed) })
	}
}

func runRandomTxnCompaction(t *testing.T, seed int64) {
	r := seeded(t, seed)
	e := newEnv(t)
	cfg := compactConfig()
	cfg.SegmentBytes = int64(250 + r.Intn(1500))
	cfg.DeleteRetentionMs = int64(1 + r.Intn(3000))
	m, l := newCompacted(t, e, cfg)
	m.cleaner.maxKeys = 3 + r.Intn(40)
	defer func() { m.Close() }()
	var recs []*modelRec
	open := map[int64][]*modelRec{}
	seqs := map[int64]int32{}
	markerOf := map[int64]bool{} // offsets of all markers ever appended
	val := 0
	for round := 0; round < 10; round++ {
		for i := 0; i < 10+r.Intn(40); i++ {
			switch x := r.Intn(10); {
			case x < 4:
				val++
				k := fmt.Sprintf("k%d", r.Intn(8))
				info := put(t, e, l, fmt.Sprintf("%s=n%d", k, val))
				recs = append(recs, &modelRec{offset: info.BaseOffset, key: k, value: fmt.Sprintf("n%d", val), pid: -1, marker: -1})
			case x < 7:
				pid := int64(1 + r.Intn(3))
				n := 1 + r.Intn(2)
				var kvs []string
				for j := 0; j < n; j++ {
					val++
					kvs = append(kvs, fmt.Sprintf("k%d=t%d", r.Intn(8), val))
				}
				info := putTxn(t, e, l, pid, 0, seqs[pid], kvs...)
				seqs[pid] += int32(n)
				for j, p := range kvs {
					k, v, _ := strings.Cut(p, "=")
					rc := &modelRec{offset: info.BaseOffset + int64(j), key: k, value: v, pid: pid, marker: -1}
					recs = append(recs, rc)
					open[pid] = append(open[pid], rc)
				}
			case x < 9:
				var pids []int64
				for p := range open {
					pids = append(pids, p)
				}
				sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
				if len(pids) == 0 {
					continue
				}
				pid := pids[r.Intn(len(pids))]
				commit := r.Intn(2) == 0
				info := mustMarker(t, l, pid, 0, commit, 0)
				markerOf[info.BaseOffset] = true
				for _, rc := range open[pid] {
					rc.marker, rc.abort = info.BaseOffset, !commit
				}
				delete(open, pid)
			default:
				l.Roll()
			}
		}
		// Sometimes close every transaction so the LSO can move.
		if r.Intn(2) == 0 {
			var pids []int64
			for p := range open {
				pids = append(pids, p)
			}
			sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
			for _, pid := range pids {
				commit := r.Intn(2) == 0
				info := mustMarker(t, l, pid, 0, commit, 0)
				markerOf[info.BaseOffset] = true
				for _, rc := range open[pid] {
					rc.marker, rc.abort = info.BaseOffset, !commit
				}
				delete(open, pid)
			}
		}
		l.Roll()
		put(t, e, l, "zz=1")
		recs = append(recs, &modelRec{offset: l.LogEndOffset() - 1, key: "zz", value: "1", pid: -1, marker: -1})
		l.SetHighWatermark(l.LogEndOffset())
		if err := l.Flush(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		for c := 0; c < 1+r.Intn(3); c++ {
			e.clock.Advance(time.Duration(r.Int63n(2*cfg.DeleteRetentionMs+1)) * time.Millisecond)
			var clones []*vfstest.MemFS
			done := func() {}
			if r.Intn(4) == 0 {
				done = e.afterEachStep(func() {
					if r.Intn(3) == 0 {
						clones = append(clones, e.fs.CrashCloneWith(vfstest.CrashOptions{Rand: r, DirOps: true, TornWrites: true}))
					}
				})
			}
			if _, err := m.cleaner.cleanOnce(); err != nil {
				t.Fatal(err)
			}
			done()
			checkTxnModel(t, "after clean", l, recs, markerOf, open)
			checkEverySnapshot(t, e, l, cfg)
			for i, c := range clones {
				l2 := openOn(t, e, c, cfg, l.LogEndOffset())
				l2.SetHighWatermark(l2.LogEndOffset())
				checkTxnModel(t, fmt.Sprintf("crash clone %d", i), l2, recs, markerOf, open)
				l2.Close()
			}
		}
		if r.Intn(3) == 0 {
			e.delay.run()
			m.Close()
			m, l = newCompacted(t, e, cfg)
			m.cleaner.maxKeys = 3 + r.Intn(40)
			l.SetHighWatermark(l.LogEndOffset())
			checkTxnModel(t, "after restart", l, recs, markerOf, open)
		}
	}
}

func checkTxnModel(t *testing.T, when string, l *Log, recs []*modelRec, markerOf map[int64]bool, open map[int64][]*modelRec) {
	t.Helper()
	batches := readBatches(t, l, 0)
	present := map[int64]bool{}
	controls := map[int64]bool{}
	for _, b := range batches {
		for o := b.BaseOffset(); o <= b.LastOffset(); o++ {
			present[o] = true
		}
		if b.Attributes().Control() {
			controls[b.BaseOffset()] = true
		}
	}
	dataRecs := map[int64]bool{}
	for _, rc := range records(t, batches) {
		dataRecs[rc.offset] = true
	}
	// (b) a kept record of a decided transaction keeps its marker.
	for _, rc := range recs {
		if rc.pid >= 0 && rc.marker >= 0 && dataRecs[rc.offset] && !controls[rc.marker] {
			t.Fatalf("%s: record %d (%s=%s, pid %d) kept but its marker %d is gone", when, rc.offset, rc.key, rc.value, rc.pid, rc.marker)
		}
	}
	// (c) every transaction index entry has its marker.
	for _, a := range allAborted(l) {
		if !controls[a.LastOffset] {
			t.Errorf("%s: transaction index entry %+v without its marker", when, a)
		}
	}
	// (d) the LSO is the first offset of the earliest open transaction.
	wantLSO := l.HighWatermark()
	for _, rs := range open {
		wantLSO = min(wantLSO, rs[0].offset)
	}
	if got := l.LastStableOffset(); got != max(wantLSO, l.LogStartOffset()) {
		t.Fatalf("%s: LSO %d, want %d (producers %+v)", when, got, wantLSO, l.ActiveProducers())
	}
	// (a) read_committed sees the latest committed value of every key
	// below the LSO and nothing aborted, with small and big fetches.
	lso := l.LastStableOffset()
	want := map[string]string{}
	byOffset := map[int64]*modelRec{}
	for _, rc := range recs {
		byOffset[rc.offset] = rc
		if rc.offset >= lso {
			continue
		}
		if rc.pid < 0 || rc.marker >= 0 && !rc.abort {
			want[rc.key] = rc.value
		}
	}
	for _, mb := range []int{1 << 20, 150} {
		got, seen, err := rcViewDetail(l, mb)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for o := range seen {
			if rc := byOffset[o]; rc != nil && rc.pid >= 0 && (rc.marker < 0 || rc.abort) {
				t.Fatalf("%s (fetch %d): read_committed sees %d %s=%s of pid %d (marker %d abort %v)", when, mb, o, rc.key, rc.value, rc.pid, rc.marker, rc.abort)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s (fetch %d): read_committed view\n got %v\nwant %v", when, mb, got, want)
		}
	}
}

// A read whose segment compaction replaced before its aborted transactions
// were looked up must be read again: the old file still holds the aborted
// records, and the new indexes no longer describe it.
func TestAbortedTxnsOfReplacedSegment(t *testing.T) {
	e := newEnv(t)
	m, l := newCompacted(t, e, compactConfig())
	defer m.Close()
	put(t, e, l, "k=1")
	putTxn(t, e, l, 5, 0, 0, "k=aborted")
	mustMarker(t, l, 5, 0, false, 0)
	put(t, e, l, "k=2")
	l.Roll()
	put(t, e, l, "z=1")
	l.SetHighWatermark(l.LogEndOffset())
	sl, err := l.Read(0, 1<<20, l.LastStableOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := l.AbortedTxns(0, sl); !ok || len(got) != 1 {
		t.Fatalf("aborted transactions before cleaning: %v, %v", got, ok)
	}
	cleanNow(t, m, l)
	if got, ok := l.AbortedTxns(0, sl); ok {
		t.Fatalf("a slice of a replaced segment got aborted transactions %v", got)
	}
}

// checkEverySnapshot rebuilds l from each producer snapshot left in its
// directory alone (replaying the compacted log to its end): every one must
// give the live log's producers and open transactions.
func checkEverySnapshot(t *testing.T, e *testEnv, l *Log, cfg Config) {
	t.Helper()
	if err := l.Flush(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	live := l.ActiveProducers()
	offs, err := listSnapshots(e.fs, e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		c := e.fs.CrashClone()
		for _, n := range c.Files() {
			if strings.HasSuffix(n, ".snapshot") && n != snapshotPath(e.dir, o) {
				c.Remove(n)
			}
		}
		l2 := openOn(t, e, c, cfg, l.LogEndOffset())
		got := l2.ActiveProducers()
		l2.Close()
		lm := map[int64]ProducerInfo{}
		for _, p := range live {
			lm[p.ProducerID] = p
		}
		gm := map[int64]bool{}
		for _, p := range got {
			gm[p.ProducerID] = true
		}
		for _, q := range live {
			if !gm[q.ProducerID] {
				t.Errorf("from snapshot %d (of %v): producer %+v lost (log start %d, first segment %d)", o, offs, q, l.LogStartOffset(), l.segments()[0].base)
			}
		}
		for _, p := range got {
			q := lm[p.ProducerID]
			if p.TxnStartOffset != q.TxnStartOffset {
				t.Fatalf("from snapshot %d (of %v): producer %d txn start %d, live %d", o, offs, p.ProducerID, p.TxnStartOffset, q.TxnStartOffset)
			}
			if p != q {
				t.Logf("from snapshot %d: producer %+v, live %+v", o, p, q)
			}
		}
	}
}

// The snapshot at or below the first segment (kept by retention for
// producers whose batches are all below the log start) outlives a dropped
// marker: a marker whose transaction it holds open stays. The log start
// moves only under a delete policy (DeleteRecords), which keeps markers
// anyway; the policy may then change to compact alone.
func TestCleanerKeepsSnapshotAnchor(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	cfg.Delete = true // compact,delete: DeleteRecords allowed
	m, l := newCompacted(t, e, cfg)
	defer m.Close()
	putSpec(t, e, l, batchSpec{pid: 7, epoch: 0, seq: 0}, "x=1") // 0: idempotent producer 7
	putTxn(t, e, l, 5, 0, 0, "k=txn")                            // 1: producer 5 opens a transaction
	put(t, e, l, "a=1")                                          // 2
	l.Roll()                                                     // snapshot at 3
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.SetLogStartOffset(3); err != nil { // DeleteRecords
		t.Fatal(err)
	}
	if _, err := appendMarker(l, 5, 0, true, 0, e.clock.Ms()); err != nil { // 3
		t.Fatal(err)
	}
	put(t, e, l, "b=1") // 4
	put(t, e, l, "b=2") // 5
	l.Roll()            // snapshot at 6
	put(t, e, l, "z=1") // 6
	l.SetHighWatermark(5)
	marker3 := func() bool {
		for _, b := range readBatches(t, l, l.LogStartOffset()) {
			if b.Attributes().Control() && b.BaseOffset() == 3 {
				return true
			}
		}
		return false
	}
	cleanNow(t, m, l)
	e.clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	m.cleaner.cleanOnce()
	if !marker3() {
		t.Fatal("a compact,delete log dropped a marker")
	}
	cfg.Delete = false
	l.SetConfig(cfg)
	put(t, e, l, "b=3")
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	e.clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	cleanNow(t, m, l)
	e.clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	m.cleaner.cleanOnce()
	if !marker3() {
		t.Fatal("dropped the marker closing a transaction the anchor snapshot holds open")
	}
	if offs, _ := listSnapshots(e.fs, e.dir); len(offs) == 0 || offs[0] != 3 {
		t.Fatalf("snapshots %v: the one at 3 is gone", offs)
	}
	if err := l.TruncateTo(5); err != nil { // a follower truncating to its HW
		t.Fatal(err)
	}
	if got := activeProducerOf(l, 7); got.ProducerID != 7 {
		t.Errorf("producer 7's state lost by the truncation: %+v", l.ActiveProducers())
	}
	if got := activeProducerOf(l, 5); got.TxnStartOffset != -1 {
		t.Errorf("producer 5's transaction open after the truncation: %+v", got)
	}
	// Producer 7 retries its batch (seq 0): it must be a duplicate.
	info, err := l.AppendAsLeader(buildBatch(t, batchSpec{pid: 7, epoch: 0, seq: 0, recs: []rec{kv("x", "1", e.clock.Ms())}}), 0)
	if err != nil || !info.Duplicate {
		t.Errorf("retry of producer 7's batch: %+v, %v; want a duplicate", info, err)
	}
}
