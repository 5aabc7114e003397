package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestConsumerJoinOneMember(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 3})
	m := h.newMember("g")
	r := h.beat(m)
	wantCode(t, "join", r.ErrorCode, 0)
	if *r.MemberID != "m-1" || r.MemberEpoch != 1 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join response: %+v", r)
	}
	h.checkPartitioned([]*cgSim{m}, map[string]int32{"t": 3}, 0)
	cg := h.cg("g")
	if cg.state() != cgStable || cg.epoch != 1 || cg.assignmentEpoch != 1 {
		t.Fatalf("group %s epoch %d assignment epoch %d", cg.state(), cg.epoch, cg.assignmentEpoch)
	}
	// A join writes, in Kafka's order: the member, the subscription
	// metadata and epoch, the target and its epoch, the current assignment.
	var kinds []int16
	for _, rec := range h.log[h.c.PartitionFor("g")] {
		kinds = append(kinds, int16(rec.Key[0])<<8|int16(rec.Key[1]))
	}
	if fmt.Sprint(kinds) != "[5 4 3 7 6 8]" {
		t.Fatalf("record types %v", kinds)
	}
	// A plain heartbeat changes nothing, writes nothing, sends no assignment.
	n := len(h.log[h.c.PartitionFor("g")])
	r = h.beat(m)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment != nil || len(h.log[h.c.PartitionFor("g")]) != n {
		t.Fatalf("steady heartbeat: %+v", r)
	}
	h.reload()
}

func TestConsumerManyMembersConverge(t *testing.T) {
	for _, assignor := range []string{UniformAssignor, RangeAssignor} {
		t.Run(assignor, func(t *testing.T) {
			h := newHarness(t, cgConfig())
			counts := map[string]int32{"a": 7, "b": 5, "c": 1}
			h.setTopics(counts)
			var ms []*cgSim
			for i := 0; i < 5; i++ {
				m := h.newMember("g", "a", "b", "c")
				m.assignor = assignor
				ms = append(ms, m)
				h.converge(ms...)
				spread := 1
				if assignor == RangeAssignor {
					spread = len(counts) // one extra per topic at most
				}
				h.checkPartitioned(ms, counts, spread)
				if s := h.cg("g").state(); s != cgStable {
					t.Fatalf("%d members: state %s", len(ms), s)
				}
			}
			if assignor == RangeAssignor {
				// Range hands out contiguous ranges, in member id order.
				for _, m := range ms {
					for _, ps := range m.owned {
						if ps[len(ps)-1]-ps[0] != int32(len(ps)-1) {
							t.Fatalf("%s owns %v: not a range", m.id, ps)
						}
					}
				}
			}
			if got := h.cg("g").preferredAssignor(h.c.cfg.Consumer.Assignors, UniformAssignor); got != assignor {
				t.Fatalf("assignor %s", got)
			}
			h.reload()
		})
	}
}

// A partition moves to a new member only once its owner has revoked it.
func TestConsumerRevocationBeforeReassignment(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 4})
	a := h.newMember("g")
	h.converge(a)
	if a.owned.count() != 4 {
		t.Fatalf("a owns %v", a.owned)
	}

	b := h.newMember("g")
	r := h.beat(b) // epoch 2: b's target is two partitions a still owns
	if r.MemberEpoch != 2 || respAssignment(r).count() != 0 {
		t.Fatalf("b joins: epoch %d assignment %v", r.MemberEpoch, respAssignment(r))
	}
	if st := h.cg("g").members[b.id].state; st != memberUnreleased {
		t.Fatalf("b state %d, want unreleased", st)
	}
	// a learns it must give up two partitions; it stays at epoch 1.
	keep := a.owned
	r = h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: a.epoch, owned: keep})
	if r.MemberEpoch != 1 || respAssignment(r).count() != 2 {
		t.Fatalf("a told to revoke: epoch %d assignment %v", r.MemberEpoch, respAssignment(r))
	}
	next := respAssignment(r)
	// b asks again before a revoked: still nothing.
	if r := h.beat(b); respAssignment(r).count() != 0 && r.Assignment != nil {
		t.Fatalf("b got %v before a revoked", respAssignment(r))
	}
	if h.cg("g").state() != cgReconciling {
		t.Fatalf("state %s", h.cg("g").state())
	}
	// a still reports the revoked partitions: nothing moves.
	r = h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: 1, owned: keep})
	if r.MemberEpoch != 1 {
		t.Fatalf("a moved on before revoking: %+v", r)
	}
	// a revokes: it moves to epoch 2, then b gets the two partitions.
	a.owned = next
	if r := h.beat(a); r.MemberEpoch != 2 {
		t.Fatalf("a after revoking: %+v", r)
	}
	h.beat(b)
	if b.owned.count() != 2 {
		t.Fatalf("b owns %v after a revoked", b.owned)
	}
	h.checkPartitioned([]*cgSim{a, b}, map[string]int32{"t": 4}, 0)
	if h.cg("g").state() != cgStable {
		t.Fatalf("state %s", h.cg("g").state())
	}
	h.reload()
}

