package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"weir/internal/vfs"
)

// A FileCache bounds how many segment files (.log, .index, .timeindex) all
// the logs sharing it keep open (log.open.files.max), as pebble's table
// cache does: a SegmentFile is opened on use and, once no operation uses
// it, stays open among the idle files until it is the least recently used
// and the cache is over its bound. A partition nobody reads or writes
// thus holds no file descriptor, and an active segment being written
// stays open because it is always recently used. The bound is soft: files
// in use are never closed under their user.
type FileCache struct {
	fs  vfs.FS
	max int // 0: no bound

	mu   sync.Mutex
	idle idleList // open, unused files; least recently used first
	open int      // files open (in use or idle)
}

// idleList is a list of idle files linked through the files themselves,
// so that a file's use and release allocate nothing.
type idleList struct{ front, back *SegmentFile }

func (l *idleList) pushBack(h *SegmentFile) {
	h.prev, h.next, h.idle = l.back, nil, true
	if l.back != nil {
		l.back.next = h
	} else {
		l.front = h
	}
	l.back = h
}

func (l *idleList) remove(h *SegmentFile) {
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		l.front = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	} else {
		l.back = h.prev
	}
	h.prev, h.next, h.idle = nil, nil, false
}

// NewFileCache returns a cache keeping at most max files open (0: no bound).
func NewFileCache(fsys vfs.FS, max int) *FileCache {
	if fsys == nil {
		fsys = vfs.OS
	}
	return &FileCache{fs: fsys, max: max}
}

// evictingFS is a filesystem whose opens, when the process is out of file
// descriptors, close idle files of the cache and try again: every file a
// log opens (checkpoints, snapshots) gets that relief, not only segments.
type evictingFS struct {
	vfs.FS
	c *FileCache
}

func (e evictingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	return e.c.openFile(name, flag, perm)
}

// withFS returns fsys with its opens relieved by c.
func (c *FileCache) withFS(fsys vfs.FS) vfs.FS {
	if e, ok := fsys.(evictingFS); ok && e.c == c {
		return fsys
	}
	return evictingFS{FS: fsys, c: c}
}

// Open returns the number of files the cache has open.
func (c *FileCache) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// errFileClosed is the error of an operation on a closed SegmentFile; it
// is an os.ErrClosed, as for a closed *os.File.
var errFileClosed = fmt.Errorf("log: segment file closed: %w", os.ErrClosed)

// A SegmentFile is one file of a segment under a FileCache: its methods
// open it when it is not open. Close ends it for good.
//
// A pending SegmentFile does not exist on disk yet (the files of a new,
// empty segment): it reads as empty, syncs and renames as nothing, and is
// created by its first write or extending truncation, with createFlag
// added to O_CREATE|O_RDWR.
type SegmentFile struct {
	c *FileCache

	// mu serializes opening, creating and renaming; path is guarded by it.
	mu         sync.Mutex
	path       string
	pending    atomic.Bool // set only at construction; cleared under mu
	createFlag int

	// Guarded by c.mu.
	f          vfs.File     // nil when not open
	refs       int          // operations using f
	idle       bool         // in c.idle: open and unused
	prev, next *SegmentFile // c.idle's links
	closed     bool
}

// create opens (creating it if needed) the file at path.
func (c *FileCache) create(path string) (*SegmentFile, error) {
	f, err := c.openFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	return c.adopt(path, f), nil
}

// adopt puts an open file under the cache, idle.
func (c *FileCache) adopt(path string, f vfs.File) *SegmentFile {
	h := &SegmentFile{c: c, path: path}
	c.mu.Lock()
	h.f = f
	c.open++
	c.idle.pushBack(h)
	victims := c.evictLocked()
	c.mu.Unlock()
	closeFiles(victims)
	return h
}

// closedFile is a SegmentFile for path, an existing file, not opened
// until used.
func (c *FileCache) closedFile(path string) *SegmentFile {
	return &SegmentFile{c: c, path: path}
}

// pendingFile is a SegmentFile for path, which is created on its first
// write (see SegmentFile); until then it costs no system call.
func (c *FileCache) pendingFile(path string, createFlag int) *SegmentFile {
	h := &SegmentFile{c: c, path: path, createFlag: createFlag}
	h.pending.Store(true)
	return h
}

// errNotEmpty is the error of creating a segment file whose name holds
// data already: it is not the new segment's to overwrite.
var errNotEmpty = errors.New("exists and is not empty")

