package controller

import (
	"errors"
	"testing"

	"weir/internal/quorum"
)

// imbalanced returns a cluster of two brokers with ten partitions of
// topic "r" preferring broker 1, all in sync, of which the first
// notLeading are led by broker 2.
func imbalanced(t *testing.T, pct string, notLeading int32) *harness {
	h := newCluster(t, 2, map[string]string{"leader.imbalance.per.broker.percentage": pct})
	var assignment [][]int32
	for range 10 {
		assignment = append(assignment, []int32{1, 2})
	}
	h.mustCreate(manualReq("r", assignment...))
	h.fence(1)
	h.heartbeat(1, h.epochs[1], false)
	for id := range int32(10) {
		h.alterISR("r", id, 2, 1)
	}
	var back []int32
	for id := notLeading; id < 10; id++ {
		back = append(back, id)
	}
	for _, err := range h.elect(electReq(preferredElection, "r", back...)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) rebalance() int {
	h.t.Helper()
	n, err := h.c.RebalanceLeaders()
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

func TestRebalanceLeadersAboveTheThreshold(t *testing.T) {
	// 2 of 10 (20%) not led by their preferred replica.
	h := imbalanced(t, "20", 2)
	if n := h.rebalance(); n != 0 {
		t.Fatalf("at the threshold: %d elections", n)
	}
	h = imbalanced(t, "10", 2)
	if n := h.rebalance(); n != 2 {
		t.Fatalf("above the threshold: %d elections, want 2", n)
	}
	for id := range int32(10) {
		if p := h.part("r", id); p.Leader != 1 {
			t.Errorf("r-%d led by %d", id, p.Leader)
		}
	}
	if n := h.rebalance(); n != 0 {
		t.Fatalf("balanced: %d elections", n)
	}
}

func TestRebalanceLeadersOnlyWherePreferredIsInSync(t *testing.T) {
	h := imbalanced(t, "10", 3)
	// r-0: the preferred replica out of sync; r-1: being reassigned.
	h.alterISR("r", 0, 2)
	h.addBroker(3, false)
	wantCode(t, "reassign", h.reassign("r", 1, []int32{1, 2, 3}), nil)
	if n := h.rebalance(); n != 1 {
		t.Fatalf("%d elections, want 1 (r-2)", n)
	}
	for id, want := range []int32{2, 2, 1} {
		if p := h.part("r", int32(id)); p.Leader != want {
			t.Errorf("r-%d led by %d, want %d", id, p.Leader, want)
		}
	}
	h.q.inactive = true
	if _, err := h.c.RebalanceLeaders(); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("inactive controller: %v", err)
	}
}