func TestConsumerLeave(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 4})
	a, b := h.newMember("g"), h.newMember("g")
	h.converge(a, b)
	epoch := h.cg("g").epoch

	r := h.cgHeartbeat(cgReq{group: "g", member: b.id, epoch: leaveEpoch})
	if r.ErrorCode != 0 || r.MemberEpoch != leaveEpoch || *r.MemberID != b.id {
		t.Fatalf("leave: %+v", r)
	}
	cg := h.cg("g")
	if cg.members[b.id] != nil || cg.epoch != epoch+1 || cg.target[b.id] != nil {
		t.Fatalf("after leave: epoch %d members %v", cg.epoch, sortedIDs(cg.members))
	}
	h.converge(a)
	h.checkPartitioned([]*cgSim{a}, map[string]int32{"t": 4}, 0)
	wantCode(t, "heartbeat after leave", h.cgHeartbeat(cgReq{group: "g", member: b.id, epoch: b.epoch}).ErrorCode,
		kerr.UnknownMemberID.Code)
	h.reload()

	// The last member leaves: the group is Empty and can be deleted.
	h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: leaveEpoch})
	if s := h.cg("g").state(); s != cgEmpty {
		t.Fatalf("state %s", s)
	}
	d := h.deleteGroups("g")
	wantCode(t, "delete", d[0].ErrorCode, 0)
	if h.c.groups.byID["g"] != nil {
		t.Fatal("group survives deletion")
	}
	c := h.reload()
	if c.groups.byID["g"] != nil {
		t.Fatal("group survives replay of its tombstones")
	}
}

func TestConsumerSessionExpiry(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 4})
	a, b := h.newMember("g"), h.newMember("g")
	h.converge(a, b)
	// b goes silent; a keeps heartbeating every 5 s.
	for i := 0; i < 8; i++ {
		h.advance(5 * time.Second)
		h.beat(a)
	}
	if h.cg("g").members[b.id] == nil {
		t.Fatal("b removed after 40 s of silence")
	}
	h.advance(5 * time.Second)
	if h.cg("g").members[b.id] != nil {
		t.Fatal("b still a member after 45 s of silence")
	}
	h.converge(a)
	h.checkPartitioned([]*cgSim{a}, map[string]int32{"t": 4}, 0)
	wantCode(t, "expired member", h.beat(b).ErrorCode, kerr.UnknownMemberID.Code)
	h.reload()
}

func TestConsumerSessionTimeoutExact(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 1})
	a := h.newMember("g")
	h.converge(a)
	h.advance(45*time.Second - time.Millisecond)
	if h.cg("g").members[a.id] == nil {
		t.Fatal("removed before the session timeout")
	}
	h.advance(time.Millisecond)
	if h.cg("g").members[a.id] != nil {
		t.Fatal("not removed at the session timeout")
	}
}

