package log

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"weir/internal/record"
	"weir/internal/vfs"
)

// The cleaner compacts logs whose cleanup.policy includes compact, with the
// semantics of Kafka's log cleaner:
//
//   - Each log's first dirty offset is kept in cleaner-offset-checkpoint (one
//     per log directory). The cleanable range is [first dirty, first
//     uncleanable), where first uncleanable is the least of the active
//     segment's base, the high watermark and the base of the first dirty
//     segment holding records newer than min.compaction.lag.ms.
//   - The log with the highest dirty ratio (dirty bytes over clean plus
//     dirty bytes) at or above min.cleanable.dirty.ratio is cleaned, or any
//     log whose oldest dirty batch is older than max.compaction.lag.ms.
//   - A map of key -> latest offset is built over the dirty range (bounded:
//     past maxKeys keys the range is cut short). Then every segment below
//     the end of that range is rewritten keeping a record unless its key has
//     a later offset in the map. Records of aborted transactions (known from
//     the transaction indexes) are neither mapped nor kept. Tombstones get a
//     delete horizon (KIP-534) when first kept by a rewrite and are dropped
//     by a later clean once it has passed. In a compact-only log (whose log
//     start never moves: DeleteRecords is refused), a transaction marker
//     is kept while any batch of its transaction is; after that it gets a
//     delete horizon the same way, and when it is dropped so are its
//     transaction index entry and the producer snapshots that hold its
//     transaction open. With delete too, markers go with their segments.
//     The last batch of each producer in the producer state is kept, empty
//     if need be, so duplicate detection survives compaction.
//   - Consecutive segments whose cleaned contents fit in one segment are
//     merged into one named for the first base offset, written as
//     <base>.log.cleaned, renamed to .swap (the commit point: open completes
//     a swap it finds), then put in place under the log's lock. The merged
//     transaction index, <base>.txnindex.cleaned, is synced before the
//     commit point and moved in place with the other indexes.
type cleaner struct {
	m       *Manager
	maxKeys int // bound of the offset map

	mu         sync.Mutex // one clean at a time; guards the maps below
	loaded     map[string]bool
	firstDirty map[TopicPartition]int64
	owner      map[TopicPartition]*Log // the log instance firstDirty describes
	horizon    map[*Log]int64          // earliest delete horizon kept in a log's tombstones

	// What CleanerStats reports, written by cleanOnce: the unix ms of its
	// last start, the largest dirty ratio (x100) it saw then, and how
	// long its last clean took, in ms.
	lastRun      atomic.Int64
	maxDirtyPct  atomic.Uint64 // math.Float64bits
	lastCleanDur atomic.Int64
}

// CleanerStats is what the log cleaner reports, as Kafka's LogCleaner and
// LogCleanerManager metrics.
type CleanerStats struct {
	// LastRun is when the cleaner last looked for a log to clean (the
	// manager's creation before its first run).
	LastRun time.Time
	// MaxDirtyPercent is the largest dirty ratio, in percent, of the
	// compacted logs as of that run (Kafka's max-dirty-percent).
	MaxDirtyPercent float64
	// LastCleanTime is how long the last clean took (Kafka's
	// max-clean-time-secs, of its one cleaner thread).
	LastCleanTime time.Duration
}

// CleanerStats reports the cleaner's last run.
func (m *Manager) CleanerStats() CleanerStats {
	c := m.cleaner
	return CleanerStats{LastRun: time.UnixMilli(c.lastRun.Load()), MaxDirtyPercent: math.Float64frombits(c.maxDirtyPct.Load()),
		LastCleanTime: time.Duration(c.lastCleanDur.Load()) * time.Millisecond}
}

const (
	// cleanerBytesPerKey is the memory one key of the cleaner's offset map
	// takes: a 16-byte hash and an 8-byte offset, doubled for the Go map's
	// buckets, free slots and growth.
	cleanerBytesPerKey = 48
	// attrDeleteHorizon is the attribute bit saying baseTimestamp is the
	// delete horizon (record.Attributes.HasDeleteHorizon reads it).
	attrDeleteHorizon  record.Attributes = 0x40
	cleanerBufBytes                      = 1 << 20
	cleanerDecodeLimit                   = 1 << 30
)

var errCleaningAborted = errors.New("log: cleaning aborted: the log changed meanwhile")

// CleanerMaxKeys is the number of keys the cleaner maps per clean within
// log.cleaner.dedupe.buffer.size bytes filled to
// log.cleaner.io.buffer.load.factor, as Kafka sizes its offset map (weir
// runs one cleaner, so the whole buffer is its).
func CleanerMaxKeys(dedupeBufferBytes int64, loadFactor float64) int {
	return int(float64(dedupeBufferBytes/cleanerBytesPerKey) * loadFactor)
}

