// Package log is weir's partition storage: an append-only sequence of
// segments in one directory, laid out as Kafka lays them out.
//
//	<dir>/00000000000000000000.log        batches, stored exactly as on the wire
//	<dir>/00000000000000000000.index      sparse offset -> position index
//	<dir>/00000000000000000000.timeindex  sparse timestamp -> offset index
//	<dir>/00000000000000001200.snapshot   idempotent producer state as of 1200
//	<dir>/leader-epoch-checkpoint         epoch -> first offset
//	<dir>/partition.metadata              topic id
//
// A segment is named for its base offset, the first offset it may hold.
// Batches arrive validated; the log assigns offsets (leader) or takes them
// as they are (follower), keeps the indexes and producer state, rolls
// segments by size, time and index capacity, recovers a torn tail after a
// crash, and deletes whole segments for retention. Appends are serialized
// by the log's lock; reads run concurrently and never take it.
package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"weir/internal/record"
	"weir/internal/vfs"
)

// Errors with a Kafka meaning.
var (
	ErrOffsetOutOfRange = errors.New("log: offset out of range") // OFFSET_OUT_OF_RANGE
	ErrClosed           = errors.New("log: closed")              // NOT_LEADER_OR_FOLLOWER / KAFKA_STORAGE_ERROR
)

// Config is the per-topic configuration the log honours. It may be swapped
// at run time with SetConfig.
type Config struct {
	SegmentBytes       int64
	SegmentMs          int64
	SegmentJitterMs    int64
	IndexIntervalBytes int64
	SegmentIndexBytes  int64
	RetentionMs        int64 // -1: no time limit
	RetentionBytes     int64 // -1: no size limit
	Delete             bool  // cleanup.policy has delete
	Compact            bool  // cleanup.policy has compact
	DeleteRetentionMs  int64
	MinCompactionLagMs int64
	MaxCompactionLagMs int64
	MinCleanableRatio  float64
	FlushMessages      int64 // fsync after this many messages; 1 = before every ack
	FlushMs            int64
	FileDeleteDelayMs  int64
	ProducerExpiryMs   int64 // producer.id.expiration.ms
}

// DefaultConfig has Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes: 1 << 30, SegmentMs: 7 * 24 * 3600 * 1000, IndexIntervalBytes: 4096,
		SegmentIndexBytes: 10 << 20, RetentionMs: 7 * 24 * 3600 * 1000, RetentionBytes: -1,
		Delete: true, DeleteRetentionMs: 24 * 3600 * 1000, MaxCompactionLagMs: math.MaxInt64,
		MinCleanableRatio: 0.5, FlushMessages: math.MaxInt64, FlushMs: math.MaxInt64,
		FileDeleteDelayMs: 60000, ProducerExpiryMs: 24 * 3600 * 1000,
	}
}

// Options are the log's collaborators; zero values pick the real ones.
type Options struct {
	FS     vfs.FS
	Now    func() time.Time
	Logger *slog.Logger
	// RecoveryPoint is the offset below which data is known flushed: only
	// segments at or after it are scanned on open.
	RecoveryPoint int64
	// LogStartOffset is the checkpointed log start offset.
	LogStartOffset int64
	// HighWatermark is the checkpointed high watermark.
	HighWatermark int64
	// AfterDelay runs fn after d; it defers closing and removing files of
	// deleted segments so in-flight reads finish. Defaults to time.AfterFunc.
	AfterDelay func(d time.Duration, fn func())
}

// Log is one partition's log. See the package comment.
type Log struct {
	dir  string
	tp   TopicPartition
	fs   vfs.FS
	now  func() time.Time
	lg   *slog.Logger
	cfg  atomic.Pointer[Config]
	wait func(time.Duration, func())

	// segs is the immutable current segment list, replaced on every change,
	// so readers need no lock.
	segs          atomic.Pointer[[]*segment]
	logEnd        atomic.Int64
	logStart      atomic.Int64
	highWatermark atomic.Int64
	recoveryPoint atomic.Int64

	mu        sync.Mutex // serializes appends, rolls, truncation, retention
	producers *producerState
	epochs    *epochCache
	unflushed int64        // messages appended since the last flush
	lastFlush atomic.Int64 // unix ms of the last completed flush
	closed    bool

	// truncatedTo is the lowest offset the log was truncated to since the
	// cleaner last looked (math.MaxInt64: none); guarded by mu.
	truncatedTo int64

	flushMu sync.Mutex // one fsync at a time; waiters find their data already flushed
}

