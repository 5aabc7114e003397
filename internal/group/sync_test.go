package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestSyncFollowersWaitForLeader(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	b, tb := h.joinNew("g", "b", joinOpts{})
	c, tc := h.joinNew("g", "c", joinOpts{})
	h.tick()
	gen := h.joinResp(ta).Generation
	_, _ = tb, tc

	sb := h.sync("g", b, gen, "", nil)
	sc := h.sync("g", c, gen, "", nil)
	if h.answered(sb) || h.answered(sc) {
		t.Fatal("followers answered before the leader's assignment")
	}
	// The leader assigns; c is left out and gets empty bytes. Nobody is
	// answered until the group metadata is durable.
	h.autoPersist = false
	sa := h.sync("g", a, gen, "", map[string][]byte{a: []byte("A"), b: []byte("B"), "stranger": []byte("X")})
	if h.answered(sa) || h.answered(sb) || len(h.pending) != 1 {
		t.Fatalf("answered before persisting (%d writes pending)", len(h.pending))
	}
	if g := h.group("g"); g.state != CompletingRebalance {
		t.Fatalf("state %v before persisting", g.state)
	}
	h.persistAll()
	h.autoPersist = true
	for tok, want := range map[uint64]string{sa: "A", sb: "B", sc: ""} {
		r := h.syncResp(tok)
		if r.ErrorCode != 0 || string(r.MemberAssignment) != want || *r.Protocol != "range" || *r.ProtocolType != "consumer" {
			t.Fatalf("sync: %+v, want assignment %q", r, want)
		}
	}
	if g := h.group("g"); g.state != Stable {
		t.Fatalf("state %v", g.state)
	}
	// In Stable a SyncGroup returns the assignment at once.
	if r := h.syncResp(h.sync("g", b, gen, "", nil)); string(r.MemberAssignment) != "B" {
		t.Fatalf("stable sync: %+v", r)
	}
}

func TestSyncErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	h.tick()
	gen := h.joinResp(ta).Generation
	wantCode(t, "empty group id", h.syncResp(h.sync("", a, gen, "", nil)).ErrorCode, kerr.InvalidGroupID.Code)
	wantCode(t, "unknown group", h.syncResp(h.sync("nope", a, gen, "", nil)).ErrorCode, kerr.UnknownMemberID.Code)
	wantCode(t, "unknown member", h.syncResp(h.sync("g", "x", gen, "", nil)).ErrorCode, kerr.UnknownMemberID.Code)
	wantCode(t, "old generation", h.syncResp(h.sync("g", a, gen-1, "", nil)).ErrorCode, kerr.IllegalGeneration.Code)

	r := kmsg.NewPtrSyncGroupRequest()
	r.Version, r.Group, r.MemberID, r.Generation = 5, "g", a, gen
	other := "roundrobin"
	r.Protocol = &other
	wantCode(t, "other protocol", h.syncResp(h.send("c", r)).ErrorCode, kerr.InconsistentGroupProtocol.Code)

	// A member rejoining with new metadata moves the group to
	// PreparingRebalance; a SyncGroup then is REBALANCE_IN_PROGRESS.
	b, tb := h.joinNew("g", "b", joinOpts{})
	_ = tb
	wantCode(t, "sync during join phase", h.syncResp(h.sync("g", a, gen, "", nil)).ErrorCode, kerr.RebalanceInProgress.Code)
	_ = b
}

