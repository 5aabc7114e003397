package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/record"
	"weir/internal/vfs"
)

// A snapshot file, %020d-%010d.checkpoint (the offset after the last
// entry it covers, and that entry's epoch), is a sequence of record
// batches, as Kafka's are:
//
//	control batch  SnapshotHeader (control type 3); value:
//	               version int16 = 0 | raftIndex int64 | raftTerm int64 |
//	               endOffset int64 | voter count int32 | node.id int32 ...
//	batches        the metadata image as records, one record each
//	control batch  SnapshotFooter (control type 4); value: version int16 = 0
//
// The same bytes are the Data of the Raft snapshot a leader sends a
// follower that has fallen behind the log.

const (
	controlSnapshotHeader = 3
	controlSnapshotFooter = 4
	recordsPerBatch       = 1000
)

// snapshot is the decoded form of a snapshot file.
type snapshot struct {
	Index     uint64
	Term      uint64
	EndOffset int64 // the log offset after the last entry the snapshot covers
	Voters    []int32
	Records   []metadata.Record
}

func snapshotName(endOffset int64, epoch uint64) string {
	return log.Filename{Type: log.FileMetadataSnapshot, Offset: endOffset, Epoch: int32(epoch)}.String()
}

func controlBatch(typ int16, value []byte) (record.Batch, error) {
	key := (&kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyType(typ)}).AppendTo(nil)
	h := record.NewBatchHeader()
	h.Attributes = record.ControlAttributes
	return record.Build(h, []record.Record{{Key: key, Value: value}}, 0)
}

func (s *snapshot) encode() ([]byte, error) {
	return EncodeSnapshot(SnapshotHeader{s.Index, s.Term, s.EndOffset, s.Voters}, s.Records)
}

// EncodeSnapshot returns the bytes of a snapshot file: header h, then recs
// in batches, then the footer.
func EncodeSnapshot(h SnapshotHeader, recs []metadata.Record) ([]byte, error) {
	hdr := binary.BigEndian.AppendUint16(nil, 0)
	hdr = binary.BigEndian.AppendUint64(hdr, h.RaftIndex)
	hdr = binary.BigEndian.AppendUint64(hdr, h.RaftTerm)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(h.EndOffset))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(h.Voters)))
	for _, v := range h.Voters {
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(v))
	}
	b, err := controlBatch(controlSnapshotHeader, hdr)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), b...)
	for i := 0; i < len(recs); i += recordsPerBatch {
		b, err := EncodeBatch(recs[i:min(i+recordsPerBatch, len(recs))], 0)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	b, err = controlBatch(controlSnapshotFooter, binary.BigEndian.AppendUint16(nil, 0))
	if err != nil {
		return nil, err
	}
	return append(out, b...), nil
}

func decodeSnapshot(data []byte) (*snapshot, error) {
	var s *snapshot
	footer := false
	for len(data) > 0 {
		b, rest, err := record.Next(data)
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		data = rest
		if !b.ValidCRC() {
			return nil, fmt.Errorf("snapshot: %w", record.ErrCorrupt)
		}
		if footer {
			return nil, errors.New("snapshot: data after the footer")
		}
		if b.Attributes().Control() {
			typ, value, err := controlRecord(b)
			if err != nil {
				return nil, err
			}
			switch {
			case typ == controlSnapshotHeader && s == nil:
				if s, err = decodeSnapshotHeader(value); err != nil {
					return nil, err
				}
			case typ == controlSnapshotFooter && s != nil:
				footer = true
			default:
				return nil, fmt.Errorf("snapshot: unexpected control record type %d", typ)
			}
			continue
		}
		if s == nil {
			return nil, errors.New("snapshot: records before the header")
		}
		c, err := DecodeBatch(b)
		if err != nil {
			return nil, err
		}
		s.Records = append(s.Records, c.Records...)
	}
	if s == nil || !footer {
		return nil, errors.New("snapshot: truncated (no header or footer)")
	}
	return s, nil
}

// SnapshotHeader is the value of a snapshot file's SnapshotHeader control
// record, decoded (weir's layout above, not Kafka's SnapshotHeaderRecord),
// for offline tools (weir dump-log).
type SnapshotHeader struct {
	RaftIndex, RaftTerm uint64
	EndOffset           int64
	Voters              []int32
}