// Open opens or creates the log in dir, recovering any unflushed tail.
func Open(dir string, tp TopicPartition, cfg Config, opts Options) (*Log, error) {
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.AfterDelay == nil {
		opts.AfterDelay = func(d time.Duration, fn func()) { time.AfterFunc(d, fn) }
	}
	l := &Log{dir: dir, tp: tp, fs: opts.FS, now: opts.Now, wait: opts.AfterDelay,
		lg: opts.Logger.With("partition", tp.String()), truncatedTo: math.MaxInt64}
	l.cfg.Store(&cfg)
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := l.load(opts.RecoveryPoint, opts.LogStartOffset); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("log %s: %w", tp, err)
	}
	l.highWatermark.Store(min(max(opts.HighWatermark, l.logStart.Load()), l.logEnd.Load()))
	l.lastFlush.Store(l.nowMs())
	return l, nil
}

func (l *Log) config() *Config { return l.cfg.Load() }

// SetConfig replaces the configuration; it applies to the next append,
// roll and retention pass.
func (l *Log) SetConfig(c Config) { l.cfg.Store(&c) }

// Config returns the current configuration.
func (l *Log) Config() Config { return *l.config() }

func (l *Log) nowMs() int64 { return l.now().UnixMilli() }

func (l *Log) segments() []*segment { return *l.segs.Load() }

func (l *Log) setSegments(s []*segment) { l.segs.Store(&s) }

func (l *Log) active() *segment {
	s := l.segments()
	return s[len(s)-1]
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// TopicPartition names the log's partition.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// LogEndOffset is the offset the next appended record will get.
func (l *Log) LogEndOffset() int64 { return l.logEnd.Load() }

// LogStartOffset is the first offset still readable.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// HighWatermark is the offset below which records are committed. The
// partition layer moves it; the log keeps it within [log start, log end]
// and uses it to bound retention and DeleteRecords.
func (l *Log) HighWatermark() int64 { return l.highWatermark.Load() }

// SetHighWatermark sets the high watermark, clamped to the log's range.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.highWatermark.Store(min(max(hw, l.logStart.Load()), l.logEnd.Load()))
}

// RecoveryPoint is the offset below which all data has been fsynced.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// Size is the total bytes of all segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// NumSegments is the number of segments.
func (l *Log) NumSegments() int { return len(l.segments()) }

