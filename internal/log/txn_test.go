package log

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"weir/internal/record"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// txnBatch is idemBatch marked transactional.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) record.Batch {
	t.Helper()
	b := idemBatch(t, pid, epoch, seq, n, ts)
	h := record.HeaderOf(b)
	h.Attributes |= record.TransactionalAttributes
	out, err := record.BuildRaw(h, b.NumRecords(), b.Payload(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func appendMarker(l *Log, pid int64, epoch int16, commit bool, coordEpoch int32, ts int64) (AppendInfo, error) {
	return l.AppendWith(MarkerBatch(pid, epoch, Marker{Commit: commit, CoordinatorEpoch: coordEpoch}, ts), LeaderAppend{Origin: OriginCoordinator})
}

func mustMarker(t *testing.T, l *Log, pid int64, epoch int16, commit bool, coordEpoch int32) AppendInfo {
	t.Helper()
	info, err := appendMarker(l, pid, epoch, commit, coordEpoch, 1000)
	if err != nil {
		t.Fatalf("marker: %v", err)
	}
	return info
}

// allAborted lists every transaction index entry of the log, in order.
func allAborted(l *Log) []AbortedTxn {
	var out []AbortedTxn
	for _, s := range l.segments() {
		out = append(out, s.txns.all()...)
	}
	return out
}

func TestMarkerEncoding(t *testing.T) {
	for _, m := range []Marker{{Commit: true, CoordinatorEpoch: 7}, {CoordinatorEpoch: math.MaxInt32}} {
		b := MarkerBatch(42, 3, m, 1234)
		a := b.Attributes()
		if !a.Control() || !a.Transactional() || b.ProducerID() != 42 || b.ProducerEpoch() != 3 ||
			b.BaseSequence() != record.NoSequence || b.NumRecords() != 1 || b.MaxTimestamp() != 1234 || !b.ValidCRC() {
			t.Fatalf("marker batch header wrong: %x", []byte(b))
		}
		// Kafka's layout: key version 0 | type, value version 0 | epoch.
		raw, _ := b.Decoded(nil, 1<<20)
		r, _ := record.NewRecords(raw, 1).Next()
		wantType := byte(0)
		if m.Commit {
			wantType = 1
		}
		if fmt.Sprint(r.Key) != fmt.Sprint([]byte{0, 0, 0, wantType}) || len(r.Value) != 6 || r.Value[0] != 0 || r.Value[1] != 0 {
			t.Fatalf("marker record key %x value %x", r.Key, r.Value)
		}
		if got, ok := ParseMarker(b); !ok || got != m {
			t.Fatalf("parsed %+v %v, want %+v", got, ok, m)
		}
	}
	if _, ok := ParseMarker(valueBatch(t, 1, 10, 1)); ok {
		t.Fatal("a data batch parsed as a marker")
	}
}

func TestTxnLastStableOffsetAndAbortIndex(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	ts := e.clock.Ms()
	mustAppend(t, l, txnBatch(t, 1, 1, 0, 2, ts)) // 0-1: p1 opens at 0
	mustAppend(t, l, valueBatch(t, 1, 10, ts))    // 2
	mustAppend(t, l, txnBatch(t, 2, 0, 0, 1, ts)) // 3: p2 opens at 3
	l.SetHighWatermark(l.LogEndOffset())
	if got := l.LastStableOffset(); got != 0 {
		t.Fatalf("LSO %d with p1 open at 0", got)
	}
	abort := mustMarker(t, l, 1, 1, false, 5) // 4
	if abort.BaseOffset != 4 {
		t.Fatalf("marker at %d", abort.BaseOffset)
	}
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 3}}
	if got := allAborted(l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("aborted %v, want %v", got, want)
	}
	l.SetHighWatermark(4) // the marker is not below the HW yet
	if got := l.LastStableOffset(); got != 0 {
		t.Fatalf("LSO %d before the abort marker is replicated", got)
	}
	l.SetHighWatermark(5)
	if got := l.LastStableOffset(); got != 3 {
		t.Fatalf("LSO %d, want p2's first offset 3", got)
	}
	mustMarker(t, l, 2, 0, true, 5) // 5: commit p2
	l.SetHighWatermark(l.LogEndOffset())
	if got := l.LastStableOffset(); got != 6 {
		t.Fatalf("LSO %d with no open transaction, want the HW 6", got)
	}
	if len(allAborted(l)) != 1 {
		t.Fatal("a COMMIT was indexed")
	}
	// A read from 0 learns of p1's aborted transaction; from 5 it does not.
	sl, err := l.Read(0, 1<<20, l.LastStableOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := l.AbortedTxns(0, sl); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("aborted for a read at 0: %v", got)
	}
	sl, _ = l.Read(5, 1<<20, l.LastStableOffset(), true)
	if got, _ := l.AbortedTxns(5, sl); len(got) != 0 {
		t.Fatalf("aborted for a read at 5: %v", got)
	}
	ps := l.ActiveProducers()
	if len(ps) != 2 || ps[0] != (ProducerInfo{ProducerID: 1, Epoch: 1, LastSequence: 1, LastTimestamp: 1000, CoordinatorEpoch: 5, TxnStartOffset: -1}) ||
		ps[1].TxnStartOffset != -1 || ps[1].CoordinatorEpoch != 5 {
		t.Fatalf("active producers %+v", ps)
	}
}

