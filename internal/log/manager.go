package log

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"weir/internal/vfs"
)

// Checkpoint file names in each log directory.
const (
	RecoveryPointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetFile = "log-start-offset-checkpoint"
	HighWatermarkFile  = "replication-offset-checkpoint"
	CleanerOffsetFile  = "cleaner-offset-checkpoint"
	partitionMetaFile  = "partition.metadata"
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
}

// Manager owns every partition log in the broker's log directories: it
// opens them at start-up, places new ones, and runs the background work
// (retention, time-based flushes, checkpoints, compaction). Its methods
// are safe for concurrent use.
type Manager struct {
	cfg  ManagerConfig
	opts Options
	lg   *slog.Logger

	mu      sync.Mutex
	logs    map[TopicPartition]*Log
	dirOf   map[TopicPartition]string // the log dir (root) holding each log
	cleaner *cleaner
}

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
	m := &Manager{cfg: cfg, opts: opts, lg: opts.Logger, logs: map[TopicPartition]*Log{}, dirOf: map[TopicPartition]string{}}
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

// Load opens every partition log found in the log directories, using the
// checkpoints for recovery points, log start offsets and high watermarks,
// and finishes deletions of removed partitions. configFor supplies each
// log's configuration. Logs are opened in parallel.
func (m *Manager) Load(configFor func(TopicPartition) Config) error {
	fsys := m.opts.FS
	type job struct {
		root, dir string
		tp        TopicPartition
		opts      Options
	}
	var jobs []job
	for _, root := range m.cfg.Dirs {
		if err := fsys.MkdirAll(root, 0o755); err != nil {
			return err
		}
		rps, err1 := ReadOffsetCheckpoint(fsys, filepath.Join(root, RecoveryPointFile))
		lss, err2 := ReadOffsetCheckpoint(fsys, filepath.Join(root, LogStartOffsetFile))
		hws, err3 := ReadOffsetCheckpoint(fsys, filepath.Join(root, HighWatermarkFile))
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		ents, err := fsys.ReadDir(root)
		if err != nil {
			return err
		}
		for _, de := range ents {
			if !de.IsDir() || m.skip(de.Name()) {
				continue
			}
			dir := filepath.Join(root, de.Name())
			if strings.HasSuffix(de.Name(), "-delete") {
				if err := fsys.RemoveAll(dir); err != nil {
					return err
				}
				continue
			}
			tp, ok := ParseDirName(de.Name())
			if !ok {
				continue
			}
			o := m.opts
			o.RecoveryPoint, o.LogStartOffset, o.HighWatermark = rps[tp], lss[tp], hws[tp]
			jobs = append(jobs, job{root, dir, tp, o})
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	opened := make([]*Log, len(jobs))
	sem := make(chan struct{}, 8)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			opened[i], errs[i] = Open(j.dir, j.tp, configFor(j.tp), j.opts)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, l := range opened {
			if l != nil {
				l.closeFiles()
			}
		}
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, j := range jobs {
		m.logs[j.tp] = opened[i]
		m.dirOf[j.tp] = j.root
	}
	m.lg.Info("loaded logs", "count", len(jobs))
	return nil
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

// GetOrCreate returns tp's log, creating it in the log directory holding
// the fewest partitions. topicID is recorded in partition.metadata. A
// partition whose directory is one of SkipDirs is refused.
func (m *Manager) GetOrCreate(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.logs[tp]; l != nil {
		return l, nil
	}
	if m.skip(tp.String()) {
		return nil, fmt.Errorf("log: the directory of %s belongs to another component", tp)
	}
	root := m.leastLoadedDir()
	dir := filepath.Join(root, tp.String())
	if err := m.opts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writePartitionMetadata(m.opts.FS, dir, topicID); err != nil {
		return nil, err
	}
	l, err := Open(dir, tp, cfg, m.opts)
	if err != nil {
		return nil, err
	}
	if err := m.opts.FS.SyncDir(root); err != nil {
		return nil, err
	}
	m.logs[tp] = l
	m.dirOf[tp] = root
	return l, nil
}

func (m *Manager) leastLoadedDir() string {
	count := map[string]int{}
	for _, d := range m.dirOf {
		count[d]++
	}
	best := m.cfg.Dirs[0]
	for _, d := range m.cfg.Dirs[1:] {
		if count[d] < count[best] {
			best = d
		}
	}
	return best
}

// partition.metadata is Kafka's: "version: 0" and "topic_id: <base64 id>".
func writePartitionMetadata(fsys vfs.FS, dir string, id [16]byte) error {
	body := fmt.Sprintf("version: 0\ntopic_id: %s\n", base64.RawURLEncoding.EncodeToString(id[:]))
	return vfs.WriteFileAtomic(fsys, filepath.Join(dir, partitionMetaFile), []byte(body))
}

// ReadTopicID returns the topic id recorded in a log's partition.metadata.
func (l *Log) ReadTopicID() ([16]byte, error) {
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
// after file.delete.delay.ms.
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	l := m.logs[tp]
	delete(m.logs, tp)
	delete(m.dirOf, tp)
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.Delete(strconv.FormatInt(m.opts.Now().UnixNano(), 36))
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
	m.mu.Unlock()
	var errs []error
	for d, offs := range byDir {
		errs = append(errs, WriteOffsetCheckpoint(m.opts.FS, filepath.Join(d, file), offs))
	}
	return errors.Join(errs...)
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

// Close flushes and closes every log and writes all checkpoints, so the
// next start recovers nothing.
func (m *Manager) Close() error {
	var errs []error
	for _, l := range m.All() {
		errs = append(errs, l.Close())
	}
	errs = append(errs, m.CheckpointRecoveryPoints(), m.CheckpointLogStartOffsets(), m.CheckpointHighWatermarks())
	return errors.Join(errs...)
}

// Abandon closes every log as a crash would (see Log.Abandon).
func (m *Manager) Abandon() error {
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
