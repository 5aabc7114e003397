package log

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"weir/internal/record"
)

// The model of a log: every batch appended (with its offsets), the log start
// and end, the high watermark, and each idempotent producer's history.
type model struct {
	batches   []record.Batch
	logStart  int64
	logEnd    int64
	hw        int64
	producers map[int64]*modelProducer
}

type modelProducer struct {
	epoch   int16
	nextSeq int32
	sent    []sentBatch // this epoch's batches still in the log, oldest first
}

func (p *modelProducer) last() *sentBatch {
	if len(p.sent) == 0 {
		return nil
	}
	return &p.sent[len(p.sent)-1]
}

// holding returns the index of the batch holding offset o.
func (m *model) holding(o int64) int {
	return sort.Search(len(m.batches), func(i int) bool { return m.batches[i].LastOffset() >= o })
}

// truncate drops the batches from the one holding offset on, and rebuilds
// the producers from what is left.
func (m *model) truncate(offset int64) {
	if offset >= m.logEnd {
		return
	}
	if offset < m.logStart {
		m.batches, m.logStart, m.logEnd, m.hw = nil, offset, offset, offset
		m.producers = map[int64]*modelProducer{}
		return
	}
	// The log cuts before the batch holding offset (a caller should pass
	// a batch boundary); the log start follows the end down.
	i := m.holding(offset)
	m.logEnd = m.batches[i].BaseOffset()
	m.batches = m.batches[:i]
	m.hw = min(m.hw, m.logEnd)
	m.logStart = min(m.logStart, m.logEnd)
	m.producers = map[int64]*modelProducer{}
	for _, b := range m.batches {
		if b.ProducerID() < 0 {
			continue
		}
		p := m.producers[b.ProducerID()]
		if p == nil || p.epoch != b.ProducerEpoch() {
			p = &modelProducer{epoch: b.ProducerEpoch()}
			m.producers[b.ProducerID()] = p
		}
		p.sent = append(p.sent, sentBatch{seq: b.BaseSequence(), n: int(b.NumRecords()),
			info: AppendInfo{BaseOffset: b.BaseOffset(), LastOffset: b.LastOffset()}})
		p.nextSeq = int32((int64(b.LastSequence()) + 1) % (1 << 31))
	}
}

type modelRun struct {
	t     *testing.T
	r     *rand.Rand
	e     *testEnv
	l     *Log
	m     *model
	cfg   Config
	hist  []string
	reads int
}

func (x *modelRun) failf(format string, args ...any) {
	x.t.Helper()
	h := x.hist
	if len(h) > 25 {
		h = h[len(h)-25:]
	}
	x.t.Fatalf("%s\nlast steps:\n  %s", fmt.Sprintf(format, args...), strings.Join(h, "\n  "))
}

func (x *modelRun) note(format string, args ...any) {
	x.hist = append(x.hist, fmt.Sprintf(format, args...))
}

// modelSeeds is lowered under the race detector (race_test.go).
var modelSeeds = 300

func TestModelRandom(t *testing.T) {
	seeds := modelSeeds
	if testing.Short() {
		seeds = 40
	}
	for seed := int64(0); seed < int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed, 150) })
	}
}

func runModel(t *testing.T, seed int64, steps int) {
	r := seeded(t, seed)
	e := newEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = int64(300 + r.Intn(3000))
	cfg.IndexIntervalBytes = int64(50 + r.Intn(500))
	if r.Intn(3) == 0 {
		cfg.SegmentIndexBytes = int64(2+r.Intn(5)) * offsetEntrySize
	}
	x := &modelRun{t: t, r: r, e: e, l: e.open(cfg), cfg: cfg, m: &model{producers: map[int64]*modelProducer{}}}
	x.note("config segment.bytes=%d interval=%d index.bytes=%d", cfg.SegmentBytes, cfg.IndexIntervalBytes, cfg.SegmentIndexBytes)
	defer func() { x.l.Close() }()
	for i := 0; i < steps; i++ {
		e.clock.Advance(time.Duration(r.Intn(1000)) * time.Millisecond)
		x.step()
		x.check(i%25 == 24)
	}
	x.check(true)
}

