package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// staticGroup makes a Stable group of static members "a" and "b" (a leads)
// and returns their member ids and the generation.
func staticGroup(h *harness, version int16) (a, b string, gen int32) {
	h.t.Helper()
	ta := h.join("g", "ca", "", joinOpts{instance: "a", version: version})
	tb := h.join("g", "cb", "", joinOpts{instance: "b", version: version})
	h.tick()
	a, b = h.joinResp(ta).MemberID, h.joinResp(tb).MemberID
	if a != "a-uuid-1" || b != "b-uuid-2" {
		h.t.Fatalf("static member ids %q %q (want instanceId-uuid)", a, b)
	}
	gen = h.stable("g", map[string]uint64{a: ta, b: tb})
	return a, b, gen
}

func TestStaticMemberRestartWithoutRebalance(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b, gen := staticGroup(h, 7)
	writes := len(h.log[h.c.PartitionFor("g")])

	// The follower b restarts: it comes back with no member id.
	h.autoPersist = false
	tok := h.join("g", "cb", "", joinOpts{instance: "b"})
	if h.answered(tok) {
		t.Fatal("static rejoin answered before the group was persisted")
	}
	h.persistAll()
	h.autoPersist = true
	r := h.joinResp(tok)
	wantCode(t, "static rejoin", r.ErrorCode, 0)
	newB := r.MemberID
	if newB == b || r.Generation != gen || r.LeaderID != a || len(r.Members) != 0 {
		t.Fatalf("static rejoin: %+v", r)
	}
	g := h.group("g")
	if g.state != Stable || g.generation != gen {
		t.Fatalf("state %v generation %d: the restart rebalanced", g.state, g.generation)
	}
	if got := len(h.log[h.c.PartitionFor("g")]); got != writes+1 {
		t.Fatalf("%d records written, want the group metadata once", got-writes)
	}
	// It keeps its assignment, and the old id is fenced.
	if s := h.syncResp(h.sync("g", newB, gen, "b", nil)); s.ErrorCode != 0 || string(s.MemberAssignment) != b {
		t.Fatalf("sync after restart: %+v", s)
	}
	wantCode(t, "old id heartbeat", h.heartbeat("g", b, gen, "b"), kerr.FencedInstanceID.Code)
	wantCode(t, "old id sync", h.syncResp(h.sync("g", b, gen, "b", nil)).ErrorCode, kerr.FencedInstanceID.Code)
	wantCode(t, "old id join", h.joinResp(h.join("g", "cb", b, joinOpts{instance: "b"})).ErrorCode, kerr.FencedInstanceID.Code)
	wantCode(t, "old id commit without instance", h.commitCodes(h.commit("g", b, gen, map[string]int64{"t": 1}))[0],
		kerr.UnknownMemberID.Code)
	wantCode(t, "unknown instance", h.heartbeat("g", b, gen, "zz"), kerr.UnknownMemberID.Code)
	wantCode(t, "new id heartbeat", h.heartbeat("g", newB, gen, "b"), 0)
	wantCode(t, "leader heartbeat", h.heartbeat("g", a, gen, "a"), 0)

	// The leader restarts at v9: it is told it leads, with the members, and
	// to skip the assignment.
	r = h.joinResp(h.join("g", "ca", "", joinOpts{instance: "a", version: 9}))
	if r.ErrorCode != 0 || r.LeaderID != r.MemberID || !r.SkipAssignment || len(r.Members) != 2 || r.Generation != gen {
		t.Fatalf("static leader rejoin v9: %+v", r)
	}
	if g.leader != r.MemberID || g.state != Stable {
		t.Fatalf("leader %s state %v", g.leader, g.state)
	}
}

func TestStaticMemberRestartBeforeV9KeepsOldLeaderID(t *testing.T) {
	h := newHarness(t, testConfig())
	a, _, gen := staticGroup(h, 7)
	r := h.joinResp(h.join("g", "ca", "", joinOpts{instance: "a", version: 8}))
	// Naming the old leader id stops the new member from thinking it leads
	// and running an assignment that a Stable group would ignore.
	if r.ErrorCode != 0 || r.LeaderID != a || r.MemberID == a || r.SkipAssignment || r.Generation != gen {
		t.Fatalf("static leader rejoin v8: %+v", r)
	}
}

