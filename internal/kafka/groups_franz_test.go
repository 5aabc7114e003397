package kafka_test

// Consumer groups with franz-go: kgo group members with every balancer,
// eager and cooperative, autocommitting and committing by hand; kadm's
// group administration; static membership; session expiry; a group that
// lives through a broker restart; many groups at once.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Three members over six partitions with each balancer: the group consumes
// everything exactly once while members join one by one, then one member
// leaves, its partitions move to the other two (with a cooperative
// balancer the others keep theirs) and the group again consumes
// everything exactly once, committed offsets at the end of every partition.
func TestGroupFranzBalancers(t *testing.T) {
	n := grpNode(t, nil)
	for _, tc := range []struct {
		name        string
		balancer    kgo.GroupBalancer
		protocol    string
		cooperative bool
		manual      bool
	}{
		{"range-autocommit", kgo.RangeBalancer(), "range", false, false},
		{"roundrobin-manual", kgo.RoundRobinBalancer(), "roundrobin", false, true},
		{"sticky-autocommit", kgo.StickyBalancer(), "sticky", false, false},
		{"cooperative-sticky-autocommit", kgo.CooperativeStickyBalancer(), "cooperative-sticky", true, false},
		{"cooperative-sticky-manual", kgo.CooperativeStickyBalancer(), "cooperative-sticky", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := cliCtx(t)
			adm := cliAdmin(t, n.Addr)
			topic, group := "grp-bal-"+tc.name, "g-"+tc.name
			cliCreateTopic(t, ctx, adm, topic, 6, nil)
			prod := grpProducer(t, n.Addr)
			produced := grpTopics{}
			grpProduce(t, ctx, prod, produced, topic, 6, 30, "first")

			led := &grpLedger{}
			cfg := grpMemberCfg{group: group, topics: []string{topic}, balancer: tc.balancer, manual: tc.manual}
			var ms []*grpMember
			for i := range 3 {
				ms = append(ms, grpStart(t, n.Addr, fmt.Sprintf("m%d", i), led, cfg))
			}
			grpConsumedAll(t, ctx, led, produced.total(), ms...)
			before := grpStable(t, ctx, adm, group, map[string]int32{topic: 6}, "m0", "m1", "m2")
			for name, a := range before {
				if a.count() != 2 {
					t.Fatalf("%s owns %s; 6 partitions over 3 members should give 2 each (%v)", name, a, before)
				}
			}
			d, _ := grpDescribe(t, ctx, adm, group)
			if d.Protocol != tc.protocol || d.ProtocolType != "consumer" {
				t.Fatalf("group protocol %q type %q, want %q consumer", d.Protocol, d.ProtocolType, tc.protocol)
			}
			grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
			led.check(t, produced)

			// m1 leaves; its two partitions go to m0 and m2.
			revokedBefore := map[string]int{"m0": ms[0].revokedCount(), "m2": ms[2].revokedCount()}
			ms[1].close()
			grpProduce(t, ctx, prod, produced, topic, 6, 30, "second")
			grpConsumedAll(t, ctx, led, produced.total(), ms[0], ms[2])
			after := grpStable(t, ctx, adm, group, map[string]int32{topic: 6}, "m0", "m2")
			if tc.cooperative {
				for _, name := range []string{"m0", "m2"} {
					for _, p := range before[name][topic] {
						if !slices.Contains(after[name][topic], p) {
							t.Fatalf("cooperative rebalance moved %s-%d away from %s: before %v, after %v", topic, p, name, before, after)
						}
					}
				}
				if tc.manual {
					for i, name := range map[int]string{0: "m0", 2: "m2"} {
						if got := ms[i].revokedCount(); got != revokedBefore[name] {
							t.Fatalf("cooperative rebalance revoked partitions of %s (%d revoked, %d before the leave)", name, got, revokedBefore[name])
						}
					}
				}
			}
			grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
			led.check(t, produced)
			grpCheckMembers(t, ms...)
		})
	}
}