// A member that does not revoke within its rebalance timeout is removed.
func TestConsumerRebalanceTimeout(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 2})
	a := h.newMember("g")
	h.converge(a)
	b := h.newMember("g")
	h.beat(b)
	// a hears that it must revoke, but keeps reporting both partitions.
	held := a.owned
	h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: a.epoch, owned: held})
	for i := 0; i < 3; i++ {
		h.advance(3 * time.Second)
		h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: a.epoch, owned: held})
		h.beat(b)
	}
	if h.cg("g").members[a.id] == nil {
		t.Fatal("a removed before its rebalance timeout (10 s)")
	}
	h.advance(2 * time.Second)
	if h.cg("g").members[a.id] != nil {
		t.Fatal("a not removed after its rebalance timeout")
	}
	wantCode(t, "fenced member", h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: a.epoch, owned: held}).ErrorCode,
		kerr.UnknownMemberID.Code)
	h.converge(b)
	h.checkPartitioned([]*cgSim{b}, map[string]int32{"t": 2}, 0)
}

func TestConsumerFencing(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 4})
	a, b := h.newMember("g"), h.newMember("g")
	h.converge(a, b)
	e := a.epoch

	fenced := kerr.FencedMemberEpoch.Code
	wantCode(t, "epoch ahead", h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: e + 1, owned: a.owned}).ErrorCode, fenced)
	wantCode(t, "epoch behind, owned not reported", h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: e - 1}).ErrorCode, fenced)
	wantCode(t, "unknown member", h.cgHeartbeat(cgReq{group: "g", member: "nobody", epoch: e}).ErrorCode,
		kerr.UnknownMemberID.Code)
	wantCode(t, "unknown group", h.cgHeartbeat(cgReq{group: "nope", member: a.id, epoch: e}).ErrorCode,
		kerr.GroupIDNotFound.Code)

	// The previous epoch is accepted while the member owns a subset of its
	// assignment: the response that bumped it may have been lost.
	c := h.newMember("g")
	h.converge(a, b, c)
	m := h.cg("g").members[a.id]
	if m.prevEpoch == m.epoch {
		t.Fatalf("a did not move: %+v", m.memberAssignment)
	}
	r := h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: m.prevEpoch, owned: a.owned})
	wantCode(t, "previous epoch with owned subset", r.ErrorCode, 0)
	if r.MemberEpoch != m.epoch {
		t.Fatalf("previous epoch answered with epoch %d", r.MemberEpoch)
	}
	extra := a.owned.clone()
	extra.add(topicID("t"), 99)
	wantCode(t, "previous epoch with foreign partitions",
		h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: m.prevEpoch, owned: extra}).ErrorCode, fenced)

	// A fenced member rejoins with epoch 0 and its member id.
	r = h.cgHeartbeat(cgReq{group: "g", member: a.id, epoch: 0})
	wantCode(t, "rejoin", r.ErrorCode, 0)
	if r.Assignment == nil || r.MemberEpoch != h.cg("g").members[a.id].epoch {
		t.Fatalf("rejoin: %+v", r)
	}
	a.take(r)
	h.converge(a, b, c)
	h.checkPartitioned([]*cgSim{a, b, c}, map[string]int32{"t": 4}, 1)
	h.reload()
}

