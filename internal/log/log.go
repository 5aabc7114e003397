// Package log is weir's partition storage: an append-only sequence of
// segments in one directory, laid out as Kafka lays them out.
//
//	<dir>/00000000000000000000.log        batches, stored exactly as on the wire
//	<dir>/00000000000000000000.index      sparse offset -> position index
//	<dir>/00000000000000000000.timeindex  sparse timestamp -> offset index
//	<dir>/00000000000000000000.txnindex   aborted transactions (txnindex.go)
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
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

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
	// Files keeps the segment files open; nil gives the log a cache of
	// its own without a bound.
	Files *FileCache
	// Background starts fn, work the log and its manager do not wait for
	// (the flush of a rolled segment, the directories of new logs, taking
	// a log whose directory cannot be made offline); it must not run fn
	// before returning, since the caller may hold the log's locks. Defaults to a new goroutine; a
	// deterministic simulation (internal/replsim) runs fn as a later event.
	Background func(fn func())
	// Flushed, when set, is told how long each flush that synced data
	// took (Kafka's LogFlushStats LogFlushRateAndTimeMs). It is called
	// from the flushing goroutine and must not block.
	Flushed func(time.Duration)
}

// Log is one partition's log. See the package comment.
type Log struct {
	dir   string
	tp    TopicPartition
	fs    vfs.FS
	files *FileCache
	now   func() time.Time
	lg    *slog.Logger
	cfg   atomic.Pointer[Config]
	wait  func(time.Duration, func())
	// background starts work nobody waits for (Options.Background).
	background func(func())
	flushed    func(time.Duration) // Options.Flushed, or nil

	// segs is the immutable current segment list, replaced on every change,
	// so readers need no lock.
	segs          atomic.Pointer[[]*segment]
	logEnd        atomic.Int64
	logStart      atomic.Int64
	highWatermark atomic.Int64
	recoveryPoint atomic.Int64
	// lso is the last stable offset (see updateLSOLocked).
	lso atomic.Int64

	mu        sync.Mutex // serializes appends, rolls, truncation, retention
	producers *producerState
	// ownFrom is the leader epoch where the log's own producers begin
	// when its first batches were copied from another cluster (see
	// SetOwnProducersFrom); -1: all are its own. ownKnown: it was set.
	// blind: the producer state was rebuilt from batches of producers
	// before ownFrom was known, so it may mix two clusters' producers.
	ownFrom   int32
	ownKnown  bool
	blind     bool
	epochs    *epochCache
	unflushed int64        // messages appended since the last flush
	lastFlush atomic.Int64 // unix ms of the last completed flush
	// dirUnsynced is set when a segment file was created and the
	// directory has not been fsynced since (Flush does it).
	dirUnsynced atomic.Bool
	closed      bool
	// dirPending: the directory is not made yet (see dirs.go). topicID
	// is what its partition.metadata says (or will), when topicKnown (a
	// log this process created or repaired). Guarded by mu.
	dirPending bool
	topicID    [16]byte
	topicKnown bool
	// parent is the log dir holding dir; parentUnsynced, when not 0, the
	// count its fsync must cover for dir's entry in it to be durable.
	parent         *parentDir
	parentUnsynced atomic.Int64
	// dirFailed, when set, is told that the directory could not be made.
	dirFailed func(error)

	// truncatedTo is the lowest offset the log was truncated to since the
	// cleaner last looked (math.MaxInt64: none); guarded by mu.
	truncatedTo int64

	flushMu sync.Mutex // one fsync at a time; waiters find their data already flushed
}

// Open opens or creates the log in dir, recovering any unflushed tail. A
// directory without segment files (a new log never written, or one a crash
// left so) opens as an empty log at the log start offset, creating nothing.
func Open(dir string, tp TopicPartition, cfg Config, opts Options) (*Log, error) {
	l := newLog(dir, tp, cfg, opts)
	ents, err := l.fs.ReadDir(dir)
	if os.IsNotExist(err) {
		// A new partition directory is durable once its parent says so.
		if err := l.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := l.fs.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, err
		}
		ents, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := l.load(ents, opts.RecoveryPoint, opts.LogStartOffset); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("log %s: %w", tp, err)
	}
	l.highWatermark.Store(min(max(opts.HighWatermark, l.logStart.Load()), l.logEnd.Load()))
	l.updateLSOLocked()
	l.lastFlush.Store(l.nowMs())
	return l, nil
}

