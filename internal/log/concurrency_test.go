package log

import (
	"bytes"
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"weir/internal/record"
)

// TestConcurrentReadersAndAppender runs an appender beside readers, flushers,
// lookups by time and retention; run it with -race.
func TestConcurrentReadersAndAppender(t *testing.T) {
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 4096
	cfg.RetentionBytes = 64 << 10
	l := e.open(cfg)
	defer l.Close()
	const n = 600
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	wg.Add(1)
	go func() { // appender
		defer wg.Done()
		defer done.Store(true)
		for i := 0; i < n; i++ {
			b := valueBatch(t, 1+i%3, 40+i%200, int64(1000+i))
			if _, err := l.AppendAsLeader(b, int32(i/200)); err != nil {
				fail(err)
				return
			}
			l.SetHighWatermark(l.LogEndOffset())
			if i%100 == 99 {
				if _, err := l.DeleteOldSegments(); err != nil {
					fail(err)
					return
				}
			}
		}
	}()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() { // readers: every read holds whole, valid batches from the offset asked
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for !done.Load() {
				start, end := l.LogStartOffset(), l.LogEndOffset()
				if end == start {
					continue
				}
				o := start + r.Int63n(end-start)
				data, err := l.ReadBytes(o, 1+r.Intn(8000), end)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention moved the start meanwhile
				}
				if err != nil {
					fail(err)
					return
				}
				first := true
				for len(data) > 0 {
					b, rest, err := record.Next(data)
					if err != nil {
						break // cut by maxBytes
					}
					if !b.ValidCRC() || first && (b.BaseOffset() > o || b.LastOffset() < o) {
						fail(errors.New("read returned a wrong or corrupt batch"))
						return
					}
					first = false
					data = rest
				}
			}
		}()
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() { // flushers share fsyncs
			defer wg.Done()
			for !done.Load() {
				if err := l.Flush(l.LogEndOffset()); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // lookups by time and epoch
		defer wg.Done()
		for !done.Load() {
			if _, _, _, err := l.OffsetForTimestamp(1500, l.LogEndOffset()); err != nil && !isClosedErr(err) {
				fail(err)
				return
			}
			if _, _, _, err := l.MaxTimestampOffset(l.LogEndOffset()); err != nil && !isClosedErr(err) {
				fail(err)
				return
			}
			l.EndOffsetForEpoch(1)
			l.Size()
		}
	}()
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if l.RecoveryPoint() > l.LogEndOffset() {
		t.Fatal("recovery point past the log end")
	}
	if err := l.Flush(l.LogEndOffset()); err != nil || l.RecoveryPoint() != l.LogEndOffset() {
		t.Fatalf("final flush: %v, recovery point %d", err, l.RecoveryPoint())
	}
	got := readBatches(t, l, l.LogStartOffset())
	if got[len(got)-1].NextOffset() != l.LogEndOffset() {
		t.Fatal("log end not readable")
	}
	// Segment files deleted by retention are closed only after the delay;
	// until then reads on old slices still work.
	e.delay.run()
}

// isClosedErr: a lookup may race with the delayed close of a segment
// retention deleted (here the delay runs only at the end, so it should not).
func isClosedErr(err error) bool { return bytes.Contains([]byte(err.Error()), []byte("closed")) }
