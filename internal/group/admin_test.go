package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) describe(version int16, ids ...string) []kmsg.DescribeGroupsResponseGroup {
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version, r.Groups, r.IncludeAuthorizedOperations = version, ids, true
	return h.responses[h.send("c", r)].(*kmsg.DescribeGroupsResponse).Groups
}

func (h *harness) list(states, types []string) *kmsg.ListGroupsResponse {
	r := kmsg.NewPtrListGroupsRequest()
	r.Version, r.StatesFilter, r.TypesFilter = 5, states, types
	return h.responses[h.send("c", r)].(*kmsg.ListGroupsResponse)
}

func (h *harness) deleteGroups(ids ...string) []kmsg.DeleteGroupsResponseGroup {
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version, r.Groups = 2, ids
	return h.responses[h.send("c", r)].(*kmsg.DeleteGroupsResponse).Groups
}

func TestDescribeGroups(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	tb := h.join("g", "b", "", joinOpts{instance: "ib"})
	h.tick()
	gen := h.joinResp(ta).Generation
	b := h.joinResp(tb).MemberID

	// CompletingRebalance: members without metadata; no protocol.
	d := h.describe(5, "g")[0]
	if d.State != "CompletingRebalance" || d.Protocol != "" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("completing: %+v", d)
	}
	if len(d.Members[0].ProtocolMetadata) != 0 || d.AuthorizedOperations != groupOperations {
		t.Fatalf("completing member: %+v", d.Members[0])
	}
	sb := h.sync("g", b, gen, "", nil)
	h.sync("g", a, gen, "", map[string][]byte{a: []byte("A"), b: []byte("B")})
	_, _ = sb, tb

	d = h.describe(5, "g")[0]
	if d.State != "Stable" || d.Protocol != "range" {
		t.Fatalf("stable: %+v", d)
	}
	m := d.Members[1]
	if m.MemberID != b || *m.InstanceID != "ib" || m.ClientID != "b" || m.ClientHost != "/127.0.0.1" || string(m.MemberAssignment) != "B" ||
		string(m.ProtocolMetadata) != string(subscription("t")) {
		t.Fatalf("stable member: %+v", m)
	}

	// Unknown groups: Dead and no error before v6, GROUP_ID_NOT_FOUND after.
	if d := h.describe(5, "nope")[0]; d.State != "Dead" || d.ErrorCode != 0 {
		t.Fatalf("unknown v5: %+v", d)
	}
	d = h.describe(6, "nope")[0]
	wantCode(t, "unknown v6", d.ErrorCode, kerr.GroupIDNotFound.Code)
	if d.ErrorMessage == nil {
		t.Fatal("v6 error without message")
	}
}

func TestListAndDeleteGroups(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("stable", "a", joinOpts{})
	h.stable("stable", map[string]uint64{a: ta})
	h.commit("empty", "", -1, map[string]int64{"t": 1})
	h.commit("empty2", "", -1, map[string]int64{"t": 1})
	h.joinNew("preparing", "b", joinOpts{}) // waits for the zero delay to fire

	l := h.list(nil, nil)
	var names []string
	for _, g := range l.Groups {
		names = append(names, g.Group+":"+g.GroupState+":"+g.GroupType)
	}
	want := "empty:Empty:classic empty2:Empty:classic preparing:PreparingRebalance:classic stable:Stable:classic"
	if got := join(names); got != want {
		t.Fatalf("list: %s", got)
	}
	if l := h.list([]string{"stable", "EMPTY"}, nil); len(l.Groups) != 3 {
		t.Fatalf("state filter: %d groups", len(l.Groups))
	}
	if l := h.list(nil, []string{"consumer"}); len(l.Groups) != 0 {
		t.Fatalf("type filter consumer: %d groups", len(l.Groups))
	}
	if l := h.list(nil, []string{"Classic"}); len(l.Groups) != 4 {
		t.Fatalf("type filter classic: %d groups", len(l.Groups))
	}

	res := h.deleteGroups("empty", "stable", "nope", "empty2")
	want2 := []int16{0, kerr.NonEmptyGroup.Code, kerr.GroupIDNotFound.Code, 0}
	for i, r := range res {
		wantCode(t, "delete "+r.Group, r.ErrorCode, want2[i])
	}
	if h.c.groups.byID["empty"] != nil || h.c.groups.byID["empty2"] != nil {
		t.Fatal("deleted groups still present")
	}
	if got := h.fetch("empty", "t"); got["t"] != -1 {
		t.Fatalf("offsets of deleted group: %v", got)
	}

	// The answer to a delete waits for the tombstones.
	h.commit("later", "", -1, map[string]int64{"t": 1})
	h.autoPersist = false
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version, r.Groups = 2, []string{"later"}
	tok := h.send("c", r)
	if h.answered(tok) {
		t.Fatal("delete answered before persisting")
	}
	h.failWrites(kerr.NotLeaderForPartition)
	wantCode(t, "failed delete", h.responses[tok].(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NotCoordinator.Code)
	h.autoPersist = true

	// While a partition loads, ListGroups fails as a whole.
	h.apply(h.c.BeginLoad(h.now, 99))
	wantCode(t, "list while loading", h.list(nil, nil).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}
