package metadata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
)

// maxStringLen is the longest string Kafka reads or writes (0x7fff bytes).
const maxStringLen = math.MaxInt16

// tagSet reports whether a tag is defined by a schema at a version. Tags a
// schema does not define at that version are treated as unknown.
type tagSet func(v int16, tag uint32) bool

// writer appends the flexible encoding of record fields to b. The first
// error is kept in err; later writes still happen but are discarded by
// AppendRecord.
type writer struct {
	b    []byte
	v    int16
	name string
	err  error
}

func (w *writer) fail(field, format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("metadata: encoding %s v%d: %s: %w: %s",
			w.name, w.v, field, ErrNotEncodable, fmt.Sprintf(format, args...))
	}
}

// absent checks a field that does not exist at the writer's version: like
// Kafka, refuse to silently drop a non-default value.
func (w *writer) absent(field string, since int16, isDefault bool) {
	if !isDefault {
		w.fail(field, "field exists only in versions %d+ but holds a non-default value", since)
	}
}

func (w *writer) int8(v int8)       { w.b = kbin.AppendInt8(w.b, v) }
func (w *writer) int16(v int16)     { w.b = kbin.AppendInt16(w.b, v) }
func (w *writer) uint16(v uint16)   { w.b = kbin.AppendUint16(w.b, v) }
func (w *writer) int32(v int32)     { w.b = kbin.AppendInt32(w.b, v) }
func (w *writer) int64(v int64)     { w.b = kbin.AppendInt64(w.b, v) }
func (w *writer) float64(v float64) { w.b = kbin.AppendFloat64(w.b, v) }
func (w *writer) bool(v bool)       { w.b = kbin.AppendBool(w.b, v) }
func (w *writer) uuid(v Uuid)       { w.b = kbin.AppendUuid(w.b, v) }
func (w *writer) bytes(v []byte)    { w.b = kbin.AppendCompactBytes(w.b, v) }

func (w *writer) str(field, s string) {
	if len(s) > maxStringLen {
		w.fail(field, "string of %d bytes is longer than %d", len(s), maxStringLen)
	}
	w.b = kbin.AppendCompactString(w.b, s)
}

func (w *writer) nullableStr(field string, s *string) {
	if s != nil && len(*s) > maxStringLen {
		w.fail(field, "string of %d bytes is longer than %d", len(*s), maxStringLen)
	}
	w.b = kbin.AppendCompactNullableString(w.b, s)
}

func (w *writer) arrayLen(n int) { w.b = kbin.AppendCompactArrayLen(w.b, n) }

func (w *writer) int32s(v []int32) {
	w.arrayLen(len(v))
	for _, x := range v {
		w.int32(x)
	}
}

// nullableInt32s writes a nullable array: nil is null.
func (w *writer) nullableInt32s(v []int32) {
	if v == nil {
		w.b = kbin.AppendCompactNullableArrayLen(w.b, 0, true)
		return
	}
	w.int32s(v)
}

func (w *writer) uuids(v []Uuid) {
	w.arrayLen(len(v))
	for _, x := range v {
		w.uuid(x)
	}
}

func (w *writer) nullableUuids(v []Uuid) {
	if v == nil {
		w.b = kbin.AppendCompactNullableArrayLen(w.b, 0, true)
		return
	}
	w.uuids(v)
}

func (w *writer) strs(field string, v []string) {
	w.arrayLen(len(v))
	for _, s := range v {
		w.str(field, s)
	}
}

// tagged encodes one known tagged field's value with enc.
func (w *writer) tagged(tag uint32, enc func(t *writer)) TaggedField {
	t := writer{v: w.v, name: w.name}
	enc(&t)
	if t.err != nil && w.err == nil {
		w.err = t.err
	}
	return TaggedField{Tag: tag, Data: t.b}
}

