package quorum

import (
	"context"
	"errors"
	"io"
	"path/filepath"

	"weir/internal/log"
	"weir/internal/vfs"
)

// The leader serves the committed metadata log to observers (brokers that
// are not voters) with Kafka's Fetch and FetchSnapshot on
// __cluster_metadata-0, as KRaft does. Only committed batches (below the
// high watermark) are served; an offset before the log start is answered
// with the newest snapshot's id, which the observer then fetches.

// ErrSnapshotNeeded reports a fetch offset older than the log start: the
// observer must load the snapshot first.
var ErrSnapshotNeeded = errors.New("quorum: offset before the log start; fetch the snapshot")

// Leadership returns the leader's node id (-1 if unknown) and epoch.
func (n *Node) Leadership() (int32, int32) {
	st := n.Status()
	return st.Leader, int32(st.Term)
}

// ReadCommitted returns committed batches from offset for an observer:
// the file range, the high watermark and the log start offset. An offset
// before the log start is ErrSnapshotNeeded, with the newest snapshot's
// end offset and epoch.
func (n *Node) ReadCommitted(offset int64, maxBytes int) (sl log.Slice, hw, logStart int64, snapEnd int64, snapEpoch int32, err error) {
	l := n.rl.log
	hw, logStart = l.HighWatermark(), l.LogStartOffset()
	if offset < logStart {
		files, ferr := listSnapshots(n.cfg.FS, n.rl.dir)
		if ferr != nil || len(files) == 0 {
			return sl, hw, logStart, -1, -1, errors.Join(ErrSnapshotNeeded, ferr)
		}
		newest := files[len(files)-1]
		return sl, hw, logStart, newest.endOffset, newest.epoch, ErrSnapshotNeeded
	}
	sl, err = l.Read(offset, maxBytes, hw, true)
	return sl, hw, logStart, -1, -1, err
}

// WaitCommitted blocks until the high watermark passes offset or ctx ends.
func (n *Node) WaitCommitted(ctx context.Context, offset int64) {
	for {
		n.mu.Lock()
		ch := n.commitCh
		n.mu.Unlock()
		if n.rl.log.HighWatermark() > offset {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// ReadSnapshot reads up to maxBytes of the snapshot file ending at
// endOffset with epoch, from position; it returns the bytes and the
// file's size. io.EOF means there is no such snapshot (any more).
func (n *Node) ReadSnapshot(endOffset int64, epoch int32, position int64, maxBytes int) ([]byte, int64, error) {
	return readSnapshotChunk(n.cfg.FS, n.rl.dir, endOffset, epoch, position, maxBytes)
}

func readSnapshotChunk(fsys vfs.FS, dir string, endOffset int64, epoch int32, position int64, maxBytes int) ([]byte, int64, error) {
	data, err := vfs.ReadFile(fsys, filepath.Join(dir, snapshotName(endOffset, uint64(epoch))))
	if err != nil {
		return nil, 0, io.EOF
	}
	if position < 0 || position > int64(len(data)) {
		return nil, int64(len(data)), errors.New("quorum: snapshot position out of range")
	}
	end := min(int64(len(data)), position+int64(maxBytes))
	return data[position:end], int64(len(data)), nil
}