// kadm's group administration against a live group and after it empties:
// describe, list by state, fetch, delete offsets, delete groups, and
// commits to a group that has no members.
func TestGroupFranzAdmin(t *testing.T) {
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic, other, group := "grp-admin", "grp-admin-other", "g-admin"
	cliCreateTopic(t, ctx, adm, topic, 4, nil)
	cliCreateTopic(t, ctx, adm, other, 2, nil)
	prod := grpProducer(t, n.Addr)
	produced := grpTopics{}
	grpProduce(t, ctx, prod, produced, topic, 4, 10, "a")
	grpProduce(t, ctx, prod, produced, other, 2, 10, "a")

	led := &grpLedger{}
	cfg := grpMemberCfg{group: group, topics: []string{topic}, balancer: kgo.RangeBalancer(), manual: true}
	m0 := grpStart(t, n.Addr, "a0", led, cfg)
	m1 := grpStart(t, n.Addr, "a1", led, cfg)
	grpConsumedAll(t, ctx, led, 40, m0, m1)
	as := grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "a0", "a1")
	if as["a0"].String() != topic+"[0 1]" || as["a1"].String() != topic+"[2 3]" {
		// Range gives the first two partitions to the member whose id
		// sorts first; ids are "clientID-uuid", so a0.
		t.Fatalf("range assignment %v, want a0 %s[0 1], a1 %s[2 3]", as, topic, topic)
	}
	led.check(t, grpTopics{topic: produced[topic]})
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))

	// Lag (DescribeGroups, OffsetFetch and ListOffsets together): nothing
	// left to read, every partition owned by a member.
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	l := lags[group]
	if err := l.Error(); err != nil || l.Lag.Total() != 0 || len(l.Lag[topic]) != 4 {
		t.Fatalf("Lag: %v, total %d over %d partitions; want 0 over 4", err, l.Lag.Total(), len(l.Lag[topic]))
	}
	for p, ml := range l.Lag[topic] {
		if ml.Member == nil || ml.Commit.At != 10 {
			t.Fatalf("Lag of %s-%d: member %v, commit %d; want an owner and 10", topic, p, ml.Member, ml.Commit.At)
		}
	}

	// DescribeGroups.
	d, _ := grpDescribe(t, ctx, adm, group)
	if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 2 {
		t.Fatalf("described %+v", d)
	}
	for _, m := range d.Members {
		if !strings.HasPrefix(m.MemberID, m.ClientID+"-") || m.ClientHost != "/127.0.0.1" || m.InstanceID != nil {
			t.Fatalf("member %+v: want id clientID-uuid, host /127.0.0.1, no instance id", m)
		}
		meta, ok := m.Join.AsConsumer()
		if !ok || len(meta.Topics) != 1 || meta.Topics[0] != topic {
			t.Fatalf("member %s metadata %+v, want a subscription to %s", m.ClientID, meta, topic)
		}
	}
	if d.Coordinator.NodeID != 1 {
		t.Fatalf("coordinator %+v, want node 1", d.Coordinator)
	}

	// ListGroups with and without a state filter.
	listed := func(states ...string) []string {
		ls, err := adm.ListGroups(ctx, states...)
		if err != nil {
			t.Fatal(err)
		}
		return ls.Groups()
	}
	if got := listed(); !slices.Contains(got, group) {
		t.Fatalf("ListGroups: %v, want %s among them", got, group)
	}
	if got := listed("Stable"); !slices.Equal(got, []string{group}) {
		t.Fatalf("ListGroups(Stable): %v", got)
	}
	if got := listed("Empty", "Dead"); slices.Contains(got, group) {
		t.Fatalf("ListGroups(Empty, Dead): %v lists the stable group", got)
	}

	// Deleting a live group fails; so does deleting the offsets of a topic
	// it subscribes to, while other topics' offsets can go.
	dr, err := adm.DeleteGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dr[group].Err, kerr.NonEmptyGroup) {
		t.Fatalf("DeleteGroups of a live group: %v, want NON_EMPTY_GROUP", dr[group].Err)
	}
	// A member commits an offset of a topic the group does not consume.
	var commitErr error
	m0.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{other: {0: {Epoch: -1, Offset: 7}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						err = errors.Join(err, kerr.ErrorForCode(rp.ErrorCode))
					}
				}
			}
			commitErr = err
		})
	if commitErr != nil {
		t.Fatalf("a member's commit of %s-0: %v", other, commitErr)
	}
	grpWait(t, ctx, "the commit on "+other, func() (bool, string) {
		os, err := adm.FetchOffsetsForTopics(ctx, group, other)
		if err != nil {
			return false, err.Error()
		}
		o, _ := os.Lookup(other, 0)
		return o.At == 7, fmt.Sprint(o)
	})
	del, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {0: {}}, other: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := del[topic][0]; !errors.Is(err, kerr.GroupSubscribedToTopic) {
		t.Fatalf("OffsetDelete of a subscribed topic: %v, want GROUP_SUBSCRIBED_TO_TOPIC", err)
	}
	if err, ok := del.Lookup(other, 0); !ok || err != nil {
		t.Fatalf("OffsetDelete of an unsubscribed topic: %v", err)
	}
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := os.Lookup(other, 0); ok {
		t.Fatalf("offset of %s-0 still there after OffsetDelete: %v", other, os)
	}
	if o, ok := os.Lookup(topic, 0); !ok || o.At != 10 {
		t.Fatalf("offset of %s-0 %v, want 10 (its delete was refused)", topic, o)
	}

	// Both members leave: the group is Empty, keeps its offsets, and can
	// lose them.
	m0.close()
	m1.close()
	grpWait(t, ctx, "the group to be Empty", func() (bool, string) {
		d, _ := grpDescribe(t, ctx, adm, group)
		return d.State == "Empty" && len(d.Members) == 0, d.State
	})
	if got := listed("empty"); !slices.Equal(got, []string{group}) {
		t.Fatalf("ListGroups(empty): %v", got)
	}
	if got := listed("Stable"); len(got) != 0 {
		t.Fatalf("ListGroups(Stable): %v, want none", got)
	}
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
	del, err = adm.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {1: {}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("OffsetDelete of an empty group: %v %v", err, del)
	}
	grpCommitted(t, ctx, adm, group, topic, map[int32]int64{0: 10, 2: 10, 3: 10})
	dr, err = adm.DeleteGroups(ctx, group)
	if err != nil || dr[group].Err != nil {
		t.Fatalf("DeleteGroups of an empty group: %v %v", err, dr[group].Err)
	}
	os, err = adm.FetchOffsets(ctx, group)
	if err != nil || len(os) != 0 {
		t.Fatalf("offsets after DeleteGroups: %v %v", os, err)
	}
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[group]; !errors.Is(d.Err, kerr.GroupIDNotFound) && d.State != "Dead" {
		t.Fatalf("describing a deleted group: state %s err %v", d.State, d.Err)
	}
	dr, err = adm.DeleteGroups(ctx, group)
	if err != nil || !errors.Is(dr[group].Err, kerr.GroupIDNotFound) {
		t.Fatalf("DeleteGroups of a deleted group: %v %v, want GROUP_ID_NOT_FOUND", err, dr[group].Err)
	}

	// Simple commits: a group with no members takes offsets from anyone,
	// and a member joining later starts there.
	simple := "g-simple"
	var commit kadm.Offsets
	for p := int32(0); p < 4; p++ {
		commit.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(3 + p), LeaderEpoch: -1, Metadata: fmt.Sprintf("meta-%d", p)})
	}
	cr, err := adm.CommitOffsets(ctx, simple, commit)
	if err != nil || cr.Error() != nil {
		t.Fatalf("CommitOffsets to a group with no members: %v %v", err, cr.Error())
	}
	os, err = adm.FetchOffsets(ctx, simple)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		o, ok := os.Lookup(topic, p)
		if !ok || o.At != int64(3+p) || o.Metadata != fmt.Sprintf("meta-%d", p) {
			t.Fatalf("fetched %+v for %s-%d, want offset %d with its metadata", o, topic, p, 3+p)
		}
	}
	// OffsetFetch of several groups in one request (v8+).
	many := adm.FetchManyOffsets(ctx, simple, group, "g-never-used")
	if err := many.Error(); err != nil || len(many) != 3 {
		t.Fatalf("FetchManyOffsets: %v (%d groups)", err, len(many))
	}
	if o, ok := many[simple].Fetched.Lookup(topic, 2); !ok || o.At != 5 {
		t.Fatalf("FetchManyOffsets: %s has %+v at %s-2, want 5", simple, o, topic)
	}
	if n := len(many[group].Fetched) + len(many["g-never-used"].Fetched); n != 0 {
		t.Fatalf("FetchManyOffsets: a deleted and an unknown group hold offsets: %v", many)
	}
	d, _ = grpDescribe(t, ctx, adm, simple)
	if d.State != "Empty" || d.ProtocolType != "" {
		t.Fatalf("a group with only simple commits: state %s protocol type %q, want Empty and none", d.State, d.ProtocolType)
	}
	led2 := &grpLedger{}
	s0 := grpStart(t, n.Addr, "s0", led2, grpMemberCfg{group: simple, topics: []string{topic}, manual: true})
	grpConsumedAll(t, ctx, led2, 40-(3+4+5+6), s0)
	for _, c := range led2.snapshot() {
		if c.offset < int64(3+c.partition) {
			t.Fatalf("member of the simple group read %s-%d offset %d, before the committed %d", c.topic, c.partition, c.offset, 3+c.partition)
		}
	}
	// With a member in it, a commit without generation is refused.
	cr, err = adm.CommitOffsets(ctx, simple, commit)
	if err == nil {
		err = cr.Error()
	}
	if !errors.Is(err, kerr.UnknownMemberID) && !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("CommitOffsets without a generation to a group with members: %v, want an error", err)
	}
	grpCheckMembers(t, s0)
}

