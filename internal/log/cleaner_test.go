package log

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"weir/internal/record"
	"weir/internal/vfs/vfstest"
)

func compactConfig() Config {
	c := smallConfig()
	c.Compact, c.Delete = true, false
	c.SegmentBytes = 1024
	c.MinCleanableRatio = 0.1
	c.DeleteRetentionMs = 60_000
	return c
}

func newCompacted(t *testing.T, e *testEnv, cfg Config) (*Manager, *Log) {
	t.Helper()
	return newCompactedWith(t, e, cfg, newTestManager(e, "/data"))
}

// newCompactedWith is newCompacted on the given manager of /data.
func newCompactedWith(t *testing.T, e *testEnv, cfg Config, m *Manager) (*Manager, *Log) {
	t.Helper()
	if err := m.Load(func(TopicPartition) Config { return cfg }); err != nil {
		t.Fatal(err)
	}
	l := m.Get(e.tp)
	if l == nil {
		var err error
		if l, err = m.GetOrCreate(e.tp, [16]byte{1}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	return m, l
}

// put appends one batch of records given as "key=value" ("key=" for a
// tombstone), stamped with the clock.
func put(t *testing.T, e *testEnv, l *Log, kvs ...string) AppendInfo {
	t.Helper()
	return putSpec(t, e, l, batchSpec{}, kvs...)
}

func putSpec(t *testing.T, e *testEnv, l *Log, s batchSpec, kvs ...string) AppendInfo {
	t.Helper()
	for _, p := range kvs {
		k, v, _ := strings.Cut(p, "=")
		s.recs = append(s.recs, kv(k, v, e.clock.Ms()))
	}
	info := mustAppend(t, l, buildBatch(t, s))
	e.clock.Advance(time.Millisecond)
	return info
}

func view(t *testing.T, l *Log) []keyedRecord {
	t.Helper()
	return records(t, readBatches(t, l, l.LogStartOffset()))
}

// latest is what a full clean of everything below end keeps: the last
// record of each key below end, and everything from end on.
func latest(all []keyedRecord, end int64, dropTombstones bool) []keyedRecord {
	last := map[string]int64{}
	for _, r := range all {
		if r.offset < end {
			last[r.key] = r.offset
		}
	}
	var out []keyedRecord
	for _, r := range all {
		if r.offset >= end || last[r.key] == r.offset && !(dropTombstones && r.null) {
			out = append(out, r)
		}
	}
	return out
}

func sameRecords(t *testing.T, got, want []keyedRecord) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
}

func cleanNow(t *testing.T, m *Manager, want *Log) {
	t.Helper()
	got, err := m.cleaner.cleanOnce()
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	if got != want {
		t.Fatalf("cleaned %v, want %v", got, want)
	}
}

func TestCleanerKeepsLatestValue(t *testing.T) {
	e := newEnv(t)
	m, l := newCompacted(t, e, compactConfig())
	r := seeded(t, 1)
	for i := 0; i < 120; i++ {
		put(t, e, l, fmt.Sprintf("k%d=v%d", r.Intn(15), i), fmt.Sprintf("k%d=w%d", r.Intn(15), i))
	}
	l.Roll()
	put(t, e, l, "k1=active", "k2=active")
	l.SetHighWatermark(l.LogEndOffset())
	before := view(t, l)
	segsBefore := l.NumSegments()
	cleanNow(t, m, l)
	end := l.active().base
	got := view(t, l)
	sameRecords(t, got, latest(before, end, false))
	if l.NumSegments() >= segsBefore/2 {
		t.Fatalf("segments not merged: %d before, %d after", segsBefore, l.NumSegments())
	}
	for _, s := range l.segments() {
		if s.size.Load() > l.Config().SegmentBytes {
			t.Fatalf("merged segment %d has %d bytes", s.base, s.size.Load())
		}
	}
	// Every surviving offset is readable; reading from 0 gives increasing
	// offsets with gaps.
	batches := readBatches(t, l, 0)
	checkEveryOffset(t, l, batches)
	if l.LogEndOffset() != before[len(before)-1].offset+1 {
		t.Fatal("log end moved")
	}
	// The checkpoint holds the first dirty offset; nothing is left to clean.
	cp, _ := ReadOffsetCheckpoint(e.fs, "/data/"+CleanerOffsetFile)
	if cp[e.tp] != end {
		t.Fatalf("cleaner checkpoint %v, want %d", cp, end)
	}
	if again, _ := m.cleaner.cleanOnce(); again != nil {
		t.Fatal("cleaned again with nothing dirty")
	}
	// Old files go after the delay; the cleaned log survives a restart,
	// whose cleaner reads the checkpoint instead of cleaning again.
	e.delay.run()
	for _, f := range e.fs.Files() {
		if strings.HasSuffix(f, ".deleted") || strings.HasSuffix(f, ".cleaned") || strings.HasSuffix(f, ".swap") {
			t.Fatalf("left behind: %s", f)
		}
	}
	m.Close()
	m, l = newCompacted(t, e, compactConfig())
	defer m.Close()
	sameRecords(t, view(t, l), got)
	checkEveryOffset(t, l, readBatches(t, l, 0))
	if again, _ := m.cleaner.cleanOnce(); again != nil {
		t.Fatal("a restarted cleaner cleaned a clean log")
	}
}

func TestCleanerTombstones(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	m, l := newCompacted(t, e, cfg)
	defer m.Close()
	put(t, e, l, "a=1", "b=1", "c=1")
	put(t, e, l, "a=", "b=2")
	l.Roll()
	put(t, e, l, "x=1")
	l.SetHighWatermark(l.LogEndOffset())
	before := view(t, l)
	cleanAt := e.clock.Ms()
	cleanNow(t, m, l)
	sameRecords(t, view(t, l), latest(before, 5, false))
	// The tombstone's batch now carries the delete horizon, and every
	// record kept its timestamp.
	tomb := readBatches(t, l, 3)[0]
	if !tomb.Attributes().HasDeleteHorizon() || tomb.BaseTimestamp() != cleanAt+cfg.DeleteRetentionMs || !tomb.ValidCRC() {
		t.Fatalf("tombstone batch: horizon %v base %d", tomb.Attributes().HasDeleteHorizon(), tomb.BaseTimestamp())
	}
	for i, r := range view(t, l) {
		if r.ts != latest(before, 5, false)[i].ts {
			t.Fatalf("record %v changed timestamp", r)
		}
	}
	// Before the horizon, a later clean keeps it.
	e.clock.Advance(30 * time.Second)
	put(t, e, l, "x=2", "c=2")
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l)
	if got := view(t, l); got[0].key != "a" || !got[0].null {
		t.Fatalf("tombstone dropped before its horizon: %v", got)
	}
	// After it, the next clean drops it, even with nothing new to clean.
	e.clock.Advance(31 * time.Second)
	cleanNow(t, m, l)
	for _, r := range view(t, l) {
		if r.key == "a" {
			t.Fatalf("tombstone kept after its horizon: %v", view(t, l))
		}
	}
	if again, _ := m.cleaner.cleanOnce(); again != nil {
		t.Fatal("cleaned again with no tombstones due")
	}
}