func TestTxnFencing(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	ts := e.clock.Ms()
	mustAppend(t, l, txnBatch(t, 1, 3, 0, 1, ts))
	mustMarker(t, l, 1, 3, true, 7)
	mustAppend(t, l, txnBatch(t, 1, 3, 1, 1, ts)) // a new transaction
	end := l.LogEndOffset()
	// A late marker of an older producer epoch, or from an older
	// coordinator epoch, cannot end the new transaction.
	if _, err := appendMarker(l, 1, 2, false, 7, ts); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("stale producer epoch marker: %v", err)
	}
	if _, err := appendMarker(l, 1, 3, false, 6, ts); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("stale coordinator epoch marker: %v", err)
	}
	if l.LogEndOffset() != end || l.ActiveProducers()[0].TxnStartOffset != 2 {
		t.Fatal("a fenced marker changed the log")
	}
	// A non-transactional batch cannot interleave with the transaction,
	// and a stale epoch cannot write to it.
	expectErr(t, l, idemBatch(t, 1, 3, 2, 1, ts), ErrInvalidTxnState)
	expectErr(t, l, txnBatch(t, 1, 2, 0, 1, ts), ErrInvalidProducerEpoch)
	// A newer coordinator epoch and producer epoch (a bumped abort) may.
	mustMarker(t, l, 1, 4, false, 8)
	if p := l.ActiveProducers()[0]; p.Epoch != 4 || p.CoordinatorEpoch != 8 || p.TxnStartOffset != -1 {
		t.Fatalf("after the abort: %+v", p)
	}
}

