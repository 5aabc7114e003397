package vfstest

import (
	"io/fs"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"weir/internal/vfs"
)

// MemFS is an in-memory vfs.FS, safe for concurrent use, that remembers what
// a crash would keep:
//
//   - a file's contents as of its last Sync; writes and truncations after
//     it are kept in order so a crash may keep a prefix of them;
//   - a directory's entries as of its last SyncDir; creations, renames and
//     removals after it are kept in order likewise.
//
// Open handles keep working on files that were removed or renamed, as on
// POSIX. Paths are slash-separated; "/a/b" and "a/b" name the same file.
// Fault injection (Faults) applies to opens, writes, syncs and renames.
type MemFS struct {
	*Faults
	mu   sync.Mutex
	root *inode
	now  func() time.Time
}

var _ vfs.FS = (*MemFS)(nil)

type inode struct {
	dir   bool
	mtime time.Time
	// Files.
	data   []byte
	synced []byte   // contents as of the last Sync
	ops    []fileOp // changes since the last Sync, oldest first
	// Directories.
	ents    map[string]*inode
	durable map[string]*inode // entries as of the last SyncDir
	dirOps  []dirOp           // entry changes since the last SyncDir
}

// fileOp is a write (data at off) or, when truncate, a truncation to size.
type fileOp struct {
	off      int64
	data     []byte
	truncate bool
	size     int64
}

// dirOp sets name to ino (nil: removes it); from, when set, is removed too
// (a rename within the directory, which a crash keeps or loses whole).
type dirOp struct {
	name string
	ino  *inode
	from string
}

// NewMem returns an empty in-memory filesystem.
func NewMem() *MemFS {
	return &MemFS{Faults: &Faults{partial: true}, root: newDir(time.Now()), now: time.Now}
}

func newDir(t time.Time) *inode {
	return &inode{dir: true, mtime: t, ents: map[string]*inode{}, durable: map[string]*inode{}}
}

// SetClock sets the clock used for modification times.
func (m *MemFS) SetClock(now func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = now
}

func split(name string) []string {
	p := path.Clean("/" + filepath.ToSlash(name))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// walk returns the directory holding name's last component, and that
// component. It fails when a parent is missing or not a directory.
func (m *MemFS) walk(op, name string) (*inode, string, error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", pathErr(op, name, syscall.EINVAL)
	}
	d := m.root
	for _, p := range parts[:len(parts)-1] {
		c := d.ents[p]
		if c == nil {
			return nil, "", pathErr(op, name, syscall.ENOENT)
		}
		if !c.dir {
			return nil, "", pathErr(op, name, syscall.ENOTDIR)
		}
		d = c
	}
	return d, parts[len(parts)-1], nil
}

func (m *MemFS) lookup(op, name string) (*inode, error) {
	if len(split(name)) == 0 {
		return m.root, nil
	}
	d, base, err := m.walk(op, name)
	if err != nil {
		return nil, err
	}
	ino := d.ents[base]
	if ino == nil {
		return nil, pathErr(op, name, syscall.ENOENT)
	}
	return ino, nil
}

func (d *inode) set(name string, ino *inode, now time.Time) {
	if ino == nil {
		delete(d.ents, name)
	} else {
		d.ents[name] = ino
	}
	d.dirOps = append(d.dirOps, dirOp{name: name, ino: ino})
	d.mtime = now
}

// OpenFile opens a file; O_CREATE, O_EXCL, O_TRUNC, O_APPEND and the access
// modes behave as with os.OpenFile.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if err := m.openFault(name); err != nil {
		return nil, pathErr("open", name, err)
	}
	f, err := m.openFile(name, flag)
	if err != nil {
		m.released()
	}
	return f, err
}

func (m *MemFS) openFile(name string, flag int) (vfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.walk("open", name)
	if err != nil {
		if len(split(name)) == 0 {
			return &memFile{fs: m, ino: m.root, name: name, flag: flag}, nil
		}
		return nil, err
	}
	ino := d.ents[base]
	switch {
	case ino == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, syscall.ENOENT)
	case ino == nil:
		ino = &inode{mtime: m.now()}
		d.set(base, ino, m.now())
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, pathErr("open", name, syscall.EEXIST)
	case ino.dir && flag&(os.O_WRONLY|os.O_RDWR) != 0:
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	if flag&os.O_TRUNC != 0 && !ino.dir && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		ino.truncate(0, m.now())
	}
	return &memFile{fs: m, ino: ino, name: name, flag: flag}, nil
}

