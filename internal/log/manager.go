package log

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"weir/internal/vfs"
)

// ManagerConfig holds the broker-level settings of log management.
type ManagerConfig struct {
	Dirs                         []string
	RetentionCheckInterval       time.Duration // log.retention.check.interval.ms
	FlushCheckInterval           time.Duration // log.flush.scheduler.interval.ms
	RecoveryCheckpointEvery      time.Duration // log.flush.offset.checkpoint.interval.ms
	StartOffsetCheckpointEvery   time.Duration // log.flush.start.offset.checkpoint.interval.ms
	HighWatermarkCheckpointEvery time.Duration // replica.high.watermark.checkpoint.interval.ms
	CleanerBackoff               time.Duration // log.cleaner.backoff.ms
	CleanerEnabled               bool
	// CleanerMaxKeys bounds the cleaner's offset map (see CleanerMaxKeys);
	// 0 picks the map Kafka's default dedupe buffer gives.
	CleanerMaxKeys int
	// SkipDirs are partition directory names that other components own
	// (the metadata log, __cluster_metadata-0).
	SkipDirs []string
	// RecoveryThreadsPerDir is num.recovery.threads.per.data.dir: the logs
	// of each log dir opened (recovered) at once at start-up, and closed
	// (flushed) at once at shutdown; 0 picks Kafka's default, 2.
	RecoveryThreadsPerDir int
	// CreateWorkers is how many partitions the partition manager brings
	// in step with a metadata change at once (Parallel); 0 picks
	// DefaultCreateWorkers, 1 works in order, as a deterministic
	// simulation needs (and then new logs' directories are made one at a
	// time too).
	CreateWorkers int
	// OpenFilesMax is log.open.files.max: how many segment files all the
	// logs keep open (see FileCache); 0: no bound.
	OpenFilesMax int
}

// DefaultCreateWorkers is ManagerConfig.CreateWorkers's default: applying
// a partition's leadership mostly waits on its log's files.
const DefaultCreateWorkers = 16

// Manager owns every partition log in the broker's log directories: it
// opens them at start-up, places new ones, and runs the background work
// (retention, time-based flushes, checkpoints, compaction). Its methods
// are safe for concurrent use.
type Manager struct {
	cfg  ManagerConfig
	opts Options
	lg   *slog.Logger

	mu     sync.Mutex
	logs   map[TopicPartition]*Log
	dirOf  map[TopicPartition]string // the log dir (root) holding each log
	failed map[TopicPartition]failedLog
	// loading holds the logs Scan found that Load has not opened.
	loading map[TopicPartition]loadingLog
	cleaner *cleaner
	// parents are the log dirs, whose fsyncs new logs share (dirs.go).
	parents map[string]*parentDir
	// unmade are new logs whose directories the background maker has
	// yet to make; making is set while it runs (dirs.go). closed: Close
	// or Abandon ran, and no more are made.
	unmade []*Log
	making bool
	closed bool
	// onOffline is told of logs gone offline after their creation.
	onOffline func(TopicPartition, *Log)
}

// A failedLog is a partition whose log could not be opened or created. It
// stays offline until the broker restarts (as a failed log directory in
// Kafka) or the partition is deleted.
type failedLog struct {
	root string
	err  error
}

// ErrOffline marks the error of a partition whose log could not be opened
// (KAFKA_STORAGE_ERROR).
var ErrOffline = errors.New("log: offline")

// NewManager returns a manager; call Load before use.
func NewManager(cfg ManagerConfig, opts Options) *Manager {
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Files == nil {
		opts.Files = NewFileCache(opts.FS, cfg.OpenFilesMax)
	}
	if opts.Background == nil {
		opts.Background = func(fn func()) { go fn() }
	}
	opts.FS = opts.Files.withFS(opts.FS)
	m := &Manager{cfg: cfg, opts: opts, lg: opts.Logger, logs: map[TopicPartition]*Log{}, dirOf: map[TopicPartition]string{},
		failed: map[TopicPartition]failedLog{}, parents: map[string]*parentDir{}}
	for _, d := range cfg.Dirs {
		m.parents[d] = newParentDir(opts.FS, d)
	}
	m.cleaner = newCleaner(m)
	return m
}