func TestConsumerStaticMemberRejoin(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 6})
	a, b := h.newMember("g"), h.newMember("g")
	a.id, a.instance = "a-1", "ia"
	b.id, b.instance = "b-1", "ib"
	h.converge(a, b)
	owned, epoch := a.owned, h.cg("g").epoch

	// A second process with the same instance id is refused.
	r := h.cgHeartbeat(cgReq{group: "g", member: "a-2", instance: "ia", epoch: 0})
	wantCode(t, "instance in use", r.ErrorCode, kerr.UnreleasedInstanceID.Code)
	wantCode(t, "instance held by another id", h.cgHeartbeat(cgReq{group: "g", member: "a-2", instance: "ia", epoch: 1}).ErrorCode,
		kerr.FencedInstanceID.Code)

	// a leaves for now (-2): it keeps its partitions; b does not get them.
	r = h.cgHeartbeat(cgReq{group: "g", member: a.id, instance: "ia", epoch: staticLeaveEpoch})
	if r.ErrorCode != 0 || r.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave: %+v", r)
	}
	h.converge(b)
	if b.owned.count() != 3 || h.cg("g").epoch != epoch {
		t.Fatalf("b owns %v, epoch %d: a's leave rebalanced", b.owned, h.cg("g").epoch)
	}
	// a comes back as a new process: same partitions, no new epoch.
	a2 := &cgSim{group: "g", id: "a-2", instance: "ia", topics: []string{"t"}, owned: assignment{}}
	r = h.beat(a2)
	wantCode(t, "static rejoin", r.ErrorCode, 0)
	if !a2.owned.equal(owned) || h.cg("g").epoch != epoch || r.MemberEpoch != epoch {
		t.Fatalf("rejoined with %v epoch %d (group %d), want %v at %d", a2.owned, r.MemberEpoch, h.cg("g").epoch, owned, epoch)
	}
	if h.cg("g").members[a.id] != nil {
		t.Fatal("old member id still in the group")
	}
	wantCode(t, "old member id", h.cgHeartbeat(cgReq{group: "g", member: a.id, instance: "ia", epoch: epoch}).ErrorCode,
		kerr.FencedInstanceID.Code)
	h.converge(a2, b)
	h.checkPartitioned([]*cgSim{a2, b}, map[string]int32{"t": 6}, 0)
	h.reload()

	// A static member that leaves for good (-1) is removed.
	h.cgHeartbeat(cgReq{group: "g", member: b.id, instance: "ib", epoch: leaveEpoch})
	if h.cg("g").members[b.id] != nil {
		t.Fatal("b still a member")
	}
	// One that left for now and does not come back expires.
	h.cgHeartbeat(cgReq{group: "g", member: a2.id, instance: "ia", epoch: staticLeaveEpoch})
	h.advance(45 * time.Second)
	if len(h.cg("g").members) != 0 {
		t.Fatalf("members %v after the session timeout", sortedIDs(h.cg("g").members))
	}
}

func TestConsumerPartitionGrowth(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 2, "other": 1})
	a, b := h.newMember("g"), h.newMember("g")
	h.converge(a, b)
	epoch := h.cg("g").epoch

	// A topic the group does not read changes nothing.
	h.setTopics(map[string]int32{"t": 2, "other": 5})
	h.converge(a, b)
	if h.cg("g").epoch != epoch {
		t.Fatal("an unrelated topic bumped the epoch")
	}
	h.setTopics(map[string]int32{"t": 6, "other": 5})
	if h.cg("g").epoch != epoch {
		t.Fatal("SetTopics itself bumped the epoch; Kafka waits for a heartbeat")
	}
	h.converge(a, b)
	if h.cg("g").epoch != epoch+1 || h.cg("g").subMeta["t"].partitions != 6 {
		t.Fatalf("epoch %d metadata %v", h.cg("g").epoch, h.cg("g").subMeta)
	}
	h.checkPartitioned([]*cgSim{a, b}, map[string]int32{"t": 6}, 0)

	// The topic goes: the members are left with nothing.
	h.setTopics(map[string]int32{"other": 5})
	h.converge(a, b)
	if a.owned.count()+b.owned.count() != 0 {
		t.Fatalf("deleted topic still owned: %v %v", a.owned, b.owned)
	}
	h.reload()
}

func TestConsumerSubscriptionChange(t *testing.T) {
	h := newHarness(t, cgConfig())
	counts := map[string]int32{"x": 3, "y": 3}
	h.setTopics(counts)
	a, b := h.newMember("g", "x"), h.newMember("g", "y")
	h.converge(a, b)
	if a.owned.count() != 3 || b.owned.count() != 3 || len(a.owned) != 1 {
		t.Fatalf("a %v b %v", a.owned, b.owned)
	}
	// b subscribes to both: the group rebalances over x and y.
	r := h.cgHeartbeat(cgReq{group: "g", member: b.id, epoch: b.epoch, owned: b.owned, topics: []string{"x", "y"}})
	wantCode(t, "subscription change", r.ErrorCode, 0)
	b.take(r)
	h.converge(a, b)
	h.checkPartitioned([]*cgSim{a, b}, counts, 3)
	h.reload()
}