func newCleaner(m *Manager) *cleaner {
	maxKeys := m.cfg.CleanerMaxKeys
	if maxKeys == 0 {
		maxKeys = CleanerMaxKeys(128<<20, 0.9)
	}
	c := &cleaner{m: m, maxKeys: maxKeys, loaded: map[string]bool{},
		firstDirty: map[TopicPartition]int64{}, owner: map[TopicPartition]*Log{}, horizon: map[*Log]int64{}}
	c.lastRun.Store(m.opts.Now().UnixMilli())
	return c
}

func (c *cleaner) cleanDirtiest() {
	if _, err := c.cleanOnce(); err != nil {
		c.m.lg.Error("log cleaning failed", "err", err)
	}
}

// segInfo is a segment as the cleaner planned with it.
type segInfo struct {
	s                         *segment
	base, next, size          int64
	maxTS, firstTS            int64
	indexEntries, timeEntries int
}

// cleanPlan is what cleaning one log needs, read under its lock.
type cleanPlan struct {
	l           *Log
	root        string
	cfg         Config
	now         int64
	segs        []segInfo // all but the active segment
	firstDirty  int64
	uncleanable int64
	ratio       float64
	dirtyBytes  int64
	forced      bool            // max.compaction.lag.ms exceeded
	lastBatch   map[int64]int64 // producer id -> last offset of its last batch
	// Read by clean, for the chosen log only:
	abortedTxns []AbortedTxn // every segment's, the active one's too
	anchor      snapshotAnchor
}

// loadCheckpoints reads the checkpoint of each log directory once.
func (c *cleaner) loadCheckpoints() error {
	for _, root := range c.m.cfg.Dirs {
		if c.loaded[root] {
			continue
		}
		offs, err := ReadOffsetCheckpoint(c.m.opts.FS, filepath.Join(root, CleanerOffsetFile))
		if err != nil {
			return err
		}
		for tp, o := range offs {
			if _, ok := c.firstDirty[tp]; !ok {
				c.firstDirty[tp] = o
			}
		}
		c.loaded[root] = true
	}
	return nil
}

// cleanOnce cleans the dirtiest compacted log, if any is cleanable, and
// returns it.
func (c *cleaner) cleanOnce() (*Log, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastRun.Store(c.m.opts.Now().UnixMilli())
	if err := c.loadCheckpoints(); err != nil {
		return nil, err
	}
	c.m.mu.Lock()
	roots := make(map[*Log]string, len(c.m.logs))
	for tp, l := range c.m.logs {
		roots[l] = c.m.dirOf[tp]
	}
	// Forget deleted logs, so a log created again under the name starts
	// all dirty.
	for tp := range c.firstDirty {
		if c.m.logs[tp] == nil {
			delete(c.firstDirty, tp)
			delete(c.owner, tp)
		}
	}
	c.m.mu.Unlock()
	var best, expired *cleanPlan
	maxRatio := 0.0
	for l, root := range roots {
		p := c.plan(l, root)
		if p == nil {
			continue
		}
		maxRatio = max(maxRatio, p.ratio)
		if p.dirtyBytes > 0 && (p.forced || p.ratio >= p.cfg.MinCleanableRatio) {
			if best == nil || p.ratio > best.ratio || p.ratio == best.ratio && l.tp.String() < best.l.tp.String() {
				best = p
			}
		} else if h := c.horizon[l]; h > 0 && h <= p.now && expired == nil {
			// Nothing dirty enough, but tombstones are due for removal.
			expired = p
		}
	}
	if best == nil {
		best = expired
	}
	for l := range c.horizon {
		if _, ok := roots[l]; !ok {
			delete(c.horizon, l)
		}
	}
	c.maxDirtyPct.Store(math.Float64bits(maxRatio * 100))
	if best == nil {
		return nil, nil
	}
	start := c.m.opts.Now()
	err := c.clean(best)
	c.lastCleanDur.Store(c.m.opts.Now().Sub(start).Milliseconds())
	return best.l, err
}