// Static members (KIP-345) that restart within the session timeout get
// their partitions back without a rebalance: the generation stays the
// same and the other member is not disturbed. That holds for the leader
// too. The balancer is range, which orders static members by instance id:
// a restarted kgo leader balances anyway and forces a rebalance when its
// plan differs from the stored one, and with a sticky balancer it would,
// because a restarted member's subscription names no owned partitions.
func TestGroupFranzStaticMembership(t *testing.T) {
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic, group := "grp-static", "g-static"
	cliCreateTopic(t, ctx, adm, topic, 4, nil)
	prod := grpProducer(t, n.Addr)
	produced := grpTopics{}
	grpProduce(t, ctx, prod, produced, topic, 4, 20, "a")

	led := &grpLedger{}
	cfg := func(id string) grpMemberCfg {
		return grpMemberCfg{group: group, topics: []string{topic}, balancer: kgo.RangeBalancer(), manual: true,
			instanceID: id, session: 20 * time.Second}
	}
	ms := map[string]*grpMember{}
	ms["s0"] = grpStart(t, n.Addr, "s0", led, cfg("inst-0"))
	grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "s0")
	ms["s1"] = grpStart(t, n.Addr, "s1", led, cfg("inst-1"))
	grpConsumedAll(t, ctx, led, produced.total(), ms["s0"], ms["s1"])
	before := grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "s0", "s1")
	_, gen := ms["s0"].cl.GroupMetadata()
	if _, gen1 := ms["s1"].cl.GroupMetadata(); gen1 != gen {
		t.Fatalf("members disagree on the generation: %d and %d", gen, gen1)
	}
	d, _ := grpDescribe(t, ctx, adm, group)
	for _, m := range d.Members {
		if m.InstanceID == nil {
			t.Fatalf("member %s has no instance id", m.MemberID)
		}
	}
	// kgo's leader is the first to join: s0.
	leader, follower := "s0", "s1"

	for _, restart := range []string{follower, leader} {
		other := follower
		if restart == follower {
			other = leader
		}
		assignsOther := ms[other].assignCount()
		oldID, _ := ms[restart].cl.GroupMetadata()
		id := map[string]string{"s0": "inst-0", "s1": "inst-1"}[restart]
		ms[restart].close() // static: commits, does not leave
		d, as := grpDescribe(t, ctx, adm, group)
		if d.State != "Stable" || len(d.Members) != 2 || as[restart].String() != before[restart].String() {
			t.Fatalf("after static member %s closed: state %s, assignments %v; want Stable, unchanged", restart, d.State, as)
		}
		grpProduce(t, ctx, prod, produced, topic, 4, 5, "while-"+restart+"-away")
		ms[restart] = grpStart(t, n.Addr, restart, led, cfg(id))
		grpConsumedAll(t, ctx, led, produced.total(), ms["s0"], ms["s1"])
		newID, newGen := ms[restart].cl.GroupMetadata()
		if newID == oldID || !strings.HasPrefix(newID, id+"-") {
			t.Fatalf("restarted static member %s got member id %q (old %q), want a new %s-uuid", restart, newID, oldID, id)
		}
		if newGen != gen {
			t.Fatalf("static member %s restarted: generation %d, want %d (no rebalance)", restart, newGen, gen)
		}
		if _, g := ms[other].cl.GroupMetadata(); g != gen {
			t.Fatalf("static member %s restarted: %s is at generation %d, want %d", restart, other, g, gen)
		}
		if got := ms[other].assignCount(); got != assignsOther {
			t.Fatalf("static member %s restarted: %s was assigned again (%d assignments, %d before)", restart, other, got, assignsOther)
		}
		after := grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "s0", "s1")
		if after[restart].String() != before[restart].String() || after[other].String() != before[other].String() {
			t.Fatalf("static member %s restarted: assignments %v, before %v", restart, after, before)
		}
	}
	led.check(t, produced)
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))

	// A static member that is gone for good is removed by its instance id
	// (KIP-345's admin LeaveGroup); the other takes its partitions.
	ms["s1"].close()
	lr, err := adm.LeaveGroup(ctx, kadm.LeaveGroup(group).InstanceIDs("inst-1", "inst-unknown"))
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := lr["inst-1"]; !ok || l.Err != nil {
		t.Fatalf("LeaveGroup of inst-1: %+v", l)
	}
	if l := lr["inst-unknown"]; !errors.Is(l.Err, kerr.UnknownMemberID) {
		t.Fatalf("LeaveGroup of an unknown instance: %+v, want UNKNOWN_MEMBER_ID", l)
	}
	grpProduce(t, ctx, prod, produced, topic, 4, 5, "after-removal")
	grpConsumedAll(t, ctx, led, produced.total(), ms["s0"])
	grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "s0")
	led.check(t, produced)
	grpCheckMembers(t, ms["s0"], ms["s1"])
}

