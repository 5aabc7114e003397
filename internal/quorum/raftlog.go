package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/record"
	"weir/internal/vfs"
)

// DirName is the metadata log's partition directory in metadata.log.dir.
const DirName = metadata.LogTopic + "-0"

const controlLeaderChange = 2

// raftLog persists Raft's log and state and mirrors them in a
// raft.MemoryStorage, which is what Raft reads. Only the node's goroutine
// uses it.
type raftLog struct {
	fs  vfs.FS
	dir string
	log *log.Log
	mem *raft.MemoryStorage
	lg  *slog.Logger

	// offsets[i] is the log offset of the batch holding entry first+i.
	first   uint64
	offsets []int64
	hard    *pb.HardState // as last written to quorum-state
	snap    *snapshot     // the newest snapshot (synthesized before the first)
}

// openRaftLog loads the newest snapshot, the hard state and the entries
// after the snapshot. voters is controller.quorum.voters, used for the
// synthesized initial snapshot.
func openRaftLog(fsys vfs.FS, metadataDir string, voters []int32, segmentBytes int64, lg *slog.Logger) (*raftLog, error) {
	dir := filepath.Join(metadataDir, DirName)
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.SegmentMs = math.MaxInt64
	cfg.Delete, cfg.RetentionMs = false, -1
	l, err := log.Open(dir, log.TopicPartition{Topic: metadata.LogTopic, Partition: 0}, cfg, log.Options{FS: fsys, Logger: lg})
	if err != nil {
		return nil, err
	}
	rl := &raftLog{fs: fsys, dir: dir, log: l, mem: raft.NewMemoryStorage(), lg: lg}
	start := time.Now()
	snap, data, err := loadNewestSnapshot(fsys, dir, func(name string, err error) {
		lg.Error("skipping unreadable metadata snapshot", "file", name, "err", err)
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	if snap != nil {
		lg.Info("read metadata snapshot", "end_offset", snap.EndOffset, "records", len(snap.Records), "bytes", len(data), "took", time.Since(start))
	} else {
		snap = &snapshot{Index: 1, Term: 1, EndOffset: 0}
		if data, err = snap.encode(0); err != nil {
			return nil, err
		}
	}
	rl.snap = snap
	if err := rl.mem.ApplySnapshot(raftSnapshot(snap, data, voters)); err != nil {
		return nil, err
	}
	if rl.hard, err = readHardState(fsys, dir); err != nil {
		return nil, err
	}
	if err := rl.load(); err != nil {
		l.Close()
		return nil, err
	}
	hs := proto.Clone(rl.hard).(*pb.HardState)
	last, _ := rl.mem.LastIndex()
	hs.Commit = proto.Uint64(min(max(hs.GetCommit(), snap.Index), last))
	if err := rl.mem.SetHardState(hs); err != nil {
		return nil, err
	}
	return rl, nil
}

// raftSnapshot is s as Raft's snapshot, with voters (node ids) as its
// configuration.
func raftSnapshot(s *snapshot, data []byte, voters []int32) *pb.Snapshot {
	cs := &pb.ConfState{}
	for _, v := range voters {
		cs.Voters = append(cs.Voters, raftID(v))
	}
	return &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{ConfState: cs, Index: proto.Uint64(s.Index), Term: proto.Uint64(s.Term)}}
}

// load reads the entries after the snapshot from the log into memory.
func (rl *raftLog) load() error {
	rl.first = rl.snap.Index + 1
	rl.offsets = nil
	if rl.log.LogStartOffset() > rl.snap.EndOffset {
		return fmt.Errorf("metadata log starts at %d, after the snapshot's end %d", rl.log.LogStartOffset(), rl.snap.EndOffset)
	}
	end := rl.log.LogEndOffset()
	var ents []*pb.Entry
	for offset := rl.snap.EndOffset; offset < end; {
		data, err := rl.log.ReadBytes(offset, 4<<20, end)
		if err != nil {
			return err
		}
		n := 0
		for len(data) > 0 {
			b, rest, err := record.Next(data)
			if errors.Is(err, record.ErrShort) && n > 0 {
				break
			}
			if err != nil {
				return fmt.Errorf("metadata log at %d: %w", offset, err)
			}
			e, err := batchEntry(b, rl.first+uint64(len(ents)))
			if err != nil {
				return err
			}
			ents = append(ents, e)
			rl.offsets = append(rl.offsets, b.BaseOffset())
			offset, data = b.NextOffset(), rest
			n++
		}
	}
	return rl.mem.Append(ents)
}

// batchEntry turns a stored batch back into its Raft entry.
func batchEntry(b record.Batch, index uint64) (*pb.Entry, error) {
	e := &pb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(uint64(b.LeaderEpoch())), Type: pb.EntryType_EntryNormal.Enum()}
	if b.Attributes().Control() {
		typ, _, err := controlRecord(b)
		if err != nil {
			return nil, err
		}
		if typ != controlLeaderChange {
			return nil, fmt.Errorf("metadata log: unexpected control record type %d at offset %d", typ, b.BaseOffset())
		}
		return e, nil
	}
	e.Data = append([]byte(nil), b...)
	return e, nil
}