// materialize creates a pending file on disk and puts it under the cache,
// idle. created reports that this call created it. With O_EXCL in
// createFlag, an existing file is taken only when it is empty.
func (h *SegmentFile) materialize() (created bool, err error) {
	if !h.pending.Load() {
		return false, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.pending.Load() {
		return false, nil
	}
	c := h.c
	f, err := c.openFile(h.path, os.O_CREATE|os.O_RDWR|h.createFlag, 0o644)
	if errors.Is(err, fs.ErrExist) && h.createFlag&os.O_EXCL != 0 {
		if f, err = c.openFile(h.path, os.O_RDWR, 0); err == nil {
			var st fs.FileInfo
			if st, err = f.Stat(); err == nil && st.Size() != 0 {
				err = fmt.Errorf("log: new segment file %s: %w", h.path, errNotEmpty)
			}
			if err != nil {
				f.Close()
			}
		}
	}
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	if h.closed {
		c.mu.Unlock()
		f.Close()
		return false, errFileClosed
	}
	h.f = f
	c.open++
	c.idle.pushBack(h)
	victims := c.evictLocked()
	c.mu.Unlock()
	h.pending.Store(false)
	closeFiles(victims)
	return true, nil
}

// unmaterialize undoes materialize: it closes and removes the file,
// which is pending again. Only for a file nothing has used since.
func (h *SegmentFile) unmaterialize() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending.Load() {
		return nil
	}
	c := h.c
	c.mu.Lock()
	var f vfs.File
	if h.f != nil {
		if h.idle {
			c.idle.remove(h)
		}
		f, h.f = h.f, nil
		c.open--
	}
	h.pending.Store(true)
	c.mu.Unlock()
	var errs []error
	if f != nil {
		errs = append(errs, f.Close())
	}
	if err := c.fs.Remove(h.path); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Pending reports whether the file has not been created on disk yet.
func (h *SegmentFile) Pending() bool { return h.pending.Load() }

// pendingInfo describes a pending file: empty.
type pendingInfo struct{ name string }

func (i pendingInfo) Name() string       { return filepath.Base(i.name) }
func (i pendingInfo) Size() int64        { return 0 }
func (i pendingInfo) Mode() fs.FileMode  { return 0o644 }
func (i pendingInfo) ModTime() time.Time { return time.Time{} }
func (i pendingInfo) IsDir() bool        { return false }
func (i pendingInfo) Sys() any           { return nil }

// openFile opens path. When the process is out of file descriptors
// (EMFILE, ENFILE) it closes idle files, a quarter of the open ones at a
// time, and tries again while there are idle files to close.
func (c *FileCache) openFile(path string, flag int, perm fs.FileMode) (vfs.File, error) {
	for {
		f, err := c.fs.OpenFile(path, flag, perm)
		if err == nil || !(errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
			return f, err
		}
		c.mu.Lock()
		victims := c.evictIdleLocked(max(1, c.open/4))
		c.mu.Unlock()
		if len(victims) == 0 {
			return nil, err
		}
		closeFiles(victims)
	}
}

// evictIdleLocked takes up to n of the least recently used idle files out
// of the cache; the caller closes them.
func (c *FileCache) evictIdleLocked(n int) []vfs.File {
	var victims []vfs.File
	for ; n > 0; n-- {
		h := c.idle.front
		if h == nil {
			break
		}
		c.idle.remove(h)
		victims = append(victims, h.f)
		h.f = nil
		c.open--
	}
	return victims
}

// evictLocked takes the least recently used idle files out of the cache
// until it is within its bound; the caller closes them.
func (c *FileCache) evictLocked() []vfs.File {
	if c.max <= 0 || c.open <= c.max {
		return nil
	}
	return c.evictIdleLocked(c.open - c.max)
}

func closeFiles(fs []vfs.File) {
	for _, f := range fs {
		f.Close() // only read and written through the cache: nothing to lose
	}
}

// acquire returns the open file, opening it if needed; release it after.
func (h *SegmentFile) acquire() (vfs.File, error) {
	c := h.c
	if f, ok, err := h.take(); ok || err != nil {
		return f, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok, err := h.take(); ok || err != nil {
		return f, err // opened by another caller meanwhile
	}
	f, err := c.openFile(h.path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if h.closed {
		c.mu.Unlock()
		f.Close()
		return nil, errFileClosed
	}
	h.f, h.refs = f, h.refs+1
	c.open++
	victims := c.evictLocked()
	c.mu.Unlock()
	closeFiles(victims)
	return f, nil
}

// take returns the file with one more reference when it is open.
func (h *SegmentFile) take() (vfs.File, bool, error) {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed {
		return nil, false, errFileClosed
	}
	if h.f == nil {
		return nil, false, nil
	}
	if h.idle {
		c.idle.remove(h)
	}
	h.refs++
	return h.f, true, nil
}

func (h *SegmentFile) release() {
	c := h.c
	c.mu.Lock()
	h.refs--
	var victims []vfs.File
	switch {
	case h.refs > 0:
	case h.closed:
		victims = []vfs.File{h.f}
		h.f = nil
		c.open--
	default:
		c.idle.pushBack(h)
		victims = c.evictLocked()
	}
	c.mu.Unlock()
	closeFiles(victims)
}

// Pin returns the open file (an *os.File on the real filesystem, so the
// caller may use sendfile), which stays open until release is called. A
// pending file has nothing to send: Pin fails with io.EOF.
func (h *SegmentFile) Pin() (f vfs.File, release func(), err error) {
	if h.pending.Load() {
		return nil, nil, fmt.Errorf("log: segment file %s not created yet: %w", h.Name(), io.EOF)
	}
	if f, err = h.acquire(); err != nil {
		return nil, nil, err
	}
	return f, h.release, nil
}

// ReadAt reads as vfs.File's ReadAt; a pending file is empty.
func (h *SegmentFile) ReadAt(p []byte, off int64) (int, error) {
	if h.pending.Load() {
		return 0, io.EOF
	}
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.ReadAt(p, off)
}

// WriteAt writes as vfs.File's WriteAt, creating a pending file.
func (h *SegmentFile) WriteAt(p []byte, off int64) (int, error) {
	if _, err := h.materialize(); err != nil {
		return 0, err
	}
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.WriteAt(p, off)
}

// Truncate cuts or extends the file to size. A pending file is created
// only when extended.
func (h *SegmentFile) Truncate(size int64) error {
	if h.pending.Load() && size == 0 {
		return nil
	}
	if _, err := h.materialize(); err != nil {
		return err
	}
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return f.Truncate(size)
}

// Sync fsyncs the file. Data written through a descriptor closed since
// is in the same inode's page cache, so this makes it durable too. A
// pending file has nothing to sync.
func (h *SegmentFile) Sync() error {
	if h.pending.Load() {
		return nil
	}
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return f.Sync()
}

// Stat describes the file; a pending file is empty, with no
// modification time.
func (h *SegmentFile) Stat() (fs.FileInfo, error) {
	if h.pending.Load() {
		return pendingInfo{h.Name()}, nil
	}
	f, err := h.acquire()
	if err != nil {
		return nil, err
	}
	defer h.release()
	return f.Stat()
}

// Name is the file's current path.
func (h *SegmentFile) Name() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.path
}

// rename moves the file to path (a pending file only changes its path).
func (h *SegmentFile) rename(path string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending.Load() {
		h.path = path
		return nil
	}
	if err := h.c.fs.Rename(h.path, path); err != nil {
		return err
	}
	h.path = path
	return nil
}

// Close ends the file: it is closed now, or by the last operation using
// it, and never opened again.
func (h *SegmentFile) Close() error {
	c := h.c
	c.mu.Lock()
	if h.closed {
		c.mu.Unlock()
		return nil
	}
	h.closed = true
	var f vfs.File
	if h.f != nil && h.refs == 0 {
		if h.idle {
			c.idle.remove(h)
		}
		f, h.f = h.f, nil
		c.open--
	}
	c.mu.Unlock()
	if f != nil {
		return f.Close()
	}
	return nil
}

// moveDir renames dir to target with the files of segs in it, which
// keep working under their new paths.
func moveDir(fsys vfs.FS, dir, target string, segs []*segment) error {
	var hs []*SegmentFile
	for _, s := range segs {
		for _, h := range []*SegmentFile{s.file, s.index.file, s.timeIndex.file} {
			h.mu.Lock()
			hs = append(hs, h)
		}
	}
	defer func() {
		for _, h := range hs {
			h.mu.Unlock()
		}
	}()
	if err := fsys.Rename(dir, target); err != nil {
		return err
	}
	for _, h := range hs {
		h.path = filepath.Join(target, filepath.Base(h.path))
	}
	return nil
}
