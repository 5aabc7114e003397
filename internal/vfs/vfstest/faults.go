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

// Faults is the fault injection shared by MemFS and FaultFS. Its methods are
// safe for concurrent use. NewMem and Faulty start with nothing armed and
// partial writes chosen.
type Faults struct {
	mu          sync.Mutex
	budgetSet   bool
	budget      int64 // bytes that may still be written when budgetSet
	partial     bool  // a write crossing the budget writes the prefix that fits
	failSyncs   int
	syncErr     error
	failRenames int
	renameErr   error
	// Opens: openSkip more succeed, then failOpens fail with openErr;
	// openLimit (0: none) caps the files open at once, as RLIMIT_NOFILE.
	openSkip  int
	failOpens int
	openErr   error
	openLimit int
	open      int
}

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
	f.failSyncs, f.syncErr = n, err
}

// FailRenames makes the next n Rename calls fail with err (syscall.EIO when
// err is nil) without renaming anything.
func (f *Faults) FailRenames(n int, err error) {
	if err == nil {
		err = syscall.EIO
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRenames, f.renameErr = n, err
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
	f.openSkip, f.failOpens, f.openErr = skip, n, err
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
func (f *Faults) openFault() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.openSkip > 0:
		f.openSkip--
	case f.failOpens > 0:
		f.failOpens--
		return f.openErr
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

func (f *Faults) syncFault() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSyncs > 0 {
		f.failSyncs--
		return f.syncErr
	}
	return nil
}

func (f *Faults) renameFault() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRenames > 0 {
		f.failRenames--
		return f.renameErr
	}
	return nil
}

func pathErr(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}
