package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCommitWithGeneration(t *testing.T) {
	h := newHarness(t, testConfig())
	a, ta := h.joinNew("g", "a", joinOpts{})
	h.tick()
	gen := h.joinResp(ta).Generation
	wantCode(t, "commit in CompletingRebalance", h.commitCodes(h.commit("g", a, gen, map[string]int64{"t": 5}))[0],
		kerr.RebalanceInProgress.Code)
	h.stable("g", map[string]uint64{a: ta})

	h.autoPersist = false
	tok := h.commit("g", a, gen, map[string]int64{"t": 5, "u": 7})
	if h.answered(tok) {
		t.Fatal("commit answered before its records persisted")
	}
	if got := h.fetch("g", "t"); got["t"] != -1 {
		t.Fatalf("uncommitted offset visible: %v", got)
	}
	h.persistAll()
	h.autoPersist = true
	for _, c := range h.commitCodes(tok) {
		wantCode(t, "commit", c, 0)
	}
	if got := h.fetch("g", "t", "u", "v"); got["t"] != 5 || got["u"] != 7 || got["v"] != -1 {
		t.Fatalf("fetch: %v", got)
	}

	wantCode(t, "old generation", h.commitCodes(h.commit("g", a, gen-1, map[string]int64{"t": 6}))[0], kerr.IllegalGeneration.Code)
	wantCode(t, "unknown member", h.commitCodes(h.commit("g", "x", gen, map[string]int64{"t": 6}))[0], kerr.UnknownMemberID.Code)
	wantCode(t, "no member on a non-empty group", h.commitCodes(h.commit("g", "", -1, map[string]int64{"t": 6}))[0],
		kerr.UnknownMemberID.Code)
	wantCode(t, "unknown group v8", h.commitCodes(h.commit("nope", a, 1, map[string]int64{"t": 6}))[0], kerr.IllegalGeneration.Code)
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.Generation, r.MemberID = 9, "nope", 1, a
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}}}}
	wantCode(t, "unknown group v9", h.commitCodes(h.send("c", r))[0], kerr.GroupIDNotFound.Code)

	// A failed write fails the commit and changes nothing.
	h.autoPersist = false
	tok = h.commit("g", a, gen, map[string]int64{"t": 9})
	h.failWrites(kerr.NotLeaderForPartition)
	h.autoPersist = true
	wantCode(t, "failed commit", h.commitCodes(tok)[0], kerr.NotCoordinator.Code)
	if got := h.fetch("g", "t"); got["t"] != 5 {
		t.Fatalf("after failed commit: %v", got)
	}
}

func TestSimpleCommitWithoutGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	wantCode(t, "simple commit", h.commitCodes(h.commit("simple", "", -1, map[string]int64{"t": 3}))[0], 0)
	g := h.group("simple")
	if g.state != Empty || g.protocolType != "" {
		t.Fatalf("simple group: %v %q", g.state, g.protocolType)
	}
	if got := h.fetch("simple", "t"); got["t"] != 3 {
		t.Fatalf("fetch: %v", got)
	}
	// Metadata over offset.metadata.max.bytes, counted in UTF-16 units:
	// 4096 two-byte characters fit, 4097 do not.
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.Generation = 8, "simple", -1
	fits, over := strings.Repeat("é", 4096), strings.Repeat("é", 4097)
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 4, LeaderEpoch: 2, Metadata: &fits},
		{Partition: 1, Offset: 4, LeaderEpoch: -1, Metadata: &over},
	}}}
	codes := h.commitCodes(h.send("c", r))
	wantCode(t, "4096 chars", codes[0], 0)
	wantCode(t, "4097 chars", codes[1], kerr.OffsetMetadataTooLarge.Code)

	// Fetch everything (null topics): sorted, with epoch and metadata.
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.Version, fr.Group = 7, "simple"
	resp := h.responses[h.send("c", fr)].(*kmsg.OffsetFetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch all: %+v", resp.Topics)
	}
	if p := resp.Topics[0].Partitions[0]; p.Offset != 4 || p.LeaderEpoch != 2 || *p.Metadata != fits {
		t.Fatalf("fetched %+v", p)
	}
}