func (m *grpMember) assignCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assigns
}

// A member that stops heartbeating is removed when its session times out,
// and its partitions go to the members still alive. The silent member is
// a raw client that joins and syncs once and then says nothing.
func TestGroupFranzSessionExpiry(t *testing.T) {
	const session = 800 * time.Millisecond
	n := grpNode(t, map[string]string{"group.min.session.timeout.ms": "500"})
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic, group := "grp-expiry", "g-expiry"
	cliCreateTopic(t, ctx, adm, topic, 4, nil)
	prod := grpProducer(t, n.Addr)
	produced := grpTopics{}
	grpProduce(t, ctx, prod, produced, topic, 4, 10, "a")

	led := &grpLedger{}
	cfg := grpMemberCfg{group: group, topics: []string{topic}, balancer: kgo.RangeBalancer(), manual: true}
	m0 := grpStart(t, n.Addr, "e0", led, cfg)
	m1 := grpStart(t, n.Addr, "e1", led, cfg)
	grpConsumedAll(t, ctx, led, produced.total(), m0, m1)
	grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "e0", "e1")

	// The silent member: JoinGroup (twice: the first gets its member id),
	// SyncGroup, and nothing more.
	raw := cliFranz(t, n.Addr, kgo.ClientID("silent"))
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = group, int32(session.Milliseconds()), 10000
	join.ProtocolType = "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name, proto.Metadata = "range", meta.AppendTo(nil)
	join.Protocols = append(join.Protocols, proto)
	jr, err := join.RequestWith(ctx, raw)
	if err != nil || jr.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first JoinGroup: %v %v, want MEMBER_ID_REQUIRED", err, kerr.ErrorForCode(jr.ErrorCode))
	}
	join.MemberID = jr.MemberID
	jr, err = join.RequestWith(ctx, raw)
	if err != nil || jr.ErrorCode != 0 {
		t.Fatalf("JoinGroup: %v %v", err, kerr.ErrorForCode(jr.ErrorCode))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, join.MemberID, jr.Generation
	sr, err := sync.RequestWith(ctx, raw)
	if err != nil || sr.ErrorCode != 0 {
		t.Fatalf("SyncGroup: %v %v", err, kerr.ErrorForCode(sr.ErrorCode))
	}
	synced := time.Now()
	var assigned kmsg.ConsumerMemberAssignment
	if err := assigned.ReadFrom(sr.MemberAssignment); err != nil || len(assigned.Topics) != 1 || len(assigned.Topics[0].Partitions) == 0 {
		t.Fatalf("the silent member's assignment %+v (%v): want some of %s", assigned, err, topic)
	}
	_, as := grpDescribe(t, ctx, adm, group)
	if len(as) != 3 || as["silent"].count() == 0 {
		t.Fatalf("assignments with the silent member: %v", as)
	}

	// Records on its partitions wait for its session to end.
	grpProduce(t, ctx, prod, produced, topic, 4, 10, "b")
	grpConsumedAll(t, ctx, led, produced.total(), m0, m1)
	grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "e0", "e1")
	if took := time.Since(synced); took < session {
		t.Fatalf("the silent member was gone %v after its SyncGroup, before its %v session timeout", took, session)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = group, join.MemberID, jr.Generation
	hr, err := hb.RequestWith(ctx, raw)
	if err != nil || hr.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of the expired member: %v %v, want UNKNOWN_MEMBER_ID", err, kerr.ErrorForCode(hr.ErrorCode))
	}
	led.check(t, produced)
	grpCheckMembers(t, m0, m1)
}