func (x *modelRun) step() {
	r, l, m := x.r, x.l, x.m
	switch n := r.Intn(100); {
	case n < 55:
		x.appendStep()
	case n < 60:
		x.note("roll")
		if err := l.Roll(); err != nil {
			x.failf("roll: %v", err)
		}
	case n < 70:
		hw := m.logStart + r.Int63n(m.logEnd-m.logStart+1)
		x.note("hw %d", hw)
		l.SetHighWatermark(hw)
		m.hw = hw
	case n < 77:
		cfg := x.cfg
		cfg.RetentionBytes, cfg.RetentionMs = -1, -1
		if r.Intn(2) == 0 {
			cfg.RetentionBytes = r.Int63n(l.Size() + 1)
		} else {
			cfg.RetentionMs = r.Int63n(60_000)
		}
		l.SetConfig(cfg)
		n, err := l.DeleteOldSegments()
		x.note("retention bytes=%d ms=%d: %d deleted, start %d", cfg.RetentionBytes, cfg.RetentionMs, n, l.LogStartOffset())
		if err != nil {
			x.failf("retention: %v", err)
		}
		x.observeStart()
	case n < 82:
		if r.Intn(5) == 0 && m.hw < m.logEnd {
			if _, err := l.SetLogStartOffset(m.hw + 1); !errors.Is(err, ErrOffsetOutOfRange) {
				x.failf("log start above the high watermark: %v", err)
			}
			return
		}
		o := m.logStart + r.Int63n(m.hw-m.logStart+1)
		x.note("set log start %d", o)
		if _, err := l.SetLogStartOffset(o); err != nil {
			x.failf("SetLogStartOffset(%d): %v", o, err)
		}
		m.logStart = max(m.logStart, o)
		x.observeStart()
	case n < 88:
		if len(m.batches) == 0 {
			return
		}
		b := m.batches[r.Intn(len(m.batches))]
		o := b.BaseOffset() + r.Int63n(int64(b.LastOffsetDelta())+1)
		x.note("truncate to %d", o)
		if err := l.TruncateTo(o); err != nil {
			x.failf("TruncateTo(%d): %v", o, err)
		}
		m.truncate(o)
	case n < 89:
		o := m.logEnd + r.Int63n(100)
		x.note("truncate fully at %d", o)
		if err := l.TruncateFullyAndStartAt(o); err != nil {
			x.failf("TruncateFullyAndStartAt: %v", err)
		}
		m.batches, m.logStart, m.logEnd, m.hw = nil, o, o, o
		m.producers = map[int64]*modelProducer{}
	case n < 93:
		x.note("reopen")
		x.l = x.e.reopen(l)
	case n < 96:
		x.note("unclean reopen")
		o := x.e.opts()
		o.RecoveryPoint, o.LogStartOffset, o.HighWatermark = l.RecoveryPoint(), l.LogStartOffset(), l.HighWatermark()
		x.l = x.e.openWith(l.Config(), o)
		l.mu.Lock()
		l.closed = true // the abandoned instance must not write again
		l.mu.Unlock()
	default:
		x.note("run delayed deletions: %d", x.e.delay.run())
	}
}

// observeStart takes the log start offset retention chose, checking it
// moved only forward, only to a segment base, and not past the high
// watermark.
func (x *modelRun) observeStart() {
	got := x.l.LogStartOffset()
	if got < x.m.logStart || got > max(x.m.hw, x.m.logStart) {
		x.failf("log start %d; model start %d hw %d", got, x.m.logStart, x.m.hw)
	}
	if got > x.m.logStart && got != x.l.segments()[0].base {
		x.failf("log start %d is not the first segment's base %d", got, x.l.segments()[0].base)
	}
	x.m.logStart = got
}