// ParseDirName splits a partition directory name "<topic>-<partition>".
func ParseDirName(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// Scan finds the partition logs in the log directories, with their
// checkpointed recovery points, log start offsets and high watermarks, and
// finishes deletions of removed partitions. It returns the partitions
// found; each is loading (Loading) until Load opens it: CreateAll does not
// create it, GetOrCreate answers ErrLoading, Delete leaves it, and the
// checkpoints keep its offsets. Scan fails only when a log directory
// cannot be read.
func (m *Manager) Scan() ([]TopicPartition, error) {
	fsys := m.opts.FS
	found := map[TopicPartition]loadingLog{}
	var tps []TopicPartition
	for _, root := range m.cfg.Dirs {
		if err := fsys.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		rps, err1 := ReadOffsetCheckpoint(fsys, filepath.Join(root, RecoveryPointFile))
		lss, err2 := ReadOffsetCheckpoint(fsys, filepath.Join(root, LogStartOffsetFile))
		hws, err3 := ReadOffsetCheckpoint(fsys, filepath.Join(root, HighWatermarkFile))
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		ents, err := fsys.ReadDir(root)
		if err != nil {
			return nil, err
		}
		for _, de := range ents {
			if !de.IsDir() || m.skip(de.Name()) {
				continue
			}
			dir := filepath.Join(root, de.Name())
			if strings.HasSuffix(de.Name(), "-delete") {
				if err := fsys.RemoveAll(dir); err != nil {
					return nil, err
				}
				continue
			}
			tp, ok := ParseDirName(de.Name())
			if !ok {
				continue
			}
			o := m.opts
			o.RecoveryPoint, o.LogStartOffset, o.HighWatermark = rps[tp], lss[tp], hws[tp]
			found[tp] = loadingLog{root: root, opts: o}
			tps = append(tps, tp)
		}
	}
	m.mu.Lock()
	m.loading = found
	m.mu.Unlock()
	return tps, nil
}

// A loadingLog is a log Scan found that Load has not opened yet.
type loadingLog struct {
	root string
	opts Options // with the checkpointed offsets
}

// ErrLoading is GetOrCreate's answer for a log found at start-up that is
// not open yet.
var ErrLoading = errors.New("log: not loaded yet")

// Loading reports whether tp's log was found by Scan and is not open yet.
func (m *Manager) Loading(tp TopicPartition) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.loading[tp]
	return ok
}

// Load opens every partition log found in the log directories: LoadEach
// without a callback or an end.
func (m *Manager) Load(configFor func(TopicPartition) Config) error {
	return m.LoadEach(context.Background(), configFor, nil)
}

// LoadEach opens the logs Scan found (it scans first when Scan was not
// called). configFor supplies each log's configuration. Each log dir's
// logs are opened (recovered) RecoveryThreadsPerDir at a time, the dirs in
// parallel. A log that cannot be opened is logged and left offline
// (Failed). opened, when not nil, is called from the worker that opened
// each log as soon as it is registered (Get returns it) or failed (err
// wraps ErrOffline). Once ctx is done no further log is opened: those left
// stay loading. LoadEach fails only when a log directory cannot be read.
func (m *Manager) LoadEach(ctx context.Context, configFor func(TopicPartition) Config, opened func(tp TopicPartition, l *Log, err error)) error {
	start := m.opts.Now()
	m.mu.Lock()
	scanned := m.loading != nil
	m.mu.Unlock()
	if !scanned {
		if _, err := m.Scan(); err != nil {
			return err
		}
	}
	m.mu.Lock()
	type job struct {
		tp TopicPartition
		loadingLog
	}
	jobs := make([]job, 0, len(m.loading))
	for tp, ll := range m.loading {
		jobs = append(jobs, job{tp, ll})
	}
	m.mu.Unlock()
	m.perDir(len(jobs), func(i int) string { return jobs[i].root }, func(i int) {
		if ctx.Err() != nil {
			return
		}
		j := jobs[i]
		l, err := Open(filepath.Join(j.root, j.tp.String()), j.tp, configFor(j.tp), j.opts)
		m.mu.Lock()
		delete(m.loading, j.tp)
		if err != nil {
			m.failLocked(j.tp, j.root, err)
			err = m.failed[j.tp].err
		} else {
			m.logs[j.tp] = l
			m.dirOf[j.tp] = j.root
		}
		m.mu.Unlock()
		if opened != nil {
			opened(j.tp, l, err)
		}
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lg.Info("loaded logs", "count", len(m.logs), "offline", len(m.failed), "left", len(m.loading), "took", m.opts.Now().Sub(start))
	return nil
}

// failLocked records that tp's log in root could not be opened.
func (m *Manager) failLocked(tp TopicPartition, root string, err error) {
	args := []any{"partition", tp.String(), "dir", root, "err", err}
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		args = append(args, "hint", "raise the open-file limit (ulimit -n, LimitNOFILE) and restart the broker")
	}
	m.lg.Error("partition offline: its log cannot be opened", args...)
	m.failed[tp] = failedLog{root: root, err: fmt.Errorf("%w: %s: %w", ErrOffline, tp, err)}
}

// Failed returns the error of tp when its log could not be opened or
// created (it wraps ErrOffline), or nil.
func (m *Manager) Failed(tp TopicPartition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed[tp].err
}

// AllFailed returns every partition whose log could not be opened.
func (m *Manager) AllFailed() []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]TopicPartition, 0, len(m.failed))
	for tp := range m.failed {
		out = append(out, tp)
	}
	return out
}