// tags writes a tagged-field section: known (built with tagged, ascending)
// merged with the unknown fields carried by the struct. defined may be nil
// for structs without tagged fields.
func (w *writer) tags(known, unknown []TaggedField, defined tagSet) {
	prev := int64(-1)
	for _, u := range unknown {
		switch {
		case int64(u.Tag) <= prev:
			w.fail("UnknownTags", "tag %d follows tag %d; tags must be strictly ascending", u.Tag, prev)
		case defined != nil && defined(w.v, u.Tag):
			w.fail("UnknownTags", "tag %d is a known field at this version", u.Tag)
		}
		prev = int64(u.Tag)
	}
	w.b = kbin.AppendUvarint(w.b, uint32(len(known)+len(unknown)))
	for len(known) > 0 || len(unknown) > 0 {
		var f TaggedField
		if len(unknown) == 0 || (len(known) > 0 && known[0].Tag < unknown[0].Tag) {
			f, known = known[0], known[1:]
		} else {
			f, unknown = unknown[0], unknown[1:]
		}
		w.b = kbin.AppendUvarint(w.b, f.Tag)
		w.b = kbin.AppendUvarint(w.b, uint32(len(f.Data)))
		w.b = append(w.b, f.Data...)
	}
}

// reader decodes the flexible encoding. After the first error every read
// returns a zero value and err keeps that first error.
type reader struct {
	b    []byte
	off  int
	v    int16
	name string
	err  error
}

func (r *reader) fail(field string, kind error, format string, args ...any) {
	if r.err != nil {
		return
	}
	where := r.name
	if r.v >= 0 {
		where = fmt.Sprintf("%s v%d", r.name, r.v)
	}
	r.err = fmt.Errorf("metadata: decoding %s: %s: %w: %s", where, field, kind, fmt.Sprintf(format, args...))
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.remaining() {
		r.fail(field, ErrTruncated, "need %d byte(s), %d remain", n, r.remaining())
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

func (r *reader) int8(field string) int8 {
	if s := r.take(field, 1); s != nil {
		return int8(s[0])
	}
	return 0
}

func (r *reader) int16(field string) int16 { return int16(r.uint16(field)) }

func (r *reader) uint16(field string) uint16 {
	if s := r.take(field, 2); s != nil {
		return binary.BigEndian.Uint16(s)
	}
	return 0
}

func (r *reader) int32(field string) int32 {
	if s := r.take(field, 4); s != nil {
		return int32(binary.BigEndian.Uint32(s))
	}
	return 0
}

func (r *reader) int64(field string) int64 {
	if s := r.take(field, 8); s != nil {
		return int64(binary.BigEndian.Uint64(s))
	}
	return 0
}

func (r *reader) float64(field string) float64 {
	if s := r.take(field, 8); s != nil {
		return math.Float64frombits(binary.BigEndian.Uint64(s))
	}
	return 0
}

func (r *reader) bool(field string) bool { return r.int8(field) != 0 }

func (r *reader) uuid(field string) Uuid {
	var u Uuid
	copy(u[:], r.take(field, 16))
	return u
}

func (r *reader) uvarint(field string) uint32 {
	if r.err != nil {
		return 0
	}
	v, n := kbin.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.fail(field, ErrTruncated, "unterminated uvarint")
		return 0
	case n < 0:
		r.fail(field, ErrMalformed, "uvarint does not fit in 32 bits")
		return 0
	}
	r.off += n
	return v
}

// compactLen reads a compact length (uvarint n+1, 0 meaning null).
func (r *reader) compactLen(field string) (n int, null bool) {
	u := r.uvarint(field)
	if r.err != nil {
		return 0, false
	}
	if u == 0 {
		return 0, true
	}
	return int(int64(u) - 1), false
}

func (r *reader) strBytes(field string, nullable bool) (s []byte, null bool) {
	n, null := r.compactLen(field)
	switch {
	case r.err != nil:
		return nil, false
	case null && !nullable:
		r.fail(field, ErrMalformed, "null value for a non-nullable string")
		return nil, false
	case null:
		return nil, true
	case n > maxStringLen:
		r.fail(field, ErrMalformed, "string length %d is longer than %d", n, maxStringLen)
		return nil, false
	}
	return r.take(field, n), false
}

func (r *reader) str(field string) string {
	s, _ := r.strBytes(field, false)
	return string(s)
}

func (r *reader) nullableStr(field string) *string {
	b, null := r.strBytes(field, true)
	if null || r.err != nil {
		return nil
	}
	s := string(b)
	return &s
}

// bytes reads non-nullable compact bytes; empty decodes as nil.
func (r *reader) bytes(field string) []byte {
	n, null := r.compactLen(field)
	if r.err != nil {
		return nil
	}
	if null {
		r.fail(field, ErrMalformed, "null value for non-nullable bytes")
		return nil
	}
	if n == 0 {
		return nil
	}
	return bytes.Clone(r.take(field, n))
}

// arrayLen reads a compact array length and checks that n elements of at
// least minSize bytes each can fit in what remains, so a corrupt length
// cannot trigger a huge allocation.
func (r *reader) arrayLen(field string, minSize int, nullable bool) (n int, null bool) {
	n, null = r.compactLen(field)
	switch {
	case r.err != nil:
		return 0, false
	case null && !nullable:
		r.fail(field, ErrMalformed, "null value for a non-nullable array")
		return 0, false
	case null:
		return 0, true
	case int64(n)*int64(minSize) > int64(r.remaining()):
		r.fail(field, ErrTruncated, "array of %d element(s) needs at least %d byte(s), %d remain",
			n, int64(n)*int64(minSize), r.remaining())
		return 0, false
	}
	return n, false
}

func (r *reader) int32Array(field string, nullable bool) []int32 {
	n, null := r.arrayLen(field, 4, nullable)
	if r.err != nil || null {
		return nil
	}
	if n == 0 {
		if nullable {
			return []int32{}
		}
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32(field)
	}
	return out
}

func (r *reader) int32s(field string) []int32         { return r.int32Array(field, false) }
func (r *reader) nullableInt32s(field string) []int32 { return r.int32Array(field, true) }

func (r *reader) uuidArray(field string, nullable bool) []Uuid {
	n, null := r.arrayLen(field, 16, nullable)
	if r.err != nil || null {
		return nil
	}
	if n == 0 {
		if nullable {
			return []Uuid{}
		}
		return nil
	}
	out := make([]Uuid, n)
	for i := range out {
		out[i] = r.uuid(field)
	}
	return out
}

func (r *reader) uuids(field string) []Uuid         { return r.uuidArray(field, false) }
func (r *reader) nullableUuids(field string) []Uuid { return r.uuidArray(field, true) }

func (r *reader) strs(field string) []string {
	n, _ := r.arrayLen(field, 1, false)
	if r.err != nil || n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str(field)
	}
	return out
}

