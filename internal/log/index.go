package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"weir/internal/vfs"
)

// Index files are sparse: an entry is added when more than index.interval.bytes
// of batches were appended since the last one.
//
//	.index      entries of 8 bytes: relativeOffset int32 | position int32
//	            relativeOffset = last offset of the indexed batch - segment base
//	.timeindex  entries of 12 bytes: timestamp int64 | relativeOffset int32
//	            the largest timestamp so far and the last offset of its batch
//
// Both are kept in memory, which lookups read. New entries reach the file
// when the log is flushed (Log.Flush, under the log's lock, before the
// fsyncs) or the segment rolled:
// an append makes no system call for them and needs no descriptor of the
// index files, so a partition being written holds only its .log open in
// the FileCache. A crash may thus lose entries written since the last
// sync, as it could lose unsynced ones before: recovery rebuilds the
// indexes of every segment from the recovery point on, and a segment below
// it was synced whole. A file whose length is not a whole number of
// entries, or whose entries are not increasing, is rebuilt from the log.

const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

type offsetEntry struct {
	rel int32
	pos int32
}

type timeEntry struct {
	ts  int64
	rel int32
}

// offsetIndex maps offsets to file positions. Appends happen under the log's
// lock; lookups may run concurrently, so the entries have their own lock.
type offsetIndex struct {
	file *SegmentFile
	base int64
	mu   sync.RWMutex
	ents []offsetEntry
	// written counts the entries of ents in the file.
	written int
	// fileLen is the file's length as last read or written, so that a
	// truncation to that length (recovery resetting an empty index) makes
	// no system call.
	fileLen int64
}

type timeIndex struct {
	file    *SegmentFile
	base    int64
	mu      sync.RWMutex
	ents    []timeEntry
	written int   // as offsetIndex's
	fileLen int64 // as offsetIndex's
}

func openIndexFile(fsys vfs.FS, path string) (vfs.File, []byte, error) {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && len(buf) > 0 {
		f.Close()
		return nil, nil, err
	}
	return f, buf, nil
}

// loadIndexFile opens (creating it if needed) an index file under files
// and reads it whole.
func loadIndexFile(files *FileCache, path string) (*SegmentFile, []byte, error) {
	f, err := files.create(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, nil, errors.Join(err, f.Close())
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && len(buf) > 0 {
		return nil, nil, errors.Join(err, f.Close())
	}
	return f, buf, nil
}

// loadOffsetIndex opens the index; sane reports whether its contents could
// be trusted (otherwise it is empty and must be rebuilt).
func loadOffsetIndex(files *FileCache, path string, base int64, logSize int64) (*offsetIndex, bool, error) {
	f, buf, err := loadIndexFile(files, path)
	if err != nil {
		return nil, false, err
	}
	idx := &offsetIndex{file: f, base: base, fileLen: int64(len(buf))}
	if len(buf)%offsetEntrySize != 0 {
		return idx, false, nil
	}
	for i := 0; i < len(buf); i += offsetEntrySize {
		e := offsetEntry{int32(binary.BigEndian.Uint32(buf[i:])), int32(binary.BigEndian.Uint32(buf[i+4:]))}
		if n := len(idx.ents); n > 0 && (e.rel <= idx.ents[n-1].rel || e.pos <= idx.ents[n-1].pos) || e.pos < 0 || int64(e.pos) >= logSize || e.rel < 0 {
			idx.ents = nil
			return idx, false, nil
		}
		idx.ents = append(idx.ents, e)
	}
	idx.written = len(idx.ents)
	return idx, true, nil
}

// append adds an entry in memory; flush writes it to the file.
func (x *offsetIndex) append(lastOffset int64, pos int64) error {
	e := offsetEntry{int32(lastOffset - x.base), int32(pos)}
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := len(x.ents); n > 0 && e.rel <= x.ents[n-1].rel {
		return fmt.Errorf("index %s: offset %d not above last entry", x.file.Name(), lastOffset)
	}
	x.ents = append(x.ents, e)
	return nil
}

// unwritten reports whether some entries are not in the file yet.
func (x *offsetIndex) unwritten() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.written < len(x.ents)
}

// flush writes the entries not in the file yet, in one write.
func (x *offsetIndex) flush() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	pending := x.ents[x.written:]
	if len(pending) == 0 {
		return nil
	}
	buf := make([]byte, len(pending)*offsetEntrySize)
	for i, e := range pending {
		binary.BigEndian.PutUint32(buf[i*offsetEntrySize:], uint32(e.rel))
		binary.BigEndian.PutUint32(buf[i*offsetEntrySize+4:], uint32(e.pos))
	}
	return flushIndexFile(x.file, &x.fileLen, buf, int64(x.written)*offsetEntrySize, &x.written, len(x.ents))
}

// lookup returns the position of the last indexed batch whose last offset is
// below offset: scanning from there finds the batch holding offset.
func (x *offsetIndex) lookup(offset int64) int64 {
	rel := offset - x.base
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(len(x.ents), func(i int) bool { return int64(x.ents[i].rel) >= rel })
	if i == 0 {
		return 0
	}
	return int64(x.ents[i-1].pos)
}

