// Package tracetest renders values for the scripted trace tests of weir's
// deterministic machines (the group and transaction coordinators, the
// follower's answer handling, the controller's elections). Those tests are
// cockroachdb/datadriven files under each package's testdata/: every
// directive is an input, and its expected output is what the machine
// answered, wrote and became, rendered here in one stable form so a trace
// reads at a glance. Run a package's tests with -rewrite to regenerate the
// expected outputs after an intended change, and read the diff.
//
// Tests only.
package tracetest

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Format renders v on one line: a struct as {Field: value ...} with its
// zero fields (but Partition), Version, ThrottleMillis and UnknownTags left
// out; a field
// named ErrorCode (or ending in it) as the Kafka error's name; bytes as a
// quoted string when printable, else hex; a 16-byte id as its printable
// prefix when it has one (test ids are names padded with zeros), else hex;
// a nil pointer as nil; maps in key order.
func Format(v any) string {
	var b strings.Builder
	format(&b, reflect.ValueOf(v), "")
	return b.String()
}

// Code renders a Kafka error code: its name, or OK for 0.
func Code(code int16) string {
	if code == 0 {
		return "OK"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return strconv.Itoa(int(code))
}

// ID renders a 16-byte id as Format does.
func ID(id [16]byte) string { return formatID(id[:]) }

var skipped = map[string]bool{"Version": true, "ThrottleMillis": true, "UnknownTags": true}

func format(b *strings.Builder, v reflect.Value, field string) {
	if !v.IsValid() {
		b.WriteString("nil")
		return
	}
	if strings.HasSuffix(field, "ErrorCode") && v.Kind() == reflect.Int16 {
		b.WriteString(Code(int16(v.Int())))
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		format(b, v.Elem(), field)
	case reflect.Struct:
		b.WriteByte('{')
		first := true
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			fv := v.Field(i)
			if skipped[f.Name] || fv.IsZero() && f.Name != "Partition" {
				continue
			}
			if !first {
				b.WriteByte(' ')
			}
			first = false
			b.WriteString(f.Name)
			b.WriteString(": ")
			format(b, fv, f.Name)
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			bs := make([]byte, v.Len())
			for i := range bs {
				bs[i] = byte(v.Index(i).Uint())
			}
			if v.Kind() == reflect.Array && len(bs) == 16 {
				b.WriteString(formatID(bs))
			} else {
				b.WriteString(formatBytes(bs))
			}
			return
		}
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			format(b, v.Index(i), "")
		}
		b.WriteByte(']')
	case reflect.Map:
		keys := v.MapKeys()
		strs := make([]string, len(keys))
		for i, k := range keys {
			strs[i] = Format(valueOf(k))
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(i, j int) bool { return strs[idx[i]] < strs[idx[j]] })
		b.WriteString("map[")
		for n, i := range idx {
			if n > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strs[i])
			b.WriteByte(':')
			format(b, v.MapIndex(keys[i]), "")
		}
		b.WriteByte(']')
	case reflect.String:
		s := v.String()
		if s == "" || strings.ContainsAny(s, " \t\n\"") {
			b.WriteString(strconv.Quote(s))
		} else {
			b.WriteString(s)
		}
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	default:
		if v.CanInterface() {
			fmt.Fprint(b, v.Interface())
		} else {
			fmt.Fprintf(b, "<%s>", v.Kind())
		}
	}
}

// valueOf returns what Format can take for a map key read by reflection.
func valueOf(k reflect.Value) any {
	if k.CanInterface() {
		return k.Interface()
	}
	var b strings.Builder
	format(&b, k, "")
	return b.String()
}

func formatBytes(bs []byte) string {
	for _, c := range string(bs) {
		if c == unicode.ReplacementChar || !unicode.IsPrint(c) {
			return fmt.Sprintf("0x%x", bs)
		}
	}
	return strconv.Quote(string(bs))
}

func formatID(bs []byte) string {
	n := len(bs)
	for n > 0 && bs[n-1] == 0 {
		n--
	}
	if n == 0 {
		return "0"
	}
	for _, c := range bs[:n] {
		if c < '!' || c > '~' {
			return fmt.Sprintf("%x", bs)
		}
	}
	return string(bs[:n])
}