func (ino *inode) truncate(size int64, now time.Time) {
	if size <= int64(len(ino.data)) {
		ino.data = ino.data[:size:size]
	} else {
		ino.data = append(ino.data, make([]byte, size-int64(len(ino.data)))...)
	}
	ino.ops = append(ino.ops, fileOp{truncate: true, size: size})
	ino.mtime = now
}

func (ino *inode) writeAt(p []byte, off int64, now time.Time) {
	if end := off + int64(len(p)); end > int64(len(ino.data)) {
		if end <= int64(cap(ino.data)) {
			ino.data = ino.data[:end]
		} else {
			nd := make([]byte, end, end+end/2)
			copy(nd, ino.data)
			ino.data = nd
		}
	}
	copy(ino.data[off:], p)
	ino.ops = append(ino.ops, fileOp{off: off, data: append([]byte(nil), p...)})
	ino.mtime = now
}

// Remove removes a file or an empty directory.
func (m *MemFS) Remove(name string) error {
	return m.remove(name)
}

func (m *MemFS) remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.walk("remove", name)
	if err != nil {
		return err
	}
	ino := d.ents[base]
	if ino == nil {
		return pathErr("remove", name, syscall.ENOENT)
	}
	if ino.dir && len(ino.ents) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	d.set(base, nil, m.now())
	return nil
}

// RemoveAll removes name and everything below it; a missing name is not an error.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.walk("removeall", name)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok && pe.Err == syscall.ENOENT {
			return nil
		}
		return err
	}
	if d.ents[base] != nil {
		d.set(base, nil, m.now())
	}
	return nil
}

// Rename moves oldpath to newpath, replacing a file (or empty directory)
// already there, as os.Rename does.
func (m *MemFS) Rename(oldpath, newpath string) error {
	if err := m.renameFault(oldpath, newpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return m.rename(oldpath, newpath)
}

func (m *MemFS) rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	linkErr := func(err error) error { return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err} }
	od, obase, err := m.walk("rename", oldpath)
	if err != nil {
		return linkErr(syscall.ENOENT)
	}
	ino := od.ents[obase]
	if ino == nil {
		return linkErr(syscall.ENOENT)
	}
	nd, nbase, err := m.walk("rename", newpath)
	if err != nil {
		return linkErr(syscall.ENOENT)
	}
	if ino.dir && strings.HasPrefix(path.Clean("/"+newpath)+"/", path.Clean("/"+oldpath)+"/") {
		if od == nd && obase == nbase {
			return nil
		}
		return linkErr(syscall.EINVAL)
	}
	if old := nd.ents[nbase]; old != nil && old != ino {
		switch {
		case old.dir && !ino.dir:
			return linkErr(syscall.EISDIR)
		case !old.dir && ino.dir:
			return linkErr(syscall.ENOTDIR)
		case old.dir && len(old.ents) > 0:
			return linkErr(syscall.ENOTEMPTY)
		}
	}
	now := m.now()
	if od == nd {
		if obase == nbase {
			return nil
		}
		delete(od.ents, obase)
		od.ents[nbase] = ino
		od.dirOps = append(od.dirOps, dirOp{name: nbase, ino: ino, from: obase})
		od.mtime = now
		return nil
	}
	od.set(obase, nil, now)
	nd.set(nbase, ino, now)
	return nil
}

// MkdirAll creates a directory and any missing parents.
func (m *MemFS) MkdirAll(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.root
	for _, p := range split(name) {
		c := d.ents[p]
		if c == nil {
			c = newDir(m.now())
			d.set(p, c, m.now())
		} else if !c.dir {
			return pathErr("mkdir", name, syscall.ENOTDIR)
		}
		d = c
	}
	return nil
}

// ReadDir lists a directory sorted by name, as os.ReadDir does.
func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, err := m.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !ino.dir {
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	out := make([]fs.DirEntry, 0, len(ino.ents))
	for _, n := range sortedNames(ino.ents) {
		out = append(out, fs.FileInfoToDirEntry(ino.ents[n].info(n)))
	}
	return out, nil
}

func sortedNames(m map[string]*inode) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Stat describes a file or directory.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return ino.info(path.Base("/" + filepath.ToSlash(name))), nil
}

