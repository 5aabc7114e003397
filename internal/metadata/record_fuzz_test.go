package metadata

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

// FuzzDecodeRecord checks that DecodeRecord never panics and that whatever
// it accepts re-encodes to bytes that decode to an equal record, and that
// re-encoding is stable.
func FuzzDecodeRecord(f *testing.F) {
	// Seeds: every type at every version, plain and with unknown tags, and
	// a few malformed inputs.
	unknown := []TaggedField{{Tag: 3, Data: []byte{1, 2}}, {Tag: 77, Data: nil}}
	for _, r := range allSamples(f) {
		f.Add(EncodeRecord(r))
		reflect.ValueOf(r).Elem().FieldByName("UnknownTags").Set(reflect.ValueOf(unknown[1:]))
		f.Add(EncodeRecord(r))
	}
	for _, k := range APIKeys() {
		r, _ := NewRecord(k)
		f.Add(EncodeRecord(r))
	}
	for _, s := range [][]byte{
		nil,
		{0},
		{1},
		{2, 2, 0},
		{1, 6, 0, 0},
		{1, 2, 1, 0},
		{1, 0xff, 0xff, 0xff, 0xff, 0x7f},
		{1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 5, 0, 3, 0},
	} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			if r != nil {
				t.Fatalf("DecodeRecord returned both %+v and %v", r, err)
			}
			return
		}
		enc, err := AppendRecord(nil, r)
		if err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", r, err)
		}
		r2, err := DecodeRecord(enc)
		if err != nil {
			t.Fatalf("re-encoded % x does not decode: %v", enc, err)
		}
		// reflect.DeepEqual treats NaN as unequal to itself, so a
		// ClientQuotaRecord holding NaN is compared through its bits.
		if !reflect.DeepEqual(r, r2) && !sameNaNQuota(r, r2) {
			t.Fatalf("round trip changed the record:\n in %+v\nout %+v", r, r2)
		}
		if enc2 := EncodeRecord(r2); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n% x\n% x", enc, enc2)
		}
	})
}

func sameNaNQuota(a, b Record) bool {
	qa, ok1 := a.(*ClientQuotaRecord)
	qb, ok2 := b.(*ClientQuotaRecord)
	if !ok1 || !ok2 || !math.IsNaN(qa.Value) {
		return false
	}
	ca, cb := *qa, *qb
	ca.Value, cb.Value = 0, 0
	return reflect.DeepEqual(ca, cb) && bytes.Equal(EncodeRecord(qa), EncodeRecord(qb))
}
