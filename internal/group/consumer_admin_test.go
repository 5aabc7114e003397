package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) cgDescribe(version int16, ids ...string) []kmsg.ConsumerGroupDescribeResponseGroup {
	h.t.Helper()
	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Version, r.Groups, r.IncludeAuthorizedOperations = version, ids, true
	return h.responses[h.send("c", r)].(*kmsg.ConsumerGroupDescribeResponse).Groups
}

func TestConsumerGroupDescribe(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 3})
	a := h.newMember("g")
	a.id, a.instance, a.assignor = "a", "ia", RangeAssignor
	h.converge(a)
	h.joinNew("classic", "x", joinOpts{})

	ds := h.cgDescribe(1, "g", "nope", "classic", "")
	d := ds[0]
	if d.ErrorCode != 0 || d.State != "Stable" || d.Epoch != 1 || d.AssignmentEpoch != 1 || d.AssignorName != "range" ||
		d.AuthorizedOperations != groupOperations || len(d.Members) != 1 {
		t.Fatalf("described %+v", d)
	}
	m := d.Members[0]
	if m.MemberID != "a" || *m.InstanceID != "ia" || m.MemberEpoch != 1 || m.ClientID != "consumer" ||
		m.ClientHost != "/127.0.0.1" || fmt.Sprint(m.SubscribedTopics) != "[t]" || m.MemberType != 1 {
		t.Fatalf("member %+v", m)
	}
	for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
		if len(a.TopicPartitions) != 1 || a.TopicPartitions[0].Topic != "t" || fmt.Sprint(a.TopicPartitions[0].Partitions) != "[0 1 2]" {
			t.Fatalf("assignment %+v", a)
		}
	}
	for i, want := range []struct {
		code int16
		msg  string
	}{{0, ""}, {kerr.GroupIDNotFound.Code, "Group nope not found."},
		{kerr.GroupIDNotFound.Code, "Group classic is not a consumer group."}, {kerr.InvalidGroupID.Code, ""}} {
		if ds[i].ErrorCode != want.code || want.msg != "" && *ds[i].ErrorMessage != want.msg {
			t.Errorf("group %q: error %d %q", ds[i].Group, ds[i].ErrorCode, derefString(ds[i].ErrorMessage))
		}
	}
	if d := h.cgDescribe(0, "g")[0]; d.Members[0].MemberType != -1 {
		t.Fatalf("v0 member type %d", d.Members[0].MemberType)
	}

	// A classic DescribeGroups sees no classic group.
	if d := h.describe(5, "g")[0]; d.State != "Dead" || d.ErrorCode != 0 {
		t.Fatalf("classic describe v5: %+v", d)
	}
	if d := h.describe(6, "g")[0]; d.ErrorCode != kerr.GroupIDNotFound.Code || *d.ErrorMessage != "Group g is not a classic group." {
		t.Fatalf("classic describe v6: %+v", d)
	}
}

func TestConsumerListAndDeleteGroups(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 2})
	a := h.newMember("stable")
	h.converge(a)
	b := h.newMember("empty")
	h.converge(b)
	h.cgHeartbeat(cgReq{group: "empty", member: b.id, epoch: leaveEpoch})
	x, tx := h.joinNew("classic", "x", joinOpts{})
	h.stable("classic", map[string]uint64{x: tx})

	names := func(l *kmsg.ListGroupsResponse) string {
		s := ""
		for _, g := range l.Groups {
			s += fmt.Sprintf("%s:%s:%s:%s ", g.Group, g.GroupType, g.ProtocolType, g.GroupState)
		}
		return s
	}
	if got := names(h.list(nil, nil)); got != "classic:classic:consumer:Stable empty:consumer:consumer:Empty stable:consumer:consumer:Stable " {
		t.Fatalf("list: %s", got)
	}
	if got := names(h.list(nil, []string{"Consumer"})); got != "empty:consumer:consumer:Empty stable:consumer:consumer:Stable " {
		t.Fatalf("list consumer: %s", got)
	}
	if got := names(h.list([]string{"stable"}, []string{"classic"})); got != "classic:classic:consumer:Stable " {
		t.Fatalf("list stable classic: %s", got)
	}
	if got := names(h.list([]string{"EMPTY", "ASSIGNING", "RECONCILING"}, nil)); got != "empty:consumer:consumer:Empty " {
		t.Fatalf("list by consumer states: %s", got)
	}

	d := h.deleteGroups("stable", "empty")
	wantCode(t, "delete stable", d[0].ErrorCode, kerr.NonEmptyGroup.Code)
	wantCode(t, "delete empty", d[1].ErrorCode, 0)
	if h.c.groups.byID["empty"] != nil || h.c.groups.byID["stable"] == nil {
		t.Fatal("wrong group deleted")
	}
	h.reload()
}

