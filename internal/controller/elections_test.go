package controller

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/quorum"
)

// electReq asks for elections of typ on partitions of topic (no topic:
// every partition).
func electReq(typ int8, topic string, partitions ...int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(2)
	req.ElectionType = typ
	if topic != "" {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = topic, partitions
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// elect runs ElectLeaders and returns the outcomes by "topic-partition".
func (h *harness) elect(req *kmsg.ElectLeadersRequest) map[string]error {
	h.t.Helper()
	res, err := h.c.ElectLeaders(req)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]error{}
	for _, tr := range res.Topics {
		for _, pr := range tr.Partitions {
			out[fmt.Sprintf("%s-%d", tr.Topic, pr.Partition)] = pr.Err
		}
	}
	return out
}

func wantLeader(t *testing.T, h *harness, topic string, id, leader int32, isr ...int32) {
	t.Helper()
	p := h.part(topic, id)
	if p.Leader != leader || !slices.Equal(p.ISR, isr) {
		t.Fatalf("%s-%d: leader %d ISR %v, want %d %v", topic, id, p.Leader, p.ISR, leader, isr)
	}
}

func TestFencingElectsTheFirstLiveISRMemberInReplicaOrder(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}))
	h.alterISR("t", 0, 1, 3, 2)
	epoch := h.part("t", 0).LeaderEpoch
	h.fence(1)
	wantLeader(t, h, "t", 0, 2, 3, 2)
	if got := h.part("t", 0).LeaderEpoch; got != epoch+1 {
		t.Errorf("leader epoch %d after a new leader, was %d", got, epoch)
	}
	// A follower leaving changes only the ISR.
	h.fence(3)
	wantLeader(t, h, "t", 0, 2, 2)
	if got := h.part("t", 0).LeaderEpoch; got != epoch+1 {
		t.Errorf("leader epoch %d after a follower left, want %d", got, epoch+1)
	}
}

func TestLastISRMemberGoesOfflineUnlessUncleanIsAllowed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		props  map[string]string
		config func(h *harness)
		want   bool
	}{
		{"disabled", nil, func(*harness) {}, false},
		{"topic config", nil, func(h *harness) { h.setTopicConfig("t", "unclean.leader.election.enable", "true") }, true},
		{"topic config overrides the broker's", map[string]string{"unclean.leader.election.enable": "true"},
			func(h *harness) { h.setTopicConfig("t", "unclean.leader.election.enable", "false") }, false},
		{"dynamic cluster default", nil, func(h *harness) {
			h.alter(false, configChange(metadata.ResourceBroker, "", "unclean.leader.election.enable", "true"))
		}, true},
		{"static config", map[string]string{"unclean.leader.election.enable": "true"}, func(*harness) {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCluster(t, 3, tc.props)
			h.mustCreate(manualReq("t", []int32{1, 2, 3}))
			h.alterISR("t", 0, 1)
			tc.config(h)
			before := h.part("t", 0)
			h.fence(1)
			p := h.part("t", 0)
			if !tc.want {
				wantLeader(t, h, "t", 0, -1, 1)
				if p.LeaderRecoveryState != recovered {
					t.Errorf("offline partition recovery state %d", p.LeaderRecoveryState)
				}
				return
			}
			wantLeader(t, h, "t", 0, 2, 2)
			if p.LeaderRecoveryState != recovering || p.LeaderEpoch != before.LeaderEpoch+1 {
				t.Errorf("unclean leader: recovery %d epoch %d (was %d)", p.LeaderRecoveryState, p.LeaderEpoch, before.LeaderEpoch)
			}
		})
	}
}

func TestControlledShutdownWithUncleanElection(t *testing.T) {
	h := newCluster(t, 2, map[string]string{"unclean.leader.election.enable": "true"})
	h.mustCreate(manualReq("t", []int32{1, 2}))
	h.alterISR("t", 0, 1)
	if resp := h.heartbeat(1, h.epochs[1], true); !resp.ShouldShutdown {
		t.Fatalf("broker 1 kept: %+v", resp)
	}
	wantLeader(t, h, "t", 0, 2, 2)
}

func TestUnfencingElectsOfflinePartitions(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("in", []int32{1, 2}), manualReq("out", []int32{1, 2}), manualReq("u", []int32{1, 2}))
	h.setTopicConfig("u", "unclean.leader.election.enable", "true")
	for _, topic := range []string{"in", "out", "u"} {
		h.alterISR(topic, 0, 1)
	}
	h.fence(2)
	h.fence(1)
	for _, topic := range []string{"in", "out", "u"} {
		wantLeader(t, h, topic, 0, -1, 1)
	}
	// Broker 1 returns: it leads the partitions whose ISR it is in.
	h.heartbeat(1, h.epochs[1], false)
	wantLeader(t, h, "in", 0, 1, 1)
	h.fence(1)
	// Broker 2 returns: only where unclean elections are allowed does it
	// lead, alone and recovering.
	h.heartbeat(2, h.epochs[2], false)
	wantLeader(t, h, "out", 0, -1, 1)
	wantLeader(t, h, "u", 0, 2, 2)
	if h.part("u", 0).LeaderRecoveryState != recovering {
		t.Error("unclean leader not recovering")
	}
}

