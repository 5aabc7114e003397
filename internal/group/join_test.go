package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestJoinOneToN(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h := newHarness(t, testConfig())
			var ids []string
			joins := make(map[string]uint64)
			for i := 0; i < n; i++ {
				id, tok := h.joinNew("g", fmt.Sprintf("client-%d", i), joinOpts{})
				ids = append(ids, id)
				joins[id] = tok
			}
			if want := "client-0-uuid-1"; ids[0] != want {
				t.Fatalf("member id %q, want %q", ids[0], want)
			}
			for _, tok := range joins {
				if h.answered(tok) {
					t.Fatal("a JoinGroup was answered before the join phase ended")
				}
			}
			h.tick()
			for _, id := range ids {
				r := h.joinResp(joins[id])
				wantCode(t, "join", r.ErrorCode, 0)
				if r.Generation != 1 || r.LeaderID != ids[0] || r.MemberID != id {
					t.Fatalf("member %s: generation %d leader %s member %s", id, r.Generation, r.LeaderID, r.MemberID)
				}
				if r.Protocol == nil || *r.Protocol != "range" || r.ProtocolType == nil || *r.ProtocolType != "consumer" {
					t.Fatalf("protocol %v type %v", r.Protocol, r.ProtocolType)
				}
				wantMembers := 0
				if id == ids[0] {
					wantMembers = n
				}
				if len(r.Members) != wantMembers {
					t.Fatalf("member %s got %d members, want %d", id, len(r.Members), wantMembers)
				}
			}
			leader := h.joinResp(joins[ids[0]])
			for i, m := range leader.Members {
				if m.MemberID != ids[i] || string(m.ProtocolMetadata) != string(subscription("t")) {
					t.Fatalf("leader's member %d: %s", i, m.MemberID)
				}
			}
			if g := h.group("g"); g.state != CompletingRebalance {
				t.Fatalf("state %v", g.state)
			}
			h.stable("g", joins)
		})
	}
}

func TestMemberIDRequired(t *testing.T) {
	h := newHarness(t, testConfig())
	r := h.joinResp(h.join("g", "cli", "", joinOpts{version: 4}))
	wantCode(t, "first join v4", r.ErrorCode, kerr.MemberIDRequired.Code)
	if r.MemberID != "cli-uuid-1" || r.Generation != -1 {
		t.Fatalf("member id %q generation %d", r.MemberID, r.Generation)
	}
	// The pending id is forgotten after the session timeout of that join.
	h.advance(10 * time.Second)
	wantCode(t, "join with lapsed id", h.joinResp(h.join("g", "cli", r.MemberID, joinOpts{version: 4})).ErrorCode,
		kerr.UnknownMemberID.Code)

	// A known member id for a group that does not exist.
	wantCode(t, "join unknown group", h.joinResp(h.join("other", "cli", "x", joinOpts{})).ErrorCode,
		kerr.UnknownMemberID.Code)

	// Before v4 a new member joins at once.
	tok := h.join("g3", "old", "", joinOpts{version: 3})
	h.tick()
	r = h.joinResp(tok)
	wantCode(t, "join v3", r.ErrorCode, 0)
	if r.MemberID != "old-uuid-2" || r.LeaderID != r.MemberID || r.Generation != 1 {
		t.Fatalf("v3 join: %+v", r)
	}

	// A JoinGroup v0 has its rebalance timeout from the session timeout.
	h.join("g0", "v0", "", joinOpts{version: -1, session: 7 * time.Second})
	if m := h.group("g0").members[0]; m.rebalanceTimeoutMs != 7000 {
		t.Fatalf("v0 rebalance timeout %d", m.rebalanceTimeoutMs)
	}
}