// A running group lives through a broker restart: the coordinator reloads
// it from __consumer_offsets, so the members are known again under their
// member ids (a member whose heartbeats failed while the broker was down
// rejoins with its id and the group rebalances; one that carried on
// heartbeating is simply still there), the committed offsets are intact,
// and nothing is read twice. After another restart with no member
// running, a new member resumes at the committed offsets.
func TestGroupFranzBrokerRestart(t *testing.T) {
	n := grpNode(t, grpFixedPortOverrides(t))
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic, group := "grp-restart", "g-restart"
	cliCreateTopic(t, ctx, adm, topic, 4, nil)
	prod := grpProducer(t, n.Addr)
	produced := grpTopics{}
	grpProduce(t, ctx, prod, produced, topic, 4, 25, "before")

	led := &grpLedger{}
	cfg := grpMemberCfg{group: group, topics: []string{topic}, balancer: kgo.CooperativeStickyBalancer(), manual: true, outage: true}
	m0 := grpStart(t, n.Addr, "r0", led, cfg)
	m1 := grpStart(t, n.Addr, "r1", led, cfg)
	grpConsumedAll(t, ctx, led, produced.total(), m0, m1)
	grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "r0", "r1")
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
	d, _ := grpDescribe(t, ctx, adm, group)
	ids := map[string]bool{}
	for _, m := range d.Members {
		ids[m.MemberID] = true
	}

	n.Restart()
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
	grpProduce(t, ctx, prod, produced, topic, 4, 25, "after")
	grpConsumedAll(t, ctx, led, produced.total(), m0, m1)
	grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "r0", "r1")
	d, _ = grpDescribe(t, ctx, adm, group)
	for _, m := range d.Members {
		if !ids[m.MemberID] {
			t.Fatalf("member %s (%s) after the restart is not one of the members before it (%v): the group was not reloaded", m.MemberID, m.ClientID, ids)
		}
	}
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
	led.check(t, produced)
	grpCheckMembers(t, m0, m1)

	m0.close()
	m1.close()
	n.Restart()
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
	grpProduce(t, ctx, prod, produced, topic, 4, 5, "later")
	m2 := grpStart(t, n.Addr, "r2", led, grpMemberCfg{group: group, topics: []string{topic}, manual: true})
	grpConsumedAll(t, ctx, led, produced.total(), m2)
	led.check(t, produced)
	grpCheckMembers(t, m2)
}

