// Package vfstest provides filesystems for tests of storage code: an
// in-memory vfs.FS that can simulate a crash (keeping only what was made
// durable) and inject faults, a wrapper that injects the same faults over
// another filesystem such as vfs.OS, and Inject, which offers every
// operation of any filesystem to an Injector first (inject.go).
package vfstest

import (
	"io/fs"
	"sync"
	"syscall"
)

// Faults is the fault injection shared by MemFS and FaultFS: a write
// budget, an open-file limit, and failing syncs, renames and opens (each an
// Injector armed by FailSyncs, FailRenames and FailOpens; Inject composes
// any other). Its methods are safe for concurrent use. NewMem and Faulty
// start with nothing armed and partial writes chosen.
type Faults struct {
	mu        sync.Mutex
	budgetSet bool
	budget    int64 // bytes that may still be written when budgetSet
	partial   bool  // a write crossing the budget writes the prefix that fits
	// syncs, renames and opens decide the failures of those operations
	// (nil: none).
	syncs, renames, opens Injector
	// openLimit (0: none) caps the files open at once, as RLIMIT_NOFILE.
	openLimit int
	open      int
}

// everyOp matches every operation.
func everyOp(Op) bool { return true }

// SetWriteBudget allows n more bytes to be written (in total, over all
// files); writes past it fail with ENOSPC. A negative n removes the limit.
func (f *Faults) SetWriteBudget(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budgetSet, f.budget = n >= 0, n
}

// WriteBudget returns the bytes that may still be written, or -1 when there
// is no limit.
func (f *Faults) WriteBudget() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.budgetSet {
		return -1
	}
	return f.budget
}

// SetPartialWrites chooses what a write crossing the budget does: with true
// (the default, what real disks do) it writes the prefix that fits before
// failing, with false it writes nothing.
func (f *Faults) SetPartialWrites(partial bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partial = partial
}

// FailSyncs makes the next n File.Sync and SyncDir calls fail with err
// (syscall.EIO when err is nil) without making anything durable.
func (f *Faults) FailSyncs(n int, err error) {
	if err == nil {
		err = syscall.EIO
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs = Failing(everyOp, 0, n, err)
}

// FailRenames makes the next n Rename calls fail with err (syscall.EIO when
// err is nil) without renaming anything.
func (f *Faults) FailRenames(n int, err error) {
	if err == nil {
		err = syscall.EIO
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renames = Failing(everyOp, 0, n, err)
}

// FailOpens lets the next skip OpenFile calls succeed and makes the n after
// them fail with err (syscall.EMFILE when err is nil) without opening or
// creating anything.
func (f *Faults) FailOpens(skip, n int, err error) {
	if err == nil {
		err = syscall.EMFILE
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens = Failing(everyOp, skip, n, err)
}

// SetOpenLimit makes OpenFile fail with EMFILE while n files are open, as
// a process at its RLIMIT_NOFILE; n <= 0 removes the limit.
func (f *Faults) SetOpenLimit(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.openLimit = max(n, 0)
}

// OpenFiles returns how many files opened through the filesystem are not
// closed yet.
func (f *Faults) OpenFiles() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open
}

// openFault decides whether an open may proceed; when it may (nil), the
// file counts as open until released.
func (f *Faults) openFault(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opens != nil {
		if err := f.opens.MaybeError(Op{Kind: OpOpen, Path: name}); err != nil {
			return err
		}
	}
	if f.openLimit > 0 && f.open >= f.openLimit {
		return syscall.EMFILE
	}
	f.open++
	return nil
}

// released notes that a file counted by openFault was closed (or its open
// failed after all).
func (f *Faults) released() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open--
}

// allowWrite returns how many of n bytes may be written and the error to
// return after writing them (nil when all may be).
func (f *Faults) allowWrite(n int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.budgetSet || int64(n) <= f.budget {
		if f.budgetSet {
			f.budget -= int64(n)
		}
		return n, nil
	}
	allowed := 0
	if f.partial {
		allowed = int(f.budget)
	}
	f.budget -= int64(allowed)
	return allowed, syscall.ENOSPC
}

// syncFault is the failure, if any, of a File.Sync or SyncDir of path.
func (f *Faults) syncFault(path string) error {
	f.mu.Lock()
	inj := f.syncs
	f.mu.Unlock()
	if inj == nil {
		return nil
	}
	return inj.MaybeError(Op{Kind: OpSync, Path: path})
}

// renameFault is the failure, if any, of a rename.
func (f *Faults) renameFault(oldpath, newpath string) error {
	f.mu.Lock()
	inj := f.renames
	f.mu.Unlock()
	if inj == nil {
		return nil
	}
	return inj.MaybeError(Op{Kind: OpRename, Path: oldpath, NewPath: newpath})
}

func pathErr(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}
