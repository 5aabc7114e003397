package reqfuzz

import (
	"bytes"
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// tame leaves out of a generated request the shapes of findings not fixed
// yet, so that the fuzzer looks past them.
//
// ElectLeaders and AlterPartitionReassignments answer every partition
// named with an error message that names its topic (as Kafka does): many
// partitions of a topic with a long name make an answer, and the strings
// behind it, hundreds of times the request's size.
func tame(req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.ElectLeadersRequest:
		for i := range r.Topics {
			r.Topics[i].Partitions = r.Topics[i].Partitions[:min(len(r.Topics[i].Partitions), 1000)]
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		for i := range r.Topics {
			r.Topics[i].Partitions = r.Topics[i].Partitions[:min(len(r.Topics[i].Partitions), 1000)]
		}
	}
}

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