func TestCleanerMinCompactionLag(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	cfg.MinCompactionLagMs = 3_600_000
	m, l := newCompacted(t, e, cfg)
	defer m.Close()
	put(t, e, l, "k=old1", "j=1")
	put(t, e, l, "k=old2")
	l.Roll()
	e.clock.Advance(2 * time.Hour)
	put(t, e, l, "k=new")
	l.Roll()
	put(t, e, l, "z=active")
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l)
	got := view(t, l)
	// Only the old segment was cleaned: old1 goes (old2 supersedes it), but
	// old2 stays, as the segment holding "new" is too young to count.
	if len(got) != 4 || got[0].key != "j" || got[1].value != "old2" || got[2].value != "new" {
		t.Fatalf("min.compaction.lag.ms not respected: %v", got)
	}
	e.clock.Advance(2 * time.Hour)
	cleanNow(t, m, l)
	got = view(t, l)
	if len(got) != 3 || got[1].value != "new" {
		t.Fatalf("after the lag: %v", got)
	}
}

func TestCleanerLeavesActiveAndUncommitted(t *testing.T) {
	e := newEnv(t)
	m, l := newCompacted(t, e, compactConfig())
	defer m.Close()
	for i := 0; i < 5; i++ {
		put(t, e, l, "k=v"+fmt.Sprint(i))
	}
	l.SetHighWatermark(l.LogEndOffset())
	if got, _ := m.cleaner.cleanOnce(); got != nil {
		t.Fatal("cleaned the active segment")
	}
	l.Roll()
	for i := 0; i < 5; i++ {
		put(t, e, l, "k=w"+fmt.Sprint(i))
	}
	l.Roll()
	// Only what is below the high watermark is cleaned.
	l.SetHighWatermark(5)
	cleanNow(t, m, l)
	got := view(t, l)
	if len(got) != 6 || got[0].value != "v4" || got[1].value != "w0" {
		t.Fatalf("cleaned past the high watermark: %v", got)
	}
	// A log that is not compacted is never cleaned.
	cfg := compactConfig()
	cfg.Compact = false
	l.SetConfig(cfg)
	l.SetHighWatermark(l.LogEndOffset())
	if got, _ := m.cleaner.cleanOnce(); got != nil {
		t.Fatal("cleaned a delete-only log")
	}
}