// plan reads what cleaning l needs under its lock; nil when l is not a
// compacted log or has nothing to clean.
func (c *cleaner) plan(l *Log, root string) *cleanPlan {
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg := *l.config()
	if l.closed || !cfg.Compact {
		return nil
	}
	segs := l.segments()
	p := &cleanPlan{l: l, root: root, cfg: cfg, now: l.nowMs(), lastBatch: map[int64]int64{}}
	logStart, logEnd := l.logStart.Load(), l.logEnd.Load()
	fd, ok := c.firstDirty[l.tp]
	if o := c.owner[l.tp]; o != nil && o != l {
		ok = false // deleted and created again since
	}
	c.owner[l.tp] = l
	if l.truncatedTo != math.MaxInt64 {
		// Data from the truncation point on may have been rewritten.
		fd = min(fd, l.truncatedTo)
		l.truncatedTo = math.MaxInt64
	}
	if !ok || fd < logStart || fd > logEnd {
		fd = logStart
	}
	c.firstDirty[l.tp] = fd
	p.firstDirty = fd
	// Never past the last stable offset: undecided transactions stay.
	p.uncleanable = min(segs[len(segs)-1].base, l.highWatermark.Load(), l.lso.Load())
	for i, s := range segs[:len(segs)-1] {
		info := segInfo{s: s, base: s.base, next: segs[i+1].base, size: s.size.Load(), maxTS: l.largestTimestamp(s),
			firstTS: s.firstTimestamp, indexEntries: s.index.entries(), timeEntries: len(s.timeIndex.ents)}
		if info.firstTS < 0 {
			info.firstTS = info.maxTS
		}
		p.segs = append(p.segs, info)
		dirty := info.next > fd
		if dirty && cfg.MinCompactionLagMs > 0 && info.maxTS > p.now-cfg.MinCompactionLagMs {
			p.uncleanable = min(p.uncleanable, info.base)
		}
	}
	p.uncleanable = max(p.uncleanable, fd)
	var cleanBytes int64
	for _, s := range p.segs {
		if s.base < fd {
			cleanBytes += s.size
		}
		if s.base < p.uncleanable && s.next > fd && fd < p.uncleanable {
			p.dirtyBytes += s.size
			if cfg.MaxCompactionLagMs > 0 && !p.forced && p.now-s.firstTS > cfg.MaxCompactionLagMs {
				p.forced = true
			}
		}
	}
	if total := cleanBytes + p.dirtyBytes; total > 0 {
		p.ratio = float64(p.dirtyBytes) / float64(total)
	}
	for pid, e := range l.producers.entries {
		if n := len(e.batches); n > 0 {
			p.lastBatch[pid] = e.batches[n-1].lastOffset
		}
	}
	return p
}

type keyHash [16]byte

func hashKey(k []byte) keyHash {
	sum := sha256.Sum256(k)
	return keyHash(sum[:16])
}

// buildMap maps each key of the dirty range to its latest offset. It
// returns the offset where the range it covered ends: the first
// uncleanable offset, or less when the map filled up.
func (c *cleaner) buildMap(p *cleanPlan) (map[keyHash]int64, int64, error) {
	keys := map[keyHash]int64{}
	end := p.uncleanable
	var scratch []byte
	aborted := newAbortedTracker(p.abortedTxns, p.firstDirty)
	for _, si := range p.segs {
		if si.next <= p.firstDirty || si.base >= p.uncleanable {
			continue
		}
		err := si.s.batchesFrom(0, func(b record.Batch) error {
			if b.LastOffset() < p.firstDirty {
				return nil
			}
			if b.LastOffset() >= p.uncleanable {
				end = min(end, b.BaseOffset())
				return errStop
			}
			if aborted.skip(b) || b.Attributes().Control() {
				return nil
			}
			if len(keys) > 0 && len(keys)+int(b.NumRecords()) > c.maxKeys {
				end = min(end, b.BaseOffset())
				return errStop
			}
			raw, err := b.Decoded(scratch[:0], cleanerDecodeLimit)
			if err != nil {
				return err
			}
			if b.Attributes().Codec() != record.None {
				scratch = raw
			}
			it := record.NewRecords(raw, b.NumRecords())
			for r, ok := it.Next(); ok; r, ok = it.Next() {
				if r.Key != nil {
					keys[hashKey(r.Key)] = b.BaseOffset() + int64(r.OffsetDelta)
				}
			}
			return it.Err()
		})
		if err == errStop {
			break
		}
		if err != nil {
			return nil, 0, err
		}
	}
	return keys, max(end, p.firstDirty), nil
}

