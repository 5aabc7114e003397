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

// A segment's transaction index, <base>.txnindex, lists the transactions
// aborted by ABORT markers in that segment, in marker order, in Kafka's
// layout (entries of 34 bytes, no header):
//
//	version int16 (0) | producerId int64 | firstOffset int64 |
//	lastOffset int64 | lastStableOffset int64
//
// firstOffset is the transaction's first offset in this partition (maybe in
// an earlier segment), lastOffset its ABORT marker's offset, and
// lastStableOffset the partition's last stable offset once the transaction
// was complete: the first offset of the earliest other open transaction,
// else lastOffset+1. The file is created with its first entry, written
// under the log's lock, fsynced with the segment, and rebuilt from the log
// by recovery (see rebuildProducerState).

const (
	txnEntrySize    = 34
	txnIndexVersion = 0
)

// AbortedTxn is one aborted transaction of a partition.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64 // the ABORT marker
	LastStableOffset int64
}

// txnIndex is a segment's aborted transactions. Appends and truncations
// happen under the log's lock; reads may run concurrently.
type txnIndex struct {
	fs   vfs.FS
	path string
	// created, if set, is called when the file is created: its directory
	// entry is durable only once the directory is synced.
	created func()
	mu      sync.RWMutex
	file    vfs.File // nil until an entry is written or loaded
	ents    []AbortedTxn
}

// loadTxnIndex opens the transaction index at path if it exists. Entries
// after the first invalid one (a torn write, offsets not increasing) are
// dropped, and the file is cut back to the valid ones.
func loadTxnIndex(fsys vfs.FS, path string) (*txnIndex, error) {
	x := &txnIndex{fs: fsys, path: path}
	if _, err := fsys.Stat(path); os.IsNotExist(err) {
		return x, nil
	}
	f, buf, err := openIndexFile(fsys, path)
	if err != nil {
		return nil, err
	}
	x.file = f
	n := 0
	for ; n+txnEntrySize <= len(buf); n += txnEntrySize {
		e, ok := decodeAbortedTxn(buf[n:])
		if !ok || len(x.ents) > 0 && e.LastOffset <= x.ents[len(x.ents)-1].LastOffset {
			break
		}
		x.ents = append(x.ents, e)
	}
	if n != len(buf) {
		if err := f.Truncate(int64(n)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return x, nil
}

func decodeAbortedTxn(b []byte) (AbortedTxn, bool) {
	if int16(binary.BigEndian.Uint16(b)) != txnIndexVersion {
		return AbortedTxn{}, false
	}
	e := AbortedTxn{
		ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
		FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
		LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
		LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
	}
	return e, e.FirstOffset >= 0 && e.FirstOffset <= e.LastOffset
}

func appendAbortedTxn(dst []byte, e AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, txnIndexVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(e.LastStableOffset))
}

// append adds entries, whose last offsets must follow the existing ones.
func (x *txnIndex) append(ents ...AbortedTxn) error {
	if len(ents) == 0 {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	last := int64(-1)
	if n := len(x.ents); n > 0 {
		last = x.ents[n-1].LastOffset
	}
	var buf []byte
	for _, e := range ents {
		if e.LastOffset <= last {
			return fmt.Errorf("transaction index %s: aborted transaction at %d not after %d", x.path, e.LastOffset, last)
		}
		last = e.LastOffset
		buf = appendAbortedTxn(buf, e)
	}
	if x.file == nil {
		f, err := x.fs.OpenFile(x.path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		x.file = f
		if x.created != nil {
			x.created()
		}
	}
	at := int64(len(x.ents)) * txnEntrySize
	if _, err := x.file.WriteAt(buf, at); err != nil {
		return errors.Join(err, x.file.Truncate(at))
	}
	x.ents = append(x.ents, ents...)
	return nil
}

// truncateTo drops the entries whose marker is at or after offset.
func (x *txnIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := sort.Search(len(x.ents), func(i int) bool { return x.ents[i].LastOffset >= offset })
	if i == len(x.ents) {
		return nil
	}
	x.ents = x.ents[:i]
	return x.file.Truncate(int64(i) * txnEntrySize)
}

// all returns a copy of the entries.
func (x *txnIndex) all() []AbortedTxn {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return append([]AbortedTxn(nil), x.ents...)
}

// collect appends to dst the entries overlapping [from, upTo): marker at or
// after from, first offset before upTo. complete reports that no later
// entry (here or in later segments) can overlap the range: an entry whose
// last stable offset reached upTo was written when every transaction still
// open had started at or after upTo.
func (x *txnIndex) collect(dst []AbortedTxn, from, upTo int64) ([]AbortedTxn, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, e := range x.ents {
		if e.LastOffset >= from && e.FirstOffset < upTo {
			dst = append(dst, e)
		}
		if e.LastStableOffset >= upTo {
			return dst, true
		}
	}
	return dst, false
}

func (x *txnIndex) sync() error {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	f := x.file
	x.mu.RUnlock()
	if f == nil {
		return nil
	}
	return f.Sync()
}

func (x *txnIndex) close() error {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.file == nil {
		return nil
	}
	return x.file.Close()
}