func TestCleanerRebuiltBatches(t *testing.T) {
	e := newEnv(t)
	m, l := newCompacted(t, e, compactConfig())
	defer m.Close()
	codecs := []record.Codec{record.Gzip, record.Snappy, record.LZ4, record.Zstd, record.None}
	for i, c := range codecs {
		k := func(key, v string) string { return fmt.Sprintf("%s%d=%s", key, i, v) }
		putSpec(t, e, l, batchSpec{codec: c, pid: 5, epoch: 2, seq: int32(i) * 4}, k("a", "1"), k("b", "1"), k("c", "1"), k("d", "1"))
		put(t, e, l, k("b", "2"), k("d", "2"))
	}
	keep := putSpec(t, e, l, batchSpec{codec: record.Gzip}, "z=1", "y=1") // all kept: copied as is
	orig := readBatches(t, l, keep.BaseOffset)[0]
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l)
	batches := readBatches(t, l, 0)
	rebuilt := 0
	for _, b := range batches {
		if b.BaseOffset()%6 != 0 || b.BaseOffset() >= 30 {
			continue
		}
		rebuilt++
		i := b.BaseOffset() / 6
		if b.Attributes().Codec() != codecs[i] || b.LastOffsetDelta() != 3 || b.ProducerID() != 5 || b.ProducerEpoch() != 2 ||
			b.BaseSequence() != int32(i)*4 || b.NumRecords() != 2 || !b.ValidCRC() {
			t.Fatalf("rebuilt batch at %d: codec %v delta %d pid %d epoch %d seq %d count %d", b.BaseOffset(),
				b.Attributes().Codec(), b.LastOffsetDelta(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.NumRecords())
		}
	}
	if rebuilt != len(codecs) {
		t.Fatalf("%d rebuilt batches", rebuilt)
	}
	if got := readBatches(t, l, keep.BaseOffset)[0]; !bytes.Equal(got, orig) {
		t.Fatal("a batch with nothing removed was rewritten")
	}
}