// load lists the directory, removes leftovers of interrupted operations,
// opens the segments, recovers those from the recovery point on, and
// rebuilds the producer state and epoch cache to match.
func (l *Log) load(recoveryPoint, logStart int64) error {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	var bases, swapped []int64
	for _, de := range ents {
		name := de.Name()
		switch {
		case strings.HasSuffix(name, ".deleted"), strings.HasSuffix(name, ".cleaned"),
			strings.HasSuffix(name, ".tmp"):
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return err
			}
		case strings.HasSuffix(name, ".swap"):
			// A compaction swap that was written and synced completely:
			// finish it by renaming the file into place.
			orig := strings.TrimSuffix(name, ".swap")
			if err := l.fs.Rename(filepath.Join(l.dir, name), filepath.Join(l.dir, orig)); err != nil {
				return err
			}
			if strings.HasSuffix(orig, ".log") {
				if b, err := strconv.ParseInt(strings.TrimSuffix(orig, ".log"), 10, 64); err == nil {
					swapped = append(swapped, b)
					if !contains(bases, b) {
						bases = append(bases, b)
					}
				}
			}
		case strings.HasSuffix(name, ".log"):
			b, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
			if err != nil {
				continue
			}
			if !contains(bases, b) {
				bases = append(bases, b)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	if bases, err = l.finishSwaps(bases, swapped); err != nil {
		return err
	}
	// An index whose segment is gone is an orphan of an interrupted deletion.
	for _, de := range ents {
		name := de.Name()
		for _, ext := range []string{".index", ".timeindex"} {
			if strings.HasSuffix(name, ext) {
				if b, err := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64); err == nil && !contains(bases, b) {
					l.fs.Remove(filepath.Join(l.dir, name))
				}
			}
		}
	}
	now := l.nowMs()
	cfg := l.config()
	var segs []*segment
	for _, b := range bases {
		s, err := openSegment(l.fs, l.dir, b, now)
		if err != nil {
			closeAll(segs)
			return err
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		base := max(logStart, 0)
		s, err := openSegment(l.fs, l.dir, base, now)
		if err != nil {
			return err
		}
		segs = []*segment{s}
	}
	l.setSegments(segs)
	if l.epochs, err = loadEpochCache(l.fs, l.dir); err != nil {
		return err
	}

	// Segments wholly below the recovery point are trusted if their
	// indexes are sane; from the segment holding the recovery point on,
	// every batch is checked.
	recoverFrom := len(segs) - 1
	for i := range segs {
		if i+1 < len(segs) && segs[i+1].base <= recoveryPoint {
			continue
		}
		recoverFrom = i
		break
	}
	for i, s := range segs {
		nextBase := int64(math.MaxInt64)
		if i+1 < len(segs) {
			nextBase = segs[i+1].base
		}
		if err := l.loadIndexes(s, i >= recoverFrom, nextBase, cfg.IndexIntervalBytes); err != nil {
			return err
		}
	}
	for i := recoverFrom; i < len(segs); i++ {
		s := segs[i]
		truncated, err := s.recover(cfg.IndexIntervalBytes, nil)
		var torn *errTornTail
		if errors.As(err, &torn) {
			l.lg.Warn("recovered torn log tail", "segment", s.base, "position", torn.pos, "bytes_dropped", truncated, "reason", torn.reason)
			// Everything after a torn batch is unreachable: drop later segments.
			for _, later := range segs[i+1:] {
				l.removeSegmentFiles(later)
			}
			if i+1 < len(segs) {
				// Durable before new data is appended and flushed, or a
				// crash could bring them back behind it.
				if err := l.fs.SyncDir(l.dir); err != nil {
					return err
				}
			}
			segs = segs[:i+1]
			l.setSegments(segs)
			break
		}
		if err != nil {
			return err
		}
	}
	// The log end is the last segment's next offset (its base when empty).
	l.logEnd.Store(segs[len(segs)-1].nextOffset)
	l.logStart.Store(max(logStart, segs[0].base))
	if l.logStart.Load() > l.logEnd.Load() {
		l.logStart.Store(l.logEnd.Load())
	}
	// Recovered data is not known to be flushed: keep the recovery point
	// where it was (clamped), so a later crash scans it again.
	l.recoveryPoint.Store(min(max(recoveryPoint, 0), l.logEnd.Load()))
	if err := l.epochs.truncateFromEnd(l.logEnd.Load()); err != nil {
		return err
	}
	return l.rebuildProducerState(l.logEnd.Load())
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (l *Log) loadIndexes(s *segment, recovering bool, nextBase int64, interval int64) error {
	var ok1, ok2 bool
	var err error
	if s.index, ok1, err = loadOffsetIndex(l.fs, segmentPath(l.dir, s.base, ".index"), s.base, s.size.Load()); err != nil {
		return err
	}
	if s.timeIndex, ok2, err = loadTimeIndex(l.fs, segmentPath(l.dir, s.base, ".timeindex"), s.base, nextBase); err != nil {
		return err
	}
	if recovering {
		return nil // recover rebuilds both
	}
	// An empty index on a non-empty segment may be one a crash emptied:
	// rebuilding it costs little when it is legitimately empty.
	if ok1 && ok2 && !(s.index.entries() == 0 && s.size.Load() > 0) {
		if err := s.loadState(interval); err == nil {
			return nil
		}
	}
	l.lg.Info("rebuilding index", "segment", s.base)
	_, err = s.recover(interval, nil)
	var torn *errTornTail
	if errors.As(err, &torn) {
		// Data below the recovery point was flushed; corruption there is
		// not a torn write. Keep what is valid and say so loudly.
		l.lg.Error("corrupt flushed segment truncated", "segment", s.base, "position", torn.pos, "reason", torn.reason)
		return nil
	}
	return err
}

// rebuildProducerState loads the newest snapshot at or below end and
// replays the batches after it.
func (l *Log) rebuildProducerState(end int64) error {
	ps, err := loadProducerSnapshot(l.fs, l.dir, end)
	if err != nil {
		return err
	}
	if ps == nil || ps.mapEnd < l.logStart.Load() && ps.mapEnd < l.segments()[0].base {
		ps = newProducerState()
		ps.mapEnd = l.segments()[0].base
	}
	from := ps.mapEnd
	for _, s := range l.segments() {
		if s.nextOffset <= from {
			continue
		}
		var hdr [record.HeaderSize]byte
		pos, _, found, err := s.findBatch(from, s.size.Load(), &hdr)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		if err := s.batchesFrom(pos, func(b record.Batch) error {
			if b.BaseOffset() >= from && b.BaseOffset() < end {
				ps.update(b)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	ps.mapEnd = end
	l.producers = ps
	return nil
}

// AppendInfo describes an appended (or deduplicated) batch.
type AppendInfo struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	Duplicate      bool // an idempotent retry: nothing was written
}

// AppendAsLeader assigns offsets to a validated batch, stamps the leader
// epoch, checks the producer's sequence, and appends it. The log takes
// ownership of b's bytes.
func (l *Log) AppendAsLeader(b record.Batch, leaderEpoch int32) (AppendInfo, error) {
	l.mu.Lock()
	info, err := l.appendLeaderLocked(b, leaderEpoch)
	needFlush := err == nil && !info.Duplicate && l.unflushed >= l.config().FlushMessages
	l.mu.Unlock()
	if needFlush {
		if ferr := l.Flush(info.LastOffset + 1); ferr != nil {
			return info, ferr
		}
	}
	return info, err
}

func (l *Log) appendLeaderLocked(b record.Batch, leaderEpoch int32) (AppendInfo, error) {
	if err := l.syncBeforeRollLocked(len(b), b.MaxTimestamp()); err != nil {
		return AppendInfo{}, err
	}
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	if err := l.producers.check(b); err != nil {
		var dup *DuplicateError
		if errors.As(err, &dup) {
			return AppendInfo{BaseOffset: dup.BaseOffset, LastOffset: dup.BaseOffset + int64(b.LastOffsetDelta()),
				LogAppendTime: -1, LogStartOffset: l.logStart.Load(), Duplicate: true}, nil
		}
		return AppendInfo{}, err
	}
	base := l.logEnd.Load()
	b.SetBaseOffset(base)
	b.SetLeaderEpoch(leaderEpoch)
	if err := l.appendLocked(b); err != nil {
		return AppendInfo{}, err
	}
	info := AppendInfo{BaseOffset: base, LastOffset: b.LastOffset(), LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	if b.Attributes().LogAppendTime() {
		info.LogAppendTime = b.MaxTimestamp()
	}
	return info, nil
}

// AppendAsFollower appends batches that already carry offsets and epochs,
// as fetched from the leader. The first batch must start at or after the
// log end.
func (l *Log) AppendAsFollower(data []byte) (AppendInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	info := AppendInfo{BaseOffset: -1, LogAppendTime: -1}
	for buf := data; len(buf) > 0; {
		b, rest, err := record.Next(buf)
		if err != nil {
			return info, err
		}
		if b.BaseOffset() < l.logEnd.Load() {
			return info, fmt.Errorf("log %s: follower append at %d below log end %d", l.tp, b.BaseOffset(), l.logEnd.Load())
		}
		if !b.ValidCRC() {
			return info, record.ErrCorrupt
		}
		if info.BaseOffset < 0 {
			info.BaseOffset = b.BaseOffset()
		}
		if err := l.syncBeforeRollLocked(len(b), b.MaxTimestamp()); err != nil {
			return info, err
		}
		if l.closed {
			return info, ErrClosed
		}
		if b.BaseOffset() < l.logEnd.Load() {
			return info, fmt.Errorf("log %s: follower append at %d below log end %d", l.tp, b.BaseOffset(), l.logEnd.Load())
		}
		if err := l.appendLocked(b); err != nil {
			return info, err
		}
		info.LastOffset = b.LastOffset()
		buf = rest
	}
	info.LogStartOffset = l.logStart.Load()
	return info, nil
}

// syncBeforeRollLocked makes the active segment durable before an append
// of size bytes rolls it (see rollLocked), releasing the lock during the
// fsync so appends and reads are not blocked by the disk. Other appends
// may land in the segment meanwhile; the loop syncs again until nothing
// unsynced is left or no roll is due. Called and returns with l.mu held.
func (l *Log) syncBeforeRollLocked(size int, maxTimestamp int64) error {
	for !l.closed {
		seg := l.active()
		if !l.rollDue(seg, int64(size), maxTimestamp, l.config()) || seg.synced.Load() >= seg.size.Load() {
			return nil
		}
		l.mu.Unlock()
		err := seg.file.Sync()
		l.mu.Lock()
		if err != nil {
			return err
		}
		// Appends are serialized by l.mu, which was released: only what
		// was there before the fsync is known durable.
		if l.active() != seg {
			return nil
		}
		seg.synced.Store(seg.size.Load())
	}
	return nil
}

// appendLocked writes one stamped batch, rolling first when needed.
func (l *Log) appendLocked(b record.Batch) error {
	cfg := l.config()
	seg := l.active()
	if l.shouldRoll(seg, b, cfg) {
		var err error
		if seg, err = l.rollLocked(b.BaseOffset()); err != nil {
			return err
		}
	}
	// The epoch goes first: failing after the data was written would
	// leave a batch in the segment that the log end does not include.
	if err := l.epochs.assign(b.LeaderEpoch(), b.BaseOffset()); err != nil {
		return err
	}
	if err := seg.appendBatches(b, cfg.IndexIntervalBytes); err != nil {
		return err
	}
	l.producers.update(b)
	l.logEnd.Store(b.NextOffset())
	l.unflushed += int64(b.NumRecords())
	return nil
}

// shouldRoll follows Kafka's rules: the batch would overflow segment.bytes,
// the segment has aged past segment.ms (less jitter), an index is full, or
// the batch's offsets do not fit the index's 32-bit relative offsets.
func (l *Log) shouldRoll(s *segment, b record.Batch, cfg *Config) bool {
	return l.rollDue(s, int64(len(b)), b.MaxTimestamp(), cfg) || b.LastOffset()-s.base > math.MaxInt32
}

// rollDue is shouldRoll without the offset rule, for a batch of size bytes
// whose offsets are not assigned yet.
func (l *Log) rollDue(s *segment, size, maxTimestamp int64, cfg *Config) bool {
	cur := s.size.Load()
	if cur == 0 {
		return false
	}
	if cur+size > cfg.SegmentBytes {
		return true
	}
	waited := l.nowMs() - s.created
	if s.firstTimestamp >= 0 {
		waited = maxTimestamp - s.firstTimestamp
	}
	if waited > cfg.SegmentMs-cfg.SegmentJitterMs {
		return true
	}
	maxEntries := cfg.SegmentIndexBytes / offsetEntrySize
	return int64(s.index.entries()) >= maxEntries || int64(len(s.timeIndex.ents)) >= cfg.SegmentIndexBytes/timeEntrySize
}

// Roll starts a new segment at the log end (used by retention when the
// active segment itself has expired, and by tests).
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active().size.Load() == 0 {
		return nil
	}
	_, err := l.rollLocked(l.logEnd.Load())
	return err
}

// newEmptySegment creates the files of a new, empty segment at base.
func (l *Log) newEmptySegment(base int64) (*segment, error) {
	s, err := openSegment(l.fs, l.dir, base, l.nowMs())
	if err != nil {
		return nil, err
	}
	if s.index, _, err = loadOffsetIndex(l.fs, segmentPath(l.dir, base, ".index"), base, 0); err != nil {
		s.file.Close()
		return nil, err
	}
	if s.timeIndex, _, err = loadTimeIndex(l.fs, segmentPath(l.dir, base, ".timeindex"), base, base); err != nil {
		s.file.Close()
		s.index.file.Close()
		return nil, err
	}
	if s.size.Load() != 0 {
		s.close()
		return nil, fmt.Errorf("log %s: new segment %d is not empty", l.tp, base)
	}
	return s, nil
}

func (l *Log) rollLocked(base int64) (*segment, error) {
	old := l.active()
	if base < l.logEnd.Load() {
		base = l.logEnd.Load()
	}
	// The old segment's data must be durable before the new segment's
	// file can be: the snapshot below syncs the directory, and a crash
	// that kept the new segment but lost the old one's tail would leave a
	// hole below the log end that recovery cannot see. Appends sync it
	// beforehand without the lock (syncBeforeRollLocked), so this is
	// normally a no-op.
	if old.synced.Load() < old.size.Load() {
		if err := old.file.Sync(); err != nil {
			return nil, err
		}
		old.synced.Store(old.size.Load())
	}
	s, err := l.newEmptySegment(base)
	if err != nil {
		return nil, err
	}
	// The producer snapshot at the roll offset bounds replay after a crash.
	snap := l.producers.clone()
	snap.mapEnd = l.logEnd.Load()
	if err := writeProducerSnapshot(l.fs, l.dir, snap); err != nil {
		l.removeSegmentFiles(s) // else the next open takes it for the last segment
		return nil, err
	}
	// Closed segments' time index gets its final entry, as Kafka does.
	if old.maxTimestamp >= 0 {
		if err := old.timeIndex.maybeAppend(old.maxTimestamp, old.maxTSOffset); err != nil {
			l.removeSegmentFiles(s)
			return nil, err
		}
	}
	segs := append(append([]*segment(nil), l.segments()...), s)
	l.setSegments(segs)
	// The rolled segment is flushed in the background, as Kafka does.
	go l.Flush(base)
	return s, nil
}

// Flush fsyncs everything below upTo (at least) and advances the recovery
// point. Concurrent callers share one fsync.
func (l *Log) Flush(upTo int64) error {
	if l.recoveryPoint.Load() >= upTo {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.recoveryPoint.Load() >= upTo {
		return nil
	}
	l.mu.Lock()
	end := l.logEnd.Load()
	segs := l.segments()
	l.unflushed = 0
	l.mu.Unlock()
	from := l.recoveryPoint.Load()
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= from {
			continue
		}
		if err := s.sync(); err != nil {
			if errors.Is(err, os.ErrClosed) {
				continue // deleted meanwhile
			}
			return err
		}
	}
	if end > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(end)
	}
	l.lastFlush.Store(l.nowMs())
	return nil
}

func (l *Log) lastFlushed() time.Time { return time.UnixMilli(l.lastFlush.Load()) }

// Slice is a range of a segment file holding whole batches from the one
// that contains the requested offset (the last may be cut by maxBytes, as
// Kafka does). File is an *os.File on the real filesystem, for sendfile.
type Slice struct {
	File vfs.File
	Pos  int64
	Size int
}

// Read returns up to maxBytes of batches starting with the batch holding
// offset and ending before maxOffset (an exclusive bound such as the high
// watermark). With minOneBatch, a first batch larger than maxBytes is
// returned whole. A read returns data from one segment only.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (Slice, error) {
	segs := l.segments()
	end := l.logEnd.Load()
	if offset < l.logStart.Load() || offset > end {
		return Slice{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, l.logStart.Load(), end)
	}
	if offset >= maxOffset {
		return Slice{}, nil
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	if i < 0 {
		i = 0
	}
	var hdr [record.HeaderSize]byte
	for ; i < len(segs); i++ {
		s := segs[i]
		limit := s.size.Load()
		pos, h, found, err := s.findBatch(offset, limit, &hdr)
		if err != nil {
			return Slice{}, err
		}
		if !found {
			continue // offset is past this segment (a compacted gap)
		}
		if h.BaseOffset() >= maxOffset {
			return Slice{}, nil
		}
		// h aliases hdr, which batchEnd reuses: take the size first.
		first := int64(h.Length()) + record.LengthOverhead
		stop := limit
		if maxOffset < end {
			if stop, err = s.batchEnd(pos, maxOffset, limit, &hdr); err != nil {
				return Slice{}, err
			}
		}
		size := min(stop-pos, int64(maxBytes))
		if first > int64(maxBytes) {
			if !minOneBatch {
				return Slice{}, nil
			}
			size = first
		}
		return Slice{File: s.file, Pos: pos, Size: int(size)}, nil
	}
	return Slice{}, nil
}

// ReadBytes is Read into memory, for callers that need the batches
// themselves (compaction, the metadata log, tests).
func (l *Log) ReadBytes(offset int64, maxBytes int, maxOffset int64) ([]byte, error) {
	sl, err := l.Read(offset, maxBytes, maxOffset, true)
	if err != nil || sl.Size == 0 {
		return nil, err
	}
	buf := make([]byte, sl.Size)
	if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// LatestEpoch is the last leader epoch in the log, or -1.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, _ := l.epochs.latest()
	return e.Epoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (see epochCache.endOffsetFor).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.logEnd.Load())
}

// Epochs returns a copy of the leader epoch lineage.
func (l *Log) Epochs() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.snapshot()
}

// AssignEpoch records that a new leader epoch starts at the log end (a new
// leader does this before its first append in the epoch).
func (l *Log) AssignEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.assign(epoch, l.logEnd.Load())
}

// TruncateTo removes every batch at or after offset (a follower whose log
// diverged from its leader's). offset must be a batch boundary.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if offset >= l.logEnd.Load() {
		return nil
	}
	if offset < l.logStart.Load() {
		return l.truncateFullyLocked(offset)
	}
	l.truncatedTo = min(l.truncatedTo, offset)
	segs := l.segments()
	keep := len(segs)
	for keep > 1 && segs[keep-1].base >= offset {
		keep--
	}
	for _, s := range segs[keep:] {
		l.deleteSegmentLater(s)
	}
	if keep < len(segs) {
		// Durable before data appended after the truncation point is, or
		// a crash could bring back segments overlapping it.
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	segs = append([]*segment(nil), segs[:keep]...)
	if err := segs[keep-1].truncateTo(offset); err != nil {
		return err
	}
	l.setSegments(segs)
	l.logEnd.Store(segs[keep-1].nextOffset)
	if l.logEnd.Load() < segs[keep-1].base {
		l.logEnd.Store(segs[keep-1].base)
	}
	if l.recoveryPoint.Load() > l.logEnd.Load() {
		l.recoveryPoint.Store(l.logEnd.Load())
	}
	if l.highWatermark.Load() > l.logEnd.Load() {
		l.highWatermark.Store(l.logEnd.Load())
	}
	// An offset inside a batch cuts the whole batch, possibly below a log
	// start offset set inside it: keep start <= end.
	if l.logStart.Load() > l.logEnd.Load() {
		l.logStart.Store(l.logEnd.Load())
	}
	if err := l.epochs.truncateFromEnd(l.logEnd.Load()); err != nil {
		return err
	}
	return l.rebuildProducerState(l.logEnd.Load())
}

// TruncateFullyAndStartAt empties the log and restarts it at offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	if l.closed {
		return ErrClosed
	}
	l.truncatedTo = min(l.truncatedTo, offset)
	for _, s := range l.segments() {
		l.deleteSegmentLater(s)
	}
	s, err := openSegment(l.fs, l.dir, offset, l.nowMs())
	if err != nil {
		return err
	}
	if s.index, _, err = loadOffsetIndex(l.fs, segmentPath(l.dir, offset, ".index"), offset, 0); err != nil {
		return err
	}
	if s.timeIndex, _, err = loadTimeIndex(l.fs, segmentPath(l.dir, offset, ".timeindex"), offset, offset); err != nil {
		return err
	}
	l.setSegments([]*segment{s})
	l.logEnd.Store(offset)
	l.logStart.Store(offset)
	l.recoveryPoint.Store(offset)
	l.highWatermark.Store(offset)
	l.epochs.entries = nil
	if err := l.epochs.flush(); err != nil {
		return err
	}
	snaps, _ := listSnapshots(l.fs, l.dir)
	for _, o := range snaps {
		l.fs.Remove(snapshotPath(l.dir, o))
	}
	l.producers = newProducerState()
	l.producers.mapEnd = offset
	return nil
}

