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
// batches in Kafka's layout (its RecordsSnapshotWriter's): offsets count
// from 0 across the file, every batch has the snapshot's epoch as its
// partition leader epoch, no producer (id -1, epoch -1, sequence -1) and
// the write time as its timestamps.
//
//	control batch  one control record, key version 0 | type 3 (int16s),
//	               value SnapshotHeaderRecord v0 (flexible):
//	               version int16 = 0 | lastContainedLogTimestamp int64 |
//	               tagged fields
//	batches        the metadata image, one metadata record per record
//	control batch  one control record, key version 0 | type 4,
//	               value SnapshotFooterRecord v0: version int16 = 0 |
//	               tagged fields (none)
//
// weir adds to the header one tagged field of its own, tag 10000 (in the
// range weir reserves for its extensions, as for its metadata record
// types; Kafka's readers keep unknown tagged fields and ignore them):
// raftIndex int64 | endOffset int64, the Raft index of the last entry the
// snapshot covers and the log offset after it, which a Raft snapshot must
// carry and Kafka's snapshot id (end offset and epoch) only partly does.
// The field is left out when both are 0 (the bootstrap file). The voters
// are not stored: weir's quorum is static, controller.quorum.voters (as
// Kafka's kraft.version 0, whose snapshots carry no VotersRecord).
//
// Snapshots of weir before this layout (a header value of version int16
// | raftIndex int64 | raftTerm int64 | endOffset int64 | voter count
// int32 | node ids, a footer value of version int16 alone) are still
// read.
//
// The same bytes are the Data of the Raft snapshot a leader sends a
// follower that has fallen behind the log.

const (
	controlSnapshotHeader = 3
	controlSnapshotFooter = 4
	recordsPerBatch       = 1000
	// weirHeaderTag is the tag of weir's field in SnapshotHeaderRecord.
	weirHeaderTag = 10000
)

// snapshot is the decoded form of a snapshot file.
type snapshot struct {
	Index     uint64
	Term      uint64
	EndOffset int64 // the log offset after the last entry the snapshot covers
	// LastTimestamp is the append time of the last batch covered
	// (SnapshotHeaderRecord's lastContainedLogTimestamp).
	LastTimestamp int64
	Records       []metadata.Record
}

func snapshotName(endOffset int64, epoch uint64) string {
	return log.Filename{Type: log.FileMetadataSnapshot, Offset: endOffset, Epoch: int32(epoch)}.String()
}

func (s *snapshot) encode(now int64) ([]byte, error) {
	return EncodeSnapshot(SnapshotHeader{s.Index, s.Term, s.EndOffset, s.LastTimestamp}, s.Records, now)
}

// SnapshotHeader is what a snapshot file's header batch says of it.
type SnapshotHeader struct {
	RaftIndex uint64 // weir's tagged field
	RaftTerm  uint64 // the batches' partition leader epoch
	EndOffset int64  // weir's tagged field
	// LastContainedLogTimestamp is SnapshotHeaderRecord's field.
	LastContainedLogTimestamp int64
}

// controlBatch is a control batch with header h holding one control
// record of type typ.
func controlBatch(h record.BatchHeader, typ int16, value []byte) (record.Batch, error) {
	key := (&kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyType(typ)}).AppendTo(nil)
	h.Attributes = record.ControlAttributes
	return record.Build(h, []record.Record{{Key: key, Value: value}}, 0)
}