func TestCleanerKeepsProducerLastBatch(t *testing.T) {
	e := newEnv(t)
	m, l := newCompacted(t, e, compactConfig())
	putSpec(t, e, l, batchSpec{pid: 9, seq: 0}, "k=1", "j=1")
	last := putSpec(t, e, l, batchSpec{pid: 9, seq: 2}, "k=2", "j=2")
	put(t, e, l, "k=3", "j=3") // supersedes both producer batches
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l)
	batches := readBatches(t, l, 0)
	if len(batches) != 2 || batches[0].BaseOffset() != last.BaseOffset || batches[0].NumRecords() != 0 ||
		batches[0].LastOffset() != last.LastOffset || batches[0].BaseSequence() != 2 || batches[0].ProducerID() != 9 {
		t.Fatalf("batches after clean: %d, first at %d with %d records", len(batches), batches[0].BaseOffset(), batches[0].NumRecords())
	}
	retry(t, e, l, 9, 0, sentBatch{2, 2, last})
	// Without any snapshot, the state is rebuilt from the empty batch.
	snaps, _ := listSnapshots(e.fs, e.dir)
	for _, o := range snaps {
		e.fs.Remove(snapshotPath(e.dir, o))
	}
	l2 := e.openWith(l.Config(), e.opts())
	defer l2.Close()
	retry(t, e, l2, 9, 0, sentBatch{2, 2, last})
	produce(t, e, l2, 9, 0, 4, 1, 1)
	m.Close()
}

func TestCleanerMapCap(t *testing.T) {
	e := newEnv(t)
	// A 480-byte dedupe buffer filled to its end maps 10 keys per clean.
	m, l := newCompactedWith(t, e, compactConfig(), NewManager(ManagerConfig{Dirs: []string{"/data"}, CleanerMaxKeys: CleanerMaxKeys(480, 1)}, e.opts()))
	defer m.Close()
	if m.cleaner.maxKeys != 10 || CleanerMaxKeys(960, 0.5) != 10 || newTestManager(e, "/x").cleaner.maxKeys != CleanerMaxKeys(128<<20, 0.9) {
		t.Fatalf("map of %d keys", m.cleaner.maxKeys)
	}
	for i := 0; i < 60; i++ {
		put(t, e, l, fmt.Sprintf("k%d=%d", i%25, i))
	}
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	before := view(t, l)
	cleanNow(t, m, l)
	end := m.cleaner.firstDirty[e.tp]
	if end >= 60 || end < 10 {
		t.Fatalf("first dirty offset %d after a capped clean", end)
	}
	sameRecords(t, view(t, l), latest(before, end, false))
	for i := 0; i < 10 && m.cleaner.firstDirty[e.tp] < 60; i++ {
		m.cleaner.cleanOnce()
	}
	sameRecords(t, view(t, l), latest(before, 60, false))
}

func TestCleanerMaxCompactionLag(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	cfg.MinCleanableRatio = 0.99
	cfg.MaxCompactionLagMs = 60_000
	m, l := newCompacted(t, e, cfg)
	defer m.Close()
	for i := 0; i < 10; i++ {
		put(t, e, l, "k="+fmt.Sprint(i))
	}
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l) // everything dirty: ratio 1
	for i := 0; i < 3; i++ {
		put(t, e, l, "k="+fmt.Sprint(i))
	}
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	if got, _ := m.cleaner.cleanOnce(); got != nil {
		t.Fatal("cleaned below min.cleanable.dirty.ratio")
	}
	e.clock.Advance(2 * time.Minute)
	cleanNow(t, m, l)
	if got := view(t, l); len(got) != 1 || got[0].value != "2" {
		t.Fatalf("after max.compaction.lag.ms: %v", got)
	}
}