func (x *modelRun) appendStep() {
	r, m := x.r, x.m
	pid := int64(r.Intn(4)) // 0: not idempotent
	if pid == 0 {
		recs := make([]rec, 1+r.Intn(6))
		for i := range recs {
			recs[i] = rec{value: make([]byte, r.Intn(300)), ts: x.e.clock.Ms() - int64(r.Intn(100))}
			r.Read(recs[i].value)
		}
		codec := []record.Codec{record.None, record.None, record.None, record.Gzip, record.Snappy, record.LZ4, record.Zstd}[r.Intn(7)]
		x.appendOK(buildBatch(x.t, batchSpec{recs: recs, codec: codec}), nil)
		return
	}
	p := m.producers[pid]
	if p == nil {
		p = &modelProducer{nextSeq: int32(r.Intn(1 << 31))}
		m.producers[pid] = p
	}
	last := p.last()
	known := last != nil && last.info.LastOffset >= x.l.segments()[0].base
	n := 1 + r.Intn(4)
	switch k := r.Intn(20); {
	case k < 3 && known:
		x.retry(pid, p, *last, true)
	case k < 5 && len(p.sent) > 1:
		x.retry(pid, p, p.sent[max(0, len(p.sent)-1-r.Intn(5))], false)
	case k < 6:
		seq := int32((int64(p.nextSeq) + 1 + int64(r.Intn(10))) % (1 << 31))
		x.maybeRejected(pid, p, p.epoch, seq, n, known, ErrOutOfOrderSequence)
	case k < 7 && p.epoch > 0:
		x.maybeRejected(pid, p, p.epoch-1, 0, n, known, ErrInvalidProducerEpoch)
	case k < 8:
		x.note("producer %d new epoch %d", pid, p.epoch+1)
		p.epoch, p.nextSeq, p.sent = p.epoch+1, 0, nil
		x.appendOK(idemBatch(x.t, pid, p.epoch, 0, n, x.e.clock.Ms()), p)
	default:
		x.appendOK(idemBatch(x.t, pid, p.epoch, p.nextSeq, n, x.e.clock.Ms()), p)
	}
}

func (x *modelRun) appendOK(b record.Batch, p *modelProducer) {
	info, err := x.l.AppendAsLeader(b, 0)
	x.note("append pid=%d seq=%d n=%d -> %+v %v", b.ProducerID(), b.BaseSequence(), b.NumRecords(), info, err)
	if err != nil || info.Duplicate || info.BaseOffset != x.m.logEnd {
		x.failf("append: %+v %v, model end %d", info, err, x.m.logEnd)
	}
	x.m.batches = append(x.m.batches, append(record.Batch(nil), b...))
	x.m.logEnd = b.NextOffset()
	if p != nil {
		p.sent = append(p.sent, sentBatch{b.BaseSequence(), int(b.NumRecords()), info})
		p.nextSeq = int32((int64(b.LastSequence()) + 1) % (1 << 31))
	}
}

// retry resends a sent batch: the last one must be a duplicate; an older
// one is a duplicate (with its original offsets) or out of sequence.
func (x *modelRun) retry(pid int64, p *modelProducer, s sentBatch, mustDup bool) {
	b := idemBatch(x.t, pid, p.epoch, s.seq, s.n, x.e.clock.Ms())
	end := x.l.LogEndOffset()
	info, err := x.l.AppendAsLeader(b, 0)
	x.note("retry pid=%d seq=%d -> %+v %v", pid, s.seq, info, err)
	switch {
	case err == nil && info.Duplicate && info.BaseOffset == s.info.BaseOffset && info.LastOffset == s.info.LastOffset:
	case !mustDup && errors.Is(err, ErrOutOfOrderSequence):
	default:
		x.failf("retry of %+v: %+v %v", s, info, err)
	}
	if x.l.LogEndOffset() != end {
		x.failf("retry wrote data")
	}
}