// clean compacts the log of p: it builds the offset map, rewrites the
// segments below the map's end in groups, swaps each group in, and moves
// the first dirty offset to the map's end.
func (c *cleaner) clean(p *cleanPlan) error {
	l := p.l
	for _, s := range l.segments() {
		p.abortedTxns = append(p.abortedTxns, s.txns.all()...)
	}
	p.anchor = snapshotAnchor{offset: -1}
	if !p.cfg.Delete { // only compact-only logs drop markers
		l.mu.Lock()
		p.anchor = l.loadSnapshotAnchor()
		l.mu.Unlock()
	}
	keys, end, err := c.buildMap(p)
	if err != nil {
		return fmt.Errorf("log %s: cleaning: %w", l.tp, err)
	}
	f := &filter{keys: keys, end: end, now: p.now, horizon: p.now + p.cfg.DeleteRetentionMs, lastBatch: p.lastBatch,
		txnKept: map[int64]bool{}, lastMarker: map[int64]int64{}, anchor: p.anchor, dropMarkers: !p.cfg.Delete}
	if len(p.segs) > 0 {
		f.aborted = newAbortedTracker(p.abortedTxns, p.segs[0].base)
	}
	maxIndex := int(p.cfg.SegmentIndexBytes / offsetEntrySize)
	maxTime := int(p.cfg.SegmentIndexBytes / timeEntrySize)
	var w *cleanedSegment
	var idx, tidx int
	finish := func() error {
		if w == nil {
			return nil
		}
		err := c.swap(l, w)
		w = nil
		return err
	}
	for _, si := range p.segs {
		if si.base >= end {
			break
		}
		if w != nil && (w.seg.size.Load()+int64(len(w.buf))+si.size > p.cfg.SegmentBytes ||
			si.next-1-w.seg.base > math.MaxInt32 || idx+si.indexEntries+1 > maxIndex || tidx+si.timeEntries+1 > maxTime) {
			if err := finish(); err != nil {
				return err
			}
		}
		if w == nil {
			if w, err = newCleanedSegment(l, si.base, p.now); err != nil {
				return err
			}
			w.anchor = p.anchor.offset
		}
		w.sources = append(w.sources, si)
		err := w.cleanFrom(si, f, p.cfg.IndexIntervalBytes)
		if err == nil {
			err = w.flushBuf(p.cfg.IndexIntervalBytes)
		}
		if err != nil {
			w.discard()
			return fmt.Errorf("log %s: cleaning segment %d: %w", l.tp, si.base, err)
		}
		idx, tidx = w.seg.index.entries(), len(w.seg.timeIndex.ents)
	}
	if err := finish(); err != nil {
		return err
	}
	c.firstDirty[l.tp] = end
	if f.minHorizon > 0 {
		c.horizon[l] = f.minHorizon
	} else {
		delete(c.horizon, l)
	}
	l.lg.Info("cleaned log", "first_dirty_offset", end, "records_removed", f.removed, "segments", l.NumSegments())
	return c.writeCheckpoint(p.root)
}

// deleteSnapshotsOpening deletes, durably, the producer snapshots that hold
// open a transaction whose marker is about to be dropped: those at offsets
// in (previous marker, marker] for each marker -> previous marker in
// dropped. A later truncation replaying from one of them would find no
// marker to close the transaction; an older snapshot (or none) replays the
// compacted log instead, where the transaction's batches are gone too.
// The anchor (see snapshotAnchor) is never deleted: the filter kept the
// markers it holds open. If the anchor is no longer the one the clean
// planned with (retention moved the log start), the clean is aborted.
// It runs under the log's lock, before the swap's commit point.
func (l *Log) deleteSnapshotsOpening(dropped map[int64]int64, anchor int64) error {
	if len(dropped) == 0 {
		return nil
	}
	offs, err := listSnapshots(l.fs, l.dir)
	if err != nil {
		return err
	}
	if anchorOf(offs, l.segments()[0].base) != anchor {
		return errCleaningAborted
	}
	removed := false
	for _, o := range offs {
		if o == anchor {
			continue
		}
		for marker, prev := range dropped {
			if prev < o && o <= marker {
				if err := l.fs.Remove(snapshotPath(l.dir, o)); err != nil && !os.IsNotExist(err) {
					return err
				}
				removed = true
				break
			}
		}
	}
	if !removed {
		return nil
	}
	return l.fs.SyncDir(l.dir)
}

// snapshotAnchor is the newest producer snapshot at or below the first
// segment's base, which retention keeps (deleteStaleSnapshots) because it
// alone describes producers whose batches are all below the log start. A
// marker that closes a transaction it holds open cannot be dropped.
type snapshotAnchor struct {
	offset int64          // -1: none
	open   map[int64]bool // producers with an open transaction in it
	opaque bool           // unreadable: assume it holds every one open
}

// anchorOf returns the anchor's offset among the ascending snapshot
// offsets offs, or -1.
func anchorOf(offs []int64, firstBase int64) int64 {
	a := int64(-1)
	for _, o := range offs {
		if o <= firstBase {
			a = o
		}
	}
	return a
}