// Classic and consumer groups share ids; nothing mixes the protocols.
func TestConsumerClassicInterop(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 2})
	a := h.newMember("g")
	a.id, a.instance = "a", "ia"
	h.converge(a)

	// Classic requests to a non-empty consumer group.
	r := h.joinResp(h.join("g", "x", "", joinOpts{}))
	wantCode(t, "classic join", r.ErrorCode, kerr.InconsistentGroupProtocol.Code)
	wantCode(t, "classic sync", h.syncResp(h.sync("g", "a", 1, "", nil)).ErrorCode, kerr.UnknownMemberID.Code)
	wantCode(t, "classic heartbeat", h.heartbeat("g", "x", 1, ""), kerr.UnknownMemberID.Code)
	wantCode(t, "classic heartbeat of a held instance", h.heartbeat("g", "x", 1, "ia"), kerr.FencedInstanceID.Code)
	l := h.classicLeave("g", "a", "")
	wantCode(t, "classic leave by member id", l.Members[0].ErrorCode, kerr.UnknownMemberID.Code)

	// The admin client's removal of a static member by instance id works.
	l = h.classicLeave("g", "", "ia")
	wantCode(t, "remove static member", l.Members[0].ErrorCode, 0)
	if len(h.cg("g").members) != 0 {
		t.Fatal("member not removed")
	}

	// The empty consumer group gives way to a classic member.
	x, tx := h.joinNew("g", "x", joinOpts{})
	h.stable("g", map[string]uint64{x: tx})
	if h.group("g").consumer != nil {
		t.Fatal("still a consumer group")
	}
	// A consumer member cannot join the non-empty classic group.
	resp := h.cgHeartbeat(cgReq{group: "g", member: "c", epoch: 0})
	wantCode(t, "consumer join of classic group", resp.ErrorCode, kerr.GroupIDNotFound.Code)
	if *resp.ErrorMessage != "Cannot upgrade classic group g to consumer group because online upgrade is disabled." {
		t.Fatalf("message %q", *resp.ErrorMessage)
	}
	wantCode(t, "consumer heartbeat of classic group", h.cgHeartbeat(cgReq{group: "g", member: "c", epoch: 3}).ErrorCode,
		kerr.GroupIDNotFound.Code)
	wantCode(t, "consumer leave of classic group", h.cgHeartbeat(cgReq{group: "g", member: "c", epoch: -1}).ErrorCode,
		kerr.GroupIDNotFound.Code)
	h.reload()
}

func TestConsumerOffsetCommit(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 1, "u": 1})
	a := h.newMember("g")
	h.converge(a)

	commit := func(version int16, member string, gen int32) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID, r.Generation = version, "g", member, gen
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = "u"
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset = 5
		tp.Partitions = append(tp.Partitions, p)
		r.Topics = append(r.Topics, tp)
		return h.commitCodes(h.send("c", r))[0]
	}
	wantCode(t, "member epoch", commit(9, a.id, a.epoch), 0)
	wantCode(t, "stale epoch", commit(9, a.id, a.epoch-1), kerr.StaleMemberEpoch.Code)
	wantCode(t, "old version", commit(8, a.id, a.epoch), kerr.UnsupportedVersion.Code)
	wantCode(t, "unknown member", commit(9, "x", a.epoch), kerr.UnknownMemberID.Code)
	wantCode(t, "admin commit to a non-empty group", commit(9, "", -1), kerr.UnknownMemberID.Code)
	if h.fetch("g", "u")["u"] != 5 {
		t.Fatal("offset not committed")
	}

	// OffsetFetch v9 checks the member too.
	fetch := func(member *string, epoch int32) int16 {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "g", member, epoch
		r.Groups = append(r.Groups, g)
		return h.responses[h.send("c", r)].(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode
	}
	wantCode(t, "fetch as member", fetch(&a.id, a.epoch), 0)
	wantCode(t, "fetch with stale epoch", fetch(&a.id, a.epoch+1), kerr.StaleMemberEpoch.Code)
	wantCode(t, "fetch as admin", fetch(nil, -1), 0)

	// Offsets of subscribed topics cannot be deleted; others can.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	for _, topic := range []string{"t", "u"} {
		ot := kmsg.NewOffsetDeleteRequestTopic()
		ot.Topic = topic
		ot.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		od.Topics = append(od.Topics, ot)
	}
	dr := h.responses[h.send("c", od)].(*kmsg.OffsetDeleteResponse)
	wantCode(t, "delete subscribed", dr.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic.Code)
	wantCode(t, "delete other", dr.Topics[1].Partitions[0].ErrorCode, 0)

	// Once empty, anyone may commit with generation -1.
	h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: leaveEpoch})
	wantCode(t, "admin commit to an empty group", commit(9, "", -1), 0)
	h.reload()
}

