package reqfuzz

import (
	"fmt"
	"reflect"
	"strings"
)

// describe prints a request compactly: long strings and byte slices by
// their length and start, long arrays by their length and first element,
// unset tagged fields left out, nil pointers as null.
func describe(v any) string {
	var b strings.Builder
	describeValue(&b, reflect.ValueOf(v))
	return b.String()
}

func describeValue(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		describeValue(b, v.Elem())
	case reflect.String:
		s := v.String()
		if len(s) > 40 {
			fmt.Fprintf(b, "%q...(%d bytes)", s[:20], len(s))
			return
		}
		fmt.Fprintf(b, "%q", s)
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			fmt.Fprintf(b, "%d bytes %x", v.Len(), v.Bytes()[:min(v.Len(), 16)])
			return
		}
		b.WriteString("[")
		for i := range min(v.Len(), 3) {
			if i > 0 {
				b.WriteString(" ")
			}
			describeValue(b, v.Index(i))
		}
		if v.Len() > 3 {
			fmt.Fprintf(b, " ...(%d elements)", v.Len())
		}
		b.WriteString("]")
	case reflect.Struct:
		if v.Type() == tagsType {
			return
		}
		b.WriteString("{")
		first := true
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Type == tagsType {
				continue
			}
			if !first {
				b.WriteString(" ")
			}
			first = false
			b.WriteString(f.Name + ":")
			describeValue(b, v.Field(i))
		}
		b.WriteString("}")
	case reflect.Array:
		fmt.Fprintf(b, "%x", v.Interface())
	default:
		fmt.Fprintf(b, "%v", v.Interface())
	}
}
