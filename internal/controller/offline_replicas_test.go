package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// assignReq asks, for broker, that the given partitions of topic be
// assigned to dir.
func (h *harness) assignReq(broker int32, dir [16]byte, topicID [16]byte, parts ...int32) *kmsg.AssignReplicasToDirsRequest {
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = broker, h.epochs[broker]
	rd := kmsg.NewAssignReplicasToDirsRequestDirectory()
	rd.ID = dir
	rt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
	rt.TopicID = topicID
	for _, p := range parts {
		rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	rd.Topics = append(rd.Topics, rt)
	req.Directories = append(req.Directories, rd)
	return req
}

// codes returns the partitions' error codes of a one-topic answer.
func assignCodes(t *testing.T, resp *kmsg.AssignReplicasToDirsResponse) []int16 {
	t.Helper()
	if len(resp.Directories) != 1 || len(resp.Directories[0].Topics) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	var out []int16
	for _, p := range resp.Directories[0].Topics[0].Partitions {
		out = append(out, p.ErrorCode)
	}
	return out
}

// A replica assigned to the LOST directory leaves the ISR and the
// leadership: a leader moves to another ISR member, a partition whose
// only ISR member it is goes offline (even with unclean elections on), a
// follower just leaves the ISR.
func TestOfflineReplicasMoveAway(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}, []int32{2, 1, 3}))
	h.mustCreate(manualReq("s", []int32{1}))
	h.mustCreate(manualReq("u", []int32{1}))
	h.setTopicConfig("u", "unclean.leader.election.enable", "true")
	img := h.c.Image()
	resp, err := h.c.AssignReplicasToDirs(h.assignReq(1, LostDir, img.Topics.Get("t").ID, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := assignCodes(t, resp); !slices.Equal(got, []int16{0, 0}) {
		t.Fatalf("codes %v", got)
	}
	if p := h.part("t", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) {
		t.Errorf("t-0 led by the offline replica: leader %d ISR %v", p.Leader, p.ISR)
	}
	if p := h.part("t", 1); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) {
		t.Errorf("t-1 with an offline follower: leader %d ISR %v", p.Leader, p.ISR)
	}
	if _, err := h.c.AssignReplicasToDirs(h.assignReq(1, LostDir, img.Topics.Get("s").ID, 0)); err != nil {
		t.Fatal(err)
	}
	if p := h.part("s", 0); p.Leader != -1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Errorf("s-0, its only replica offline: leader %d ISR %v", p.Leader, p.ISR)
	}
	if _, err := h.c.AssignReplicasToDirs(h.assignReq(1, LostDir, img.Topics.Get("u").ID, 0)); err != nil {
		t.Fatal(err)
	}
	if p := h.part("u", 0); p.Leader != -1 {
		t.Errorf("u-0 (unclean elections on) elected its offline replica: leader %d", p.Leader)
	}

	// Reporting again changes nothing.
	batches := len(h.q.batches)
	if _, err := h.c.AssignReplicasToDirs(h.assignReq(1, LostDir, img.Topics.Get("t").ID, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if len(h.q.batches) != batches {
		t.Error("a repeated report committed records")
	}
}

func TestOfflineReplicasErrors(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2}))
	id := h.c.Image().Topics.Get("t").ID

	req := h.assignReq(1, LostDir, id, 0)
	req.BrokerEpoch++
	if _, err := h.c.AssignReplicasToDirs(req); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Errorf("wrong broker epoch: %v", err)
	}
	h.q.inactive = true
	if _, err := h.c.AssignReplicasToDirs(h.assignReq(1, LostDir, id, 0)); err == nil {
		t.Error("an inactive controller took the request")
	}
	h.q.inactive = false

	cases := []struct {
		name string
		req  *kmsg.AssignReplicasToDirsRequest
		want *kerr.Error
	}{
		{"a directory other than LOST", h.assignReq(1, [16]byte{7}, id, 0), kerr.InvalidRequest},
		{"an unknown topic id", h.assignReq(1, LostDir, [16]byte{9}, 0), kerr.UnknownTopicID},
		{"an unknown partition", h.assignReq(1, LostDir, id, 5), kerr.UnknownTopicOrPartition},
		{"a broker that is not a replica", h.assignReq(3, LostDir, id, 0), kerr.NotLeaderForPartition},
	}
	for _, c := range cases {
		resp, err := h.c.AssignReplicasToDirs(c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := assignCodes(t, resp); !slices.Equal(got, []int16{c.want.Code}) {
			t.Errorf("%s: %v, want %v", c.name, kerr.ErrorForCode(got[0]), c.want)
		}
	}
	if p := h.part("t", 0); p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Errorf("refused requests changed t-0: leader %d ISR %v", p.Leader, p.ISR)
	}
}
