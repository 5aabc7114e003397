package vfstest

import (
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// memFile is an open MemFS file. The handle's offset is guarded by the
// filesystem's lock like everything else.
type memFile struct {
	fs     *MemFS
	ino    *inode
	name   string
	flag   int
	off    int64
	closed bool
}

func (f *memFile) check(op string, write bool) error {
	switch {
	case f.closed:
		return pathErr(op, f.name, os.ErrClosed)
	case f.ino.dir:
		return pathErr(op, f.name, syscall.EISDIR)
	case write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0:
		return pathErr(op, f.name, syscall.EBADF)
	case !write && f.flag&os.O_WRONLY != 0:
		return pathErr(op, f.name, syscall.EBADF)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, syscall.EINVAL)
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Read is not part of vfs.File but lets a handle serve as an io.Reader.
func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	off := f.off
	f.fs.mu.Unlock()
	n, err := f.ReadAt(p, off)
	f.fs.mu.Lock()
	f.off += int64(n)
	f.fs.mu.Unlock()
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	n, err := f.writeLocked(p, off)
	f.fs.mu.Unlock()
	return n, err
}

func (f *memFile) writeLocked(p []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, syscall.EINVAL)
	}
	n, ferr := f.fs.allowWrite(len(p))
	if n > 0 {
		f.ino.writeAt(p[:n], off, f.fs.now())
	}
	if ferr != nil {
		return n, pathErr("write", f.name, ferr)
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	off := f.off
	if f.flag&os.O_APPEND != 0 {
		off = int64(len(f.ino.data))
	}
	n, err := f.writeLocked(p, off)
	f.off = off + int64(n)
	f.fs.mu.Unlock()
	return n, err
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, os.ErrClosed)
	}
	f.closed = true
	f.fs.released()
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	closed := f.closed
	f.fs.mu.Unlock()
	if closed {
		return pathErr("sync", f.name, os.ErrClosed)
	}
	if err := f.fs.syncFault(f.name); err != nil {
		return pathErr("sync", f.name, err)
	}
	f.fs.mu.Lock()
	if !f.ino.dir {
		f.ino.synced = append(f.ino.synced[:0:0], f.ino.data...)
		f.ino.ops = nil
	}
	f.fs.mu.Unlock()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.ino.truncate(size, f.fs.now())
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return nil, pathErr("stat", f.name, os.ErrClosed)
	}
	return f.ino.info(path.Base("/" + filepath.ToSlash(f.name))), nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, pathErr("seek", f.name, os.ErrClosed)
	}
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.ino.data))
	}
	if offset < 0 {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.off = offset
	return offset, nil
}

func (f *memFile) Name() string { return f.name }