// deleteSegmentLater renames a segment's files to *.deleted and closes and
// removes them after file.delete.delay.ms, so reads in flight complete.
func (l *Log) deleteSegmentLater(s *segment) {
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		p := segmentPath(l.dir, s.base, ext)
		if err := l.fs.Rename(p, p+".deleted"); err != nil && !os.IsNotExist(err) {
			l.lg.Warn("renaming deleted segment", "file", p, "err", err)
		}
	}
	delay := time.Duration(l.config().FileDeleteDelayMs) * time.Millisecond
	l.wait(delay, func() { l.removeDeletedFiles(s) })
}

// removeDeletedFiles closes a segment deleted by deleteSegmentLater and
// removes its *.deleted files. It must not touch the plain names: by now a
// new segment (after a truncation, or a compaction swap) may own them.
func (l *Log) removeDeletedFiles(s *segment) {
	s.close()
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		p := segmentPath(l.dir, s.base, ext) + ".deleted"
		if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) {
			l.lg.Warn("removing deleted segment", "file", p, "err", err)
		}
	}
}

func (l *Log) removeSegmentFiles(s *segment) {
	s.close()
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		p := segmentPath(l.dir, s.base, ext)
		for _, q := range []string{p, p + ".deleted"} {
			if err := l.fs.Remove(q); err != nil && !os.IsNotExist(err) {
				l.lg.Warn("removing deleted segment", "file", q, "err", err)
			}
		}
	}
}

