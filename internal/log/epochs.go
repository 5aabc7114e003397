package log

import (
	"path/filepath"

	"weir/internal/vfs"
)

// epochCache is the leader epoch lineage of a log: for each leader epoch, the
// first offset written in it. It answers OffsetForLeaderEpoch and lets a
// follower find where its log diverged from the leader's. It is persisted
// to leader-epoch-checkpoint on every change (changes are rare).
type epochCache struct {
	fs      vfs.FS
	path    string
	entries []EpochEntry
	// stale is set while the checkpoint holds entries dropFromEnd dropped.
	stale bool
	// beforeWrite, when set, runs before the checkpoint is written (a
	// new log makes its directory: see Log.makeDirLocked).
	beforeWrite func() error
}

// loadEpochCache reads dir's leader-epoch-checkpoint; exists is false
// when the caller's listing of dir has none, and nothing is read.
func loadEpochCache(fsys vfs.FS, dir string, exists bool) (*epochCache, error) {
	c := &epochCache{fs: fsys, path: filepath.Join(dir, epochCheckpointFile)}
	if !exists {
		return c, nil
	}
	ents, err := readEpochCheckpoint(fsys, c.path)
	if err != nil {
		return nil, err
	}
	c.entries = ents
	return c, nil
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{Epoch: -1, StartOffset: -1}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign notes that epoch starts at offset; epochs only go up.
func (c *epochCache) assign(epoch int32, offset int64) error {
	if epoch < 0 {
		return nil
	}
	if last, ok := c.latest(); ok && epoch <= last.Epoch {
		if c.stale {
			return c.flush() // before the batch lands: see dropFromEnd
		}
		return nil
	}
	c.entries = append(c.entries, EpochEntry{epoch, offset})
	if err := c.flush(); err != nil {
		// Keep memory and the checkpoint in step, so a retry writes it.
		c.entries = c.entries[:len(c.entries)-1]
		return err
	}
	return nil
}

// assignAtEnd is assign of an epoch starting at the log end (offset), in
// memory only: until a batch of the epoch is appended nothing in the log
// depends on the entry, and assign writes the checkpoint before that
// batch lands (as for dropFromEnd). A crash before then loses an entry
// that no record needs. This spares a new leader's log, of a new
// partition or after every election, a checkpoint's two fsyncs until it
// is written to.
func (c *epochCache) assignAtEnd(epoch int32, offset int64) {
	if epoch < 0 {
		return
	}
	if last, ok := c.latest(); ok && epoch <= last.Epoch {
		return
	}
	c.entries = append(c.entries, EpochEntry{epoch, offset})
	c.stale = true
}

func (c *epochCache) flush() error {
	if c.beforeWrite != nil {
		if err := c.beforeWrite(); err != nil {
			return err
		}
	}
	if err := writeEpochCheckpoint(c.fs, c.path, c.entries); err != nil {
		return err
	}
	c.stale = false
	return nil
}

// endOffsetFor answers OffsetForLeaderEpoch: the largest epoch <= requested
// and the offset where the epoch after it starts (logEnd for the latest).
// (-1, -1) means the requested epoch is unknown: before the first or after
// the last.
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	last, ok := c.latest()
	if !ok || epoch < 0 {
		return -1, -1
	}
	if epoch == last.Epoch {
		return epoch, logEnd
	}
	higher := -1
	for i, e := range c.entries {
		if e.Epoch > epoch {
			higher = i
			break
		}
	}
	if higher < 0 {
		return -1, -1
	}
	if higher == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// truncateFromEnd drops epochs that start at or after offset.
func (c *epochCache) truncateFromEnd(offset int64) error {
	if !c.dropFromEnd(offset) {
		return nil
	}
	return c.flush()
}

// dropFromEnd drops epochs that start at or after offset in memory only,
// reporting whether it dropped any. Opening a log does this: the
// checkpoint keeps the dropped entries until the next change writes the
// whole lineage, which happens before any record is appended (a leader
// assigns its epoch first, a follower the epochs of what it fetches), and
// until then a crash only has the next open drop them again (assign
// writes a stale checkpoint even when the epoch is known). This spares
// an empty leader's log two fsyncs at every start (Kafka flushes this
// truncation asynchronously too).
func (c *epochCache) dropFromEnd(offset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= offset {
		n--
	}
	if n == len(c.entries) {
		return false
	}
	c.entries = c.entries[:n]
	c.stale = true
	return true
}

// truncateFromStart forgets epochs wholly below offset, moving the start of
// the epoch holding offset up to it.
func (c *epochCache) truncateFromStart(offset int64) error {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= offset {
		i++
	}
	if len(c.entries) == 0 || (i == 0 && c.entries[0].StartOffset >= offset) {
		return nil
	}
	c.entries = append([]EpochEntry(nil), c.entries[i:]...)
	if c.entries[0].StartOffset < offset {
		c.entries[0].StartOffset = offset
	}
	return c.flush()
}

func (c *epochCache) snapshot() []EpochEntry { return append([]EpochEntry(nil), c.entries...) }
