package controller

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/quorum"
)

// reassignReq asks for partition of topic to move to replicas (nil:
// cancel).
func reassignReq(topic string, partition int32, replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = partition, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// reassign sends one partition's reassignment and returns its outcome.
func (h *harness) reassign(topic string, partition int32, replicas []int32) error {
	h.t.Helper()
	out, err := h.c.AlterPartitionReassignments(reassignReq(topic, partition, replicas))
	if err != nil {
		h.t.Fatal(err)
	}
	res, last := out.Topics, out.Offset
	if last != h.q.end-1 {
		h.t.Fatalf("last %d, end %d", last, h.q.end)
	}
	if len(res) != 1 || len(res[0].Partitions) != 1 || res[0].Topic != topic || res[0].Partitions[0].Partition != partition {
		h.t.Fatalf("outcomes %+v", res)
	}
	return res[0].Partitions[0].Err
}

func wantAssignment(t *testing.T, h *harness, topic string, id int32, replicas, adding, removing []int32) {
	t.Helper()
	p := h.part(topic, id)
	if !slices.Equal(p.Replicas, replicas) || !slices.Equal(p.Adding, adding) || !slices.Equal(p.Removing, removing) {
		t.Fatalf("%s-%d: replicas %v adding %v removing %v, want %v %v %v", topic, id, p.Replicas, p.Adding, p.Removing, replicas, adding, removing)
	}
}

func (h *harness) listReassignments(topics []kmsg.ListPartitionReassignmentsRequestTopic) []Reassignment {
	h.t.Helper()
	out, err := h.c.ListPartitionReassignments(topics)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func TestReassignmentAddsAReplica(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2}))
	wantCode(t, "add", h.reassign("t", 0, []int32{1, 2, 3}), nil)
	wantAssignment(t, h, "t", 0, []int32{1, 2, 3}, []int32{3}, nil)
	wantLeader(t, h, "t", 0, 1, 1, 2)
	got := h.listReassignments(nil)
	want := Reassignment{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Adding: []int32{3}, Removing: []int32{}}
	if len(got) != 1 || got[0].Topic != want.Topic || !slices.Equal(got[0].Replicas, want.Replicas) ||
		!slices.Equal(got[0].Adding, want.Adding) || len(got[0].Removing) != 0 {
		t.Fatalf("listed %+v, want %+v", got, want)
	}

	// The new replica joining the ISR completes it in the same commit.
	res := h.alterISR("t", 0, 1, 2, 3)
	wantAssignment(t, h, "t", 0, []int32{1, 2, 3}, nil, nil)
	if res.LeaderID != 1 || !slices.Equal(res.ISR, []int32{1, 2, 3}) {
		t.Fatalf("answer %+v", res)
	}
	if got := h.listReassignments(nil); len(got) != 0 {
		t.Fatalf("listed %+v after completion", got)
	}
}

func TestReassignmentMovesTheLeader(t *testing.T) {
	h := newCluster(t, 4, nil)
	h.mustCreate(manualReq("t", []int32{1, 2}))
	wantCode(t, "move", h.reassign("t", 0, []int32{4, 3}), nil)
	// Target first, then the replicas leaving in id order.
	wantAssignment(t, h, "t", 0, []int32{4, 3, 1, 2}, []int32{3, 4}, []int32{1, 2})

	// One of two new replicas in sync: not yet complete.
	h.alterISR("t", 0, 1, 2, 3)
	wantAssignment(t, h, "t", 0, []int32{4, 3, 1, 2}, []int32{3, 4}, []int32{1, 2})

	epoch := h.part("t", 0).LeaderEpoch
	res := h.alterOne(1, "t", h.isrEntry("t", 0, 1, 2, 3, 4))
	wantPartitionCode(t, "completing with the leader removed", res, kerr.NewLeaderElected)
	wantAssignment(t, h, "t", 0, []int32{4, 3}, nil, nil)
	wantLeader(t, h, "t", 0, 4, 3, 4)
	if got := h.part("t", 0).LeaderEpoch; got != epoch+1 {
		t.Errorf("leader epoch %d, was %d", got, epoch)
	}
}

func TestReassignmentThatCompletesAtOnce(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1, 2, 3}))

	// Reordering: the leader stays, the preferred replica changes.
	epoch := h.part("t", 0).LeaderEpoch
	wantCode(t, "reorder", h.reassign("t", 0, []int32{3, 2, 1}), nil)
	wantAssignment(t, h, "t", 0, []int32{3, 2, 1}, nil, nil)
	wantLeader(t, h, "t", 0, 1, 1, 2, 3)
	if h.part("t", 0).LeaderEpoch != epoch {
		t.Error("reordering bumped the leader epoch")
	}

	// Shrinking: replicas leave, the leader epoch is bumped.
	wantCode(t, "shrink", h.reassign("t", 1, []int32{1}), nil)
	wantAssignment(t, h, "t", 1, []int32{1}, nil, nil)
	wantLeader(t, h, "t", 1, 1, 1)
	if got := h.part("t", 1).LeaderEpoch; got != epoch+1 {
		t.Errorf("leader epoch %d after replicas left, want %d", got, epoch+1)
	}

	// Removing the leader: the first target replica in the ISR leads.
	wantCode(t, "remove the leader", h.reassign("t", 2, []int32{3, 2}), nil)
	wantAssignment(t, h, "t", 2, []int32{3, 2}, nil, nil)
	wantLeader(t, h, "t", 2, 3, 2, 3)

	// The same replicas again: nothing to do.
	batches := len(h.q.batches)
	wantCode(t, "unchanged", h.reassign("t", 2, []int32{3, 2}), nil)
	if len(h.q.batches) != batches {
		t.Error("an unchanged assignment committed records")
	}
}

