// Package vfs is the small filesystem interface under weir's storage, so
// tests can swap in a filesystem that crashes, fills up or fails.
//
// Contract: a File behaves like *os.File for the methods listed. Data written
// but not yet Synced may be lost by a crash; a directory entry created or
// renamed may be lost unless SyncDir is called on its directory.
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// File is an open file.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Seek(offset int64, whence int) (int64, error)
	Name() string
}

// FS is the set of filesystem operations storage needs.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldpath, newpath string) error
	MkdirAll(path string, perm fs.FileMode) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes the directory's entries (creations, renames) durable.
	SyncDir(dir string) error
}

// OS is the real filesystem. Files it opens are *os.File, so callers may use
// sendfile on them.
var OS FS = osFS{}

type osFS struct{}

// openFile is os.OpenFile for regular files, which are never polled:
// os.OpenFile offers every descriptor to the network poller, which
// refuses a regular file after four fcntl calls and an epoll_ctl; a
// descriptor from os.NewFile costs one fcntl. Such a file behaves as one
// os.OpenFile returns (blocking reads and writes). (os.Open spares a
// directory the poller already.)
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != syscall.EINTR {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}
func (osFS) Remove(name string) error              { return os.Remove(name) }
func (osFS) RemoveAll(name string) error           { return os.RemoveAll(name) }
func (osFS) Rename(o, n string) error              { return os.Rename(o, n) }
func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadFile reads a whole file.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return buf[:n], nil
}

// WriteFileAtomic replaces name with data durably: it writes a temporary
// file, syncs it, renames it over name and syncs the directory. Checkpoint
// files are written this way so a crash leaves the old or the new one.
func WriteFileAtomic(fsys FS, name string, data []byte) error {
	if err := WriteFileSynced(fsys, name, data); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(name))
}

// WriteFileSynced is WriteFileAtomic without the final SyncDir: the
// caller makes the rename durable, with one SyncDir after several writes.
func WriteFileSynced(fsys FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fsys.Rename(tmp, name)
}

// MkdirAll is os.MkdirAll, which stats the path and its parent before it
// makes the directory; here the directory is made first, as a new
// partition's in its existing log dir is, and the walk up happens only
// when its parent is missing.
func (osFS) MkdirAll(p string, perm fs.FileMode) error {
	err := os.Mkdir(p, perm)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		if st, serr := os.Stat(p); serr == nil && st.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
	default:
		return os.MkdirAll(p, perm)
	}
}