func TestEnablingUncleanElectionAtRunTime(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("a", []int32{1, 2}), manualReq("b", []int32{1, 3}))
	h.alterISR("a", 0, 1)
	h.alterISR("b", 0, 1)
	h.fence(1)
	wantLeader(t, h, "a", 0, -1, 1)

	// Validating only elects nothing.
	h.alter(true, configChange(metadata.ResourceTopic, "a", "unclean.leader.election.enable", "true"))
	wantLeader(t, h, "a", 0, -1, 1)

	batches := len(h.q.batches)
	h.setTopicConfig("a", "unclean.leader.election.enable", "true")
	if len(h.q.batches) != batches+1 {
		t.Errorf("%d commits, want the config and the election in one", len(h.q.batches)-batches)
	}
	wantLeader(t, h, "a", 0, 2, 2)
	wantLeader(t, h, "b", 0, -1, 1)

	// Enabled cluster-wide, incrementally.
	req := incChange(metadata.ResourceBroker, "", incOp("unclean.leader.election.enable", kmsg.IncrementalAlterConfigOpSet, "true"))
	for _, err := range h.alter(false, req) {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantLeader(t, h, "b", 0, 3, 3)
}

func TestElectPreferredLeaders(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2}, []int32{1, 3}, []int32{2, 3}))
	h.fence(1)
	h.heartbeat(1, h.epochs[1], false)
	wantLeader(t, h, "t", 0, 2, 2)
	h.alterISR("t", 0, 2, 1)

	out := h.elect(electReq(preferredElection, "t", 0, 1, 2, 7))
	wantCode(t, "preferred replica in the ISR", out["t-0"], nil)
	wantCode(t, "preferred replica out of the ISR", out["t-1"], kerr.PreferredLeaderNotAvailable)
	wantCode(t, "preferred replica leads", out["t-2"], kerr.ElectionNotNeeded)
	wantCode(t, "unknown partition", out["t-7"], kerr.UnknownTopicOrPartition)
	wantLeader(t, h, "t", 0, 1, 2, 1)
	wantCode(t, "unknown topic", h.elect(electReq(preferredElection, "nope", 0))["nope-0"], kerr.UnknownTopicOrPartition)

	// Fenced preferred replicas are not available.
	h.alterISR("t", 1, 3, 1)
	h.fence(1)
	wantCode(t, "fenced preferred replica", h.elect(electReq(preferredElection, "t", 1))["t-1"], kerr.PreferredLeaderNotAvailable)

	// All partitions: those needing no election are left out.
	h.heartbeat(1, h.epochs[1], false)
	h.alterISR("t", 0, 2, 1)
	h.alterISR("t", 1, 3, 1)
	elected, err := h.c.ElectLeaders(electReq(preferredElection, ""))
	if err != nil {
		t.Fatal(err)
	}
	res := elected.Topics
	if len(res) != 1 || res[0].Topic != "t" || len(res[0].Partitions) != 2 ||
		res[0].Partitions[0] != (PartitionResult{0, nil}) || res[0].Partitions[1] != (PartitionResult{1, nil}) {
		t.Fatalf("electing every partition: %+v", res)
	}
	wantLeader(t, h, "t", 0, 1, 2, 1)
	wantLeader(t, h, "t", 1, 1, 3, 1)
}

func TestElectUncleanLeaders(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2}, []int32{1, 3}, []int32{2, 3}))
	h.alterISR("t", 0, 1)
	h.alterISR("t", 1, 1)
	h.fence(1)
	h.fence(3)
	wantLeader(t, h, "t", 0, -1, 1)
	wantLeader(t, h, "t", 1, -1, 1)

	// Unclean elections on request need no config.
	all, _ := h.c.ElectionCounts()
	out := h.elect(electReq(uncleanElection, "t", 0, 1, 2))
	wantCode(t, "a live replica", out["t-0"], nil)
	wantCode(t, "no live replica", out["t-1"], kerr.EligibleLeadersNotAvailable)
	wantCode(t, "has a leader", out["t-2"], kerr.ElectionNotNeeded)
	wantLeader(t, h, "t", 0, 2, 2)
	if h.part("t", 0).LeaderRecoveryState != recovering {
		t.Error("unclean leader not recovering")
	}
	// The one election counts, as unclean.
	if a, u := h.c.ElectionCounts(); a != all+1 || u != 1 {
		t.Errorf("ElectionCounts = %d, %d; want %d, 1", a, u, all+1)
	}

	if _, err := h.c.ElectLeaders(electReq(7, "t", 0)); errorCode(err) != kerr.InvalidRequest {
		t.Errorf("unknown election type: %v", err)
	}
	h.q.inactive = true
	if _, err := h.c.ElectLeaders(electReq(preferredElection, "t", 0)); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("inactive controller: %v", err)
	}
}