// createNew is the empty log of a new partition, whose directory dir is
// not made yet (see dirs.go): it reads and creates nothing; its directory
// and partition.metadata are made in parent (the log dir) by the
// Manager's background maker or before its first file, and its first
// segment's files by its first write.
func createNew(dir string, tp TopicPartition, topicID [16]byte, cfg Config, opts Options, parent *parentDir) *Log {
	l := newLog(dir, tp, cfg, opts)
	l.dirPending, l.topicID, l.topicKnown, l.parent = true, topicID, true, parent
	s := l.newEmptySegment(0)
	s.clearTxns = false // a new directory holds none
	l.setSegments([]*segment{s})
	l.epochs = &epochCache{fs: l.fs, path: filepath.Join(dir, epochCheckpointFile), beforeWrite: l.makeDirLocked}
	l.producers = newProducerState()
	l.updateLSOLocked()
	l.lastFlush.Store(l.nowMs())
	return l
}

// newLog is a log of dir with opts' defaults filled in, before loading.
func newLog(dir string, tp TopicPartition, cfg Config, opts Options) *Log {
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
	if opts.Background == nil {
		opts.Background = func(fn func()) { go fn() }
	}
	if opts.Files == nil {
		opts.Files = NewFileCache(opts.FS, 0)
	}
	opts.FS = opts.Files.withFS(opts.FS)
	l := &Log{dir: dir, tp: tp, fs: opts.FS, files: opts.Files, now: opts.Now, wait: opts.AfterDelay, background: opts.Background,
		flushed: opts.Flushed, lg: opts.Logger.With("partition", tp.String()), truncatedTo: math.MaxInt64}
	l.cfg.Store(&cfg)
	return l
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
	l.updateLSOLocked()
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

// Close flushes the log, snapshots the producer state at the log end so
// the next open replays nothing, and closes the files. A log without any
// batch gets no snapshot: there is nothing to replay (as Kafka, which
// snapshots only past its last snapshot's offset).
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
	if err := l.writeIndexesLocked(); err != nil {
		return errors.Join(err, l.closeFiles())
	}
	if l.logEnd.Load() == l.segments()[0].base && len(l.producers.entries) == 0 || l.blind {
		// A blind state is not kept: the next open rebuilds it.
		return l.closeFiles()
	}
	if err := l.makeDirLocked(); err != nil {
		return errors.Join(err, l.closeFiles())
	}
	snap := l.producers.clone()
	snap.mapEnd = l.logEnd.Load()
	err := writeProducerSnapshot(l.fs, l.dir, snap)
	return errors.Join(err, l.closeFiles())
}

// writeIndexesLocked writes and syncs the index entries no flush wrote:
// those recovery rebuilt at open while the recovery point was at the log
// end already, so that the next open finds them (and trusts the last
// segment: see load). l.mu is held.
func (l *Log) writeIndexesLocked() error {
	for _, s := range l.segments() {
		if s.pending() || !s.index.unwritten() && !s.timeIndex.unwritten() {
			continue
		}
		if err := errors.Join(s.index.flush(), s.timeIndex.flush()); err != nil {
			return err
		}
		if err := errors.Join(s.index.file.Sync(), s.timeIndex.file.Sync()); err != nil {
			return err
		}
	}
	return nil
}

// Abandon closes the log's files as a crash would leave them: nothing is
// flushed, snapshotted or checkpointed (what was written stays in the
// page cache, as after SIGKILL). In-process tests use it to kill a node.
func (l *Log) Abandon() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.closeFiles()
}

func (l *Log) closeFiles() error {
	p := l.segs.Load()
	if p == nil {
		return nil
	}
	return closeAll(*p)
}

// deleteDirName is <topic>-<partition>.<suffix>-delete with the topic
// cut short, as Kafka does, so that the name fits in 255 bytes: a topic
// name may have 249.
func deleteDirName(tp TopicPartition, suffix string) string {
	tail := fmt.Sprintf("-%d.%s-delete", tp.Partition, suffix)
	return tp.Topic[:max(0, min(len(tp.Topic), 255-len(tail)))] + tail
}

func closeAll(segs []*segment) error {
	var errs []error
	for _, s := range segs {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// Delete closes the log and removes its directory: it is renamed at once
// (deleteDirName) and removed after file.delete.delay.ms.
func (l *Log) Delete(suffix string) error {
	l.mu.Lock()
	l.closed = true
	segs := l.segments()
	pending := l.dirPending
	l.mu.Unlock()
	if pending {
		return nil // nothing on disk
	}
	target := filepath.Join(filepath.Dir(l.dir), deleteDirName(l.tp, suffix))
	if err := moveDir(l.fs, l.dir, target, segs); err != nil {
		return err
	}
	delay := time.Duration(l.config().FileDeleteDelayMs) * time.Millisecond
	l.wait(delay, func() {
		if err := errors.Join(closeAll(segs), l.fs.RemoveAll(target)); err != nil {
			l.lg.Warn("removing deleted log", "dir", target, "err", err)
		}
	})
	return nil
}