func TestStaticMemberRestartWithOtherProtocolRebalances(t *testing.T) {
	h := newHarness(t, testConfig())
	h.join("g", "ca", "", joinOpts{instance: "a", protocols: []string{"range", "rr"}})
	h.join("g", "cb", "", joinOpts{instance: "b", protocols: []string{"range", "rr"}})
	h.tick()
	a, b := "a-uuid-1", "b-uuid-2"
	gen := h.stable("g", map[string]uint64{a: 1, b: 2})
	// b comes back preferring rr; the vote is then a tie... broken for the
	// current protocol, so no rebalance. Only rr: the protocol must change.
	tok := h.join("g", "cb", "", joinOpts{instance: "b", protocols: []string{"rr"}})
	g := h.group("g")
	if g.state != PreparingRebalance || h.answered(tok) {
		t.Fatalf("state %v: a static member changing the protocol must rebalance", g.state)
	}
	ta := h.join("g", "ca", a, joinOpts{instance: "a", protocols: []string{"range", "rr"}})
	if r := h.joinResp(tok); r.Generation != gen+1 || *r.Protocol != "rr" {
		t.Fatalf("rebalance: %+v", r)
	}
	if r := h.joinResp(ta); len(r.Members) != 2 {
		t.Fatalf("leader: %+v", r)
	}
}

func TestStaticMemberRestartPersistFailureReverts(t *testing.T) {
	h := newHarness(t, testConfig())
	_, b, gen := staticGroup(h, 7)
	h.autoPersist = false
	tok := h.join("g", "cb", "", joinOpts{instance: "b"})
	h.failWrites(kerr.NotLeaderForPartition)
	h.autoPersist = true
	r := h.joinResp(tok)
	wantCode(t, "failed restart", r.ErrorCode, kerr.NotCoordinator.Code)
	if r.MemberID != "" {
		t.Fatalf("member id %q", r.MemberID)
	}
	wantCode(t, "old id still valid", h.heartbeat("g", b, gen, "b"), 0)
	if h.group("g").static["b"] != b {
		t.Fatal("instance not mapped back to the old member id")
	}
}

func TestStaticMemberRestartDuringRebalance(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b, gen := staticGroup(h, 7)
	// The leader rejoins: PreparingRebalance, its JoinGroup waits for b.
	// Then it restarts and joins again with no member id: the waiting
	// JoinGroup of the old id is fenced and the new id takes its place.
	old := h.join("g", "ca", a, joinOpts{instance: "a"})
	tok := h.join("g", "ca", "", joinOpts{instance: "a"})
	wantCode(t, "fenced waiting join", h.joinResp(old).ErrorCode, kerr.FencedInstanceID.Code)
	if h.joinResp(old).MemberID != a || h.answered(tok) {
		t.Fatal("old join not fenced with its id, or new join answered early")
	}
	tb := h.join("g", "cb", b, joinOpts{instance: "b"})
	r := h.joinResp(tok)
	if r.ErrorCode != 0 || r.MemberID == a || r.LeaderID != r.MemberID || len(r.Members) != 2 || r.Generation != gen+1 {
		t.Fatalf("restarted leader: %+v", r)
	}
	if rb := h.joinResp(tb); rb.LeaderID != r.MemberID {
		t.Fatalf("follower sees leader %s", rb.LeaderID)
	}
}

func TestStaticMemberNotRejoiningStaysUntilSessionEnds(t *testing.T) {
	h := newHarness(t, testConfig())
	opts := joinOpts{instance: "a", session: 10 * time.Second, rebalance: 5 * time.Second}
	ta := h.join("g", "ca", "", opts)
	tb := h.join("g", "cb", "", joinOpts{instance: "b", session: 30 * time.Second, rebalance: 5 * time.Second})
	h.tick()
	a, b := h.joinResp(ta).MemberID, h.joinResp(tb).MemberID
	gen := h.stable("g", map[string]uint64{a: ta, b: tb})
	// a rejoins; b does not. At the rebalance timeout b, being static, is
	// kept: the new generation includes it.
	tok := h.join("g", "ca", a, opts)
	h.advance(5 * time.Second)
	r := h.joinResp(tok)
	if r.Generation != gen+1 || len(r.Members) != 2 {
		t.Fatalf("join with a static member missing: %+v", r)
	}
	// b never syncs: after the rebalance timeout it is removed as a
	// pending-sync member and the group rebalances without it.
	h.sync("g", a, gen+1, "a", map[string][]byte{a: {1}})
	h.advance(5 * time.Second)
	g := h.group("g")
	if g.byID[b] != nil || g.state != PreparingRebalance {
		t.Fatalf("b present %v, state %v", g.byID[b] != nil, g.state)
	}
}
