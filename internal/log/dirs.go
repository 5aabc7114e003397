package log

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"weir/internal/vfs"
)

// A new partition's log starts without a directory (dirPending): creating
// thousands of partitions then costs no file system work on the way to
// the CreateTopics answer (on ext4 a directory and a file are two inode
// allocations, the whole cost of creating a partition). The Manager makes
// the directories in the background (makeDirs), a batch at a time with
// one fsync of the log dir per batch, and a log whose directory is not
// made yet makes it itself before its first file (makeDirLocked): a
// segment, the leader epoch checkpoint, a producer snapshot. Until then
// the log is empty and everything about it is in memory, so a crash loses
// nothing that was acknowledged as durable, and the partition manager
// creates the log again from the metadata image at the next start.

// parentDir makes the entries a log dir gains durable, coalescing: one
// fsync covers every directory made in it before the fsync began.
type parentDir struct {
	fs     vfs.FS
	path   string
	mu     sync.Mutex   // one fsync at a time
	made   atomic.Int64 // directories made in it so far
	synced atomic.Int64 // of which the last fsync covered this many
}

func newParentDir(fsys vfs.FS, path string) *parentDir { return &parentDir{fs: fsys, path: path} }

// added counts a directory made in p and returns the count an fsync must
// cover for it to be durable.
func (p *parentDir) added() int64 { return p.made.Add(1) }

// syncTo fsyncs p unless an fsync that began after the n-th directory
// was made has already succeeded.
func (p *parentDir) syncTo(n int64) error {
	if n <= 0 || p.synced.Load() >= n {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.synced.Load() >= n {
		return nil
	}
	covered := p.made.Load()
	if err := p.fs.SyncDir(p.path); err != nil {
		return err
	}
	p.synced.Store(covered)
	return nil
}

// makeDirLocked makes the log's directory and partition.metadata when
// they are pending; l.mu is held. The directory's entry in the log dir
// and its own entries are fsynced by the next flush (parentUnsynced,
// dirUnsynced). When they cannot be made, what was made is removed (the
// directory only if empty), the directory stays pending and the log's owner is told (dirFailed: the
// Manager takes the log offline, as one that cannot be opened).
func (l *Log) makeDirLocked() error {
	if !l.dirPending {
		return nil
	}
	err := l.fs.MkdirAll(l.dir, 0o755)
	if err != nil {
		err = fmt.Errorf("log %s: making its directory: %w", l.tp, err)
	} else if err = writePartitionMetadata(l.fs, l.dir, l.topicID, false); err != nil {
		err = fmt.Errorf("log %s: writing %s: %w", l.tp, partitionMetaFile, err)
		// Undone only as far as this made it: a directory holding
		// anything else is not removed.
		if rerr := l.fs.Remove(filepath.Join(l.dir, partitionMetaFile)); rerr == nil || os.IsNotExist(rerr) {
			l.fs.Remove(l.dir)
		}
	}
	if err != nil {
		if l.dirFailed != nil {
			l.dirFailed(err)
		}
		return err
	}
	l.dirPending = false
	l.dirUnsynced.Store(true)
	l.parentUnsynced.Store(l.parent.added())
	return nil
}

// makeDir makes the log's directory if it is pending and the log is open
// (see makeDirLocked); it reports whether it made it.
func (l *Log) makeDir() (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || !l.dirPending {
		return false, nil
	}
	err := l.makeDirLocked()
	return err == nil, err
}

// syncParent makes the log's directory entry durable if it is not yet.
func (l *Log) syncParent() error {
	n := l.parentUnsynced.Load()
	if n == 0 {
		return nil
	}
	if err := l.parent.syncTo(n); err != nil {
		return err
	}
	l.parentUnsynced.CompareAndSwap(n, 0)
	return nil
}

// dirMade reports whether the log's directory exists (is not pending).
func (l *Log) dirMade() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.dirPending
}

// makeDirsBatch is how many pending directories the background maker
// makes between fsyncs of their log dirs.
const makeDirsBatch = 1024

// makeDirWorkers is how many directories the background maker makes at
// once: the directories of one log dir share its lock in the kernel, so
// more only spin on it.
const makeDirWorkers = 2

// queueDirsLocked hands new logs to the background maker, starting it if it is
// not running. m.mu is held.
func (m *Manager) queueDirsLocked(ls []*Log) {
	if m.closed || len(ls) == 0 {
		return
	}
	m.unmade = append(m.unmade, ls...)
	if !m.making {
		m.making = true
		m.opts.Background(m.makeDirs)
	}
}

// makeDirs makes the queued logs' directories, a batch at a time, each
// batch made durable with one fsync of each log dir it touched. A log
// whose directory cannot be made goes offline (see offlineNew).
func (m *Manager) makeDirs() {
	for {
		m.mu.Lock()
		n := min(len(m.unmade), makeDirsBatch)
		if n == 0 || m.closed {
			m.unmade, m.making = nil, false
			m.mu.Unlock()
			return
		}
		batch := append([]*Log(nil), m.unmade[:n]...)
		m.unmade = m.unmade[n:]
		if len(m.unmade) == 0 {
			m.unmade = nil
		}
		m.mu.Unlock()
		made := make([]bool, len(batch))
		parallel(len(batch), min(makeDirWorkers, m.createWorkers()), func(i int) {
			made[i], _ = batch[i].makeDir() // a failure takes the log offline
		})
		parents := map[*parentDir]bool{}
		for i, l := range batch {
			if made[i] {
				parents[l.parent] = true
			}
		}
		for p := range parents {
			if err := p.syncTo(p.made.Load()); err != nil {
				m.lg.Warn("fsyncing a log dir after making partition directories; their first flushes try again", "dir", p.path, "err", err)
			}
		}
	}
}

// offlineNew takes a new log whose directory could not be made offline,
// as a log that cannot be opened (Failed: KAFKA_STORAGE_ERROR, reported
// to the controller, until a restart or the partition's deletion), and
// tells the OnOffline subscriber so the replica stops being served. It
// runs as background work: the log's lock is held where the failure is
// found.
func (m *Manager) offlineNew(l *Log, err error) {
	m.mu.Lock()
	if m.logs[l.tp] != l {
		m.mu.Unlock()
		return // deleted, or offline already
	}
	root := m.dirOf[l.tp]
	delete(m.logs, l.tp)
	delete(m.dirOf, l.tp)
	m.failLocked(l.tp, root, err)
	tell := m.onOffline
	m.mu.Unlock()
	l.Abandon()
	if tell != nil {
		tell(l.tp, l)
	}
}

// OnOffline sets fn to be called with each log that goes offline after
// its creation (its directory could not be made), once Get no longer
// returns it; fn must not call back into the Manager with its own locks
// held.
func (m *Manager) OnOffline(fn func(TopicPartition, *Log)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onOffline = fn
}