// tags reads a tagged-field section. Tags that defined reports as known at
// the reader's version are handed to read, which decodes them from t; the
// rest are returned as unknown fields. Tags must be strictly ascending, and
// a known field's value must fill its declared size exactly.
func (r *reader) tags(defined tagSet, read func(tag uint32, t *reader)) []TaggedField {
	count := r.uvarint("tagged field count")
	var unknown []TaggedField
	prev := int64(-1)
	for i := uint32(0); i < count && r.err == nil; i++ {
		tag := r.uvarint("tagged field tag")
		size := r.uvarint("tagged field size")
		if r.err != nil {
			break
		}
		field := fmt.Sprintf("tagged field %d", tag)
		if int64(tag) <= prev {
			r.fail(field, ErrMalformed, "follows tag %d; tags must be strictly ascending", prev)
			break
		}
		prev = int64(tag)
		if int64(size) > int64(r.remaining()) {
			r.fail(field, ErrTruncated, "declares %d byte(s), %d remain", size, r.remaining())
			break
		}
		data := r.take(field, int(size))
		if defined == nil || !defined(r.v, tag) {
			unknown = append(unknown, TaggedField{Tag: tag, Data: bytes.Clone(data)})
			continue
		}
		t := reader{b: data, v: r.v, name: r.name}
		read(tag, &t)
		if t.err != nil {
			r.err = t.err
			break
		}
		if rest := t.remaining(); rest > 0 {
			r.fail(field, ErrMalformed, "%d byte(s) left after the value", rest)
		}
	}
	return unknown
}
