package quorum

import (
	"errors"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestFrameBodyRoundTrip(t *testing.T) {
	msgs := []*pb.Message{
		{Type: pb.MessageType_MsgHeartbeat.Enum(), To: proto.Uint64(2), From: proto.Uint64(1), Term: proto.Uint64(3)},
		{Type: pb.MessageType_MsgApp.Enum(), To: proto.Uint64(2), From: proto.Uint64(1), Entries: []*pb.Entry{{Term: proto.Uint64(3), Index: proto.Uint64(9), Data: []byte("x")}}},
	}
	body, err := EncodeFrameBody(nil, "cluster-a", msgs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeFrameBody(body, "cluster-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !proto.Equal(got[0], msgs[0]) || !proto.Equal(got[1], msgs[1]) {
		t.Fatalf("round trip: %v", got)
	}
}

// A voter formatted for another cluster is refused before any of its
// messages reach Raft.
func TestFrameFromAnotherClusterIsRefused(t *testing.T) {
	body, _ := EncodeFrameBody(nil, "cluster-b", []*pb.Message{{Type: pb.MessageType_MsgVote.Enum()}})
	if _, err := DecodeFrameBody(body, "cluster-a"); !errors.Is(err, ErrInconsistentClusterID) {
		t.Fatalf("got %v, want ErrInconsistentClusterID", err)
	}
	for _, b := range [][]byte{nil, {0}, {0, 5, 'a'}} {
		if _, err := DecodeFrameBody(b, ""); err == nil {
			t.Fatalf("truncated frame %v accepted", b)
		}
	}
}

func FuzzDecodeFrameBody(f *testing.F) {
	body, _ := EncodeFrameBody(nil, "c", []*pb.Message{{Type: pb.MessageType_MsgApp.Enum(), Entries: []*pb.Entry{{Data: []byte("d")}}}})
	f.Add(body)
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := DecodeFrameBody(b, "c")
		if err != nil {
			return
		}
		again, err := EncodeFrameBody(nil, "c", msgs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeFrameBody(again, "c"); err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
	})
}
