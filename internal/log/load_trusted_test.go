package log

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"weir/internal/record"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// bigSegmentConfig has one segment of several MB and Kafka's index
// interval, so the active segment passes trustedTailMinBytes.
func bigSegmentConfig() Config {
	c := smallConfig()
	c.SegmentBytes = 16 << 20
	c.IndexIntervalBytes = 4096
	return c
}

// fillPastTrusted appends batches of about 4 KB until the active segment
// holds more than trustedTailMinBytes.
func fillPastTrusted(t *testing.T, e *testEnv, l *Log) []record.Batch {
	t.Helper()
	var bs []record.Batch
	for l.Size() < trustedTailMinBytes+64<<10 {
		b := valueBatch(t, 1+len(bs)%3, 1300, e.clock.Ms())
		mustAppend(t, l, b)
		bs = append(bs, b)
	}
	return bs
}

// logReads counts the reads of .log files while on.
type logReads struct {
	mu sync.Mutex
	n  int
}

func (c *logReads) injector() vfstest.Injector {
	return vfstest.InjectorFunc(func(op vfstest.Op) error {
		if op.Kind == vfstest.OpRead && filepath.Ext(op.Path) == ".log" {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
		return nil
	})
}

// After a clean close, the last segment (flushed to its end) is not
// scanned at open: its indexes are checked and only the batches after
// the last index entry are read. Everything reads back, and appends go
// on with the indexes in step.
func TestOpenTrustsAFlushedLastSegment(t *testing.T) {
	e := newEnv(t)
	cfg := bigSegmentConfig()
	l := e.open(cfg)
	bs := fillPastTrusted(t, e, l)
	if l.NumSegments() != 1 {
		t.Fatalf("%d segments, want one", l.NumSegments())
	}
	var reads logReads
	o := e.opts()
	o.RecoveryPoint, o.LogStartOffset, o.HighWatermark = l.LogEndOffset(), 0, l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	e.inject.Set(reads.injector())
	l = e.openWith(cfg, o)
	e.inject.Set(nil)
	if reads.n > 16 {
		t.Fatalf("opening read the .log %d times for %d batches: it scanned the segment", reads.n, len(bs))
	}
	if l.LogEndOffset() != bs[len(bs)-1].NextOffset() || l.RecoveryPoint() != l.LogEndOffset() {
		t.Fatalf("log end %d, recovery point %d, want %d", l.LogEndOffset(), l.RecoveryPoint(), bs[len(bs)-1].NextOffset())
	}
	more := fillPastTrusted(t, e, l) // past the first fill: grows the segment
	bs = append(bs, more...)
	checkEveryOffset(t, l, bs)
	segmentFilesConsistent(t, e.fs, l)
	l = e.reopen(l)
	checkEveryOffset(t, l, bs)

	// Indexes lost (empty files): the open recovers the segment, and the
	// close writes the rebuilt entries, though nothing was left to flush,
	// so the open after it trusts the segment again.
	o = e.opts()
	o.RecoveryPoint, o.LogStartOffset, o.HighWatermark = l.LogEndOffset(), 0, l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ty := range []FileType{FileIndex, FileTimeIndex} {
		if err := vfs.WriteFileAtomic(e.fs, segmentPath(e.dir, 0, ty), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, wantScan := range []bool{true, false} {
		reads = logReads{}
		e.inject.Set(reads.injector())
		l = e.openWith(cfg, o)
		e.inject.Set(nil)
		if scanned := reads.n > 16; scanned != wantScan {
			t.Fatalf("open %d after losing the indexes: %d reads of the .log", i, reads.n)
		}
		checkEveryOffset(t, l, bs)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A crash with data past the recovery point, or an index a crash left
// short, has the last segment recovered as before: what was flushed is
// all there, and the log reads back whole.
func TestTrustedLastSegmentCrash(t *testing.T) {
	for seed := int64(0); seed < 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := seeded(t, seed)
			e := newEnv(t)
			cfg := bigSegmentConfig()
			l := e.open(cfg)
			flushed := fillPastTrusted(t, e, l)
			if err := l.Flush(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			rp := l.LogEndOffset()
			var tail []record.Batch
			for range r.Intn(20) {
				b := valueBatch(t, 1, 1300, e.clock.Ms())
				mustAppend(t, l, b)
				tail = append(tail, b)
			}
			if r.Intn(2) == 0 && len(tail) > 0 {
				if err := l.Flush(l.LogEndOffset()); err != nil {
					t.Fatal(err)
				}
				flushed, tail, rp = append(flushed, tail...), nil, l.LogEndOffset()
			}
			crashed := e.fs.CrashCloneWith(vfstest.CrashOptions{Rand: r, TornWrites: true})
			l.Abandon()
			o := Options{FS: crashed, Now: e.clock.Now, Logger: quietLogger, AfterDelay: e.delay.add,
				RecoveryPoint: rp, HighWatermark: rp}
			l2, err := Open(e.dir, e.tp, cfg, o)
			if err != nil {
				t.Fatal(err)
			}
			end := l2.LogEndOffset()
			if end < rp {
				t.Fatalf("log end %d below the recovery point %d", end, rp)
			}
			kept := append([]record.Batch(nil), flushed...)
			for _, b := range tail {
				if b.NextOffset() <= end {
					kept = append(kept, b)
				}
			}
			if got := kept[len(kept)-1].NextOffset(); got != end {
				t.Fatalf("log end %d is not a batch end (%d)", end, got)
			}
			checkEveryOffset(t, l2, kept)
			segmentFilesConsistent(t, crashed, l2)
			mustAppend(t, l2, valueBatch(t, 1, 100, e.clock.Ms()))
			l2.Close()
		})
	}
}
