package reqfuzz

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// wouldTame reports whether a frame, read as its header says, is a request
// that tame would change.
func wouldTame(frame []byte) bool {
	if len(frame) < 14 {
		return false
	}
	key, version := int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))
	req := kmsg.RequestForKey(key)
	if req == nil || version < 0 || version > req.MaxVersion() {
		return false
	}
	req.SetVersion(version)
	body := frame[12:]
	if n := int16(binary.BigEndian.Uint16(body)); n > 0 {
		body = body[min(len(body), 2+int(n)):]
	} else {
		body = body[2:]
	}
	if req.IsFlexible() {
		var err error
		if body, err = skipTags(body); err != nil {
			return false
		}
	}
	if req.ReadFrom(body) != nil {
		return false
	}
	before := req.AppendTo(nil)
	tame(req)
	return !bytes.Equal(before, req.AppendTo(nil))
}

// tame leaves out of a generated request the shapes of issue 19's known
// findings while their fixes are not merged yet.
func tame(req kmsg.Request) {
	// Finding 1: a huge partition count is placed before it is checked.
	// Finding 2: __cluster_metadata can be created (also by Metadata's
	// auto-creation). Finding 3: clients can produce to internal topics.
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		for i := range r.Topics {
			r.Topics[i].NumPartitions = min(r.Topics[i].NumPartitions, 100)
			if r.Topics[i].Topic == "__cluster_metadata" {
				r.Topics[i].Topic = "fuzz-9"
			}
		}
	case *kmsg.CreatePartitionsRequest:
		for i := range r.Topics {
			r.Topics[i].Count = min(r.Topics[i].Count, 100)
		}
	case *kmsg.MetadataRequest:
		for i := range r.Topics {
			if t := r.Topics[i].Topic; t != nil && *t == "__cluster_metadata" {
				r.Topics[i].Topic = kmsg.StringPtr("fuzz-9")
			}
		}
	case *kmsg.ElectLeadersRequest:
		// Finding 1 again (partitions per request): each partition's error
		// message names its topic, so many partitions of a topic with a
		// long name make an answer of hundreds of MB (as in Kafka).
		for i := range r.Topics {
			r.Topics[i].Partitions = r.Topics[i].Partitions[:min(len(r.Topics[i].Partitions), 1000)]
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		for i := range r.Topics {
			r.Topics[i].Partitions = r.Topics[i].Partitions[:min(len(r.Topics[i].Partitions), 1000)]
		}
	case *kmsg.ProduceRequest:
		for i := range r.Topics {
			if slices.Contains(InternalTopics, r.Topics[i].Topic) {
				r.Topics[i].Topic = "fuzz-9"
			}
		}
	}
	if !req.IsFlexible() {
		// Finding 4: answers repeat names in error messages longer than a
		// non-flexible STRING carries.
		shortenStrings(reflect.ValueOf(req).Elem(), 16000)
	}
}

func shortenStrings(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.String:
		if v.Len() > n {
			v.SetString(v.String()[:n])
		}
	case reflect.Pointer:
		if !v.IsNil() {
			shortenStrings(v.Elem(), n)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				shortenStrings(v.Index(i), n)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				shortenStrings(v.Field(i), n)
			}
		}
	}
}
