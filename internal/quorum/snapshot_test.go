package quorum

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"testing"

	"weir/internal/metadata"
	"weir/internal/record"
)

// kafkaBatch writes a RecordBatch v2 field by field as Kafka's
// DefaultRecordBatch lays it out, with no producer and all records at
// timestamp ts: each record is a key (nil: null) and a value.
func kafkaBatch(baseOffset int64, epoch int32, control bool, ts int64, recs [][2][]byte) []byte {
	var body []byte // from attributes to the end: what the CRC covers
	attrs := uint16(0)
	if control {
		attrs |= 0x20
	}
	body = binary.BigEndian.AppendUint16(body, attrs)
	body = binary.BigEndian.AppendUint32(body, uint32(len(recs)-1)) // lastOffsetDelta
	body = binary.BigEndian.AppendUint64(body, uint64(ts))          // baseTimestamp
	body = binary.BigEndian.AppendUint64(body, uint64(ts))          // maxTimestamp
	body = binary.BigEndian.AppendUint64(body, ^uint64(0))          // producerId -1
	body = binary.BigEndian.AppendUint16(body, 0xffff)              // producerEpoch -1
	body = binary.BigEndian.AppendUint32(body, 0xffffffff)          // baseSequence -1
	body = binary.BigEndian.AppendUint32(body, uint32(len(recs)))
	for i, kv := range recs {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestampDelta
		r = binary.AppendVarint(r, int64(i)) // offsetDelta
		if kv[0] == nil {
			r = binary.AppendVarint(r, -1)
		} else {
			r = binary.AppendVarint(r, int64(len(kv[0])))
			r = append(r, kv[0]...)
		}
		r = binary.AppendVarint(r, int64(len(kv[1])))
		r = append(r, kv[1]...)
		r = binary.AppendVarint(r, 0) // headers
		body = binary.AppendVarint(body, int64(len(r)))
		body = append(body, r...)
	}
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(baseOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(4+1+4+len(body))) // batchLength: from the epoch on
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	b = append(b, 2) // magic
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	return append(b, body...)
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A snapshot file is Kafka's: RecordsSnapshotWriter's batches (offsets
// from 0 across the file, the snapshot's epoch as partition leader epoch,
// no producer), a SnapshotHeaderRecord v0 first and a SnapshotFooterRecord
// v0 last, each alone in a control batch under a control record key
// (version int16 0, type int16 3 and 4).
func TestSnapshotGoldenBytes(t *testing.T) {
	const ts, now = 1700000000123, 1700000000456
	recs := []metadata.Record{&metadata.TopicRecord{Name: "a"}, &metadata.TopicRecord{Name: "b"}, &metadata.TopicRecord{Name: "c"}}
	got, err := EncodeSnapshot(SnapshotHeader{RaftIndex: 9, RaftTerm: 3, EndOffset: 17, LastContainedLogTimestamp: ts}, recs, now)
	if err != nil {
		t.Fatal(err)
	}
	// SnapshotHeaderRecord v0: version, lastContainedLogTimestamp, then
	// its tagged fields: one, weir's (tag 10000, 16 bytes: Raft index 9,
	// end offset 17).
	header := unhex(t, "0000"+"0000018bcfe5687b"+"01"+"904e"+"10"+"0000000000000009"+"0000000000000011")
	footer := unhex(t, "0000"+"00") // version 0, no tagged fields
	var want []byte
	want = append(want, kafkaBatch(0, 3, true, now, [][2][]byte{{unhex(t, "00000003"), header}})...)
	var data [][2][]byte
	for _, r := range recs {
		v, err := metadata.AppendRecord(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, [2][]byte{nil, v})
	}
	want = append(want, kafkaBatch(1, 3, false, now, data)...)
	want = append(want, kafkaBatch(4, 3, true, now, [][2][]byte{{unhex(t, "00000004"), footer}})...)
	if !bytes.Equal(got, want) {
		t.Fatalf("snapshot bytes\n got %x\nwant %x", got, want)
	}

	s, err := decodeSnapshot(got)
	if err != nil {
		t.Fatal(err)
	}
	if s.Index != 9 || s.Term != 3 || s.EndOffset != 17 || s.LastTimestamp != ts || len(s.Records) != 3 {
		t.Fatalf("decoded %+v", s)
	}

	// The bootstrap file has no Raft position: no tagged field, as
	// Kafka's bootstrap.checkpoint.
	boot, err := (&snapshot{Records: recs[:1]}).encode(now)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := record.Next(boot)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := controlRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "0000"+"0000000000000000"+"00"); !bytes.Equal(v, want) || b.LeaderEpoch() != 0 {
		t.Fatalf("bootstrap header %x epoch %d, want %x epoch 0", v, b.LeaderEpoch(), want)
	}
}

// Kafka's readers skip tagged fields they do not know, and so does weir.
func TestSnapshotHeaderOtherTaggedFields(t *testing.T) {
	v := unhex(t, "0000"+"0000000000000005"+"02"+"00"+"01"+"ff"+"904e"+"10"+"0000000000000009"+"0000000000000011")
	h, err := DecodeSnapshotHeader(v, 4)
	if err != nil {
		t.Fatal(err)
	}
	if h != (SnapshotHeader{RaftIndex: 9, RaftTerm: 4, EndOffset: 17, LastContainedLogTimestamp: 5}) {
		t.Fatalf("decoded %+v", h)
	}
	for _, bad := range []string{"0001" + "0000000000000005" + "00", "0000" + "0000000000000005", "0000" + "0000000000000005" + "01" + "00" + "05" + "00"} {
		if _, err := DecodeSnapshotHeader(unhex(t, bad), 4); err == nil {
			t.Errorf("header %s decoded", bad)
		}
	}
}

// Snapshots written by weir before it used Kafka's layout are still read.
func TestSnapshotEarlierLayout(t *testing.T) {
	recs := []metadata.Record{&metadata.TopicRecord{Name: "a"}}
	control := func(typ int16, value []byte) []byte {
		b, err := controlBatch(record.NewBatchHeader(), typ, value)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// version 0, Raft index 7, term 2, end offset 12, voters [1 2 3].
	old := control(controlSnapshotHeader, unhex(t, "0000"+"0000000000000007"+"0000000000000002"+"000000000000000c"+"00000003"+"00000001"+"00000002"+"00000003"))
	b, err := EncodeBatch(recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	old = append(old, b...)
	old = append(old, control(controlSnapshotFooter, unhex(t, "0000"))...)
	s, err := decodeSnapshot(old)
	if err != nil {
		t.Fatal(err)
	}
	if s.Index != 7 || s.Term != 2 || s.EndOffset != 12 || len(s.Records) != 1 {
		t.Fatalf("decoded %+v", s)
	}
}
