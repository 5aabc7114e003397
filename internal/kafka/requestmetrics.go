package kafka

import (
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// observe counts a reply written at sent (its writing begun at writing) in
// the RequestMetrics: the request's times and the error codes of its
// response.
func (s *Server) observe(rep *Reply, writing, sent time.Time) {
	if !rep.observed {
		return
	}
	o := &rep.obs
	o.Completed = o.Returned
	if rep.doneAt.After(o.Returned) {
		o.Completed = rep.doneAt
	}
	o.Writing, o.Sent, o.Throttle = writing, sent, max(rep.throttle, rep.reqThrottle)
	s.reqs.Observe(o)
	if rep.resp != nil {
		countErrors(rep.resp, func(code int16, n int) { s.reqs.Error(o.Key, code, n) })
	}
}

// countErrors calls count with the error codes of resp as Kafka's
// AbstractResponse.errorCounts has them, NONE (0) included: for Produce
// each partition's, for Fetch the top-level code and each partition's, and
// for the other APIs every error_code field of the response. Runs of one
// code come as one call.
func countErrors(resp kmsg.Response, count func(code int16, n int)) {
	run, n := int16(0), 0
	add := func(code int16) {
		if n > 0 && code != run {
			count(run, n)
			n = 0
		}
		run = code
		n++
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				add(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		add(r.ErrorCode)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				add(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	default:
		walkErrorCodes(reflect.ValueOf(resp), add)
	}
	if n > 0 {
		count(run, n)
	}
}

var int16Type = reflect.TypeFor[int16]()

// walkErrorCodes calls add with every int16 field named ErrorCode in v,
// through structs, pointers and slices.
func walkErrorCodes(v reflect.Value, add func(int16)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkErrorCodes(v.Elem(), add)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct || v.Type().Elem().Kind() == reflect.Pointer {
			for i := range v.Len() {
				walkErrorCodes(v.Index(i), add)
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			switch {
			case f.Name == "ErrorCode" && f.Type == int16Type:
				add(int16(v.Field(i).Int()))
			case f.IsExported():
				walkErrorCodes(v.Field(i), add)
			}
		}
	}
}