func (m *Manager) skip(name string) bool {
	for _, s := range m.cfg.SkipDirs {
		if s == name {
			return true
		}
	}
	return false
}

// Get returns the log of tp, or nil.
func (m *Manager) Get(tp TopicPartition) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs[tp]
}

// All returns every open log.
func (m *Manager) All() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		out = append(out, l)
	}
	return out
}

// GetOrCreate returns tp's log, creating it (see CreateAll) when it has
// none. A log that cannot be created is left offline (Failed) and its
// error returned, as it is again for later calls.
func (m *Manager) GetOrCreate(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	if l := m.Get(tp); l != nil {
		return l, nil
	}
	m.CreateAll([]NewLog{{TopicPartition: tp, TopicID: topicID, Config: cfg}})
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.logs[tp]; l != nil {
		return l, nil
	}
	if f, ok := m.failed[tp]; ok {
		return nil, f.err
	}
	if _, ok := m.loading[tp]; ok {
		return nil, fmt.Errorf("%w: %s", ErrLoading, tp)
	}
	return nil, fmt.Errorf("log: the directory of %s belongs to another component", tp)
}

// A NewLog is a log CreateAll is to create.
type NewLog struct {
	TopicPartition
	TopicID [16]byte // recorded in partition.metadata
	Config  Config
}

// CreateAll creates the logs of ls that do not exist yet, each in the log
// directory holding the fewest partitions. It does no file system work:
// a new log's directory is made in the background, or before its first
// file if that comes first (see dirs.go). A partition whose directory is
// one of SkipDirs is not created.
func (m *Manager) CreateAll(ls []NewLog) {
	m.mu.Lock()
	defer m.mu.Unlock()
	count := map[string]int{}
	if len(m.cfg.Dirs) > 1 {
		for _, d := range m.dirOf {
			count[d]++
		}
		for _, ll := range m.loading {
			count[ll.root]++
		}
	}
	var made []*Log
	for _, nl := range ls {
		tp := nl.TopicPartition
		if _, ok := m.loading[tp]; ok || m.logs[tp] != nil || m.failed[tp].err != nil {
			continue
		}
		if m.skip(tp.String()) {
			continue
		}
		root := m.cfg.Dirs[0]
		for _, d := range m.cfg.Dirs[1:] {
			if count[d] < count[root] {
				root = d
			}
		}
		count[root]++
		l := createNew(filepath.Join(root, tp.String()), tp, nl.TopicID, nl.Config, m.opts, m.parents[root])
		l.dirFailed = func(err error) { m.opts.Background(func() { m.offlineNew(l, err) }) }
		m.logs[tp] = l
		m.dirOf[tp] = root
		made = append(made, l)
	}
	m.queueDirsLocked(made)
}

// Parallel runs fn(0) ... fn(n-1), CreateWorkers at a time.
func (m *Manager) Parallel(n int, fn func(i int)) { parallel(n, m.createWorkers(), fn) }

func (m *Manager) createWorkers() int {
	if m.cfg.CreateWorkers > 0 {
		return m.cfg.CreateWorkers
	}
	return DefaultCreateWorkers
}