func TestTxnVerificationGuard(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	defer l.Close()
	ts := e.clock.Ms()
	verified := func(g VerificationGuard) LeaderAppend { return LeaderAppend{VerifyTxn: true, Guard: g} }
	if _, err := l.AppendWith(txnBatch(t, 1, 0, 0, 1, ts), verified(NoGuard)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified transactional append: %v", err)
	}
	g := l.StartTxnVerification(1, 0)
	if g == NoGuard || l.StartTxnVerification(1, 0) != g {
		t.Fatal("guard not kept while verifying")
	}
	if _, err := l.AppendWith(txnBatch(t, 1, 0, 0, 1, ts), verified(g+1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("another guard: %v", err)
	}
	if _, err := l.AppendWith(txnBatch(t, 1, 0, 0, 1, ts), verified(g)); err != nil {
		t.Fatal(err)
	}
	// The transaction is open: no verification for its later batches.
	if l.StartTxnVerification(1, 0) != NoGuard {
		t.Fatal("verification asked for an open transaction")
	}
	if _, err := l.AppendWith(txnBatch(t, 1, 0, 1, 1, ts), verified(NoGuard)); err != nil {
		t.Fatal(err)
	}
	mustMarker(t, l, 1, 0, true, 0)
	// A check begun before a marker is void once the marker lands: the
	// coordinator's "yes" was about the transaction that just ended.
	g2 := l.StartTxnVerification(1, 0)
	if g2 == NoGuard || g2 == g {
		t.Fatalf("guard %d after the marker (old %d)", g2, g)
	}
	mustMarker(t, l, 1, 0, false, 0)
	if _, err := l.AppendWith(txnBatch(t, 1, 0, 2, 1, ts), verified(g2)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append with a guard retired by a marker: %v", err)
	}
	// Without verification required, any transactional batch opens one.
	if _, err := l.AppendWith(txnBatch(t, 1, 0, 2, 1, ts), LeaderAppend{}); err != nil {
		t.Fatal(err)
	}
}

// txnWorkload appends a random mix of transactional producers (commits and
// aborts), idempotent and plain batches, flushing and moving the HW now
// and then.
func txnWorkload(t *testing.T, r *rand.Rand, e *testEnv, l *Log, n int) {
	t.Helper()
	seqs := map[int64]int32{}
	for i := 0; i < n; i++ {
		ts := e.clock.Ms()
		pid := int64(1 + r.Intn(4))
		switch k := r.Intn(10); {
		case k < 5:
			n := 1 + r.Intn(3)
			if _, err := l.AppendAsLeader(txnBatch(t, pid, 0, seqs[pid], n, ts), 0); err != nil {
				t.Fatal(err)
			}
			seqs[pid] += int32(n)
		case k < 8:
			if _, err := appendMarker(l, pid, 0, r.Intn(2) == 0, 0, ts); err != nil {
				t.Fatal(err)
			}
		default:
			mustAppend(t, l, valueBatch(t, 1+r.Intn(3), r.Intn(200), ts))
		}
		if r.Intn(6) == 0 {
			l.SetHighWatermark(l.LogEndOffset() - int64(r.Intn(3)))
		}
		if r.Intn(10) == 0 {
			if err := l.Flush(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// txnModel replays batches the way the partition must: the aborted
// transactions (with their last stable offsets) and the open ones.
func txnModel(batches []record.Batch) (aborted []AbortedTxn, open map[int64]int64) {
	open = map[int64]int64{}
	for _, b := range batches {
		pid := b.ProducerID()
		if pid < 0 {
			continue
		}
		if m, ok := ParseMarker(b); ok {
			first, wasOpen := open[pid]
			delete(open, pid)
			if wasOpen && !m.Commit {
				lso := int64(math.MaxInt64)
				for _, o := range open {
					lso = min(lso, o)
				}
				if lso == math.MaxInt64 {
					lso = b.BaseOffset() + 1
				}
				aborted = append(aborted, AbortedTxn{pid, first, b.BaseOffset(), lso})
			}
			continue
		}
		if _, ok := open[pid]; !ok && b.Attributes().Transactional() {
			open[pid] = b.BaseOffset()
		}
	}
	return aborted, open
}

func checkTxnState(t *testing.T, l *Log, batches []record.Batch) {
	t.Helper()
	aborted, open := txnModel(batches)
	if got := allAborted(l); fmt.Sprint(got) != fmt.Sprint(aborted) {
		t.Fatalf("transaction index\n got %v\nwant %v", got, aborted)
	}
	l.SetHighWatermark(l.LogEndOffset())
	want := l.LogEndOffset()
	for _, o := range open {
		want = min(want, o)
	}
	if got := l.LastStableOffset(); got != want {
		t.Fatalf("LSO %d, want %d (open %v)", got, want, open)
	}
	for _, p := range l.ActiveProducers() {
		first, ok := open[p.ProducerID]
		if !ok {
			first = -1
		}
		if p.TxnStartOffset != first {
			t.Fatalf("producer %d transaction starts at %d, want %d", p.ProducerID, p.TxnStartOffset, first)
		}
	}
}

func TestTxnIndexReopenTruncateRetention(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 600
	l := e.open(cfg)
	r := seeded(t, 7)
	txnWorkload(t, r, e, l, 150)
	if len(allAborted(l)) == 0 || l.NumSegments() < 4 {
		t.Fatalf("workload too small: %d aborted, %d segments", len(allAborted(l)), l.NumSegments())
	}
	checkTxnState(t, l, readBatches(t, l, 0))
	l = e.reopen(l)
	checkTxnState(t, l, readBatches(t, l, 0))
	// Truncation drops the entries of the markers it removes.
	all := readBatches(t, l, 0)
	cut := all[len(all)/2].BaseOffset()
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	checkTxnState(t, l, all[:len(all)/2])
	l = e.reopen(l)
	checkTxnState(t, l, all[:len(all)/2])
	// Retention deletes the transaction indexes with their segments.
	segs := l.segments()
	gone := segs[1].base
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.SetLogStartOffset(segs[2].base); err != nil {
		t.Fatal(err)
	}
	e.delay.run()
	for _, f := range e.fs.Files() {
		if strings.HasSuffix(f, fmt.Sprintf("%020d.txnindex", gone)) || strings.HasSuffix(f, ".deleted") {
			t.Fatalf("%s left after retention", f)
		}
	}
	for _, a := range allAborted(l) {
		if a.LastOffset < segs[2].base {
			t.Fatalf("entry %v of a deleted segment", a)
		}
	}
	l.Close()
}

func TestTxnSnapshotKeepsOpenTransactions(t *testing.T) {
	e := newEnv(t)
	l := e.open(smallConfig())
	ts := e.clock.Ms()
	mustAppend(t, l, valueBatch(t, 2, 10, ts))
	mustAppend(t, l, txnBatch(t, 9, 2, 0, 3, ts)) // open at 2
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, valueBatch(t, 2, 10, ts))
	l.SetHighWatermark(l.LogEndOffset())
	// A clean close snapshots at the log end: nothing is replayed, and the
	// open transaction still holds the LSO back.
	l = e.reopen(l)
	if l.LastStableOffset() != 2 {
		t.Fatalf("LSO %d after reopen, want 2", l.LastStableOffset())
	}
	snap, err := vfs.ReadFile(e.fs, snapshotPath(e.dir, l.LogEndOffset()))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := decodeProducerSnapshot(snap, l.LogEndOffset())
	if err != nil || ps.ongoing[9] != 2 {
		t.Fatalf("snapshot open transactions %v (%v)", ps.ongoing, err)
	}
	// The reopened log aborts it as the first one would have.
	mustMarker(t, l, 9, 2, false, 0)
	l.SetHighWatermark(l.LogEndOffset())
	if got := allAborted(l); len(got) != 1 || got[0].FirstOffset != 2 || l.LastStableOffset() != l.LogEndOffset() {
		t.Fatalf("after abort: %v, LSO %d", got, l.LastStableOffset())
	}
	l.Close()
}

// TestTxnCrashRecovery crashes logs with transactions at random points:
// the recovered transaction indexes, open transactions and LSO match the
// surviving batches.
func TestTxnCrashRecovery(t *testing.T) {
	for seed := int64(0); seed < crashSeeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			cfg := smallConfig()
			cfg.SegmentBytes = int64(300 + r.Intn(1500))
			cfg.IndexIntervalBytes = int64(30 + r.Intn(300))
			l := e.open(cfg)
			txnWorkload(t, r, e, l, 20+r.Intn(80))
			rp := l.RecoveryPoint()
			crashed := crashClone(r, e.fs)
			l.Close()
			l2 := openOn(t, e, crashed, cfg, rp)
			checkTxnState(t, l2, readBatches(t, l2, 0))
			// And once more after a clean close.
			end := l2.LogEndOffset()
			l2.Close()
			l3 := openOn(t, e, crashed, cfg, end)
			defer l3.Close()
			checkTxnState(t, l3, readBatches(t, l3, 0))
		})
	}
}

// A follower appending the leader's bytes keeps the same transaction
// state, so it can take over as leader.
func TestTxnFollowerMatchesLeader(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	l := e.open(cfg)
	defer l.Close()
	txnWorkload(t, seeded(t, 3), e, l, 120)
	f := newEnv(t)
	fl := f.open(cfg)
	defer fl.Close()
	for off := int64(0); off < l.LogEndOffset(); {
		data, err := l.ReadBytes(off, 1000, l.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		// Whole batches only, as the fetcher hands them over.
		var whole []byte
		for rest := data; len(rest) > 0; {
			b, next, err := record.Next(rest)
			if err != nil {
				break
			}
			whole = append(whole, b...)
			off, rest = b.NextOffset(), next
		}
		if _, err := fl.AppendAsFollower(whole); err != nil {
			t.Fatal(err)
		}
	}
	checkTxnState(t, fl, readBatches(t, fl, 0))
	l.SetHighWatermark(l.LogEndOffset())
	if fl.LastStableOffset() != l.LastStableOffset() || fmt.Sprint(fl.ActiveProducers()) != fmt.Sprint(l.ActiveProducers()) {
		t.Fatalf("follower LSO %d producers %v\nleader LSO %d producers %v", fl.LastStableOffset(), fl.ActiveProducers(), l.LastStableOffset(), l.ActiveProducers())
	}
}

// Compaction does not let an aborted record hide a committed value of its
// key, drops aborted records, and keeps the transaction index.
func TestCleanerAbortedTransactions(t *testing.T) {
	e := newEnv(t)
	m, l := newCompacted(t, e, compactConfig())
	put(t, e, l, "k=committed")           // 0
	putTxn(t, e, l, 5, 0, 0, "k=aborted") // 1
	mustMarker(t, l, 5, 0, false, 0)      // 2
	for i := 0; i < 30; i++ {
		put(t, e, l, fmt.Sprintf("other%d=%d", i%5, i))
	}
	l.Roll()
	put(t, e, l, "z=1")
	l.SetHighWatermark(l.LogEndOffset())
	before := allAborted(l)
	cleanNow(t, m, l)
	var vals []string
	for _, rc := range view(t, l) {
		if rc.key == "k" {
			vals = append(vals, rc.String())
		}
	}
	if len(vals) != 1 || !strings.Contains(vals[0], "committed") {
		t.Fatalf("records of k after cleaning: %v", vals)
	}
	if got := allAborted(l); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("transaction index after cleaning %v, before %v", got, before)
	}
	e.delay.run()
	m.Close()
	m, l = newCompacted(t, e, compactConfig())
	defer m.Close()
	if got := allAborted(l); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("transaction index after restart %v, before %v", got, before)
	}
}