// TestCleanerAbortsOnRace: a truncation or retention racing with a clean
// makes it abandon the swap; the next clean works.
func TestCleanerAbortsOnRace(t *testing.T) {
	for _, race := range []string{"truncate", "retention"} {
		t.Run(race, func(t *testing.T) {
			e := newEnv(t)
			m, l := newCompacted(t, e, compactConfig())
			defer m.Close()
			for i := 0; i < 40; i++ {
				put(t, e, l, fmt.Sprintf("k%d=%d", i%5, i))
			}
			l.Roll()
			put(t, e, l, "z=1")
			l.SetHighWatermark(l.LogEndOffset())
			// The race runs as the cleaned segment's last file is synced:
			// after the cleaning, before the swap takes the log's lock.
			fired := false
			e.inject.Set(vfstest.InjectorFunc(func(op vfstest.Op) error {
				if op.Kind != vfstest.OpSync || !strings.HasSuffix(op.Path, ".timeindex.cleaned") || fired {
					return nil
				}
				fired = true
				if race == "truncate" {
					l.TruncateTo(30)
				} else {
					l.SetLogStartOffset(l.segments()[1].base)
				}
				return nil
			}))
			if _, err := m.cleaner.cleanOnce(); err != errCleaningAborted {
				t.Fatalf("clean during %s: %v", race, err)
			}
			e.inject.Set(nil)
			before := view(t, l)
			l.Roll()
			l.SetHighWatermark(l.LogEndOffset())
			cleanNow(t, m, l)
			sameRecords(t, view(t, l), latest(before, l.active().base, false))
			checkEveryOffset(t, l, readBatches(t, l, l.LogStartOffset()))
			for _, f := range e.fs.Files() {
				if strings.HasSuffix(f, ".cleaned") || strings.HasSuffix(f, ".swap") {
					t.Fatalf("left behind: %s", f)
				}
			}
		})
	}
}

// TestCleanerReadsInFlight: a read started before a clean keeps its file
// until the delayed deletion runs.
func TestCleanerReadsInFlight(t *testing.T) {
	e := newEnv(t)
	m, l := newCompacted(t, e, compactConfig())
	defer m.Close()
	for i := 0; i < 40; i++ {
		put(t, e, l, fmt.Sprintf("k%d=%d", i%5, i))
	}
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	sl, err := l.Read(20, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	cleanNow(t, m, l)
	buf := make([]byte, sl.Size)
	if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil || record.Batch(buf).BaseOffset() != 20 {
		t.Fatalf("read in flight after the swap: %v", err)
	}
	e.delay.run()
	if _, err := sl.File.ReadAt(buf, sl.Pos); err == nil {
		t.Fatal("old segment still open after the delay")
	}
}

// TestCleanerCrashAtEveryStep crashes after every filesystem operation of
// a clean (keeping only durable state, or a random prefix of unsynced
// directory changes): the log must reopen with the old or the new
// contents, and nothing else.
func TestCleanerCrashAtEveryStep(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			cfg := compactConfig()
			cfg.SegmentBytes = int64(500 + r.Intn(1000))
			m, l := newCompacted(t, e, cfg)
			for i := 0; i < 30+r.Intn(40); i++ {
				put(t, e, l, fmt.Sprintf("k%d=%d", r.Intn(8), i), fmt.Sprintf("k%d=", r.Intn(8)))
			}
			l.Roll()
			put(t, e, l, "z=1")
			l.SetHighWatermark(l.LogEndOffset())
			if err := l.Flush(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			old := view(t, l)
			var clones []*vfstest.MemFS
			done := e.afterEachStep(func() {
				clones = append(clones, e.fs.CrashClone())
				clones = append(clones, e.fs.CrashCloneWith(vfstest.CrashOptions{Rand: r, DirOps: true, TornWrites: true}))
			})
			cleanNow(t, m, l)
			done()
			cleaned := view(t, l)
			if len(cleaned) >= len(old) {
				t.Fatal("nothing was cleaned")
			}
			e.delay.run()
			clones = append(clones, e.fs.CrashClone())
			// Each cleaned segment replaced a group of old ones: after a
			// crash, each group's range holds the old or the new records.
			bases := segmentBases(l)
			inRange := func(rs []keyedRecord, i int) string {
				var out []keyedRecord
				for _, rc := range rs {
					if rc.offset >= bases[i] && (i+1 == len(bases) || rc.offset < bases[i+1]) {
						out = append(out, rc)
					}
				}
				return fmt.Sprint(out)
			}
			sawOld, sawNew := false, false
			for i, c := range clones {
				l2 := openOn(t, e, c, cfg, l.LogEndOffset())
				got := view(t, l2)
				allOld, allNew := true, true
				for g := range bases {
					isOld, isNew := inRange(got, g) == inRange(old, g), inRange(got, g) == inRange(cleaned, g)
					if !isOld && !isNew {
						t.Fatalf("crash point %d: records\n%v\nare neither the old\n%v\nnor the cleaned\n%v\nin [%d, ...)\nfiles %v",
							i, got, old, cleaned, bases[g], c.Files())
					}
					allOld, allNew = allOld && isOld, allNew && isNew
				}
				sawOld, sawNew = sawOld || allOld, sawNew || allNew
				if l2.LogEndOffset() != l.LogEndOffset() {
					t.Fatalf("crash point %d: log end %d", i, l2.LogEndOffset())
				}
				checkEveryOffset(t, l2, readBatches(t, l2, 0))
				for _, f := range c.Files() {
					if strings.HasSuffix(f, ".cleaned") || strings.HasSuffix(f, ".swap") || strings.HasSuffix(f, ".deleted") {
						t.Fatalf("crash point %d: %s left after open", i, f)
					}
				}
				l2.Close()
			}
			if !sawOld || !sawNew {
				t.Fatalf("crash points saw old %v new %v", sawOld, sawNew)
			}
			m.Close()
		})
	}
}