// maybeRejected sends a batch the producer state must reject when it knows
// the producer; otherwise the log may accept it.
func (x *modelRun) maybeRejected(pid int64, p *modelProducer, epoch int16, seq int32, n int, known bool, want error) {
	b := idemBatch(x.t, pid, epoch, seq, n, x.e.clock.Ms())
	info, err := x.l.AppendAsLeader(b, 0)
	x.note("bad pid=%d epoch=%d seq=%d -> %+v %v", pid, epoch, seq, info, err)
	switch {
	case errors.Is(err, want):
	case !known && err == nil && !info.Duplicate && info.BaseOffset == x.m.logEnd:
		x.m.batches = append(x.m.batches, append(record.Batch(nil), b...))
		x.m.logEnd = b.NextOffset()
		if epoch != p.epoch {
			p.sent = nil
		}
		p.epoch = epoch
		p.sent = append(p.sent, sentBatch{seq, n, info})
		p.nextSeq = int32((int64(b.LastSequence()) + 1) % (1 << 31))
	default:
		x.failf("want %v, got %+v %v (known %v)", want, info, err, known)
	}
}

func (x *modelRun) check(full bool) {
	l, m, r := x.l, x.m, x.r
	if l.LogEndOffset() != m.logEnd || l.LogStartOffset() != m.logStart || l.HighWatermark() != m.hw {
		x.failf("log end/start/hw %d/%d/%d, model %d/%d/%d", l.LogEndOffset(), l.LogStartOffset(), l.HighWatermark(),
			m.logEnd, m.logStart, m.hw)
	}
	if m.logStart > 0 {
		if _, err := l.Read(m.logStart-1, 100, m.logEnd, true); !errors.Is(err, ErrOffsetOutOfRange) {
			x.failf("read below log start: %v", err)
		}
	}
	if sl, err := l.Read(m.logEnd, 100, m.logEnd+10, true); err != nil || sl.Size != 0 {
		x.failf("read at log end: %+v %v", sl, err)
	}
	for k := 0; k < 4 && m.logEnd > m.logStart; k++ {
		o := m.logStart + r.Int63n(m.logEnd-m.logStart)
		maxOff := m.logEnd
		if r.Intn(3) == 0 {
			maxOff = o + 1 + r.Int63n(m.logEnd-o)
		}
		x.checkRead(o, 1+r.Intn(4000), maxOff)
	}
	if full {
		got, err := tryReadBatches(l, m.logStart)
		if err != nil {
			x.failf("full read: %v", err)
		}
		want := m.batches[m.holding(m.logStart):]
		if len(got) != len(want) {
			x.failf("full read: %d batches, model %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				x.failf("full read: batch %d (offset %d) differs", i, want[i].BaseOffset())
			}
		}
		segmentFilesConsistent(x.t, x.e.fs, l)
	}
}

// checkRead reads at o and compares with the model: the data must start with
// the batch holding o, continue with the following batches (as bytes),
// stop before maxOffset and hold at most maxBytes unless the first batch
// alone is larger.
func (x *modelRun) checkRead(o int64, maxBytes int, maxOff int64) {
	x.reads++
	data, err := x.l.ReadBytes(o, maxBytes, maxOff)
	if err != nil {
		x.failf("read(%d, %d, %d): %v", o, maxBytes, maxOff, err)
	}
	i := x.m.holding(o)
	var want []byte
	for _, b := range x.m.batches[i:] {
		if b.BaseOffset() >= maxOff {
			break
		}
		want = append(want, b...)
	}
	first := len(x.m.batches[i])
	switch {
	case len(data) < first || !bytes.Equal(data, want[:min(len(data), len(want))]) || len(data) > len(want):
		x.failf("read(%d, %d, %d): %d bytes not a prefix of the model's %d from batch %d", o, maxBytes, maxOff, len(data), len(want), x.m.batches[i].BaseOffset())
	case len(data) > max(maxBytes, first):
		x.failf("read(%d, %d, %d): %d bytes", o, maxBytes, maxOff, len(data))
	}
}