func TestConsumerRegexSubscription(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"orders-eu": 2, "orders-us": 2, "users": 2})
	re := "orders-.*"
	r := h.cgHeartbeat(cgReq{group: "g", member: "m", epoch: 0, regex: &re})
	wantCode(t, "regex join", r.ErrorCode, 0)
	m := &cgSim{group: "g", id: "m", owned: assignment{}}
	m.take(r)
	h.converge(m)
	h.checkPartitioned([]*cgSim{m}, map[string]int32{"orders-eu": 2, "orders-us": 2}, 0)
	// A new matching topic is picked up after SetTopics.
	h.setTopics(map[string]int32{"orders-eu": 2, "orders-us": 2, "orders-ap": 1, "users": 2})
	h.converge(m)
	h.checkPartitioned([]*cgSim{m}, map[string]int32{"orders-eu": 2, "orders-us": 2, "orders-ap": 1}, 0)
	h.reload()

	bad := "orders-("
	wantCode(t, "bad regex", h.cgHeartbeat(cgReq{group: "g", member: "n", epoch: 0, regex: &bad}).ErrorCode,
		kerr.InvalidRegularExpression.Code)
	// The last member leaves: the resolved regex goes with it.
	h.cgHeartbeat(cgReq{group: "g", member: "m", epoch: leaveEpoch})
	if len(h.cg("g").regexes) != 0 {
		t.Fatalf("regexes %v", h.cg("g").regexes)
	}
	h.reload()
}

func TestConsumerMaxSize(t *testing.T) {
	cfg := cgConfig()
	cfg.Consumer.MaxSize = 2
	h := newHarness(t, cfg)
	h.setTopics(map[string]int32{"t": 2})
	a, b, c := h.newMember("g"), h.newMember("g"), h.newMember("g")
	h.converge(a, b)
	r := h.beat(c)
	wantCode(t, "third member", r.ErrorCode, kerr.GroupMaxSizeReached.Code)
	if r.ErrorMessage == nil || *r.ErrorMessage != "The consumer group has reached its maximum capacity of 2 members." {
		t.Fatalf("message %q", derefString(r.ErrorMessage))
	}
	wantCode(t, "member of a full group", h.beat(a).ErrorCode, 0)
}

// A coordinator that takes over a group (LoadPartition) rebuilds it from
// the log; members carry on with their epochs and nothing moves.
func TestConsumerFailover(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 4})
	a, b := h.newMember("g"), h.newMember("g")
	a.id, a.instance = "a", "ia"
	h.converge(a, b)
	h.cgHeartbeat(cgReq{group: "g", member: a.id, instance: "ia", epoch: staticLeaveEpoch})
	a.epoch, a.owned = 0, assignment{}
	epoch := h.cg("g").epoch

	// The new coordinator loads before it hears of the topics: heartbeats
	// must not take the topics for deleted.
	h.c = h.reload()
	h.c.groups.topics = topicImage{}
	r := h.beat(b)
	wantCode(t, "heartbeat after failover", r.ErrorCode, 0)
	if h.cg("g").epoch != epoch || !respAssignment(r).equal(b.owned) && r.Assignment != nil {
		t.Fatalf("epoch %d -> %d, assignment %v", epoch, h.cg("g").epoch, respAssignment(r))
	}
	h.setTopics(map[string]int32{"t": 4})
	h.converge(b)
	if h.cg("g").epoch != epoch {
		t.Fatalf("epoch %d -> %d: same topics, yet a rebalance", epoch, h.cg("g").epoch)
	}
	// The static member that left comes back with its partitions.
	a.id = "a2"
	h.converge(a, b)
	h.checkPartitioned([]*cgSim{a, b}, map[string]int32{"t": 4}, 0)
	h.reload()
	// Timers were restored: a silent member expires.
	h.advance(46 * time.Second)
	if len(h.cg("g").members) != 0 {
		t.Fatal("members survived their sessions after the failover")
	}
}