func TestSyncPersistFailureRebalances(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	b, tb := h.joinNew("g", "b", joinOpts{})
	h.tick()
	gen := h.joinResp(ta).Generation
	_ = tb
	sb := h.sync("g", b, gen, "", nil)
	h.autoPersist = false
	sa := h.sync("g", a, gen, "", map[string][]byte{a: {1}, b: {2}})
	h.failWrites(kerr.NotEnoughReplicas)
	h.autoPersist = true
	wantCode(t, "leader", h.syncResp(sa).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	wantCode(t, "follower", h.syncResp(sb).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	if g := h.group("g"); g.state != PreparingRebalance {
		t.Fatalf("state %v after a failed write", g.state)
	}
}

func TestRebalanceAnswersWaitingSyncs(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	b, tb := h.joinNew("g", "b", joinOpts{})
	h.tick()
	gen := h.joinResp(tb).Generation
	sb := h.sync("g", b, gen, "", nil)
	// A new member arrives before the leader syncs: the waiting follower
	// is told to rejoin.
	h.joinNew("g", "c", joinOpts{})
	wantCode(t, "waiting follower", h.syncResp(sb).ErrorCode, kerr.RebalanceInProgress.Code)
	_, _ = a, ta
}

func TestHeartbeatInEachState(t *testing.T) {
	h := newHarness(t, testConfig())
	wantCode(t, "empty group id", h.heartbeat("", "x", 0, ""), kerr.InvalidGroupID.Code)
	wantCode(t, "unknown group", h.heartbeat("g", "x", 0, ""), kerr.UnknownMemberID.Code)

	// Empty group: the only member left.
	a, ta := h.joinNew("g", "a", joinOpts{})
	b, tb := h.joinNew("g", "b", joinOpts{})
	wantCode(t, "PreparingRebalance, generation 0", h.heartbeat("g", a, 0, ""), kerr.RebalanceInProgress.Code)
	h.tick()
	gen := h.joinResp(ta).Generation
	wantCode(t, "CompletingRebalance", h.heartbeat("g", a, gen, ""), 0)
	wantCode(t, "wrong generation", h.heartbeat("g", a, gen+1, ""), kerr.IllegalGeneration.Code)
	wantCode(t, "unknown member", h.heartbeat("g", "x", gen, ""), kerr.UnknownMemberID.Code)
	h.stable("g", map[string]uint64{a: ta, b: tb})
	wantCode(t, "Stable", h.heartbeat("g", b, gen, ""), 0)
	h.join("g", "a", a, joinOpts{})
	wantCode(t, "PreparingRebalance", h.heartbeat("g", b, gen, ""), kerr.RebalanceInProgress.Code)

	// While the partition loads Kafka answers heartbeats with no error.
	p := h.c.PartitionFor("g")
	h.apply(h.c.UnloadPartition(h.now, p))
	wantCode(t, "not coordinator", h.heartbeat("g", b, gen, ""), kerr.NotCoordinator.Code)
	h.apply(h.c.BeginLoad(h.now, p))
	wantCode(t, "loading", h.heartbeat("g", b, gen, ""), 0)
}

func TestLeaveGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	ids := map[string]uint64{}
	var order []string
	for _, c := range []string{"a", "b", "c", "d"} {
		id, tok := h.joinNew("g", c, joinOpts{})
		ids[id], order = tok, append(order, id)
	}
	ts := h.join("g", "s", "", joinOpts{instance: "s"})
	h.tick()
	ids["s-uuid-5"] = ts
	gen := h.stable("g", ids)

	// v0: one member; the group rebalances.
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version, r.Group, r.MemberID = 0, "g", order[3]
	lr := h.responses[h.send("c", r)].(*kmsg.LeaveGroupResponse)
	wantCode(t, "leave v0", lr.ErrorCode, 0)
	if g := h.group("g"); g.state != PreparingRebalance || g.byID[order[3]] != nil {
		t.Fatalf("after leave: %v", g.state)
	}
	r.MemberID = "nobody"
	wantCode(t, "leave v0 unknown", h.responses[h.send("c", r)].(*kmsg.LeaveGroupResponse).ErrorCode, kerr.UnknownMemberID.Code)

	// v3+: a batch with its own errors, and removal by instance id alone.
	s := "s"
	bogus := "nope"
	r = kmsg.NewPtrLeaveGroupRequest()
	r.Version, r.Group = 5, "g"
	r.Members = []kmsg.LeaveGroupRequestMember{
		{MemberID: order[1]},
		{MemberID: "unknown"},
		{InstanceID: &s},
		{MemberID: order[2], InstanceID: &bogus},
	}
	lr = h.responses[h.send("c", r)].(*kmsg.LeaveGroupResponse)
	want := []int16{0, kerr.UnknownMemberID.Code, 0, kerr.UnknownMemberID.Code}
	for i, m := range lr.Members {
		wantCode(t, "batched leave "+m.MemberID, m.ErrorCode, want[i])
	}
	g := h.group("g")
	if len(g.members) != 2 || g.byID[order[1]] != nil || g.static["s"] != "" {
		t.Fatalf("%d members left", len(g.members))
	}
	// The leader rejoins; the remaining follower order[2] does not, and
	// is removed at the rebalance timeout.
	tok := h.join("g", "a", order[0], joinOpts{})
	h.advance(20 * time.Second)
	if jr := h.joinResp(tok); jr.Generation != gen+1 || len(jr.Members) != 1 {
		t.Fatalf("rejoin after leaves: %+v", jr)
	}
	// Leaving a group that does not exist.
	r.Group = "nope"
	lr = h.responses[h.send("c", r)].(*kmsg.LeaveGroupResponse)
	for _, m := range lr.Members {
		wantCode(t, "unknown group", m.ErrorCode, kerr.UnknownMemberID.Code)
	}
}

func TestLastMemberLeavingEmptiesGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	gen := h.stable("g", map[string]uint64{a: ta})
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version, r.Group = 3, "g"
	r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a}}
	h.send("c", r)
	g := h.group("g")
	if g.state != Empty || g.generation != gen+1 || g.protocol != "" || g.leader != "" {
		t.Fatalf("after the last leave: %v generation %d protocol %q leader %q", g.state, g.generation, g.protocol, g.leader)
	}
	if g.protocolType != "consumer" {
		t.Fatalf("protocol type %q should survive", g.protocolType)
	}
}
