package vfstest

// Composable fault injection, in the manner of pebble's vfs/errorfs: Inject
// wraps any filesystem (a MemFS, vfs.OS, a FaultFS) so that every operation
// is first offered to an Injector, which may fail it or act before it runs
// (take a crash clone, race the code under test). Injectors compose:
// Failing picks which operations fail, Switch changes the injector while a
// test runs.

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"weir/internal/vfs"
)

// OpKind is the kind of a filesystem operation.
type OpKind uint8

// The operations an Injector sees. OpOpen is OpenFile; file operations
// carry the file's name as Path.
const (
	OpOpen OpKind = iota
	OpRead
	OpWrite
	OpSync
	OpTruncate
	OpRemove
	OpRemoveAll
	OpRename
	OpMkdirAll
	OpReadDir
	OpStat
	OpSyncDir
)

var opNames = [...]string{"open", "read", "write", "sync", "truncate", "remove", "removeall", "rename",
	"mkdirall", "readdir", "stat", "syncdir"}

func (k OpKind) String() string { return opNames[k] }

// Op is one operation about to run.
type Op struct {
	Kind OpKind
	// Path is the file or directory; the old path of a rename.
	Path string
	// NewPath is the new path of a rename.
	NewPath string
	// Offset is where a read or write starts (-1 for a write at the file
	// position), or a truncation's size.
	Offset int64
	// Create is set for an OpenFile with O_CREATE.
	Create bool
}

// Mutates reports whether the operation can change what the filesystem
// holds or what of it is durable.
func (op Op) Mutates() bool {
	switch op.Kind {
	case OpOpen:
		return op.Create
	case OpRead, OpReadDir, OpStat:
		return false
	}
	return true
}

// Injector decides, before each operation, whether it fails: a non-nil
// error is returned in its place and the operation does not run. It is
// called with no lock of the filesystem held, from whatever goroutine uses
// the filesystem, so it may itself use the filesystem (a MemFS crash clone)
// or the code under test.
type Injector interface {
	MaybeError(op Op) error
}

// InjectorFunc is an Injector.
type InjectorFunc func(op Op) error

// MaybeError calls f.
func (f InjectorFunc) MaybeError(op Op) error { return f(op) }

// ErrInjected is the error of an injected fault when no other is given.
var ErrInjected = errors.New("injected fault")

// Failing returns an injector that lets the first skip operations for
// which match holds run, then fails the next n of them (every one after
// the skipped ones when n < 0) with err (ErrInjected when nil). Its count
// is safe for concurrent use.
func Failing(match func(Op) bool, skip, n int, err error) Injector {
	if err == nil {
		err = ErrInjected
	}
	var mu sync.Mutex
	return InjectorFunc(func(op Op) error {
		if !match(op) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case skip > 0:
			skip--
			return nil
		case n == 0:
			return nil
		case n > 0:
			n--
		}
		return err
	})
}

// Kinds matches operations of these kinds.
func Kinds(kinds ...OpKind) func(Op) bool {
	return func(op Op) bool {
		for _, k := range kinds {
			if op.Kind == k {
				return true
			}
		}
		return false
	}
}

// PathSuffix matches operations whose path (or a rename's new path) ends
// with suffix.
func PathSuffix(suffix string) func(Op) bool {
	return func(op Op) bool {
		return strings.HasSuffix(op.Path, suffix) || op.Kind == OpRename && strings.HasSuffix(op.NewPath, suffix)
	}
}

// Switch is an Injector that defers to the one last Set (none at first,
// or after Set(nil)), so that a test can wrap a filesystem once and inject
// only around the step it examines. It is safe for concurrent use.
type Switch struct {
	inj atomic.Pointer[Injector]
}

// Set makes inj the injector (nil: none).
func (s *Switch) Set(inj Injector) {
	if inj == nil {
		s.inj.Store(nil)
		return
	}
	s.inj.Store(&inj)
}

// MaybeError asks the current injector.
func (s *Switch) MaybeError(op Op) error {
	if p := s.inj.Load(); p != nil {
		return (*p).MaybeError(op)
	}
	return nil
}

// Inject returns inner with every operation offered to inj first.
func Inject(inner vfs.FS, inj Injector) vfs.FS { return &injectFS{inner: inner, inj: inj} }

type injectFS struct {
	inner vfs.FS
	inj   Injector
}

func (f *injectFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if err := f.inj.MaybeError(Op{Kind: OpOpen, Path: name, Create: flag&os.O_CREATE != 0}); err != nil {
		return nil, pathErr("open", name, err)
	}
	fl, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &injectFile{File: fl, inj: f.inj}, nil
}

func (f *injectFS) Remove(name string) error {
	if err := f.inj.MaybeError(Op{Kind: OpRemove, Path: name}); err != nil {
		return pathErr("remove", name, err)
	}
	return f.inner.Remove(name)
}

func (f *injectFS) RemoveAll(name string) error {
	if err := f.inj.MaybeError(Op{Kind: OpRemoveAll, Path: name}); err != nil {
		return pathErr("removeall", name, err)
	}
	return f.inner.RemoveAll(name)
}

func (f *injectFS) Rename(oldpath, newpath string) error {
	if err := f.inj.MaybeError(Op{Kind: OpRename, Path: oldpath, NewPath: newpath}); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return f.inner.Rename(oldpath, newpath)
}

func (f *injectFS) MkdirAll(p string, perm fs.FileMode) error {
	if err := f.inj.MaybeError(Op{Kind: OpMkdirAll, Path: p}); err != nil {
		return pathErr("mkdir", p, err)
	}
	return f.inner.MkdirAll(p, perm)
}

func (f *injectFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.inj.MaybeError(Op{Kind: OpReadDir, Path: name}); err != nil {
		return nil, pathErr("readdir", name, err)
	}
	return f.inner.ReadDir(name)
}

func (f *injectFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.inj.MaybeError(Op{Kind: OpStat, Path: name}); err != nil {
		return nil, pathErr("stat", name, err)
	}
	return f.inner.Stat(name)
}

func (f *injectFS) SyncDir(dir string) error {
	if err := f.inj.MaybeError(Op{Kind: OpSyncDir, Path: dir}); err != nil {
		return pathErr("sync", dir, err)
	}
	return f.inner.SyncDir(dir)
}

type injectFile struct {
	vfs.File
	inj Injector
}

func (f *injectFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.inj.MaybeError(Op{Kind: OpRead, Path: f.Name(), Offset: off}); err != nil {
		return 0, pathErr("read", f.Name(), err)
	}
	return f.File.ReadAt(p, off)
}

func (f *injectFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.inj.MaybeError(Op{Kind: OpWrite, Path: f.Name(), Offset: off}); err != nil {
		return 0, pathErr("write", f.Name(), err)
	}
	return f.File.WriteAt(p, off)
}

func (f *injectFile) Write(p []byte) (int, error) {
	if err := f.inj.MaybeError(Op{Kind: OpWrite, Path: f.Name(), Offset: -1}); err != nil {
		return 0, pathErr("write", f.Name(), err)
	}
	return f.File.Write(p)
}

func (f *injectFile) Sync() error {
	if err := f.inj.MaybeError(Op{Kind: OpSync, Path: f.Name()}); err != nil {
		return pathErr("sync", f.Name(), err)
	}
	return f.File.Sync()
}

func (f *injectFile) Truncate(size int64) error {
	if err := f.inj.MaybeError(Op{Kind: OpTruncate, Path: f.Name(), Offset: size}); err != nil {
		return pathErr("truncate", f.Name(), err)
	}
	return f.File.Truncate(size)
}