// Fifty groups of two members each, over five topics, all rebalance at
// once and each consumes its topic exactly once.
func TestGroupFranzManyGroups(t *testing.T) {
	const groups, topics, parts, per = 50, 5, 4, 10
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	prod := grpProducer(t, n.Addr)
	produced := grpTopics{}
	for i := range topics {
		topic := fmt.Sprintf("grp-many-%d", i)
		cliCreateTopic(t, ctx, adm, topic, parts, nil)
		grpProduce(t, ctx, prod, produced, topic, parts, per, "a")
	}
	leds := make([]*grpLedger, groups)
	var all []*grpMember
	for g := range groups {
		leds[g] = &grpLedger{}
		topic := fmt.Sprintf("grp-many-%d", g%topics)
		cfg := grpMemberCfg{group: fmt.Sprintf("g-many-%d", g), topics: []string{topic}, manual: g%2 == 0,
			heartbeat: 250 * time.Millisecond}
		for m := range 2 {
			all = append(all, grpStart(t, n.Addr, fmt.Sprintf("g%d-m%d", g, m), leds[g], cfg))
		}
	}
	for g := range groups {
		topic := fmt.Sprintf("grp-many-%d", g%topics)
		grpConsumedAll(t, ctx, leds[g], parts*per, all[2*g], all[2*g+1])
		grpStable(t, ctx, adm, fmt.Sprintf("g-many-%d", g), map[string]int32{topic: parts}, fmt.Sprintf("g%d-m0", g), fmt.Sprintf("g%d-m1", g))
		leds[g].check(t, grpTopics{topic: produced[topic]})
	}
	ls, err := adm.ListGroups(ctx, "Stable")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(ls.Groups()); got != groups {
		t.Fatalf("ListGroups(Stable) lists %d groups, want %d", got, groups)
	}
	for g := range groups {
		topic := fmt.Sprintf("grp-many-%d", g%topics)
		grpCommitted(t, ctx, adm, fmt.Sprintf("g-many-%d", g), topic, grpEnds(produced, topic))
	}
	grpCheckMembers(t, all...)
}