// Close flushes the log, snapshots the producer state at the log end so
// the next open replays nothing, and closes the files.
func (l *Log) Close() error {
	if err := l.Flush(l.LogEndOffset()); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	snap := l.producers.clone()
	snap.mapEnd = l.logEnd.Load()
	err := writeProducerSnapshot(l.fs, l.dir, snap)
	return errors.Join(err, l.closeFiles())
}

func (l *Log) closeFiles() error {
	p := l.segs.Load()
	if p == nil {
		return nil
	}
	return closeAll(*p)
}

func closeAll(segs []*segment) error {
	var errs []error
	for _, s := range segs {
		if s.index == nil {
			errs = append(errs, s.file.Close())
			continue
		}
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// Delete closes the log and removes its directory: it is renamed to
// <dir>.<suffix>-delete at once and removed after file.delete.delay.ms.
func (l *Log) Delete(suffix string) error {
	l.mu.Lock()
	l.closed = true
	segs := l.segments()
	l.mu.Unlock()
	target := fmt.Sprintf("%s.%s-delete", l.dir, suffix)
	if err := l.fs.Rename(l.dir, target); err != nil {
		return err
	}
	delay := time.Duration(l.config().FileDeleteDelayMs) * time.Millisecond
	l.wait(delay, func() {
		closeAll(segs)
		l.fs.RemoveAll(target)
	})
	return nil
}