// A marker whose transaction has no batch left gets a delete horizon, and
// the first clean after it drops the marker and its transaction index
// entry; markers of transactions with kept records stay.
func TestCleanerDropsMarkersOfEmptyTransactions(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	m, l := newCompacted(t, e, cfg)
	txn := func(pid int64, seq int32, kv string, commit bool) {
		t.Helper()
		putTxn(t, e, l, pid, 0, seq, kv)
		mustMarker(t, l, pid, 0, commit, 0)
	}
	txn(5, 0, "a=aborted", false) // 0, abort marker 1
	txn(6, 0, "c=1", true)        // 2, commit marker 3
	txn(5, 1, "a=2", true)        // 4, commit marker 5
	txn(6, 1, "c=2", true)        // 6, commit marker 7
	l.Roll()
	put(t, e, l, "z=1")
	l.SetHighWatermark(l.LogEndOffset())
	// markers lists the control batches: offset, and the delete horizon or 0.
	markers := func() string {
		var out []string
		for _, b := range readBatches(t, l, l.LogStartOffset()) {
			if !b.Attributes().Control() || !b.ValidCRC() {
				continue
			}
			h := int64(0)
			if b.Attributes().HasDeleteHorizon() {
				h = b.BaseTimestamp()
			}
			out = append(out, fmt.Sprintf("%d@%d", b.BaseOffset(), h))
		}
		return strings.Join(out, " ")
	}
	values := func() string {
		var out []string
		for _, r := range records(t, readBatches(t, l, l.LogStartOffset())) {
			if r.key >= "a" {
				out = append(out, r.key+"="+r.value)
			}
		}
		return strings.Join(out, " ")
	}

	cleanAt := e.clock.Ms()
	cleanNow(t, m, l)
	horizon := cleanAt + cfg.DeleteRetentionMs
	if got, want := markers(), fmt.Sprintf("1@%d 3@%d 5@0 7@0", horizon, horizon); got != want {
		t.Fatalf("markers after the first clean: %s, want %s", got, want)
	}
	if got := values(); got != "a=2 c=2 z=1" {
		t.Fatalf("records after the first clean: %s", got)
	}
	if got := allAborted(l); len(got) != 1 || got[0].LastOffset != 1 {
		t.Fatalf("transaction index before the horizon: %v", got)
	}

	e.clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	cleanNow(t, m, l)
	if got := markers(); got != "5@0 7@0" {
		t.Fatalf("markers after the horizon: %s", got)
	}
	if got := values(); got != "a=2 c=2 z=1" {
		t.Fatalf("records after the horizon: %s", got)
	}
	if got := allAborted(l); len(got) != 0 {
		t.Fatalf("transaction index keeps dropped markers: %v", got)
	}
	if again, _ := m.cleaner.cleanOnce(); again != nil {
		t.Fatal("cleaned again with nothing due")
	}

	e.delay.run()
	m.Close()
	m, l = newCompacted(t, e, cfg)
	defer m.Close()
	if got := markers(); got != "5@0 7@0" {
		t.Fatalf("markers after restart: %s", got)
	}
	if got := allAborted(l); len(got) != 0 {
		t.Fatalf("transaction index after restart: %v", got)
	}
}