func TestConsumerHeartbeatValidation(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 1})
	blank := " "
	for _, c := range []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		code int16
		msg  string
	}{
		{"empty member id at v1", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest.Code, "GroupId can't be empty."},
		{"blank instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = &blank }, kerr.InvalidRequest.Code, "InstanceId can't be empty."},
		{"blank rack", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = &blank }, kerr.InvalidRequest.Code, "RackId can't be empty."},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest.Code,
			"RebalanceTimeoutMs must be provided in first request."},
		{"owned partitions at join", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest.Code,
			"TopicPartitions must be empty when (re-)joining."},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest.Code,
			"Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest.Code,
			"InstanceId can't be null."},
		{"epoch -3", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest.Code, "MemberEpoch is invalid."},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { s := "sticky"; r.ServerAssignor = &s }, kerr.UnsupportedAssignor.Code,
			"ServerAssignor sticky is not supported. Supported assignors: uniform, range."},
	} {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.RebalanceTimeoutMillis = 1, "g", "m", 1000
		r.SubscribedTopicNames, r.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		c.mod(r)
		resp := h.cgResp(h.send("c", r))
		if resp.ErrorCode != c.code || derefString(resp.ErrorMessage) != c.msg {
			t.Errorf("%s: %d %q", c.name, resp.ErrorCode, derefString(resp.ErrorMessage))
		}
	}
	if len(h.c.groups.byID) != 0 {
		t.Fatal("an invalid request created a group")
	}
	// Version 0: the coordinator names the member.
	r := h.cgHeartbeat(cgReq{group: "g", epoch: 0, version: -1})
	if r.ErrorCode != 0 || *r.MemberID != "m-1" {
		t.Fatalf("v0 join: %+v", r)
	}
	// Not the coordinator, or loading.
	other := "other"
	for h.c.PartitionFor(other) == h.c.PartitionFor("g") {
		other += "x"
	}
	h.apply(h.c.UnloadPartition(h.now, h.c.PartitionFor(other)))
	wantCode(t, "not coordinator", h.cgHeartbeat(cgReq{group: other, member: "m", epoch: 0}).ErrorCode, kerr.NotCoordinator.Code)
	h.apply(h.c.BeginLoad(h.now, h.c.PartitionFor(other)))
	wantCode(t, "loading", h.cgHeartbeat(cgReq{group: other, member: "m", epoch: 0}).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	if d := h.cgDescribe(0, other)[0]; d.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("describe while loading: %d", d.ErrorCode)
	}
}

// A heartbeat's answer waits for its records; a failed write is undone,
// with every later write of the group, and their answers get the error.
func TestConsumerWriteFailureUndo(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 4})
	a := h.newMember("g")
	h.converge(a)
	before := consumerSnapshot(h.c)

	h.autoPersist = false
	tb := h.cgSend(cgReq{group: "g", member: "b", epoch: 0})
	if h.answered(tb) {
		t.Fatal("join answered before its records were written")
	}
	// a's heartbeat writes nothing of its own but waits for b's records.
	ta := h.cgSend(cgReq{group: "g", member: a.id, epoch: a.epoch, owned: a.owned})
	tc := h.cgSend(cgReq{group: "g", member: "c", epoch: 0})
	if h.answered(ta) || h.answered(tc) {
		t.Fatal("answered before the earlier write is durable")
	}
	h.failWrites(kerr.NotLeaderForPartition)
	for _, tok := range []uint64{tb, ta, tc} {
		wantCode(t, "answer after the failed write", h.cgResp(tok).ErrorCode, kerr.NotCoordinator.Code)
	}
	if got := consumerSnapshot(h.c); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("not undone:\n got %v\nwant %v", got, before)
	}
	// A new group whose first write fails disappears.
	tn := h.cgSend(cgReq{group: "new", member: "n", epoch: 0})
	h.failWrites(kerr.NotEnoughReplicas)
	wantCode(t, "new group", h.cgResp(tn).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	if h.c.groups.byID["new"] != nil {
		t.Fatal("failed group creation left a group")
	}
	h.autoPersist = true
	h.converge(a)
	h.reload()
}
