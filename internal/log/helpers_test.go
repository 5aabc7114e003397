package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/internal/record"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu sync.Mutex
	ms int64
}

func newClock() *fakeClock { return &fakeClock{ms: 1_700_000_000_000} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.UnixMilli(c.ms)
}

func (c *fakeClock) Ms() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ms
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ms += d.Milliseconds()
}

// delayQueue collects Options.AfterDelay callbacks so tests run them when
// they choose.
type delayQueue struct {
	mu  sync.Mutex
	fns []func()
}

func (q *delayQueue) add(_ time.Duration, fn func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fns = append(q.fns, fn)
}

func (q *delayQueue) run() int {
	q.mu.Lock()
	fns := q.fns
	q.fns = nil
	q.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	return len(fns)
}

// testEnv is a log directory on an in-memory filesystem with a fake clock.
type testEnv struct {
	t  testing.TB
	fs *vfstest.MemFS
	// inject sees every operation of the logs opened with opts (on fs).
	inject vfstest.Switch
	dir    string
	clock  *fakeClock
	delay  *delayQueue
	tp     TopicPartition
}

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// afterEachStep calls clone with the filesystem as it is after each
// operation that changes it, but those on .tmp files (checkpoints, written
// whole and renamed into place), until done is called.
func (e *testEnv) afterEachStep(clone func()) (done func()) {
	pending := false // the last operation was a step; clone before the next
	e.inject.Set(vfstest.InjectorFunc(func(op vfstest.Op) error {
		if !op.Mutates() {
			return nil
		}
		if pending {
			clone()
		}
		name := op.Path
		if op.Kind == vfstest.OpRename {
			name = op.NewPath
		}
		pending = !strings.HasSuffix(name, ".tmp")
		return nil
	}))
	return func() {
		e.inject.Set(nil)
		if pending {
			clone()
		}
	}
}

func newEnv(t testing.TB) *testEnv {
	e := &testEnv{t: t, fs: vfstest.NewMem(), dir: "/data/t-0", clock: newClock(), delay: &delayQueue{},
		tp: TopicPartition{"t", 0}}
	e.fs.SetClock(e.clock.Now)
	if err := e.fs.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.fs.SyncDir("/")
	e.fs.SyncDir("/data")
	return e
}

func (e *testEnv) opts() Options {
	return Options{FS: vfstest.Inject(e.fs, &e.inject), Now: e.clock.Now, Logger: quietLogger, AfterDelay: e.delay.add}
}

func (e *testEnv) open(cfg Config) *Log { return e.openWith(cfg, e.opts()) }

func (e *testEnv) openWith(cfg Config, o Options) *Log {
	e.t.Helper()
	l, err := Open(e.dir, e.tp, cfg, o)
	if err != nil {
		e.t.Fatalf("open: %v", err)
	}
	return l
}

// reopen closes l cleanly and opens it again with its checkpointed offsets.
func (e *testEnv) reopen(l *Log) *Log {
	e.t.Helper()
	o := e.opts()
	o.RecoveryPoint, o.LogStartOffset, o.HighWatermark = l.RecoveryPoint(), l.LogStartOffset(), l.HighWatermark()
	cfg := l.Config()
	if err := l.Close(); err != nil {
		e.t.Fatalf("close: %v", err)
	}
	return e.openWith(cfg, o)
}

// smallConfig has small segments and a dense index, so tests roll often.
func smallConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 2048
	c.IndexIntervalBytes = 256
	c.SegmentIndexBytes = 1 << 20
	c.RetentionMs = -1
	c.FileDeleteDelayMs = 1000
	c.ProducerExpiryMs = math.MaxInt64 / 2
	return c
}

type rec struct {
	key, value []byte
	ts         int64
}

type batchSpec struct {
	recs          []rec
	codec         record.Codec
	pid           int64
	epoch         int16
	seq           int32
	logAppendTime bool
}

func buildBatch(t testing.TB, s batchSpec) record.Batch {
	t.Helper()
	h := record.NewBatchHeader()
	h.Attributes = h.Attributes.WithCodec(s.codec)
	if s.pid > 0 {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = s.pid, s.epoch, s.seq
	}
	base := s.recs[0].ts
	h.BaseTimestamp = base
	h.MaxTimestamp = -1
	recs := make([]record.Record, len(s.recs))
	for i, r := range s.recs {
		recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: r.ts - base, Key: r.key, Value: r.value}
		h.MaxTimestamp = max(h.MaxTimestamp, r.ts)
	}
	b, err := record.Build(h, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.logAppendTime {
		b.SetLogAppendTime(h.MaxTimestamp)
	}
	return b
}

// valueBatch is a batch of n records with values of size bytes, no keys.
func valueBatch(t testing.TB, n, size int, ts int64) record.Batch {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{value: bytes.Repeat([]byte{byte('a' + i%26)}, size), ts: ts}
	}
	return buildBatch(t, batchSpec{recs: recs})
}

func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) record.Batch {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{value: []byte(fmt.Sprintf("p%d-s%d", pid, int64(seq)+int64(i))), ts: ts}
	}
	return buildBatch(t, batchSpec{recs: recs, pid: pid, epoch: epoch, seq: seq})
}

