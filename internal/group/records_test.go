package group

import (
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJavaUTF16Len(t *testing.T) {
	if n := javaUTF16Len("aé\U0001F600"); n != 4 {
		t.Errorf("UTF-16 length %d, want 4", n)
	}
}

func TestRecordLayouts(t *testing.T) {
	// Offset commit key v1: version, group, topic, partition.
	r := EncodeOffsetCommit("g", "t", 7, kmsg.OffsetCommitValue{Offset: 5, LeaderEpoch: 2, Metadata: "m",
		CommitTimestamp: 9, ExpireTimestamp: -1})
	if got, want := hex.EncodeToString(r.Key), "0001"+"00016"+"7"+"000174"+"00000007"; got != want {
		t.Fatalf("offset key %s, want %s", got, want)
	}
	// Value v3: version, offset, leader epoch, metadata, commit timestamp.
	want := "0003" + "0000000000000005" + "00000002" + "00016d" + "0000000000000009"
	if got := hex.EncodeToString(r.Value); got != want {
		t.Fatalf("offset value %s, want %s", got, want)
	}
	// With an expire timestamp: v1, no leader epoch.
	r = EncodeOffsetCommit("g", "t", 7, kmsg.OffsetCommitValue{Offset: 5, Metadata: "", CommitTimestamp: 9, ExpireTimestamp: 10})
	want = "0001" + "0000000000000005" + "0000" + "0000000000000009" + "000000000000000a"
	if got := hex.EncodeToString(r.Value); got != want {
		t.Fatalf("offset value v1 %s, want %s", got, want)
	}
	// Group key v2; tombstones have no value.
	r = EncodeGroupTombstone("g")
	if got := hex.EncodeToString(r.Key); got != "0002000167" || r.Value != nil {
		t.Fatalf("group tombstone %s %v", got, r.Value)
	}
	// Group value v3.
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType, v.Generation = "consumer", 3
	proto, leader, inst := "range", "m", "i"
	v.Protocol, v.Leader, v.CurrentStateTimestamp = &proto, &leader, 1
	v.Members = []kmsg.GroupMetadataValueMember{{MemberID: "m", InstanceID: &inst, ClientID: "c", ClientHost: "h",
		RebalanceTimeoutMillis: 4, SessionTimeoutMillis: 5, Subscription: []byte{1}, Assignment: []byte{2}}}
	r = EncodeGroupMetadata("g", v)
	want = "0003" + "0008" + hex.EncodeToString([]byte("consumer")) + "00000003" + "0005" + hex.EncodeToString([]byte("range")) +
		"00016d" + "0000000000000001" + "00000001" +
		"00016d" + "000169" + "000163" + "000168" + "00000004" + "00000005" + "0000000101" + "0000000102"
	if got := hex.EncodeToString(r.Value); got != want {
		t.Fatalf("group value\n got %s\nwant %s", got, want)
	}
}

// snap is the part of a group that the log must preserve.
type snap struct {
	State                  State
	Generation             int32
	ProtocolType, Protocol string
	Leader                 string
	StateTimestamp         int64
	Members                []string
	Offsets                map[topicPartition]offset
	// Txn are the pending transactional offsets (durable ones only: the
	// log holds nothing else).
	Txn string
}

func snapshot(c *Coordinator) map[string]snap {
	out := make(map[string]snap)
	for id, g := range c.groups.byID {
		s := snap{State: g.state, Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol,
			Leader: g.leader, StateTimestamp: -2, Offsets: committedOf(c.offsets.byGroup[id]), Txn: txnSnapshot(c.offsets.byGroup[id])}
		if g.state == Empty && g.protocolType != "" {
			s.StateTimestamp = g.stateTimestamp
		}
		for _, m := range g.members {
			inst := "-"
			if m.instanceID != nil {
				inst = *m.instanceID
			}
			s.Members = append(s.Members, fmt.Sprintf("%s/%s/%s/%s/%d/%d/%x/%x", m.id, inst, m.clientID, m.clientHost,
				m.rebalanceTimeoutMs, m.sessionTimeoutMs, m.metadata(g.protocol), m.assignment))
		}
		out[id] = s
	}
	return out
}

func TestReplayReproducesGroupsAndOffsets(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsRetention = time.Hour
	h := newHarness(t, cfg)

	// A simple group whose offsets expire, and so is deleted.
	h.commit("s3", "", -1, map[string]int64{"t": 7})
	h.advance(61 * time.Minute)

	// A stable group with a static member, rebalanced twice, with commits.
	a, ta := h.joinNew("g1", "a", joinOpts{})
	tb := h.join("g1", "b", "", joinOpts{instance: "sb"})
	h.tick()
	b := h.joinResp(tb).MemberID
	gen := h.stable("g1", map[string]uint64{a: ta, b: tb})
	h.commit("g1", a, gen, map[string]int64{"t": 10, "u": 20})
	ta = h.join("g1", "a", a, joinOpts{}) // the leader forces a rebalance
	tb = h.join("g1", "b", b, joinOpts{instance: "sb"})
	gen = h.stable("g1", map[string]uint64{a: ta, b: tb})
	h.commit("g1", a, gen, map[string]int64{"t": 11})
	h.join("g1", "b", "", joinOpts{instance: "sb"}) // static restart, no rebalance

	// A group whose members all left, with offsets; one offset deleted.
	c, tc := h.joinNew("g2", "c", joinOpts{})
	gen = h.stable("g2", map[string]uint64{c: tc})
	h.commit("g2", c, gen, map[string]int64{"t": 1, "v": 2})
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version, lr.Group, lr.Members = 3, "g2", []kmsg.LeaveGroupRequestMember{{MemberID: c}}
	h.send("c", lr)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g2"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "v", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	h.send("c", od)

	// Simple groups: one kept, one deleted, one whose offsets expire.
	h.commit("s1", "", -1, map[string]int64{"t": 5})
	h.commit("s2", "", -1, map[string]int64{"t": 6})
	h.deleteGroups("s2")
	h.commit("s1", "", -1, map[string]int64{"t": 8})

	want := snapshot(h.c)
	if len(h.pending) != 0 {
		t.Fatal("writes pending")
	}
	if got := fmt.Sprint(sortedKeys(want)); got != "[g1 g2 s1]" {
		t.Fatalf("groups %s, want [g1 g2 s1]", got)
	}

	fresh := New(cfg)
	for p := int32(0); p < cfg.OffsetsTopicPartitions; p++ {
		fresh.BeginLoad(h.now, p)
		if _, err := fresh.LoadPartition(h.now, p, h.log[p]); err != nil {
			t.Fatal(err)
		}
	}
	got := snapshot(fresh)
	for id := range want {
		if w := want[id]; w.State != Stable && w.State != Empty {
			t.Fatalf("group %s is %v; the test must end quiescent", id, w.State)
		}
		if !reflect.DeepEqual(got[id], want[id]) {
			t.Errorf("group %s after replay:\n got %+v\nwant %+v", id, got[id], want[id])
		}
	}
	if len(got) != len(want) {
		t.Errorf("replay has %d groups, want %d", len(got), len(want))
	}
}

func TestLoadPartition(t *testing.T) {
	h := newHarness(t, testConfig())
	p := h.c.PartitionFor("g")
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType, v.Generation = "consumer", 4
	proto, leader := "range", "m1"
	v.Protocol, v.Leader = &proto, &leader
	v.Members = []kmsg.GroupMetadataValueMember{{MemberID: "m1", ClientID: "c", RebalanceTimeoutMillis: 20000,
		SessionTimeoutMillis: 10000, Subscription: subscription("t"), Assignment: []byte("x")}}
	old := kmsg.OffsetCommitKey{Version: 0, Group: "g", Topic: "old", Partition: 0}
	recs := []Record{
		EncodeOffsetCommit("g", "t", 0, kmsg.OffsetCommitValue{Offset: 1, ExpireTimestamp: -1}),
		EncodeGroupMetadata("g", v),
		EncodeOffsetCommit("g", "t", 0, kmsg.OffsetCommitValue{Offset: 2, ExpireTimestamp: -1}),
		{Key: old.AppendTo(nil), Value: (&kmsg.OffsetCommitValue{Version: 0, Offset: 3}).AppendTo(nil)},
		EncodeOffsetCommit("g", "gone", 0, kmsg.OffsetCommitValue{Offset: 2, ExpireTimestamp: -1}),
		EncodeOffsetTombstone("g", "gone", 0),
		{Key: []byte{0, 9, 1, 2, 3}, Value: []byte{4}}, // another record type: skipped
		EncodeGroupMetadata("dead", v),
		EncodeGroupTombstone("dead"),
	}
	h.apply(h.c.UnloadPartition(h.now, p))
	h.apply(h.c.BeginLoad(h.now, p))
	wantCode(t, "join while loading", h.joinResp(h.join("g", "c", "", joinOpts{})).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	rd, err := h.c.LoadPartition(h.now, p, logRecords(recs...))
	if err != nil {
		t.Fatal(err)
	}
	h.apply(rd)
	g := h.group("g")
	if g.state != Stable || g.generation != 4 || g.leader != "m1" || string(g.byID["m1"].assignment) != "x" {
		t.Fatalf("loaded group: %v %d %q", g.state, g.generation, g.leader)
	}
	if got := h.fetch("g", "t", "old", "gone"); got["t"] != 2 || got["old"] != 3 || got["gone"] != -1 {
		t.Fatalf("loaded offsets: %v", got)
	}
	if h.c.groups.byID["dead"] != nil {
		t.Fatal("tombstoned group loaded")
	}
	// The loaded member's session runs from the load.
	wantCode(t, "loaded member heartbeat", h.heartbeat("g", "m1", 4, ""), 0)
	h.advance(10 * time.Second)
	if g.state != Empty || g.generation != 5 {
		t.Fatalf("loaded member did not expire: %v generation %d", g.state, g.generation)
	}

	// Corrupt records (as a client could have produced) are skipped and
	// reported; the records around them load and the partition serves.
	h.apply(h.c.UnloadPartition(h.now, p))
	corrupt := []Record{
		{Key: []byte{0, 1, 0}},                           // a truncated offset commit key
		{Key: old.AppendTo(nil), Value: []byte{0, 3, 1}}, // a truncated value
		{Key: []byte{0, 2, 0, 1}, Value: []byte{0xff}},   // a truncated group metadata key
		{Key: []byte{0}},                                 // a key too short for a version
	}
	loaded := append(append([]Record{}, corrupt[:2]...), EncodeOffsetCommit("g", "t", 0, kmsg.OffsetCommitValue{Offset: 7, ExpireTimestamp: -1}))
	rd, skipped := h.c.LoadPartition(h.now, p, logRecords(append(loaded, corrupt[2:]...)...))
	if len(skipped) != len(corrupt) {
		t.Fatalf("skipped %d records (%v), want %d", len(skipped), skipped, len(corrupt))
	}
	for _, err := range skipped {
		if !errors.Is(err, ErrBadRecord) {
			t.Fatalf("skip reported as %v", err)
		}
	}
	h.apply(rd)
	if got := h.fetch("g", "t"); got["t"] != 7 {
		t.Fatalf("offsets beside corrupt records: %v", got)
	}
	wantCode(t, "join after a load that skipped records", h.joinResp(h.join("g", "c", "", joinOpts{})).ErrorCode, kerr.MemberIDRequired.Code)
}

func TestUnloadAnswersWaitingRequests(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	b, tb := h.joinNew("g", "b", joinOpts{})
	h.tick()
	gen := h.joinResp(ta).Generation
	_ = tb
	sb := h.sync("g", b, gen, "", nil)
	h.autoPersist = false
	tc := h.commit("g", a, gen, map[string]int64{"t": 1}) // CompletingRebalance: answered at once
	sa := h.sync("g", a, gen, "", map[string][]byte{a: {1}})
	h.apply(h.c.UnloadPartition(h.now, h.c.PartitionFor("g")))
	wantCode(t, "commit", h.commitCodes(tc)[0], kerr.RebalanceInProgress.Code)
	wantCode(t, "leader sync", h.syncResp(sa).ErrorCode, kerr.NotCoordinator.Code)
	wantCode(t, "follower sync", h.syncResp(sb).ErrorCode, kerr.NotCoordinator.Code)
	// The write's late report is ignored.
	for _, w := range h.pending {
		h.apply(h.c.Persisted(h.now, w.ID, 0, nil))
	}
	if len(h.c.groups.byID) != 0 {
		t.Fatal("groups left after unload")
	}
}
