package record

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds test helpers that build and read batches and compressed
// data with implementations other than the package's own: franz-go's kmsg
// for the batch and record encodings, the standard library's gzip, and the
// snappy, lz4 and zstd encoders used directly rather than through Compress.

var castagnoliTest = crc32.MakeTable(crc32.Castagnoli)

// kmsgRecord encodes r with kmsg, filling in the length kmsg leaves to the
// caller.
func kmsgRecord(r *Record) []byte {
	kr := kmsg.Record{
		Attributes:       r.Attributes,
		TimestampDelta64: r.TimestampDelta,
		OffsetDelta:      r.OffsetDelta,
		Key:              r.Key,
		Value:            r.Value,
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	body := kr.AppendTo(nil)[1:] // a zero Length encodes as one byte
	kr.Length = int32(len(body))
	return kr.AppendTo(nil)
}

// kmsgRecords decodes a raw records payload with kmsg.
func kmsgRecords(t testing.TB, raw []byte, count int) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	for i := 0; i < count; i++ {
		var kr kmsg.Record
		if err := kr.ReadFrom(raw); err != nil {
			t.Fatalf("kmsg record %d: %v", i, err)
		}
		n := len(binary.AppendVarint(nil, int64(kr.Length))) + int(kr.Length)
		raw = raw[n:]
		out = append(out, kr)
	}
	if len(raw) != 0 {
		t.Fatalf("%d bytes after %d kmsg records", len(raw), count)
	}
	return out
}

// kmsgBatch encodes a batch with kmsg, computing length and CRC-32C here,
// independently of the package. payload is the (compressed) records section.
func kmsgBatch(kb kmsg.RecordBatch, payload []byte) []byte {
	kb.Magic = 2
	kb.Records = payload
	kb.Length = int32(49 + len(payload))
	kb.CRC = 0
	enc := kb.AppendTo(nil)
	crc := crc32.Checksum(enc[21:], castagnoliTest)
	binary.BigEndian.PutUint32(enc[17:], crc)
	return enc
}

// foreignCompress compresses with an implementation other than Compress:
// standard library gzip, xerial-framed klauspost snappy blocks, a pierrec
// lz4 frame with default options, and a klauspost zstd encoder.
func foreignCompress(t testing.TB, c Codec, src []byte) []byte {
	t.Helper()
	switch c {
	case None:
		return append([]byte(nil), src...)
	case Gzip:
		return stdGzip(t, src, stdgzip.DefaultCompression)
	case Snappy:
		return xerialFrame(src, 8<<10)
	case LZ4:
		return pierrecLZ4(t, src)
	case Zstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(src, nil)
	}
	t.Fatalf("no foreign compressor for %v", c)
	return nil
}

// foreignDecompress decompresses with an implementation other than Decompress.
func foreignDecompress(t testing.TB, c Codec, src []byte) []byte {
	t.Helper()
	var r io.Reader
	switch c {
	case None:
		return src
	case Gzip:
		zr, err := stdgzip.NewReader(bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case Snappy:
		out, err := unXerial(src)
		if err != nil {
			t.Fatal(err)
		}
		return out
	case LZ4:
		r = lz4.NewReader(bytes.NewReader(src))
	case Zstd:
		dec, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer dec.Close()
		out, err := dec.DecodeAll(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	return out
}

func stdGzip(t testing.TB, src []byte, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := stdgzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func pierrecLZ4(t testing.TB, src []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// xerialFrame frames src the way the Java client's xerial SnappyOutputStream
// does: magic, version 1, minimum compatible version 1, then
// [int32 length][raw snappy block] per chunk of at most chunk bytes.
func xerialFrame(src []byte, chunk int) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for len(src) > 0 {
		n := min(chunk, len(src))
		block := snappy.Encode(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		src = src[n:]
	}
	return out
}

// unXerial reads xerial framing independently of the package.
func unXerial(src []byte) ([]byte, error) {
	if len(src) < 16 || string(src[:8]) != "\x82SNAPPY\x00" {
		return nil, fmt.Errorf("no xerial header")
	}
	src = src[16:]
	var out []byte
	for len(src) > 0 {
		n := int(binary.BigEndian.Uint32(src))
		block, err := snappy.Decode(nil, src[4:4+n])
		if err != nil {
			return nil, err
		}
		out = append(out, block...)
		src = src[4+n:]
	}
	return out, nil
}

// testRecords returns n records with varied keys, values and headers.
func testRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta = int64(i * 3)
		switch i % 4 {
		case 0:
			r.Key = []byte(fmt.Sprintf("key-%d", i))
			r.Value = bytes.Repeat([]byte{byte(i)}, i%50)
		case 1:
			r.Key = nil
			r.Value = []byte(fmt.Sprintf("value %d", i))
			r.Headers = []Header{{Key: "h", Value: []byte("v")}, {Key: "", Value: nil}}
		case 2:
			r.Key = []byte{}
			r.Value = nil
		case 3:
			r.Key = []byte("k")
			r.Value = []byte{}
			r.Headers = []Header{{Key: "trace-id", Value: []byte{}}}
		}
	}
	return recs
}

// encodeRecords encodes recs with AppendRecord.
func encodeRecords(recs []Record) []byte {
	var raw []byte
	for i := range recs {
		raw = AppendRecord(raw, &recs[i])
	}
	return raw
}

// decodeAll iterates count records of raw, copying each.
func decodeAll(t testing.TB, raw []byte, count int32) []Record {
	t.Helper()
	var out []Record
	it := NewRecords(raw, count)
	for r, ok := it.Next(); ok; r, ok = it.Next() {
		c := *r
		c.Headers = append([]Header(nil), r.Headers...)
		out = append(out, c)
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterating records: %v", err)
	}
	return out
}

// sameRecords compares records, telling a null key or value from an empty one.
func sameRecords(t testing.TB, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := &got[i], &want[i]
		if g.Attributes != w.Attributes || g.TimestampDelta != w.TimestampDelta || g.OffsetDelta != w.OffsetDelta {
			t.Fatalf("record %d: got attrs %d ts %d off %d, want %d %d %d", i,
				g.Attributes, g.TimestampDelta, g.OffsetDelta, w.Attributes, w.TimestampDelta, w.OffsetDelta)
		}
		sameBytes(t, fmt.Sprintf("record %d key", i), g.Key, w.Key)
		sameBytes(t, fmt.Sprintf("record %d value", i), g.Value, w.Value)
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: got %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key {
				t.Fatalf("record %d header %d: key %q, want %q", i, j, g.Headers[j].Key, w.Headers[j].Key)
			}
			sameBytes(t, fmt.Sprintf("record %d header %d value", i, j), g.Headers[j].Value, w.Headers[j].Value)
		}
	}
}

func sameBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
		t.Fatalf("%s: got %q (nil %v), want %q (nil %v)", what, got, got == nil, want, want == nil)
	}
}

var allCodecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

// withBody prefixes a hand-made record body with its length.
func withBody(body []byte) []byte {
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// zstdStream compresses src with klauspost's streaming encoder, whose frames
// do not declare their content size.
func zstdStream(t testing.TB, src []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("streamed zstd declares its size (%v)", err)
	}
	return buf.Bytes()
}