// EncodeSnapshot returns the bytes of a snapshot file: header h, then recs
// in batches, then the footer; now (ms) is the batches' timestamp.
func EncodeSnapshot(h SnapshotHeader, recs []metadata.Record, now int64) ([]byte, error) {
	bh := record.NewBatchHeader()
	bh.LeaderEpoch, bh.BaseTimestamp, bh.MaxTimestamp = int32(h.RaftTerm), now, now
	hdr := binary.BigEndian.AppendUint16(nil, 0)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(h.LastContainedLogTimestamp))
	if h.RaftIndex == 0 && h.EndOffset == 0 {
		hdr = binary.AppendUvarint(hdr, 0)
	} else {
		hdr = binary.AppendUvarint(hdr, 1)
		hdr = binary.AppendUvarint(hdr, weirHeaderTag)
		hdr = binary.AppendUvarint(hdr, 16)
		hdr = binary.BigEndian.AppendUint64(hdr, h.RaftIndex)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(h.EndOffset))
	}
	b, err := controlBatch(bh, controlSnapshotHeader, hdr)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), b...)
	bh.BaseOffset++
	for i := 0; i < len(recs); i += recordsPerBatch {
		rs, err := metadataRecords(recs[i:min(i+recordsPerBatch, len(recs))])
		if err != nil {
			return nil, err
		}
		b, err := record.Build(bh, rs, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		bh.BaseOffset += int64(len(rs))
	}
	b, err = controlBatch(bh, controlSnapshotFooter, []byte{0, 0, 0})
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
				h, err := decodeHeader(value, b.LeaderEpoch())
				if err != nil {
					return nil, err
				}
				s = &snapshot{Index: h.RaftIndex, Term: h.RaftTerm, EndOffset: h.EndOffset, LastTimestamp: h.LastContainedLogTimestamp}
			case typ == controlSnapshotFooter && s != nil:
				if err := decodeFooter(value); err != nil {
					return nil, err
				}
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

// DecodeSnapshotHeader decodes the value of a SnapshotHeader control
// record, in Kafka's layout or weir's earlier one, for offline tools
// (weir dump-log); epoch is its batch's partition leader epoch.
func DecodeSnapshotHeader(v []byte, epoch int32) (SnapshotHeader, error) {
	return decodeHeader(v, epoch)
}

func decodeHeader(v []byte, epoch int32) (SnapshotHeader, error) {
	if h, ok := decodeKafkaHeader(v); ok {
		h.RaftTerm = uint64(max(epoch, 0))
		return h, nil
	}
	// weir's earlier layout.
	if len(v) < 2+8+8+8+4 || binary.BigEndian.Uint16(v) != 0 || len(v) != 30+4*int(binary.BigEndian.Uint32(v[26:])) {
		return SnapshotHeader{}, errors.New("snapshot: bad header")
	}
	return SnapshotHeader{RaftIndex: binary.BigEndian.Uint64(v[2:]), RaftTerm: binary.BigEndian.Uint64(v[10:]),
		EndOffset: int64(binary.BigEndian.Uint64(v[18:]))}, nil
}

// decodeKafkaHeader decodes a SnapshotHeaderRecord v0 that holds exactly
// its fields and tagged fields, weir's among them or not.
func decodeKafkaHeader(v []byte) (SnapshotHeader, bool) {
	var h SnapshotHeader
	if len(v) < 2+8 || binary.BigEndian.Uint16(v) != 0 {
		return h, false
	}
	h.LastContainedLogTimestamp = int64(binary.BigEndian.Uint64(v[2:]))
	v = v[10:]
	fields, ok := taggedFields(v)
	if !ok {
		return h, false
	}
	if f, found := fields[weirHeaderTag]; found {
		if len(f) != 16 {
			return h, false
		}
		h.RaftIndex, h.EndOffset = binary.BigEndian.Uint64(f), int64(binary.BigEndian.Uint64(f[8:]))
	}
	return h, true
}

// taggedFields splits the tagged fields that make up all of v by tag.
func taggedFields(v []byte) (map[uint64][]byte, bool) {
	next := func() (uint64, bool) {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			return 0, false
		}
		v = v[n:]
		return x, true
	}
	count, ok := next()
	if !ok || count > uint64(len(v)) {
		return nil, false
	}
	fields := map[uint64][]byte{}
	for i := uint64(0); i < count; i++ {
		tag, ok1 := next()
		size, ok2 := next()
		if !ok1 || !ok2 || size > uint64(len(v)) {
			return nil, false
		}
		fields[tag], v = v[:size], v[size:]
	}
	return fields, len(v) == 0
}

// decodeFooter checks a SnapshotFooterRecord v0 (or weir's earlier
// footer, its version alone).
func decodeFooter(v []byte) error {
	if len(v) < 2 || binary.BigEndian.Uint16(v) != 0 {
		return errors.New("snapshot: bad footer")
	}
	if _, ok := taggedFields(v[2:]); !ok && len(v) != 2 {
		return errors.New("snapshot: bad footer")
	}
	return nil
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
		if err == nil && s.Index == 0 {
			err = errors.New("snapshot: no Raft index (not written by weir)")
		}
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
