package vfstest

import (
	"io/fs"
	"os"
	"sync/atomic"

	"weir/internal/vfs"
)

// FaultFS wraps another filesystem (usually vfs.OS) with the fault injection
// of Faults: failing opens and an open-file limit, a write budget after
// which writes fail with ENOSPC, and failing syncs and renames. Files it opens are wrappers, not *os.File.
type FaultFS struct {
	*Faults
	inner vfs.FS
}

var _ vfs.FS = (*FaultFS)(nil)

// Faulty returns inner with fault injection; no fault is armed initially.
func Faulty(inner vfs.FS) *FaultFS { return &FaultFS{Faults: &Faults{partial: true}, inner: inner} }

func (f *FaultFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if err := f.openFault(name); err != nil {
		return nil, pathErr("open", name, err)
	}
	fl, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		f.released()
		return nil, err
	}
	return &faultFile{File: fl, faults: f.Faults}, nil
}

func (f *FaultFS) Remove(name string) error                   { return f.inner.Remove(name) }
func (f *FaultFS) RemoveAll(name string) error                { return f.inner.RemoveAll(name) }
func (f *FaultFS) MkdirAll(p string, perm fs.FileMode) error  { return f.inner.MkdirAll(p, perm) }
func (f *FaultFS) ReadDir(name string) ([]fs.DirEntry, error) { return f.inner.ReadDir(name) }
func (f *FaultFS) Stat(name string) (fs.FileInfo, error)      { return f.inner.Stat(name) }

func (f *FaultFS) Rename(oldpath, newpath string) error {
	if err := f.renameFault(oldpath, newpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return f.inner.Rename(oldpath, newpath)
}

func (f *FaultFS) SyncDir(dir string) error {
	if err := f.syncFault(dir); err != nil {
		return pathErr("sync", dir, err)
	}
	return f.inner.SyncDir(dir)
}

type faultFile struct {
	vfs.File
	faults *Faults
	closed atomic.Bool
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	n, ferr := f.faults.allowWrite(len(p))
	w, err := f.File.WriteAt(p[:n], off)
	if err != nil {
		return w, err
	}
	if ferr != nil {
		return w, pathErr("write", f.Name(), ferr)
	}
	return w, nil
}

func (f *faultFile) Write(p []byte) (int, error) {
	n, ferr := f.faults.allowWrite(len(p))
	w, err := f.File.Write(p[:n])
	if err != nil {
		return w, err
	}
	if ferr != nil {
		return w, pathErr("write", f.Name(), ferr)
	}
	return w, nil
}

func (f *faultFile) Sync() error {
	if err := f.faults.syncFault(f.Name()); err != nil {
		return pathErr("sync", f.Name(), err)
	}
	return f.File.Sync()
}

func (f *faultFile) Close() error {
	err := f.File.Close()
	if f.closed.CompareAndSwap(false, true) {
		f.faults.released()
	}
	return err
}
