package kafka

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// A connection's read and write buffers come from pools while it has bytes
// to read or write and go back when it has none, so an idle connection
// holds no buffer (issue 33: 10,000 mostly idle clients).

// connBufSize is the size of a connection's read buffer and write buffer.
const connBufSize = 64 << 10

var readBufPool = sync.Pool{New: func() any { b := make([]byte, connBufSize); return &b }}

// connReader is a connection's buffered reader. On a TCP socket it reads
// through the socket's RawConn: a read that finds nothing to read with
// nothing buffered gives the buffer back before the goroutine parks, and
// one is taken from the pool when the socket is readable again, so an
// idle connection costs the same read(2) calls as a plain buffered read
// and holds no buffer. On another connection (TLS, whose own records are
// buffered by crypto/tls) a read with nothing buffered waits on a few
// bytes of the reader's own before it takes a buffer.
type connReader struct {
	c    *conn
	rc   syscall.RawConn // nil: not a socket
	buf  *[]byte         // nil while nothing is buffered and none is held
	r, w int             // buffered bytes: (*buf)[r:w]
	// The read function given to rc, made once (a method value passed
	// per read would allocate), and its target and result.
	readFn func(fd uintptr) bool
	direct []byte // read into this instead of the buffer
	n      int
	err    error
	small  [64]byte
}

func newConnReader(c *conn) *connReader {
	cr := &connReader{c: c}
	if tc, ok := c.nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			cr.rc = rc
			cr.readFn = cr.readFD
		}
	}
	return cr
}

// Buffered is the number of bytes that can be read without a read(2).
func (cr *connReader) Buffered() int { return cr.w - cr.r }

// Peek returns the next n bytes (n at most connBufSize) without
// consuming them.
func (cr *connReader) Peek(n int) ([]byte, error) {
	for cr.w-cr.r < n {
		if err := cr.fill(); err != nil {
			return nil, err
		}
	}
	return (*cr.buf)[cr.r : cr.r+n], nil
}

// Read reads what is buffered into p, or reads once from the connection
// (into p itself when p is at least a buffer long and nothing is
// buffered).
func (cr *connReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if cr.r == cr.w {
		if len(p) >= connBufSize {
			return cr.readInto(p)
		}
		if err := cr.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*cr.buf)[cr.r:cr.w])
	cr.r += n
	return n, nil
}

// fill reads once from the connection into the buffer, after what it
// holds.
func (cr *connReader) fill() error {
	if cr.buf != nil && cr.r > 0 {
		cr.w = copy(*cr.buf, (*cr.buf)[cr.r:cr.w])
		cr.r = 0
	}
	if cr.buf != nil && cr.w == len(*cr.buf) {
		return errors.New("connection read buffer full")
	}
	_, err := cr.readInto(nil)
	return err
}

// readInto reads once from the connection into p, or (p nil) into the
// buffer, after what it holds. It returns io.EOF when the peer closed.
func (cr *connReader) readInto(p []byte) (int, error) {
	var n int
	var err error
	if cr.rc != nil {
		cr.direct = p
		if rerr := cr.rc.Read(cr.readFn); rerr != nil {
			cr.direct = nil
			return 0, rerr
		}
		cr.direct = nil
		n, err = cr.n, cr.err
		if err != nil {
			err = os.NewSyscallError("read", err)
		}
	} else {
		n, err = cr.readPlain(p)
	}
	if n > 0 {
		cr.c.touch()
		if p == nil {
			cr.w += n
		}
		return n, nil
	}
	if err == nil {
		err = io.EOF
	}
	return 0, err
}

// readFD is rc's read function: one read(2) into the target, the buffer
// taken from the pool if the reader holds none. With nothing to read and
// nothing buffered the buffer goes back before the goroutine waits.
func (cr *connReader) readFD(fd uintptr) bool {
	p := cr.direct
	if p == nil {
		cr.take()
		p = (*cr.buf)[cr.w:]
	}
	for {
		n, err := syscall.Read(int(fd), p)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			if cr.r == cr.w {
				cr.release()
			}
			return false
		}
		cr.n, cr.err = max(n, 0), err
		return true
	}
}

// readPlain reads from a connection that is not a socket. With nothing
// buffered it waits on a few bytes before it takes the buffer.
func (cr *connReader) readPlain(p []byte) (int, error) {
	if p != nil {
		return cr.c.nc.Read(p)
	}
	if cr.buf != nil && cr.w > cr.r {
		return cr.c.nc.Read((*cr.buf)[cr.w:])
	}
	cr.release()
	n, err := cr.c.nc.Read(cr.small[:])
	if n > 0 {
		cr.take()
		copy(*cr.buf, cr.small[:n])
	}
	return n, err
}

func (cr *connReader) take() {
	if cr.buf == nil {
		cr.buf = readBufPool.Get().(*[]byte)
		cr.r, cr.w = 0, 0
	}
}

// release gives the buffer back: the caller has checked nothing is in it.
func (cr *connReader) release() {
	if cr.buf != nil {
		readBufPool.Put(cr.buf)
		cr.buf, cr.r, cr.w = nil, 0, 0
	}
}

// writeBufs are a connection's write buffer and its encoding scratch,
// held while replies are being written (see conn.send and conn.flush).
type writeBufs struct {
	bw      *bufio.Writer
	scratch []byte
}

var writeBufPool = sync.Pool{New: func() any { return &writeBufs{bw: bufio.NewWriterSize(nil, connBufSize)} }}

// maxPooledScratch is the largest encoding scratch kept in the pool: a
// larger reply's goes with the connection's buffers to the collector.
const maxPooledScratch = 1 << 20

// writer returns the connection's write buffers, taken from the pool if
// it holds none (the owner of the writing side only, see conn.inFlight).
func (c *conn) writer() *writeBufs {
	if c.wb == nil {
		c.wb = writeBufPool.Get().(*writeBufs)
		c.wb.bw.Reset(c.nc)
	}
	return c.wb
}

// releaseWriter gives the write buffers back when they hold nothing.
func (c *conn) releaseWriter() {
	if c.wb == nil || c.wb.bw.Buffered() > 0 {
		return
	}
	wb := c.wb
	c.wb = nil
	wb.bw.Reset(nil)
	if cap(wb.scratch) > maxPooledScratch {
		wb.scratch = nil
	}
	writeBufPool.Put(wb)
}