func TestReassignmentWaitsForTheTargetToBeInSync(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}))
	h.alterISR("t", 0, 1, 3)
	// Only removing, but the replica that stays, 2, is out of sync.
	wantCode(t, "shrink", h.reassign("t", 0, []int32{2}), nil)
	wantAssignment(t, h, "t", 0, []int32{2, 1, 3}, nil, []int32{1, 3})
	// Fencing a removing replica is checked too: still not complete.
	h.fence(3)
	wantAssignment(t, h, "t", 0, []int32{2, 1, 3}, nil, []int32{1, 3})
	// 2 joins: complete, and the leader, being removed, hands over.
	wantPartitionCode(t, "completing", h.alterOne(1, "t", h.isrEntry("t", 0, 1, 2)), kerr.NewLeaderElected)
	wantAssignment(t, h, "t", 0, []int32{2}, nil, nil)
	wantLeader(t, h, "t", 0, 2, 2)
}

func TestCancelReassignment(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2}))
	wantCode(t, "nothing to cancel", h.reassign("t", 0, nil), kerr.NoReassignmentInProgress)

	wantCode(t, "move", h.reassign("t", 0, []int32{1, 3}), nil)
	wantAssignment(t, h, "t", 0, []int32{1, 3, 2}, []int32{3}, []int32{2})
	wantCode(t, "cancel", h.reassign("t", 0, nil), nil)
	wantAssignment(t, h, "t", 0, []int32{1, 2}, nil, nil)
	wantLeader(t, h, "t", 0, 1, 1, 2)

	// A cancelled replica that joined the ISR leaves it again.
	h.mustCreate(manualReq("u", []int32{1}))
	wantCode(t, "move", h.reassign("u", 0, []int32{2, 3}), nil)
	h.alterISR("u", 0, 1, 2)
	wantAssignment(t, h, "u", 0, []int32{2, 3, 1}, []int32{2, 3}, []int32{1})
	wantCode(t, "cancel", h.reassign("u", 0, nil), nil)
	wantAssignment(t, h, "u", 0, []int32{1}, nil, nil)
	wantLeader(t, h, "u", 0, 1, 1)
}

func TestCancelReassignmentNeedingAnUncleanElection(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1}))
	wantCode(t, "move", h.reassign("t", 0, []int32{2, 3}), nil)
	h.alterISR("t", 0, 1, 2)
	// The only original replica leaves the ISR: only adding ones remain.
	h.fence(1)
	wantLeader(t, h, "t", 0, 2, 2)
	h.heartbeat(1, h.epochs[1], false)

	wantCode(t, "unclean revert refused", h.reassign("t", 0, nil), kerr.InvalidReplicaAssignment)
	wantAssignment(t, h, "t", 0, []int32{2, 3, 1}, []int32{2, 3}, []int32{1})

	h.setTopicConfig("t", "unclean.leader.election.enable", "true")
	wantCode(t, "unclean revert", h.reassign("t", 0, nil), nil)
	wantAssignment(t, h, "t", 0, []int32{1}, nil, nil)
	wantLeader(t, h, "t", 0, 1, 1)
	if h.part("t", 0).LeaderRecoveryState != recovering {
		t.Error("the original replica leads without recovering")
	}
}

func TestReassignmentErrors(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2}))
	wantCode(t, "empty target", h.reassign("t", 0, []int32{}), kerr.InvalidReplicaAssignment)
	wantCode(t, "repeated broker", h.reassign("t", 0, []int32{1, 1}), kerr.InvalidReplicaAssignment)
	wantCode(t, "unregistered broker", h.reassign("t", 0, []int32{1, 9}), kerr.InvalidReplicaAssignment)
	wantCode(t, "unknown partition", h.reassign("t", 5, []int32{1}), kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", h.reassign("nope", 0, []int32{1}), kerr.UnknownTopicOrPartition)
	wantAssignment(t, h, "t", 0, []int32{1, 2}, nil, nil)

	h.q.inactive = true
	if _, err := h.c.AlterPartitionReassignments(reassignReq("t", 0, []int32{1})); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("inactive controller: %v", err)
	}
	if _, err := h.c.ListPartitionReassignments(nil); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("inactive controller: %v", err)
	}
}

func TestListPartitionReassignments(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("a", []int32{1}, []int32{1}), manualReq("b", []int32{2}))
	wantCode(t, "a-1", h.reassign("a", 1, []int32{2}), nil)
	wantCode(t, "b-0", h.reassign("b", 0, []int32{3}), nil)
	names := func(rs []Reassignment) []string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
		}
		return out
	}
	if got := names(h.listReassignments(nil)); !slices.Equal(got, []string{"a-1", "b-0"}) {
		t.Errorf("all: %v", got)
	}
	req := func(topic string, partitions ...int32) kmsg.ListPartitionReassignmentsRequestTopic {
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic, rt.Partitions = topic, partitions
		return rt
	}
	got := h.listReassignments([]kmsg.ListPartitionReassignmentsRequestTopic{req("b", 0, 4), req("nope", 0), req("a", 0, 1)})
	if !slices.Equal(names(got), []string{"b-0", "a-1"}) {
		t.Errorf("named: %v", names(got))
	}
	if r := got[0]; !slices.Equal(r.Replicas, []int32{3, 2}) || !slices.Equal(r.Adding, []int32{3}) || !slices.Equal(r.Removing, []int32{2}) {
		t.Errorf("b-0: %+v", r)
	}
	if got := h.listReassignments([]kmsg.ListPartitionReassignmentsRequestTopic{}); len(got) != 0 {
		t.Errorf("no topics named: %v", got)
	}
}
