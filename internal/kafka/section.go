package kafka

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"weir/internal/metrics"

	"github.com/twmb/franz-go/pkg/kbin"
	"golang.org/x/sys/unix"

	"weir/internal/vfs"
)

// Fetch responses carry record batches straight from segment files. The
// response is encoded by kmsg like any other, with each partition's
// RecordBatches set to a 16-byte marker; the writer then replaces each
// marker (and its length prefix) by the real length and the file range,
// which goes to the socket with sendfile(2). The marker holds a random
// per-process nonce and 0xFF bytes that no topic name can contain; if the
// markers found do not match the sections exactly, the response is
// rejected rather than sent wrong.

// section is a range of a segment file to splice into a response.
// file is a vfs.File, or a log.SegmentFile, which is pinned open while
// it is sent (its Pin gives an *os.File on the real filesystem).
type section struct {
	file io.ReaderAt
	pos  int64
	size int
	// stats count the bytes sent (BytesOut or ReplicationBytesOut).
	stats *metrics.TopicCounters
}

type pinnable interface {
	Pin() (vfs.File, func(), error)
}

const markerSize = 16

var markerNonce = func() [12]byte {
	var n [12]byte
	if _, err := rand.Read(n[:]); err != nil {
		panic(err)
	}
	return n
}()

// sectionMarker returns the marker standing for section i.
func sectionMarker(i int) []byte {
	m := make([]byte, markerSize)
	m[0], m[1] = 0xFF, 0xFE
	binary.BigEndian.PutUint16(m[2:], uint16(i))
	copy(m[4:], markerNonce[:])
	return m
}

// writeWithSections writes a response whose encoding in buf (frame size
// not yet set) holds one marker per section, in order. flexible says
// whether RecordBatches lengths are compact (uvarint length+1).
func writeWithSections(bw *bufio.Writer, nc net.Conn, buf []byte, sections []section, flexible bool) error {
	type cut struct{ start, end int } // the prefix+marker bytes to replace
	cuts := make([]cut, 0, len(sections))
	prefixLen := 4
	if flexible {
		prefixLen = 1 // uvarint(16+1)
	}
	from := 4
	for i := range sections {
		m := sectionMarker(i)
		j := bytes.Index(buf[from:], m)
		if j < 0 {
			return errors.New("fetch response: section marker missing")
		}
		at := from + j
		cuts = append(cuts, cut{at - prefixLen, at + markerSize})
		from = at + markerSize
	}
	if bytes.Contains(buf[from:], markerNonce[:]) {
		return errors.New("fetch response: unexpected section marker")
	}
	total := len(buf) - 4
	var prefixes [][]byte
	for i, s := range sections {
		var p []byte
		if flexible {
			p = kbin.AppendUvarint(nil, uint32(s.size+1))
		} else {
			p = kbin.AppendInt32(nil, int32(s.size))
		}
		prefixes = append(prefixes, p)
		total += len(p) + s.size - (cuts[i].end - cuts[i].start)
	}
	binary.BigEndian.PutUint32(buf, uint32(total))
	prev := 0
	for i, s := range sections {
		if _, err := bw.Write(buf[prev:cuts[i].start]); err != nil {
			return err
		}
		if _, err := bw.Write(prefixes[i]); err != nil {
			return err
		}
		if err := writeSection(bw, nc, s); err != nil {
			return err
		}
		prev = cuts[i].end
	}
	_, err := bw.Write(buf[prev:])
	return err
}

// writeSection sends a file range: by sendfile when both ends allow it,
// otherwise through the buffer. A TLS connection (an SSL listener) is not
// a *net.TCPConn: its bytes must be encrypted by the TLS record layer, so
// they are always copied. A file shorter than the range (truncated
// under the read) is an error: the connection must close, since the frame
// length is already promised.
func writeSection(bw *bufio.Writer, nc net.Conn, s section) error {
	var r io.ReaderAt = s.file
	if p, ok := s.file.(pinnable); ok {
		f, release, err := p.Pin()
		if err != nil {
			return fmt.Errorf("opening segment for fetch: %w", err)
		}
		defer release()
		r = f
	}
	if f, ok := r.(*os.File); ok {
		if tc, ok := nc.(*net.TCPConn); ok && s.size >= 16<<10 {
			if err := bw.Flush(); err != nil {
				return err
			}
			return sendfile(tc, f, s.pos, s.size)
		}
	}
	if s.size <= bw.Available() {
		// Read straight into the buffer's free space: no copy of
		// our own (a small fetch is one pread and the buffer's write).
		return readSection(bw, r, s.pos, bw.AvailableBuffer()[:s.size])
	}
	buf := make([]byte, min(s.size, 256<<10))
	pos, left := s.pos, s.size
	for left > 0 {
		n := min(left, len(buf))
		if err := readSection(bw, r, pos, buf[:n]); err != nil {
			return err
		}
		pos += int64(n)
		left -= n
	}
	return nil
}

// readSection reads len(b) bytes of a segment at pos into b and writes
// them to bw.
func readSection(bw *bufio.Writer, r io.ReaderAt, pos int64, b []byte) error {
	got, err := r.ReadAt(b, pos)
	if got < len(b) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("reading segment for fetch: %w", err)
	}
	_, err = bw.Write(b)
	return err
}

func sendfile(tc *net.TCPConn, f *os.File, pos int64, size int) error {
	sc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	fc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	left := size
	var opErr error
	werr := sc.Write(func(sfd uintptr) bool {
		for left > 0 {
			var n int
			var e error
			cerr := fc.Control(func(ffd uintptr) {
				n, e = unix.Sendfile(int(sfd), int(ffd), &pos, left)
			})
			if cerr != nil {
				opErr = cerr
				return true
			}
			if n > 0 {
				left -= n
			}
			switch {
			case e == syscall.EAGAIN:
				return false // wait until the socket is writable
			case e == syscall.EINTR:
				continue
			case e != nil:
				opErr = e
				return true
			case n == 0:
				opErr = io.ErrUnexpectedEOF // the file was truncated
				return true
			}
		}
		return true
	})
	if werr != nil {
		return werr
	}
	return opErr
}
