package kafka

import (
	"math"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// longString returns the length of the first string in a decoded request
// longer than a Kafka STRING may be (32,767 bytes), or 0. Kafka's readers
// refuse such a string in every version, although the compact strings of
// flexible versions could carry it: one accepted here would be stored (a
// group or transactional id, say) and later written into answers whose
// versions cannot carry it. Only a frame longer than the limit can hold
// one, so smaller frames are not walked.
func longString(frame []byte, body kmsg.Request) int {
	if len(frame) <= math.MaxInt16 || !body.IsFlexible() {
		return 0
	}
	return longIn(reflect.ValueOf(body).Elem())
}

func longIn(v reflect.Value) int {
	switch v.Kind() {
	case reflect.String:
		if v.Len() > math.MaxInt16 {
			return v.Len()
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return longIn(v.Elem())
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0
		}
		for i := range v.Len() {
			if n := longIn(v.Index(i)); n > 0 {
				return n
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if n := longIn(v.Field(i)); n > 0 {
					return n
				}
			}
		}
	}
	return 0
}