// entryBatch is the batch storing an entry; leader is the node.id of the
// current leader, recorded in the LeaderChange of an empty entry.
func entryBatch(e *pb.Entry, leader int32) (record.Batch, error) {
	if e.GetType() != pb.EntryType_EntryNormal {
		return nil, fmt.Errorf("metadata log: Raft entry type %v is not used by weir", e.GetType())
	}
	if len(e.GetData()) == 0 {
		msg := kmsg.NewLeaderChangeMessage()
		msg.LeaderID = leader
		return controlBatch(record.NewBatchHeader(), controlLeaderChange, msg.AppendTo(nil))
	}
	b, rest, err := record.Next(e.GetData())
	if err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("metadata log: entry %d does not hold one record batch", e.GetIndex())
	}
	return append(record.Batch(nil), b...), nil
}

// lastIndex is the index of the last entry.
func (rl *raftLog) lastIndex() uint64 { return rl.first + uint64(len(rl.offsets)) - 1 }

// endOffset is the log offset after entry index (which must be at or
// after the snapshot).
func (rl *raftLog) endOffset(index uint64) int64 {
	if index < rl.first {
		return rl.snap.EndOffset
	}
	if i := index + 1 - rl.first; i < uint64(len(rl.offsets)) {
		return rl.offsets[i]
	}
	return rl.log.LogEndOffset()
}

// append persists entries (truncating a conflicting tail first) and makes
// them durable.
func (rl *raftLog) append(ents []*pb.Entry, leader int32) error {
	if len(ents) == 0 {
		return nil
	}
	if idx := ents[0].GetIndex(); idx <= rl.lastIndex() {
		if idx < rl.first {
			return fmt.Errorf("metadata log: append at %d before the first entry %d", idx, rl.first)
		}
		cut := idx - rl.first
		if err := rl.log.TruncateTo(rl.offsets[cut]); err != nil {
			return err
		}
		rl.offsets = rl.offsets[:cut]
	}
	for _, e := range ents {
		if e.GetIndex() != rl.lastIndex()+1 {
			return fmt.Errorf("metadata log: entry %d does not follow %d", e.GetIndex(), rl.lastIndex())
		}
		b, err := entryBatch(e, leader)
		if err != nil {
			return err
		}
		info, err := rl.log.AppendAsLeader(b, int32(e.GetTerm()))
		if err != nil {
			return err
		}
		rl.offsets = append(rl.offsets, info.BaseOffset)
	}
	if err := rl.log.Flush(rl.log.LogEndOffset()); err != nil {
		return err
	}
	return rl.mem.Append(ents)
}

// setHardState records the hard state; the file is written (durably) when
// the term or vote changed, as Raft requires before the next message.
func (rl *raftLog) setHardState(hs *pb.HardState) error {
	if hs.GetTerm() != rl.hard.GetTerm() || hs.GetVote() != rl.hard.GetVote() {
		if err := writeHardState(rl.fs, rl.dir, hs); err != nil {
			return err
		}
		rl.hard = proto.Clone(hs).(*pb.HardState)
	}
	return rl.mem.SetHardState(hs)
}

// setCommitted exposes the log up to the end of entry index to readers
// (observers fetching the metadata log read up to the high watermark).
func (rl *raftLog) setCommitted(index uint64) {
	rl.log.SetHighWatermark(rl.endOffset(index))
}

// applySnapshot installs a snapshot received from the leader: the log is
// replaced by the snapshot and restarts at its end offset.
func (rl *raftLog) applySnapshot(ps *pb.Snapshot) (*snapshot, error) {
	s, err := decodeSnapshot(ps.GetData())
	if err != nil {
		return nil, err
	}
	if err := writeSnapshotFile(rl.fs, rl.dir, s, ps.GetData()); err != nil {
		return nil, err
	}
	if err := rl.mem.ApplySnapshot(ps); err != nil {
		return nil, err
	}
	if err := rl.log.TruncateFullyAndStartAt(s.EndOffset); err != nil {
		return nil, err
	}
	rl.snap, rl.first, rl.offsets = s, s.Index+1, nil
	return s, removeSnapshotsBefore(rl.fs, rl.dir, s.EndOffset)
}

// compact writes a snapshot of the state as of entry index (already
// applied), its batches stamped now (ms), and deletes the log and
// snapshots before it.
func (rl *raftLog) compact(s *snapshot, cs *pb.ConfState, now int64) error {
	data, err := s.encode(now)
	if err != nil {
		return err
	}
	if err := writeSnapshotFile(rl.fs, rl.dir, s, data); err != nil {
		return err
	}
	if _, err := rl.mem.CreateSnapshot(s.Index, cs, data); err != nil {
		return err
	}
	if err := rl.mem.Compact(s.Index); err != nil {
		return err
	}
	drop := s.Index + 1 - rl.first
	rl.offsets = append([]int64(nil), rl.offsets[drop:]...)
	rl.first, rl.snap = s.Index+1, s
	if _, err := rl.log.SetLogStartOffset(s.EndOffset); err != nil {
		return err
	}
	return removeSnapshotsBefore(rl.fs, rl.dir, s.EndOffset)
}

func (rl *raftLog) close() error {
	return errors.Join(writeHardState(rl.fs, rl.dir, rl.memHardState()), rl.log.Close())
}

func (rl *raftLog) memHardState() *pb.HardState {
	hs, _, _ := rl.mem.InitialState()
	return hs
}