// DecodeSnapshotHeader decodes the value of a SnapshotHeader record.
func DecodeSnapshotHeader(v []byte) (SnapshotHeader, error) {
	s, err := decodeSnapshotHeader(v)
	if err != nil {
		return SnapshotHeader{}, err
	}
	return SnapshotHeader{s.Index, s.Term, s.EndOffset, s.Voters}, nil
}

func decodeSnapshotHeader(v []byte) (*snapshot, error) {
	if len(v) < 2+8+8+8+4 || binary.BigEndian.Uint16(v) != 0 {
		return nil, errors.New("snapshot: bad header")
	}
	s := &snapshot{
		Index:     binary.BigEndian.Uint64(v[2:]),
		Term:      binary.BigEndian.Uint64(v[10:]),
		EndOffset: int64(binary.BigEndian.Uint64(v[18:])),
	}
	n := int(binary.BigEndian.Uint32(v[26:]))
	v = v[30:]
	if len(v) != 4*n {
		return nil, errors.New("snapshot: bad voter list")
	}
	for i := 0; i < n; i++ {
		s.Voters = append(s.Voters, int32(binary.BigEndian.Uint32(v[4*i:])))
	}
	return s, nil
}

// controlRecord returns the type and value of a control batch's record.
func controlRecord(b record.Batch) (int16, []byte, error) {
	raw, err := b.Decoded(nil, 1<<20)
	if err != nil {
		return 0, nil, err
	}
	it := record.NewRecords(raw, b.NumRecords())
	r, ok := it.Next()
	if !ok {
		return 0, nil, fmt.Errorf("control batch without a record: %v", it.Err())
	}
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(r.Key); err != nil {
		return 0, nil, fmt.Errorf("control record key: %w", err)
	}
	return int16(key.Type), r.Value, nil
}

// writeSnapshotFile stores a snapshot durably (temp file, fsync, rename,
// directory fsync).
func writeSnapshotFile(fsys vfs.FS, dir string, s *snapshot, data []byte) error {
	return vfs.WriteFileAtomic(fsys, filepath.Join(dir, snapshotName(s.EndOffset, s.Term)), data)
}

// snapshotFile is one checkpoint file found in a directory.
type snapshotFile struct {
	name      string
	endOffset int64
	epoch     int32
}

// listSnapshots returns the checkpoint files in dir, oldest first.
func listSnapshots(fsys vfs.FS, dir string) ([]snapshotFile, error) {
	ents, err := fsys.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []snapshotFile
	for _, e := range ents {
		f, ok := log.ParseFilename(e.Name())
		if !ok || f.Type != log.FileMetadataSnapshot || f.State != log.Live {
			continue
		}
		out = append(out, snapshotFile{name: e.Name(), endOffset: f.Offset, epoch: f.Epoch})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].endOffset < out[j].endOffset })
	return out, nil
}

// loadNewestSnapshot returns the newest readable snapshot in dir (and its
// bytes), or nil when there is none. Unreadable ones (a crash while
// writing cannot leave one, but a disk can) are skipped and reported.
func loadNewestSnapshot(fsys vfs.FS, dir string, warn func(name string, err error)) (*snapshot, []byte, error) {
	files, err := listSnapshots(fsys, dir)
	if err != nil {
		return nil, nil, err
	}
	for i := len(files) - 1; i >= 0; i-- {
		data, err := vfs.ReadFile(fsys, filepath.Join(dir, files[i].name))
		if err != nil {
			return nil, nil, err
		}
		s, err := decodeSnapshot(data)
		if err != nil {
			warn(files[i].name, err)
			continue
		}
		return s, data, nil
	}
	return nil, nil, nil
}

// removeSnapshotsBefore deletes checkpoint files older than endOffset.
func removeSnapshotsBefore(fsys vfs.FS, dir string, endOffset int64) error {
	files, err := listSnapshots(fsys, dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.endOffset < endOffset {
			if err := fsys.Remove(filepath.Join(dir, f.name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}