// loadSnapshotAnchor reads the anchor; it runs under the log's lock.
func (l *Log) loadSnapshotAnchor() snapshotAnchor {
	a := snapshotAnchor{offset: -1}
	offs, err := listSnapshots(l.fs, l.dir)
	if err != nil {
		return snapshotAnchor{offset: -1, opaque: true}
	}
	if a.offset = anchorOf(offs, l.segments()[0].base); a.offset < 0 {
		return a
	}
	data, err := vfs.ReadFile(l.fs, snapshotPath(l.dir, a.offset))
	var ps *producerState
	if err == nil {
		ps, err = decodeProducerSnapshot(data, a.offset)
	}
	if err != nil {
		a.opaque = true
		return a
	}
	a.open = map[int64]bool{}
	for pid := range ps.ongoing {
		a.open[pid] = true
	}
	return a
}

// holdsOpen reports whether the anchor holds open the transaction of pid
// that the marker at offset marker closes (prev is pid's marker before it).
func (a snapshotAnchor) holdsOpen(pid, prev, marker int64) bool {
	if a.opaque {
		return true
	}
	return a.offset >= 0 && prev < a.offset && a.offset <= marker && a.open[pid]
}

// writeCheckpoint rewrites the cleaner checkpoint of one log directory.
func (c *cleaner) writeCheckpoint(root string) error {
	offs := map[TopicPartition]int64{}
	c.m.mu.Lock()
	for tp, d := range c.m.dirOf {
		if o, ok := c.firstDirty[tp]; ok && d == root {
			offs[tp] = o
		}
	}
	c.m.mu.Unlock()
	return WriteOffsetCheckpoint(c.m.opts.FS, filepath.Join(root, CleanerOffsetFile), offs)
}

// filter decides, record by record, what a clean keeps.
type filter struct {
	keys       map[keyHash]int64
	end        int64 // records at or past it were not mapped: kept
	now        int64
	horizon    int64           // delete horizon for tombstones kept for the first time
	lastBatch  map[int64]int64 // producer id -> last offset of its last batch
	aborted    *abortedTracker
	minHorizon int64 // earliest horizon of a batch holding kept tombstones or a marker
	removed    int
	scratch    []byte
	// txnKept holds the producers whose open transaction has a batch kept
	// by this clean: their next marker must stay.
	txnKept map[int64]bool
	// lastMarker is the offset of each producer's last marker seen so far;
	// dropFrom is that of the one before the marker just dropped (-1 if
	// none): the dropped marker's transaction lies between the two.
	lastMarker map[int64]int64
	dropFrom   int64
	anchor     snapshotAnchor
	// dropMarkers is set for compact-only logs. With delete too, retention
	// removes old markers with their segments, and a moving log start
	// makes the snapshots dropping a marker requires deleting (see
	// deleteSnapshotsOpening) the only record of some producers.
	dropMarkers bool
}

// batch returns what to write for b: b itself, a rebuilt batch, or nil to
// drop it.
func (f *filter) batch(b record.Batch) (record.Batch, error) {
	attrs := b.Attributes()
	if attrs.Control() {
		return f.marker(b)
	}
	out, err := f.data(b)
	if err == nil && out != nil && attrs.Transactional() {
		f.txnKept[b.ProducerID()] = true
	}
	return out, err
}

// marker decides what to write for a control batch: it is kept while a
// batch of its transaction is (the producer's last batch always is, if
// only as a header) or while it is past the cleaned range; then it gets a
// delete horizon of delete.retention.ms, so that a read_committed consumer
// behind it still sees it, and the first clean after the horizon drops it.
func (f *filter) marker(b record.Batch) (record.Batch, error) {
	f.aborted.skip(b) // ends the transaction for the aborted tracker
	pid := b.ProducerID()
	kept := f.txnKept[pid]
	delete(f.txnKept, pid)
	prev, seen := f.lastMarker[pid]
	if !seen {
		prev = -1
	}
	f.lastMarker[pid] = b.LastOffset()
	if kept || b.LastOffset() >= f.end || !f.dropMarkers {
		return b, nil
	}
	if b.Attributes().HasDeleteHorizon() {
		if f.now >= b.BaseTimestamp() {
			if f.anchor.holdsOpen(pid, prev, b.LastOffset()) {
				// The snapshot describing the log start holds this
				// transaction open and must stay: so must the marker.
				return b, nil
			}
			f.removed += int(b.NumRecords())
			f.dropFrom = prev
			return nil, nil
		}
		f.noteHorizon(b.BaseTimestamp())
		return b, nil
	}
	f.noteHorizon(f.horizon)
	raw, err := b.Decoded(nil, cleanerDecodeLimit)
	if err != nil {
		return nil, err
	}
	recs, err := rebaseTimestamps(raw, b.NumRecords(), b.BaseTimestamp()-f.horizon)
	if err != nil {
		return nil, err
	}
	h := record.HeaderOf(b)
	h.Attributes = (h.Attributes | attrDeleteHorizon).WithCodec(record.None)
	h.BaseTimestamp = f.horizon
	return record.BuildRaw(h, b.NumRecords(), recs, 0)
}