// parallel runs fn(0) ... fn(n-1) on at most workers goroutines; with one
// worker, in order on the caller's goroutine.
func parallel(n, workers int, fn func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// partition.metadata is Kafka's: "version: 0" and "topic_id: <base64 id>".
// Durably, it is written to a temporary file, synced, renamed into place
// and its directory synced; otherwise it is written in place (a new
// partition's, whose directory is synced later).
func writePartitionMetadata(fsys vfs.FS, dir string, id [16]byte, durable bool) error {
	body := []byte(fmt.Sprintf("version: 0\ntopic_id: %s\n", base64.RawURLEncoding.EncodeToString(id[:])))
	name := filepath.Join(dir, partitionMetaFile)
	if durable {
		return vfs.WriteFileAtomic(fsys, name, body)
	}
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	return errors.Join(err, f.Close())
}

// WriteTopicID rewrites the log's partition.metadata, durably: the
// partition manager repairs with it a file a crash left unreadable. A log
// whose directory is not made yet keeps it for its partition.metadata.
func (l *Log) WriteTopicID(id [16]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirPending {
		l.topicID, l.topicKnown = id, true
		return nil
	}
	if err := writePartitionMetadata(l.fs, l.dir, id, true); err != nil {
		return err
	}
	l.topicID, l.topicKnown = id, true
	return nil
}

// ReadTopicID returns the topic id recorded in a log's partition.metadata
// (the one it was created with, for a log this process created).
func (l *Log) ReadTopicID() ([16]byte, error) {
	l.mu.Lock()
	id, known := l.topicID, l.topicKnown
	l.mu.Unlock()
	if known {
		return id, nil
	}
	data, err := vfs.ReadFile(l.fs, filepath.Join(l.dir, partitionMetaFile))
	if err != nil {
		return [16]byte{}, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id: "); ok {
			var id [16]byte
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
			if err != nil || len(b) != 16 {
				return id, fmt.Errorf("%s: bad topic_id %q", partitionMetaFile, v)
			}
			copy(id[:], b)
			return id, nil
		}
	}
	return [16]byte{}, fmt.Errorf("%s: no topic_id", partitionMetaFile)
}

// Delete removes tp's log: its directory is renamed at once and deleted
// after file.delete.delay.ms. An offline log's directory is removed at
// once, as none of its files is open.
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	l := m.logs[tp]
	f, failed := m.failed[tp]
	delete(m.logs, tp)
	delete(m.dirOf, tp)
	delete(m.failed, tp)
	m.mu.Unlock()
	if failed {
		return m.removeFailed(tp, f.root)
	}
	if l == nil {
		return nil
	}
	return l.Delete(strconv.FormatInt(m.opts.Now().UnixNano(), 36))
}

func (m *Manager) removeFailed(tp TopicPartition, root string) error {
	dir := filepath.Join(root, tp.String())
	if _, err := m.opts.FS.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	target := filepath.Join(root, deleteDirName(tp, strconv.FormatInt(m.opts.Now().UnixNano(), 36)))
	if err := m.opts.FS.Rename(dir, target); err != nil {
		return err
	}
	return m.opts.FS.RemoveAll(target)
}

// Run performs the background work until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	tick := func(d time.Duration, def time.Duration) *time.Ticker {
		if d <= 0 {
			d = def
		}
		return time.NewTicker(d)
	}
	retention := tick(m.cfg.RetentionCheckInterval, 5*time.Minute)
	flush := tick(m.cfg.FlushCheckInterval, time.Second)
	rp := tick(m.cfg.RecoveryCheckpointEvery, time.Minute)
	ls := tick(m.cfg.StartOffsetCheckpointEvery, time.Minute)
	hw := tick(m.cfg.HighWatermarkCheckpointEvery, 5*time.Second)
	clean := tick(m.cfg.CleanerBackoff, 15*time.Second)
	defer func() {
		for _, t := range []*time.Ticker{retention, flush, rp, ls, hw, clean} {
			t.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retention.C:
			m.RunRetention()
		case <-flush.C:
			m.flushByTime()
		case <-rp.C:
			m.logErr("recovery point checkpoint", m.CheckpointRecoveryPoints())
		case <-ls.C:
			m.logErr("log start offset checkpoint", m.CheckpointLogStartOffsets())
		case <-hw.C:
			m.logErr("high watermark checkpoint", m.CheckpointHighWatermarks())
		case <-clean.C:
			if m.cfg.CleanerEnabled {
				m.cleaner.cleanDirtiest()
			}
		}
	}
}

func (m *Manager) logErr(what string, err error) {
	if err != nil {
		m.lg.Error(what+" failed", "err", err)
	}
}

// RunRetention applies retention to every log.
func (m *Manager) RunRetention() {
	deleted := false
	for _, l := range m.All() {
		n, err := l.DeleteOldSegments()
		if err != nil {
			m.lg.Error("retention failed", "partition", l.tp.String(), "err", err)
		}
		deleted = deleted || n > 0
	}
	if deleted {
		m.logErr("log start offset checkpoint", m.CheckpointLogStartOffsets())
	}
}