func TestOffsetFetchVersions(t *testing.T) {
	h := newHarness(t, testConfig())
	h.commit("g", "", -1, map[string]int64{"t": 3})
	// v8+: several groups, each with its own error.
	other := "zz-not-here" // a group on a partition we will unload
	for h.c.PartitionFor(other) == h.c.PartitionFor("g") {
		other += "x"
	}
	h.apply(h.c.UnloadPartition(h.now, h.c.PartitionFor(other)))
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1}}}},
		{Group: "unknown", Topics: nil},
		{Group: other},
	}
	resp := h.responses[h.send("c", r)].(*kmsg.OffsetFetchResponse)
	if g := resp.Groups[0]; g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 3 || g.Topics[0].Partitions[1].Offset != -1 {
		t.Fatalf("group g: %+v", g)
	}
	if g := resp.Groups[1]; g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Fatalf("unknown group: %+v", g)
	}
	wantCode(t, "unloaded group", resp.Groups[2].ErrorCode, kerr.NotCoordinator.Code)

	// v1: the error goes in each partition; v2-7: top level.
	v1 := kmsg.NewPtrOffsetFetchRequest()
	v1.Version, v1.Group = 1, other
	v1.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	r1 := h.responses[h.send("c", v1)].(*kmsg.OffsetFetchResponse)
	wantCode(t, "v1 partition error", r1.Topics[0].Partitions[0].ErrorCode, kerr.NotCoordinator.Code)
	v1.Version = 5
	r5 := h.responses[h.send("c", v1)].(*kmsg.OffsetFetchResponse)
	wantCode(t, "v5 top-level error", r5.ErrorCode, kerr.NotCoordinator.Code)
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t, testConfig())
	del := func(group string, topics ...string) *kmsg.OffsetDeleteResponse {
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group
		for _, tp := range topics {
			r.Topics = append(r.Topics, kmsg.OffsetDeleteRequestTopic{Topic: tp,
				Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		return h.responses[h.send("c", r)].(*kmsg.OffsetDeleteResponse)
	}
	wantCode(t, "empty id", del("").ErrorCode, kerr.InvalidGroupID.Code)
	wantCode(t, "unknown", del("nope").ErrorCode, kerr.GroupIDNotFound.Code)

	// A consumer group subscribed to t: t is protected, u is not.
	a, ta := h.joinNew("g", "a", joinOpts{metadata: subscription("t")})
	gen := h.stable("g", map[string]uint64{a: ta})
	h.commit("g", a, gen, map[string]int64{"t": 1, "u": 2})
	resp := del("g", "t", "u")
	wantCode(t, "group", resp.ErrorCode, 0)
	wantCode(t, "subscribed topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic.Code)
	wantCode(t, "other topic", resp.Topics[1].Partitions[0].ErrorCode, 0)
	if got := h.fetch("g", "t", "u"); got["t"] != 1 || got["u"] != -1 {
		t.Fatalf("after delete: %v", got)
	}
	// A non-consumer group with members cannot delete offsets.
	b, tb := h.joinNew("conn", "b", joinOpts{protoType: "connect"})
	h.stable("conn", map[string]uint64{b: tb})
	wantCode(t, "non-consumer group", del("conn", "t").ErrorCode, kerr.NonEmptyGroup.Code)
	// Unparseable subscriptions protect every topic.
	c, tc := h.joinNew("raw", "c", joinOpts{metadata: []byte{0xff}})
	h.stable("raw", map[string]uint64{c: tc})
	wantCode(t, "unknown subscription", del("raw", "x").Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic.Code)
}

func TestOffsetRetention(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsRetention = time.Hour
	cfg.OffsetsRetentionCheckInterval = time.Minute
	h := newHarness(t, cfg)

	// A simple group: offsets expire an hour after their commit.
	h.commit("simple", "", -1, map[string]int64{"t": 1})
	h.advance(30 * time.Minute)
	h.commit("simple", "", -1, map[string]int64{"u": 1})
	h.advance(31 * time.Minute)
	if got := h.fetch("simple", "t", "u"); got["t"] != -1 || got["u"] != 1 {
		t.Fatalf("simple group after 61 minutes: %v", got)
	}
	h.advance(30 * time.Minute)
	if h.c.groups.byID["simple"] != nil {
		t.Fatal("simple group without offsets not deleted")
	}

	// A consumer group: nothing expires while it is Stable and subscribed;
	// once Empty, everything goes an hour after it became Empty.
	a, ta := h.joinNew("g", "a", joinOpts{metadata: subscription("t")})
	gen := h.stable("g", map[string]uint64{a: ta})
	h.commit("g", a, gen, map[string]int64{"t": 1, "other": 2})
	for i := 0; i < 61*10; i++ { // 61 minutes of heartbeats
		h.advance(6 * time.Second)
		wantCode(t, "heartbeat", h.heartbeat("g", a, gen, ""), 0)
	}
	// An hour has passed since the commit: the unsubscribed topic expired.
	if got := h.fetch("g", "t", "other"); got["t"] != 1 || got["other"] != -1 {
		t.Fatalf("stable group: %v", got)
	}
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version, r.Group = 3, "g"
	r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a}}
	h.send("c", r)
	h.advance(59 * time.Minute)
	if got := h.fetch("g", "t"); got["t"] != 1 {
		t.Fatalf("expired too early: %v", got)
	}
	h.advance(2 * time.Minute)
	if h.c.groups.byID["g"] != nil {
		t.Fatal("empty consumer group not deleted after its offsets expired")
	}
	// The tombstones are in the log, after the records they delete.
	recs := h.log[h.c.PartitionFor("g")]
	last := recs[len(recs)-1]
	if last.Value != nil || string(last.Key) != string(groupKey("g")) {
		t.Fatalf("last record is not the group tombstone")
	}
}