func (f *filter) noteHorizon(h int64) {
	if f.minHorizon == 0 || h < f.minHorizon {
		f.minHorizon = h
	}
}

// data decides what to write for a data batch.
func (f *filter) data(b record.Batch) (record.Batch, error) {
	attrs := b.Attributes()
	if f.aborted.skip(b) && b.LastOffset() < f.end {
		// Aborted: no record is kept, but the producer's last batch
		// keeps its header, as below.
		f.removed += int(b.NumRecords())
		if b.ProducerID() < 0 || f.lastBatch[b.ProducerID()] != b.LastOffset() {
			return nil, nil
		}
		h := record.HeaderOf(b)
		h.Attributes = (h.Attributes &^ attrDeleteHorizon).WithCodec(record.None)
		h.BaseTimestamp = b.MaxTimestamp()
		return record.BuildRaw(h, 0, nil, 0)
	}
	raw, err := b.Decoded(f.scratch[:0], cleanerDecodeLimit)
	if err != nil {
		return nil, err
	}
	if attrs.Codec() != record.None {
		f.scratch = raw
	}
	hasHorizon := attrs.HasDeleteHorizon()
	var kept []byte
	var count int32
	var tombstones, dropped bool
	minTS, maxTS := int64(math.MaxInt64), int64(-1)
	it := record.NewRecords(raw, b.NumRecords())
	for r, ok := it.Next(); ok; r, ok = it.Next() {
		off := b.BaseOffset() + int64(r.OffsetDelta)
		keep := off >= f.end
		if !keep && r.Key != nil {
			latest, found := f.keys[hashKey(r.Key)]
			keep = (!found || off >= latest) && (r.Value != nil || !hasHorizon || f.now < b.BaseTimestamp())
		}
		if !keep {
			dropped = true
			f.removed++
			continue
		}
		tombstones = tombstones || r.Value == nil
		ts := b.BaseTimestamp() + r.TimestampDelta
		minTS, maxTS = min(minTS, ts), max(maxTS, ts)
		count++
		kept = record.AppendRecord(kept, r)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	needHorizon := tombstones && !hasHorizon
	if tombstones {
		h := b.BaseTimestamp()
		if needHorizon {
			h = f.horizon
		}
		f.noteHorizon(h)
	}
	if !dropped && !needHorizon {
		return b, nil
	}
	h := record.HeaderOf(b)
	if count == 0 {
		if b.ProducerID() < 0 || f.lastBatch[b.ProducerID()] != b.LastOffset() {
			return nil, nil
		}
		// The producer's last batch: keep its header (sequence numbers,
		// offsets) with no records, as Kafka does.
		h.Attributes = (h.Attributes &^ attrDeleteHorizon).WithCodec(record.None)
		h.BaseTimestamp, h.MaxTimestamp = b.MaxTimestamp(), b.MaxTimestamp()
		return record.BuildRaw(h, 0, nil, 0)
	}
	newBase := minTS
	switch {
	case needHorizon:
		newBase = f.horizon
		h.Attributes |= attrDeleteHorizon
	case hasHorizon:
		newBase = b.BaseTimestamp()
	}
	if newBase != b.BaseTimestamp() {
		if kept, err = rebaseTimestamps(kept, count, b.BaseTimestamp()-newBase); err != nil {
			return nil, err
		}
	}
	h.BaseTimestamp = newBase
	if !attrs.LogAppendTime() {
		h.MaxTimestamp = maxTS
	}
	return record.BuildRaw(h, count, kept, 0)
}

// rebaseTimestamps re-encodes count records with their timestamp deltas
// grown by shift, so that each keeps its timestamp under a base timestamp
// lowered by shift.
func rebaseTimestamps(recs []byte, count int32, shift int64) ([]byte, error) {
	var out []byte
	it := record.NewRecords(recs, count)
	for r, ok := it.Next(); ok; r, ok = it.Next() {
		r.TimestampDelta += shift
		out = record.AppendRecord(out, r)
	}
	return out, it.Err()
}

// cleanedSegment is the new segment a group of segments is cleaned into:
// <base>.log.cleaned with its indexes in <base>.index.cleaned and
// <base>.timeindex.cleaned, built as the batches are written.
type cleanedSegment struct {
	l       *Log
	seg     *segment
	buf     []byte
	sources []segInfo
	changed bool
	// droppedMarkers maps the offset of each marker the clean dropped to
	// that of its producer's marker before it (-1 if none). Their aborted
	// transactions leave the transaction index, and the producer snapshots
	// between the two, which hold the transaction open, are deleted.
	droppedMarkers map[int64]int64
	anchor         int64 // the snapshot anchor's offset when the clean planned
}

func newCleanedSegment(l *Log, base, now int64) (*cleanedSegment, error) {
	for _, t := range segmentTypes {
		if err := l.fs.Remove(statePath(l.dir, base, t, Cleaned)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	f, err := l.files.create(statePath(l.dir, base, FileLog, Cleaned))
	if err != nil {
		return nil, err
	}
	s := &segment{base: base, file: f, nextOffset: base, maxTimestamp: -1, maxTSOffset: -1, firstTimestamp: -1, created: now,
		txns: &txnIndex{fs: l.fs, path: statePath(l.dir, base, FileTxnIndex, Cleaned)}}
	w := &cleanedSegment{l: l, seg: s}
	if s.index, _, err = loadOffsetIndex(l.files, statePath(l.dir, base, FileIndex, Cleaned), base, 0); err == nil {
		s.timeIndex, _, err = loadTimeIndex(l.files, statePath(l.dir, base, FileTimeIndex, Cleaned), base, base)
	}
	if err != nil {
		w.discard()
		return nil, err
	}
	return w, nil
}

// cleanFrom filters the batches of one source segment into w.
func (w *cleanedSegment) cleanFrom(si segInfo, f *filter, interval int64) error {
	return si.s.batchesFrom(0, func(b record.Batch) error {
		out, err := f.batch(b)
		if err != nil {
			return err
		}
		if out == nil {
			w.changed = true
			if b.Attributes().Control() {
				if w.droppedMarkers == nil {
					w.droppedMarkers = map[int64]int64{}
				}
				w.droppedMarkers[b.LastOffset()] = f.dropFrom
			}
			return nil
		}
		if len(out) != len(b) || &out[0] != &b[0] {
			w.changed = true
		}
		w.buf = append(w.buf, out...)
		if len(w.buf) >= cleanerBufBytes {
			return w.flushBuf(interval)
		}
		return nil
	})
}

func (w *cleanedSegment) flushBuf(interval int64) error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.seg.appendBatches(w.buf, interval)
	w.buf = w.buf[:0]
	return err
}

// discard closes and removes the files of an unused cleaned segment.
func (w *cleanedSegment) discard() {
	if w.seg.index != nil && w.seg.timeIndex != nil {
		w.seg.close()
	} else {
		w.seg.file.Close()
		if w.seg.index != nil {
			w.seg.index.file.Close()
		}
	}
	for _, t := range segmentTypes {
		w.l.fs.Remove(statePath(w.l.dir, w.seg.base, t, Cleaned))
	}
}

// swap puts a cleaned segment in place of its sources. The new files are
// synced, then .log.cleaned is renamed to .log.swap and the directory
// synced: from then on, a crash ends with the new segment (open completes
// the swap). Under the log's lock, the sources are checked to still be the
// log's, the merged sources are renamed to .deleted, the indexes and then
// the .log are renamed into place, and the segment list is updated.
// Readers in flight keep their handles to the old files, which are closed
// after file.delete.delay.ms.
func (c *cleaner) swap(l *Log, w *cleanedSegment) error {
	if err := w.flushBuf(l.config().IndexIntervalBytes); err != nil {
		w.discard()
		return err
	}
	if len(w.sources) == 1 && !w.changed {
		w.discard() // nothing to gain from rewriting it
		return nil
	}
	s := w.seg
	if s.maxTimestamp >= 0 {
		if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.maxTSOffset); err != nil {
			w.discard()
			return err
		}
	}
	// The sources' aborted transactions, in order (offsets are kept),
	// but for those whose marker was dropped.
	for _, si := range w.sources {
		var keep []AbortedTxn
		for _, e := range si.s.txns.all() {
			if _, dropped := w.droppedMarkers[e.LastOffset]; !dropped {
				keep = append(keep, e)
			}
		}
		if err := s.txns.append(keep...); err != nil {
			w.discard()
			return err
		}
	}
	if len(w.droppedMarkers) > 0 && len(s.txns.all()) == 0 {
		// Every entry went with its marker: an empty .txnindex.cleaned
		// must still replace the sources' index, or a crash after the
		// commit point would leave the old entries in place.
		f, err := l.fs.OpenFile(statePath(l.dir, s.base, FileTxnIndex, Cleaned), os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
		if err == nil {
			err = f.Sync()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			w.discard()
			return err
		}
	}
	if err := errors.Join(s.index.flush(), s.timeIndex.flush(), s.sync()); err != nil {
		w.discard()
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	segs := l.segments()
	at := -1
	for i, x := range segs {
		if x == w.sources[0].s {
			at = i
		}
	}
	ok := !l.closed && l.truncatedTo == math.MaxInt64 && at >= 0 && at+len(w.sources) < len(segs)
	for i, si := range w.sources {
		ok = ok && segs[at+i] == si.s && si.s.size.Load() == si.size
	}
	if !ok {
		w.discard()
		return errCleaningAborted
	}
	if err := l.deleteSnapshotsOpening(w.droppedMarkers, w.anchor); err != nil {
		w.discard()
		return err
	}
	dir, base := l.dir, s.base
	logPath, swapPath := segmentPath(dir, base, FileLog), statePath(dir, base, FileLog, Swap)
	if err := s.file.rename(swapPath); err != nil {
		w.discard()
		return err
	}
	if err := l.fs.SyncDir(dir); err != nil {
		// The swap may or may not be durable; keep going, as a crash
		// could complete it anyway.
		l.lg.Warn("syncing directory after cleaned segment swap", "err", err)
	}
	var errs []error
	for _, si := range w.sources[1:] {
		errs = append(errs, l.renameSegment(si.s, Deleted)...)
	}
	for _, t := range []FileType{FileIndex, FileTimeIndex, FileTxnIndex} {
		p := segmentPath(dir, base, t)
		if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
		var err error
		switch t {
		case FileIndex:
			err = s.index.file.rename(p)
		case FileTimeIndex:
			err = s.timeIndex.file.rename(p)
		default:
			err = l.fs.Rename(statePath(dir, base, t, Cleaned), p)
		}
		if err != nil && !(t == FileTxnIndex && os.IsNotExist(err)) {
			errs = append(errs, err)
		}
	}
	s.txns.path = segmentPath(dir, base, FileTxnIndex)
	if err := l.fs.SyncDir(dir); err != nil {
		errs = append(errs, err)
	}
	// Only with the merged segments and the old indexes gone may the .log
	// take its name; otherwise the .swap stays for open to finish.
	if len(errs) == 0 {
		if err := s.file.rename(logPath); err != nil {
			errs = append(errs, err)
		} else if err := l.fs.SyncDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	news := append(append(append([]*segment(nil), segs[:at]...), s), segs[at+len(w.sources):]...)
	l.setSegments(news)
	delay := time.Duration(l.config().FileDeleteDelayMs) * time.Millisecond
	old := w.sources[0].s
	l.wait(delay, func() { old.close() })
	for _, si := range w.sources[1:] {
		l.wait(delay, func() { l.removeDeletedFiles(si.s) })
	}
	return errors.Join(errs...)
}

// finishSwaps completes, on open, compaction swaps whose .swap file was just
// renamed into place: the swapped segment's index files describe its old
// contents, so they are removed (and rebuilt), and segments based inside
// the swapped segment's offsets were merged into it and are removed.
func (l *Log) finishSwaps(bases, swapped []int64) ([]int64, error) {
	for _, b := range swapped {
		for _, t := range []FileType{FileIndex, FileTimeIndex} {
			if err := l.fs.Remove(segmentPath(l.dir, b, t)); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
		}
		// The merged transaction index was synced before the swap's
		// commit point; if it was not moved in place yet, move it now.
		if err := l.fs.Rename(statePath(l.dir, b, FileTxnIndex, Cleaned), segmentPath(l.dir, b, FileTxnIndex)); err != nil &&
			!os.IsNotExist(err) {
			return nil, err
		}
		next, err := scanNextOffset(l.fs, segmentPath(l.dir, b, FileLog), b)
		if err != nil {
			return nil, err
		}
		kept := bases[:0:0]
		for _, o := range bases {
			if o <= b || o >= next {
				kept = append(kept, o)
				continue
			}
			l.lg.Info("removing segment merged by an interrupted compaction", "segment", o, "into", b)
			for _, t := range segmentTypes {
				if err := l.fs.Remove(segmentPath(l.dir, o, t)); err != nil && !os.IsNotExist(err) {
					return nil, err
				}
			}
		}
		bases = kept
	}
	return bases, nil
}

// scanNextOffset walks the batch headers of a segment file and returns the
// offset after its last whole batch (base when there is none).
func scanNextOffset(fsys vfs.FS, path string, base int64) (int64, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	next := base
	var hdr [record.HeaderSize]byte
	for pos := int64(0); pos < st.Size(); {
		h, err := readHeader(f, pos, &hdr)
		if err != nil {
			break
		}
		pos += int64(h.Length()) + record.LengthOverhead
		if pos > st.Size() {
			break
		}
		next = h.NextOffset()
	}
	return next, nil
}