func TestJoinValidation(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSize = 2
	h := newHarness(t, cfg)
	wantCode(t, "empty group", h.joinResp(h.join("", "c", "", joinOpts{})).ErrorCode, kerr.InvalidGroupID.Code)
	wantCode(t, "short session", h.joinResp(h.join("g", "c", "", joinOpts{session: time.Second})).ErrorCode,
		kerr.InvalidSessionTimeout.Code)
	wantCode(t, "long session", h.joinResp(h.join("g", "c", "", joinOpts{session: time.Hour})).ErrorCode,
		kerr.InvalidSessionTimeout.Code)
	wantCode(t, "no protocol type", h.joinResp(h.join("g", "c", "", joinOpts{protoType: "-", protocols: []string{}})).ErrorCode,
		kerr.InconsistentGroupProtocol.Code)

	a, ta := h.joinNew("g", "a", joinOpts{protocols: []string{"range", "roundrobin"}})
	b, tb := h.joinNew("g", "b", joinOpts{protocols: []string{"roundrobin"}})
	h.stable("g", map[string]uint64{a: ta, b: tb})
	if p := h.group("g").protocol; p != "roundrobin" {
		t.Fatalf("selected protocol %q, want the only common one", p)
	}
	x, tx := h.joinNew("g1", "x", joinOpts{})
	h.stable("g1", map[string]uint64{x: tx})
	wantCode(t, "other protocol type", h.joinResp(h.join("g1", "c", "", joinOpts{protoType: "connect"})).ErrorCode,
		kerr.InconsistentGroupProtocol.Code)
	wantCode(t, "no common protocol", h.joinResp(h.join("g1", "c", "", joinOpts{protocols: []string{"sticky"}})).ErrorCode,
		kerr.InconsistentGroupProtocol.Code)
	r := h.joinResp(h.join("g", "c", "", joinOpts{protocols: []string{"roundrobin"}}))
	wantCode(t, "third member of a group of at most 2", r.ErrorCode, kerr.GroupMaxSizeReached.Code)

	// Not led here, then loading.
	p := h.c.PartitionFor("g")
	h.apply(h.c.UnloadPartition(h.now, p))
	wantCode(t, "unloaded", h.joinResp(h.join("g", "c", "", joinOpts{})).ErrorCode, kerr.NotCoordinator.Code)
	h.apply(h.c.BeginLoad(h.now, p))
	wantCode(t, "loading", h.joinResp(h.join("g", "c", "", joinOpts{})).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
}

func TestInitialRebalanceDelay(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = 3 * time.Second
	h := newHarness(t, cfg)
	opts := joinOpts{rebalance: 10 * time.Second}

	// Alone: the join phase ends after one delay.
	a, ta := h.joinNew("solo", "a", opts)
	h.advance(3*time.Second - time.Millisecond)
	if h.answered(ta) {
		t.Fatal("answered before the initial delay")
	}
	h.advance(time.Millisecond)
	if r := h.joinResp(ta); r.MemberID != a || r.Generation != 1 {
		t.Fatalf("solo join: %+v", r)
	}

	// A member arriving during the delay extends it by one delay, up to
	// the rebalance timeout: 3s, then min(3s, 10s-3s) more.
	start := h.now
	_, t1 := h.joinNew("g", "a", opts)
	h.advance(2 * time.Second)
	_, t2 := h.joinNew("g", "b", opts)
	h.advance(time.Second) // 3s: extended
	if h.answered(t1) || h.answered(t2) {
		t.Fatal("join phase ended although a member arrived during the delay")
	}
	h.advance(3*time.Second - time.Millisecond)
	if h.answered(t1) {
		t.Fatal("join phase ended early")
	}
	h.advance(time.Millisecond)
	if h.now.Sub(start) != 6*time.Second || !h.answered(t1) || !h.answered(t2) {
		t.Fatalf("join phase did not end at 6s")
	}
	if r := h.joinResp(t2); r.Generation != 1 || len(h.joinResp(t1).Members) != 2 {
		t.Fatalf("join results: %+v", r)
	}
}

func TestRebalanceTimeoutRemovesMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t, testConfig())
	opts := joinOpts{rebalance: 15 * time.Second, session: 10 * time.Second}
	a, ta := h.joinNew("g", "a", opts)
	b, tb := h.joinNew("g", "b", opts)
	gen := h.stable("g", map[string]uint64{a: ta, b: tb})

	// The leader rejoins: a rebalance starts; b keeps heartbeating but
	// never rejoins.
	ra := h.join("g", "a", a, opts)
	for i := 0; i < 3; i++ {
		h.advance(4 * time.Second)
		wantCode(t, "heartbeat during rebalance", h.heartbeat("g", b, gen, ""), kerr.RebalanceInProgress.Code)
	}
	if h.answered(ra) {
		t.Fatal("join phase ended before the rebalance timeout")
	}
	h.advance(3 * time.Second) // 15s after the rebalance began
	r := h.joinResp(ra)
	if r.Generation != gen+1 || r.LeaderID != a || len(r.Members) != 1 {
		t.Fatalf("after rebalance timeout: %+v", r)
	}
	if h.group("g").byID[b] != nil {
		t.Fatal("member that did not rejoin is still there")
	}
	wantCode(t, "removed member's heartbeat", h.heartbeat("g", b, gen, ""), kerr.UnknownMemberID.Code)
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t, testConfig())
	opts := joinOpts{session: 10 * time.Second}
	a, ta := h.joinNew("g", "a", opts)
	b, tb := h.joinNew("g", "b", opts)
	gen := h.stable("g", map[string]uint64{a: ta, b: tb})

	// Heartbeats keep both alive well past the session timeout.
	for i := 0; i < 10; i++ {
		h.advance(6 * time.Second)
		wantCode(t, "a heartbeat", h.heartbeat("g", a, gen, ""), 0)
		wantCode(t, "b heartbeat", h.heartbeat("g", b, gen, ""), 0)
	}
	// b stops: it expires 10s after its last heartbeat, and the group
	// rebalances around a.
	h.advance(6 * time.Second)
	wantCode(t, "a heartbeat", h.heartbeat("g", a, gen, ""), 0)
	h.advance(4 * time.Second)
	if g := h.group("g"); g.byID[b] != nil || g.state != PreparingRebalance {
		t.Fatalf("after b's session: state %v, b present %v", g.state, g.byID[b] != nil)
	}
	wantCode(t, "a told to rejoin", h.heartbeat("g", a, gen, ""), kerr.RebalanceInProgress.Code)
	tok := h.join("g", "a", a, opts)
	if r := h.joinResp(tok); r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin: %+v", r)
	}
	// a stops too: the last member leaves an Empty group, generation + 1.
	h.sync("g", a, gen+1, "", map[string][]byte{a: {1}})
	h.advance(10 * time.Second)
	g := h.group("g")
	if g.state != Empty || g.generation != gen+2 || len(g.members) != 0 {
		t.Fatalf("after a's session: %v generation %d", g.state, g.generation)
	}
}

func TestNewMemberJoinTimeout(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	b, tb := h.joinNew("g", "b", joinOpts{})
	gen := h.stable("g", map[string]uint64{a: ta, b: tb})
	// A new member joins; a rebalance starts, but the others never rejoin
	// and keep heartbeating (long rebalance timeout). The new member's
	// JoinGroup lapses after 5 minutes.
	c, tc := h.joinNew("g", "c", joinOpts{rebalance: 10 * time.Minute, session: 10 * time.Second})
	for i := 0; i < 60; i++ {
		h.advance(5 * time.Second)
		h.heartbeat("g", a, gen, "")
		h.heartbeat("g", b, gen, "")
	}
	r := h.joinResp(tc)
	wantCode(t, "new member's join after 5 minutes", r.ErrorCode, kerr.UnknownMemberID.Code)
	if h.group("g").byID[c] != nil {
		t.Fatal("new member still present")
	}
}
