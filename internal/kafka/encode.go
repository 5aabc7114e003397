package kafka

// Every response is encoded by appendResponse, which first shortens the
// strings its version cannot carry. A STRING of a non-flexible version has
// an int16 length: at most 32767 bytes. Written longer, the length wraps
// negative, a Java client reads null and then junk, and the rest of the
// answer is out of step. Names echoed from the request fit (they arrived
// in the same encoding), but messages built around them, and configuration
// values set through a flexible version, may not. Flexible versions carry
// any length; there only error messages are bounded, to the same 32767
// bytes (they are weir's prose, and need no more).

import (
	"math"
	"reflect"
	"sync"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxString is the longest STRING a non-flexible version carries, and the
// longest error message weir sends in any version.
const maxString = math.MaxInt16

// appendResponse appends resp's encoding to dst, its strings first
// shortened to what its version carries (see the file comment). cut
// reports whether any was. An encoding no longer than maxString holds no
// string that long, so only longer ones are looked through.
func appendResponse(dst []byte, resp kmsg.Response) (out []byte, cut bool) {
	start := len(dst)
	out = resp.AppendTo(dst)
	if len(out)-start <= maxString {
		return out, false
	}
	if cut = fitStrings(reflect.ValueOf(resp).Elem(), planFor(reflect.TypeOf(resp).Elem(), resp.IsFlexible())); cut {
		out = resp.AppendTo(out[:start])
	}
	return out, cut
}

// logCut notes, at debug level, that a response's strings were shortened
// to fit.
func (s *Server) logCut(resp kmsg.Response) {
	s.lg.Debug("shortened strings of a response to what its version carries",
		"api", kmsg.NameForKey(resp.Key()), "version", resp.GetVersion(), "max_bytes", maxString)
}

// fitStrings shortens the strings of struct v that plan names, in place;
// a nullable string gets a new pointer, so a string shared with other
// state is left alone.
func fitStrings(v reflect.Value, plan []stringField) bool {
	cut := false
	for _, f := range plan {
		fv := v.Field(f.index)
		switch f.kind {
		case fieldString:
			if s, ok := shorten(fv.String()); ok {
				fv.SetString(s)
				cut = true
			}
		case fieldNullableString:
			if fv.IsNil() {
				continue
			}
			if s, ok := shorten(fv.Elem().String()); ok {
				fv.Set(reflect.ValueOf(&s))
				cut = true
			}
		case fieldStrings:
			for i := range fv.Len() {
				if s, ok := shorten(fv.Index(i).String()); ok {
					fv.Index(i).SetString(s)
					cut = true
				}
			}
		case fieldStruct:
			cut = fitStrings(fv, f.sub) || cut
		case fieldStructs:
			for i := range fv.Len() {
				cut = fitStrings(fv.Index(i), f.sub) || cut
			}
		}
	}
	return cut
}

// shorten cuts s to at most maxString bytes, at a UTF-8 character
// boundary; ok reports whether it had to.
func shorten(s string) (string, bool) {
	if len(s) <= maxString {
		return s, false
	}
	n := maxString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

type fieldKind int

const (
	fieldString         fieldKind = iota // string
	fieldNullableString                  // *string
	fieldStrings                         // []string
	fieldStruct                          // a struct holding strings
	fieldStructs                         // a slice of those
)

// stringField is a field of a response struct that is, or holds, strings
// to bound; sub is the plan of the struct(s) it holds.
type stringField struct {
	index int
	kind  fieldKind
	sub   []stringField
}

type planKey struct {
	t        reflect.Type
	flexible bool
}

// plans caches planFor.
var plans sync.Map // planKey -> []stringField

// planFor lists the fields of struct type t that are, or hold, strings to
// bound: every string when not flexible, else the error messages.
func planFor(t reflect.Type, flexible bool) []stringField {
	key := planKey{t, flexible}
	if p, ok := plans.Load(key); ok {
		return p.([]stringField)
	}
	var p []stringField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		bound := !flexible || f.Name == "ErrorMessage"
		sf := stringField{index: i}
		switch ft := f.Type; {
		case ft.Kind() == reflect.String && bound:
			sf.kind = fieldString
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.String && bound:
			sf.kind = fieldNullableString
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String && bound:
			sf.kind = fieldStrings
		case ft.Kind() == reflect.Struct:
			sf.kind, sf.sub = fieldStruct, planFor(ft, flexible)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			sf.kind, sf.sub = fieldStructs, planFor(ft.Elem(), flexible)
		default:
			continue
		}
		if sf.kind >= fieldStruct && len(sf.sub) == 0 {
			continue
		}
		p = append(p, sf)
	}
	plans.Store(key, p)
	return p
}