func kv(k, v string, ts int64) rec {
	r := rec{key: []byte(k), ts: ts}
	if v != "" {
		r.value = []byte(v)
	}
	return r
}

func mustAppend(t testing.TB, l *Log, b record.Batch) AppendInfo {
	t.Helper()
	info, err := l.AppendAsLeader(b, 0)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return info
}

// readBatches reads every batch from offset from to the log end, checking
// CRCs and that offsets increase.
func readBatches(t testing.TB, l *Log, from int64) []record.Batch {
	t.Helper()
	out, err := tryReadBatches(l, from)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryReadBatches(l *Log, from int64) ([]record.Batch, error) {
	var out []record.Batch
	end := l.LogEndOffset()
	next := from
	for next < end {
		data, err := l.ReadBytes(next, 1<<20, end)
		if err != nil {
			return nil, fmt.Errorf("read at %d: %w", next, err)
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			b, rest, err := record.Next(data)
			if errors.Is(err, record.ErrShort) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("read at %d: %w", next, err)
			}
			if !b.ValidCRC() {
				return nil, fmt.Errorf("batch at %d: bad CRC", b.BaseOffset())
			}
			if n := len(out); n > 0 && b.BaseOffset() <= out[n-1].LastOffset() {
				return nil, fmt.Errorf("batch at %d follows %d", b.BaseOffset(), out[n-1].LastOffset())
			}
			out = append(out, append(record.Batch(nil), b...))
			next = b.NextOffset()
			data = rest
		}
	}
	return out, nil
}

// keyedRecord is a record as a consumer sees it.
type keyedRecord struct {
	offset     int64
	key, value string
	null       bool
	ts         int64
}

func (r keyedRecord) String() string {
	if r.null {
		return fmt.Sprintf("%d:%s=<nil>@%d", r.offset, r.key, r.ts)
	}
	return fmt.Sprintf("%d:%s=%s@%d", r.offset, r.key, r.value, r.ts)
}

func records(t testing.TB, batches []record.Batch) []keyedRecord {
	t.Helper()
	var out []keyedRecord
	for _, b := range batches {
		raw, err := b.Decoded(nil, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewRecords(raw, b.NumRecords())
		for r, ok := it.Next(); ok; r, ok = it.Next() {
			ts := b.BaseTimestamp() + r.TimestampDelta
			if b.Attributes().LogAppendTime() {
				ts = b.MaxTimestamp()
			}
			out = append(out, keyedRecord{offset: b.BaseOffset() + int64(r.OffsetDelta), key: string(r.Key),
				value: string(r.Value), null: r.Value == nil, ts: ts})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkEveryOffset reads at each offset of each batch and checks the read
// starts with that batch; offsets in gaps must start with the next batch.
func checkEveryOffset(t testing.TB, l *Log, batches []record.Batch) {
	t.Helper()
	if err := everyOffsetErr(l, batches); err != nil {
		t.Fatal(err)
	}
}

func everyOffsetErr(l *Log, batches []record.Batch) error {
	start := l.LogStartOffset()
	for i, b := range batches {
		from := b.BaseOffset()
		if i > 0 {
			from = batches[i-1].NextOffset()
		}
		for o := max(from, start); o <= b.LastOffset(); o++ {
			data, err := l.ReadBytes(o, 1<<20, l.LogEndOffset())
			if err != nil {
				return fmt.Errorf("read at %d: %w", o, err)
			}
			if len(data) < len(b) || !bytes.Equal(data[:len(b)], b) {
				return fmt.Errorf("read at %d does not start with batch %d", o, b.BaseOffset())
			}
		}
	}
	return nil
}

// segmentFilesConsistent checks that each segment's file holds exactly the
// bytes the log counts, as whole batches.
func segmentFilesConsistent(t testing.TB, fsys vfs.FS, l *Log) {
	t.Helper()
	for _, s := range l.segments() {
		data, err := vfs.ReadFile(fsys, segmentPath(l.dir, s.base, FileLog))
		if s.pending() {
			// Not created yet: empty, and no file of it on disk.
			if s.size.Load() != 0 || !os.IsNotExist(err) {
				t.Fatalf("pending segment %d: size %d, reading its file: %v", s.base, s.size.Load(), err)
			}
			for _, ty := range []FileType{FileIndex, FileTimeIndex, FileTxnIndex} {
				if _, err := fsys.Stat(segmentPath(l.dir, s.base, ty)); !os.IsNotExist(err) {
					t.Fatalf("pending segment %d has a %v file: %v", s.base, ty, err)
				}
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != s.size.Load() {
			t.Fatalf("segment %d: file has %d bytes, log counts %d", s.base, len(data), s.size.Load())
		}
		for len(data) > 0 {
			b, rest, err := record.Next(data)
			if err != nil || !b.ValidCRC() {
				t.Fatalf("segment %d: bad batch: %v", s.base, err)
			}
			data = rest
		}
	}
}

func seeded(t testing.TB, seed int64) *rand.Rand {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	})
	return rand.New(rand.NewSource(seed))
}