// TestCleanerRandom cleans random compacted workloads (keys, tombstones,
// idempotent producers, codecs) repeatedly, with the clock moving, and
// checks the result against a simple model after each clean.
func TestCleanerRandom(t *testing.T) {
	for seed := int64(0); seed < 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runCleanerRandom(t, seed) })
	}
}

func runCleanerRandom(t *testing.T, seed int64) {
	r := seeded(t, seed)
	e := newEnv(t)
	cfg := compactConfig()
	cfg.SegmentBytes = int64(300 + r.Intn(2000))
	cfg.DeleteRetentionMs = int64(r.Intn(5000))
	m, l := newCompacted(t, e, cfg)
	defer func() { m.Close() }()
	// all is every record ever appended; a record may be gone only if a
	// later record of its key is below the cleaned point, or it is a
	// tombstone that was cleaned and whose horizon passed.
	var all []keyedRecord
	for round := 0; round < 8; round++ {
		for i := 0; i < 5+r.Intn(30); i++ {
			var kvs []string
			for j := 0; j < 1+r.Intn(4); j++ {
				v := fmt.Sprint(round*1000 + i*10 + j)
				if r.Intn(5) == 0 {
					v = ""
				}
				kvs = append(kvs, fmt.Sprintf("k%d=%s", r.Intn(12), v))
			}
			spec := batchSpec{codec: record.Codec(r.Intn(5))}
			info := putSpec(t, e, l, spec, kvs...)
			for j, p := range kvs {
				k, v, _ := strings.Cut(p, "=")
				all = append(all, keyedRecord{offset: info.BaseOffset + int64(j), key: k, value: v, null: v == ""})
			}
			if r.Intn(8) == 0 {
				l.Roll()
			}
		}
		l.Roll()
		l.SetHighWatermark(l.LogEndOffset() - int64(r.Intn(3)))
		e.clock.Advance(time.Duration(r.Intn(3000)) * time.Millisecond)
		if _, err := m.cleaner.cleanOnce(); err != nil {
			t.Fatal(err)
		}
		end := m.cleaner.firstDirty[e.tp]
		if r.Intn(4) == 0 {
			m.Close()
			m, l = newCompacted(t, e, cfg)
		}
		got := view(t, l)
		checkEveryOffset(t, l, readBatches(t, l, 0))
		lastOf := map[string]int64{}
		for _, rc := range all {
			lastOf[rc.key] = rc.offset
		}
		// Every latest non-tombstone record below the end survives; no
		// superseded record below the end does; all above it survive.
		present := map[int64]keyedRecord{}
		for _, g := range got {
			present[g.offset] = g
		}
		for _, rc := range all {
			g, ok := present[rc.offset]
			if ok && (g.key != rc.key || g.value != rc.value) {
				t.Fatalf("record at %d changed: %v, was %v", rc.offset, g, rc)
			}
			latestBelow := true
			for _, o := range all {
				if o.key == rc.key && o.offset > rc.offset && o.offset < end {
					latestBelow = false
				}
			}
			switch {
			case rc.offset >= end && !ok:
				t.Fatalf("dirty record %v (end %d) removed", rc, end)
			case !latestBelow && ok && rc.offset < end:
				t.Fatalf("superseded record %v kept (end %d)", rc, end)
			case latestBelow && !rc.null && !ok:
				t.Fatalf("latest record %v removed (end %d)", rc, end)
			}
		}
	}
}