// SyncDir makes the directory's current entries durable.
func (m *MemFS) SyncDir(dir string) error {
	if err := m.syncFault(dir); err != nil {
		return pathErr("sync", dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, err := m.lookup("sync", dir)
	if err != nil {
		return err
	}
	if !ino.dir {
		return pathErr("sync", dir, syscall.ENOTDIR)
	}
	ino.durable = make(map[string]*inode, len(ino.ents))
	for n, c := range ino.ents {
		ino.durable[n] = c
	}
	ino.dirOps = nil
	return nil
}

// CrashOptions choose what a simulated crash keeps beyond what was made
// durable. Both need Rand.
type CrashOptions struct {
	Rand *rand.Rand
	// TornWrites keeps, for each file, a random prefix of the changes made
	// since its last Sync, the last of them cut at a random byte.
	TornWrites bool
	// DirOps keeps, for each directory, a random prefix of the entry
	// changes made since its last SyncDir.
	DirOps bool
}

// CrashClone returns a new filesystem holding only what was durable: each
// file's contents as of its last Sync, each directory's entries as of its
// last SyncDir. The receiver is unchanged and keeps working.
func (m *MemFS) CrashClone() *MemFS { return m.CrashCloneWith(CrashOptions{}) }

// CrashCloneRandom is CrashClone where each file also keeps a random prefix
// of its unsynced writes, cut at a random byte (a torn tail).
func (m *MemFS) CrashCloneRandom(r *rand.Rand) *MemFS {
	return m.CrashCloneWith(CrashOptions{Rand: r, TornWrites: true})
}

// CrashCloneWith is CrashClone with the given options. Directories and files
// are visited in name order, so a seeded Rand gives a reproducible result.
func (m *MemFS) CrashCloneWith(o CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o.Rand == nil {
		o.TornWrites, o.DirOps = false, false
	}
	c := &MemFS{Faults: &Faults{partial: true}, now: m.now}
	c.root = crashInode(m.root, o)
	return c
}

func crashInode(ino *inode, o CrashOptions) *inode {
	if !ino.dir {
		data := append([]byte(nil), ino.synced...)
		if o.TornWrites && len(ino.ops) > 0 {
			k := o.Rand.Intn(len(ino.ops) + 1)
			for i, op := range ino.ops[:min(k+1, len(ino.ops))] {
				switch {
				case op.truncate && i < k:
					data = resize(data, op.size)
				case !op.truncate:
					p := op.data
					if i == k {
						p = p[:o.Rand.Intn(len(p)+1)]
					}
					if end := op.off + int64(len(p)); end > int64(len(data)) {
						data = resize(data, end)
					}
					copy(data[op.off:], p)
				}
			}
		}
		return &inode{mtime: ino.mtime, data: data, synced: append([]byte(nil), data...)}
	}
	ents := make(map[string]*inode, len(ino.durable))
	for n, c := range ino.durable {
		ents[n] = c
	}
	if o.DirOps && len(ino.dirOps) > 0 {
		for _, op := range ino.dirOps[:o.Rand.Intn(len(ino.dirOps)+1)] {
			if op.from != "" {
				delete(ents, op.from)
			}
			if op.ino == nil {
				delete(ents, op.name)
			} else {
				ents[op.name] = op.ino
			}
		}
	}
	d := newDir(ino.mtime)
	for _, n := range sortedNames(ents) {
		cc := crashInode(ents[n], o)
		d.ents[n], d.durable[n] = cc, cc
	}
	return d
}

func resize(b []byte, size int64) []byte {
	if size <= int64(len(b)) {
		return b[:size]
	}
	return append(b, make([]byte, size-int64(len(b)))...)
}

// Files lists the paths of all regular files, sorted, for debugging tests.
func (m *MemFS) Files() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	var walk func(prefix string, d *inode)
	walk = func(prefix string, d *inode) {
		for _, n := range sortedNames(d.ents) {
			c := d.ents[n]
			if c.dir {
				walk(prefix+"/"+n, c)
			} else {
				out = append(out, prefix+"/"+n)
			}
		}
	}
	walk("", m.root)
	return out
}

// Unsynced reports how many changes (writes and truncations) of the file
// at name were made since its last Sync.
func (m *MemFS) Unsynced(name string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, err := m.lookup("stat", name)
	if err != nil {
		return 0, err
	}
	return len(ino.ops), nil
}

type fileInfo struct {
	name  string
	size  int64
	dir   bool
	mtime time.Time
}

func (ino *inode) info(name string) fileInfo {
	return fileInfo{name: name, size: int64(len(ino.data)), dir: ino.dir, mtime: ino.mtime}
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) ModTime() time.Time { return fi.mtime }
func (fi fileInfo) IsDir() bool        { return fi.dir }
func (fi fileInfo) Sys() any           { return nil }
func (fi fileInfo) Mode() fs.FileMode {
	if fi.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