// A crash at any step of a compaction swap keeps every aborted
// transaction in the transaction indexes.
func TestCleanerCrashKeepsTxnIndex(t *testing.T) {
	for seed := int64(0); seed < 10; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			cfg := compactConfig()
			m, l := newCompacted(t, e, cfg)
			seq := int32(0)
			for i := 0; i < 40; i++ {
				put(t, e, l, fmt.Sprintf("k%d=%d", r.Intn(6), i))
				if r.Intn(3) == 0 {
					putTxn(t, e, l, 7, 0, seq, fmt.Sprintf("k%d=t", r.Intn(6)))
					seq++
					mustMarker(t, l, 7, 0, r.Intn(2) == 0, 0)
				}
			}
			l.Roll()
			put(t, e, l, "z=1")
			l.SetHighWatermark(l.LogEndOffset())
			if err := l.Flush(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			before := allAborted(l)
			if len(before) == 0 {
				t.Skip("no aborted transaction")
			}
			var clones []*vfstest.MemFS
			done := e.afterEachStep(func() {
				clones = append(clones, e.fs.CrashCloneWith(vfstest.CrashOptions{Rand: r, DirOps: true, TornWrites: true}))
			})
			cleanNow(t, m, l)
			done()
			if got := allAborted(l); fmt.Sprint(got) != fmt.Sprint(before) {
				t.Fatalf("after cleaning %v, before %v", got, before)
			}
			for i, c := range clones {
				l2 := openOn(t, e, c, cfg, l.LogEndOffset())
				if got := allAborted(l2); fmt.Sprint(got) != fmt.Sprint(before) {
					t.Fatalf("crash point %d: %v, before %v\nfiles %v", i, got, before, c.Files())
				}
				l2.Close()
			}
			m.Close()
		})
	}
}
