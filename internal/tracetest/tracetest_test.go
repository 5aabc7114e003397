package tracetest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFormat(t *testing.T) {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version, r.ThrottleMillis = 7, 100
	r.ErrorCode, r.MemberID = kerr.MemberIDRequired.Code, "c-1"
	r.Members = []kmsg.JoinGroupResponseMember{{MemberID: "a", ProtocolMetadata: []byte("topics t")}, {MemberID: "b", ProtocolMetadata: []byte{0, 1}}}
	want := `{ErrorCode: MEMBER_ID_REQUIRED Generation: -1 MemberID: c-1 Members: [{MemberID: a ProtocolMetadata: "topics t"} {MemberID: b ProtocolMetadata: 0x0001}]}`
	if got := Format(r); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var id [16]byte
	copy(id[:], "topic")
	type s struct {
		Partition int32
		Offset    int64
		Name      *string
		ID        [16]byte
		Raw       [16]byte
		M         map[string]int
	}
	raw := [16]byte{1, 2}
	name := "a b"
	want = `{Partition: 0 Name: "a b" ID: topic Raw: 01020000000000000000000000000000 M: map[x:1 y:2]}`
	if got := Format(s{Name: &name, ID: id, Raw: raw, M: map[string]int{"y": 2, "x": 1}}); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if Code(0) != "OK" || Code(kerr.NotCoordinator.Code) != "NOT_COORDINATOR" {
		t.Fatalf("codes: %s %s", Code(0), Code(kerr.NotCoordinator.Code))
	}
}