// flushByTime fsyncs logs whose flush.ms has elapsed since their last flush.
func (m *Manager) flushByTime() {
	now := m.opts.Now()
	for _, l := range m.All() {
		cfg := l.config()
		if cfg.FlushMs <= 0 || cfg.FlushMs == 1<<63-1 {
			continue
		}
		if now.Sub(l.lastFlushed()) >= time.Duration(cfg.FlushMs)*time.Millisecond {
			m.logErr("flush "+l.tp.String(), l.Flush(l.LogEndOffset()))
		}
	}
}

func (m *Manager) checkpoint(file string, value func(*Log) int64) error {
	m.mu.Lock()
	byDir := map[string]map[TopicPartition]int64{}
	for _, d := range m.cfg.Dirs {
		byDir[d] = map[TopicPartition]int64{}
	}
	for tp, l := range m.logs {
		byDir[m.dirOf[tp]][tp] = value(l)
	}
	// A log not open yet keeps its checkpointed offsets.
	for tp, ll := range m.loading {
		byDir[ll.root][tp] = loadingValue(file, ll.opts)
	}
	m.mu.Unlock()
	var errs []error
	for d, offs := range byDir {
		errs = append(errs, WriteOffsetCheckpoint(m.opts.FS, filepath.Join(d, file), offs))
	}
	return errors.Join(errs...)
}

// loadingValue is the offset a checkpoint file holds for a log that is
// not open yet: the one Scan read.
func loadingValue(file string, o Options) int64 {
	switch file {
	case RecoveryPointFile:
		return o.RecoveryPoint
	case LogStartOffsetFile:
		return o.LogStartOffset
	default:
		return o.HighWatermark
	}
}

// CheckpointRecoveryPoints writes recovery-point-offset-checkpoint.
func (m *Manager) CheckpointRecoveryPoints() error {
	return m.checkpoint(RecoveryPointFile, (*Log).RecoveryPoint)
}

// CheckpointLogStartOffsets writes log-start-offset-checkpoint.
func (m *Manager) CheckpointLogStartOffsets() error {
	return m.checkpoint(LogStartOffsetFile, (*Log).LogStartOffset)
}

// CheckpointHighWatermarks writes replication-offset-checkpoint.
func (m *Manager) CheckpointHighWatermarks() error {
	return m.checkpoint(HighWatermarkFile, (*Log).HighWatermark)
}

// perDir runs fn(0) ... fn(n-1), dirOf(i) naming the log dir of item i:
// RecoveryThreadsPerDir at a time in each dir, the dirs in parallel.
func (m *Manager) perDir(n int, dirOf func(int) string, fn func(int)) {
	byDir := map[string][]int{}
	for i := range n {
		byDir[dirOf(i)] = append(byDir[dirOf(i)], i)
	}
	threads := m.cfg.RecoveryThreadsPerDir
	if threads <= 0 {
		threads = 2
	}
	var wg sync.WaitGroup
	for _, items := range byDir {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parallel(len(items), threads, func(k int) { fn(items[k]) })
		}()
	}
	wg.Wait()
}

// Close flushes and closes every log, RecoveryThreadsPerDir at a time in
// each log dir, and writes all checkpoints, so the next start recovers
// nothing.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed, m.unmade = true, nil
	logs := make([]*Log, 0, len(m.logs))
	var dirs []string
	for tp, l := range m.logs {
		logs = append(logs, l)
		dirs = append(dirs, m.dirOf[tp])
	}
	m.mu.Unlock()
	errs := make([]error, len(logs))
	m.perDir(len(logs), func(i int) string { return dirs[i] }, func(i int) { errs[i] = logs[i].Close() })
	errs = append(errs, m.CheckpointRecoveryPoints(), m.CheckpointLogStartOffsets(), m.CheckpointHighWatermarks())
	return errors.Join(errs...)
}

// Abandon closes every log as a crash would (see Log.Abandon).
func (m *Manager) Abandon() error {
	m.mu.Lock()
	m.closed, m.unmade = true, nil
	m.mu.Unlock()
	var errs []error
	for _, l := range m.All() {
		errs = append(errs, l.Abandon())
	}
	return errors.Join(errs...)
}

// DirOf returns the log directory (root) that holds tp.
func (m *Manager) DirOf(tp TopicPartition) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dirOf[tp]
}

// OpenFiles is how many segment files the logs have open.
func (m *Manager) OpenFiles() int { return m.opts.Files.Open() }