// A coordinator that FindCoordinator names serves the group at once: on a
// fresh node, where the first lookups create __consumer_offsets, JoinGroup
// sent straight to the named broker right after each lookup never gets
// NOT_COORDINATOR (at most COORDINATOR_LOAD_IN_PROGRESS, which clients
// retry). Sarama's consumer group gives up after four NOT_COORDINATOR
// answers in a row, so this window broke its first join.
func TestGroupCoordinatorReadyWhenFound(t *testing.T) {
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	const lookups = 16
	codes := make(chan int16, lookups)
	var wg sync.WaitGroup
	for i := range lookups {
		cl := cliFranz(t, n.Addr) // a connection each: one connection's requests are handled in turn
		wg.Add(1)
		go func() {
			defer wg.Done()
			group := fmt.Sprintf("g-ready-%d", i)
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKey = group
			fr, err := fc.RequestWith(ctx, cl)
			if err != nil || fr.ErrorCode != 0 {
				t.Errorf("FindCoordinator %s: %v %v", group, err, kerr.ErrorForCode(fr.ErrorCode))
				return
			}
			join := kmsg.NewPtrJoinGroupRequest()
			join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 6000, 6000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			meta := kmsg.NewConsumerMemberMetadata()
			p.Name, p.Metadata = "range", meta.AppendTo(nil)
			join.Protocols = append(join.Protocols, p)
			resp, err := cl.Broker(int(fr.NodeID)).Request(ctx, join)
			if err != nil {
				t.Errorf("JoinGroup %s: %v", group, err)
				return
			}
			codes <- resp.(*kmsg.JoinGroupResponse).ErrorCode
		}()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != kerr.MemberIDRequired.Code && code != kerr.CoordinatorLoadInProgress.Code {
			t.Errorf("JoinGroup right after FindCoordinator: %v, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(code))
		}
	}
}
