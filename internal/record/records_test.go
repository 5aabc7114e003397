package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func edgeRecords() []Record {
	return []Record{
		{Key: nil, Value: nil},
		{Key: []byte{}, Value: []byte{}},
		{Attributes: 0x7f, TimestampDelta: -1, OffsetDelta: 1, Key: []byte("k"), Value: nil},
		{TimestampDelta: math.MinInt64, OffsetDelta: 2, Key: nil, Value: []byte("v")},
		{TimestampDelta: math.MaxInt64, OffsetDelta: math.MaxInt32, Value: bytes.Repeat([]byte("x"), 300)},
		{TimestampDelta: -86_400_000, OffsetDelta: -5, Headers: []Header{
			{Key: "a", Value: []byte("1")},
			{Key: "", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: strings.Repeat("long", 100), Value: bytes.Repeat([]byte{0}, 200)},
		}},
		{Attributes: -128, Key: bytes.Repeat([]byte("K"), 70000), Value: []byte("big key")},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	recs := append(edgeRecords(), testRecords(20)...)
	raw := encodeRecords(recs)
	sameRecords(t, decodeAll(t, raw, int32(len(recs))), recs)

	// kmsg encodes the same bytes, and reads ours back.
	var viaKmsg []byte
	for i := range recs {
		viaKmsg = append(viaKmsg, kmsgRecord(&recs[i])...)
	}
	if !bytes.Equal(raw, viaKmsg) {
		t.Fatal("AppendRecord and kmsg encode differently")
	}
	for i, kr := range kmsgRecords(t, raw, len(recs)) {
		r := &recs[i]
		if kr.Attributes != r.Attributes || kr.TimestampDelta64 != r.TimestampDelta || kr.OffsetDelta != r.OffsetDelta {
			t.Fatalf("record %d: kmsg reads attrs %d ts %d off %d", i, kr.Attributes, kr.TimestampDelta64, kr.OffsetDelta)
		}
		sameBytes(t, "kmsg key", kr.Key, r.Key)
		sameBytes(t, "kmsg value", kr.Value, r.Value)
		if len(kr.Headers) != len(r.Headers) {
			t.Fatalf("record %d: kmsg reads %d headers", i, len(kr.Headers))
		}
	}
}

func TestRecordSizeMatchesEncoding(t *testing.T) {
	for i, r := range append(edgeRecords(), testRecords(8)...) {
		enc := AppendRecord(nil, &r)
		length, n := binary.Varint(enc)
		if int(length) != len(enc)-n || int(length) != recordBodySize(&r) {
			t.Fatalf("record %d: length prefix %d, body %d, recordBodySize %d", i, length, len(enc)-n, recordBodySize(&r))
		}
	}
	for _, v := range []int64{0, 1, -1, 63, -64, 64, -65, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		if got, want := varintSize(v), len(binary.AppendVarint(nil, v)); got != want {
			t.Errorf("varintSize(%d) = %d, want %d", v, got, want)
		}
	}
}

func TestRecordsIteratorReusesRecord(t *testing.T) {
	recs := testRecords(3)
	it := NewRecords(encodeRecords(recs), 3)
	first, _ := it.Next()
	second, _ := it.Next()
	if first != second {
		t.Fatal("Next returned distinct pointers; the contract says it reuses one")
	}
	if _, ok := it.Next(); !ok {
		t.Fatal("third record missing")
	}
	if _, ok := it.Next(); ok || it.Err() != nil {
		t.Fatalf("after the end: ok %v err %v", ok, it.Err())
	}
	// Next after the end stays false.
	if _, ok := it.Next(); ok {
		t.Fatal("Next true after the end")
	}
}

func TestRecordsIterationErrors(t *testing.T) {
	recs := testRecords(4)
	raw := encodeRecords(recs)
	one := AppendRecord(nil, &recs[0])

	// Varints are zigzag: 1 encodes -1, 2 encodes 1.
	nullHeaderKey := withBody([]byte{0, 0, 0, 2, 'k', 2, 'v', 2, 1, 2, 'x'})
	for _, tc := range []struct {
		name  string
		raw   []byte
		count int32
		ok    int // records decoded before the error
	}{
		{"fewer records than count", raw, 5, 4},
		{"no records at all", nil, 1, 0},
		{"trailing bytes", append(bytes.Clone(raw), 0), 4, 4},
		{"trailing record", raw, 3, 3},
		{"negative count", raw, -1, 0},
		{"truncated last record", raw[:len(raw)-1], 4, 3},
		{"length past the end", append(binary.AppendVarint(nil, 100), one[1:]...), 1, 0},
		{"negative length", append(binary.AppendVarint(nil, -2), one[1:]...), 1, 0},
		{"bad length varint", bytes.Repeat([]byte{0xff}, 11), 1, 0},
		{"empty body", withBody(nil), 1, 0},
		{"body ends in timestamp", withBody([]byte{0, 0x80}), 1, 0},
		{"key past body", withBody([]byte{0, 0, 0, 20, 'k'}), 1, 0},
		{"key length -2", withBody([]byte{0, 0, 0, 3, 0, 0}), 1, 0},
		{"value past body", withBody([]byte{0, 0, 0, 1, 20, 'v'}), 1, 0},
		{"missing header count", withBody([]byte{0, 0, 0, 1, 1}), 1, 0},
		{"negative header count", withBody([]byte{0, 0, 0, 1, 1, 1}), 1, 0},
		{"header count past body", withBody([]byte{0, 0, 0, 1, 1, 100}), 1, 0},
		{"header value past body", withBody([]byte{0, 0, 0, 1, 1, 2, 2, 'h', 30}), 1, 0},
		{"null header key", nullHeaderKey, 1, 0},
		{"bytes after headers", withBody([]byte{0, 0, 0, 1, 1, 0, 0}), 1, 0},
		{"offset delta overflows int32", withBody(append(append([]byte{0, 0}, binary.AppendVarint(nil, 1<<33)...), 1, 1, 0)), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := NewRecords(tc.raw, tc.count)
			n := 0
			for _, ok := it.Next(); ok; _, ok = it.Next() {
				n++
			}
			if n != tc.ok {
				t.Errorf("decoded %d records, want %d", n, tc.ok)
			}
			if err := it.Err(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestRecordsZeroCount(t *testing.T) {
	it := NewRecords(nil, 0)
	if _, ok := it.Next(); ok || it.Err() != nil {
		t.Fatalf("empty: %v", it.Err())
	}
}