// TestCleanerGroupLimits: merged segments respect the index capacity and
// 32-bit relative offsets, not only segment.bytes.
func TestCleanerGroupLimits(t *testing.T) {
	e := newEnv(t)
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 60
	cfg.SegmentIndexBytes = 6 * offsetEntrySize
	m, l := newCompacted(t, e, cfg)
	defer m.Close()
	for i := 0; i < 200; i++ {
		put(t, e, l, fmt.Sprintf("k%d=%d", i, i)) // all kept
	}
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	before := view(t, l)
	cleanNow(t, m, l)
	sameRecords(t, view(t, l), before)
	for _, s := range l.segments() {
		if s.index.entries() > 6 || len(s.timeIndex.ents) > int(cfg.SegmentIndexBytes/timeEntrySize) {
			t.Fatalf("segment %d: %d index entries", s.base, s.index.entries())
		}
	}

	// Offsets more than 2^31 apart cannot share a segment.
	e2 := newEnv(t)
	m2, l2 := newCompacted(t, e2, compactConfig())
	defer m2.Close()
	for _, base := range []int64{0, 1, 3_000_000_000, 3_000_000_001, 6_000_000_000} {
		b := buildBatch(t, batchSpec{recs: []rec{kv(fmt.Sprint("k", base%2), "v", e2.clock.Ms())}})
		b.SetBaseOffset(base)
		if _, err := l2.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
	}
	l2.SetHighWatermark(l2.LogEndOffset())
	cleanNow(t, m2, l2)
	bases := segmentBases(l2)
	if !equalInts(bases, []int64{0, 3_000_000_000, 6_000_000_000}) {
		t.Fatalf("segments %v", bases)
	}
	if got := view(t, l2); len(got) != 3 || got[0].offset != 3_000_000_000 || got[2].offset != 6_000_000_000 {
		t.Fatalf("records %v", got)
	}
}

// TestCleanerForgetsDeletedLog: a log deleted and created again under the
// same name is dirty from its start, whatever the old one's checkpoint said.
func TestCleanerForgetsDeletedLog(t *testing.T) {
	e := newEnv(t)
	m, l := newCompacted(t, e, compactConfig())
	defer m.Close()
	for i := 0; i < 30; i++ {
		put(t, e, l, "k="+fmt.Sprint(i))
	}
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l)
	if err := m.Delete(e.tp); err != nil {
		t.Fatal(err)
	}
	e.delay.run()
	l, err := m.GetOrCreate(e.tp, [16]byte{2}, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Past the old log's first dirty offset (30), so a stale one would
	// leave the a's below it alone.
	for i := 0; i < 35; i++ {
		put(t, e, l, fmt.Sprintf("%c=%d", "ab"[i/30], i))
	}
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, m, l)
	if got := view(t, l); len(got) != 2 || got[0].value != "29" {
		t.Fatalf("recreated log after clean: %v", got)
	}
}