// lookupPosition returns the indexed position at or before pos.
func (x *offsetIndex) lookupPosition(pos int64) int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(len(x.ents), func(i int) bool { return int64(x.ents[i].pos) > pos })
	if i == 0 {
		return 0
	}
	return int64(x.ents[i-1].pos)
}

// offsetAtOrAfter returns the offset of the first entry whose batch starts
// at or after pos: the batches before pos all end below it.
func (x *offsetIndex) offsetAtOrAfter(pos int64) (int64, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(len(x.ents), func(i int) bool { return int64(x.ents[i].pos) >= pos })
	if i == len(x.ents) {
		return 0, false
	}
	return x.base + int64(x.ents[i].rel), true
}

func (x *offsetIndex) entries() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ents)
}

// truncateTo drops entries at or beyond position pos.
func (x *offsetIndex) truncateTo(pos int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := sort.Search(len(x.ents), func(i int) bool { return int64(x.ents[i].pos) >= pos })
	x.ents = x.ents[:i]
	x.written = min(x.written, i)
	return truncateIndexFile(x.file, &x.fileLen, int64(x.written)*offsetEntrySize)
}

// grownTo is an index file's length after a write ending at end (-1:
// unknown stays unknown).
func grownTo(fileLen, end int64) int64 {
	if fileLen < 0 {
		return -1
	}
	return max(fileLen, end)
}

// flushIndexFile writes buf, an index's pending entries, at off; then
// *written becomes n. A failed write leaves no torn entry behind: the file
// is cut back to off, and the next flush writes them all again.
func flushIndexFile(f *SegmentFile, fileLen *int64, buf []byte, off int64, written *int, n int) error {
	if _, err := f.WriteAt(buf, off); err != nil {
		*fileLen = -1 // unknown after a failed write
		return errors.Join(err, truncateIndexFile(f, fileLen, off))
	}
	*fileLen = grownTo(*fileLen, off+int64(len(buf)))
	*written = n
	return nil
}

// truncateIndexFile cuts an index file to n bytes unless *fileLen says
// it has that length already.
func truncateIndexFile(f *SegmentFile, fileLen *int64, n int64) error {
	if *fileLen == n {
		return nil
	}
	if err := f.Truncate(n); err != nil {
		*fileLen = -1
		return err
	}
	*fileLen = n
	return nil
}

func (x *offsetIndex) reset() error { return x.truncateTo(0) }

func loadTimeIndex(files *FileCache, path string, base, nextOffset int64) (*timeIndex, bool, error) {
	f, buf, err := loadIndexFile(files, path)
	if err != nil {
		return nil, false, err
	}
	idx := &timeIndex{file: f, base: base, fileLen: int64(len(buf))}
	if len(buf)%timeEntrySize != 0 {
		return idx, false, nil
	}
	for i := 0; i < len(buf); i += timeEntrySize {
		e := timeEntry{int64(binary.BigEndian.Uint64(buf[i:])), int32(binary.BigEndian.Uint32(buf[i+8:]))}
		if n := len(idx.ents); n > 0 && (e.ts <= idx.ents[n-1].ts || e.rel < idx.ents[n-1].rel) || e.rel < 0 || base+int64(e.rel) >= nextOffset {
			idx.ents = nil
			return idx, false, nil
		}
		idx.ents = append(idx.ents, e)
	}
	idx.written = len(idx.ents)
	return idx, true, nil
}

// maybeAppend adds an entry in memory when ts is above the last entry's
// timestamp; flush writes it to the file.
func (x *timeIndex) maybeAppend(ts, offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := len(x.ents); n > 0 && ts <= x.ents[n-1].ts {
		return nil
	}
	x.ents = append(x.ents, timeEntry{ts, int32(offset - x.base)})
	return nil
}

// unwritten reports whether some entries are not in the file yet.
func (x *timeIndex) unwritten() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.written < len(x.ents)
}

// flush writes the entries not in the file yet, in one write.
func (x *timeIndex) flush() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	pending := x.ents[x.written:]
	if len(pending) == 0 {
		return nil
	}
	buf := make([]byte, len(pending)*timeEntrySize)
	for i, e := range pending {
		binary.BigEndian.PutUint64(buf[i*timeEntrySize:], uint64(e.ts))
		binary.BigEndian.PutUint32(buf[i*timeEntrySize+8:], uint32(e.rel))
	}
	return flushIndexFile(x.file, &x.fileLen, buf, int64(x.written)*timeEntrySize, &x.written, len(x.ents))
}

// lookup returns the offset to start scanning from for the first record
// with a timestamp >= ts: the offset after the last entry below ts.
func (x *timeIndex) lookup(ts int64) int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(len(x.ents), func(i int) bool { return x.ents[i].ts >= ts })
	if i == 0 {
		return x.base
	}
	return x.base + int64(x.ents[i-1].rel) + 1
}

func (x *timeIndex) lastEntry() (timeEntry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.ents) == 0 {
		return timeEntry{}, false
	}
	return x.ents[len(x.ents)-1], true
}

// truncateTo drops entries for offsets at or beyond offset.
func (x *timeIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	rel := offset - x.base
	i := sort.Search(len(x.ents), func(i int) bool { return int64(x.ents[i].rel) >= rel })
	x.ents = x.ents[:i]
	x.written = min(x.written, i)
	return truncateIndexFile(x.file, &x.fileLen, int64(x.written)*timeEntrySize)
}
