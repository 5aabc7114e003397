package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// wantStates fails unless the gauges count exactly the groups in states
// (name to count; the states not named count 0).
func wantStates(t *testing.T, got map[string]int64, states map[string]int64) {
	t.Helper()
	for name, n := range got {
		if n != states[name] {
			t.Fatalf("groups by state %v, want %v", got, states)
		}
	}
}

func TestStatsClassicGroupJoinsCommitsAndLeaves(t *testing.T) {
	h := newHarness(t, testConfig())
	st := h.c.cfg.Stats
	wantStates(t, st.Snapshot().Classic, nil)

	member, tok := h.joinNew("g", "c1", joinOpts{})
	wantStates(t, st.Snapshot().Classic, map[string]int64{"PreparingRebalance": 1})
	h.tick()
	jr := h.joinResp(tok)
	wantStates(t, st.Snapshot().Classic, map[string]int64{"CompletingRebalance": 1})
	if s := h.syncResp(h.sync("g", member, jr.Generation, "", map[string][]byte{member: []byte("a")})); s.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	snap := st.Snapshot()
	wantStates(t, snap.Classic, map[string]int64{"Stable": 1})
	if snap.ClassicRebalances != 1 {
		t.Fatalf("completed rebalances %d, want 1", snap.ClassicRebalances)
	}

	h.commit("g", member, jr.Generation, map[string]int64{"t": 5, "u": 7})
	h.commit("g", member, jr.Generation, map[string]int64{"t": 6})
	snap = st.Snapshot()
	if snap.OffsetCommits != 3 || snap.Offsets != 2 {
		t.Fatalf("offset commits %d, offsets %d; want 3 and 2", snap.OffsetCommits, snap.Offsets)
	}

	if r := h.classicLeave("g", member, ""); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	wantStates(t, st.Snapshot().Classic, map[string]int64{"Empty": 1})

	// Retention expires both offsets and deletes the Empty group.
	h.advance(h.c.cfg.OffsetsRetention + h.c.cfg.OffsetsRetentionCheckInterval)
	snap = st.Snapshot()
	wantStates(t, snap.Classic, nil)
	if snap.OffsetExpirations != 2 || snap.Offsets != 0 {
		t.Fatalf("expirations %d, offsets %d; want 2 and 0", snap.OffsetExpirations, snap.Offsets)
	}
}

func TestStatsConsumerGroupJoinsAndLeaves(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 4})
	st := h.c.cfg.Stats
	a, b := h.newMember("g"), h.newMember("g")
	h.beat(a)
	// The first heartbeat bumps the group epoch and assigns at once.
	if snap := st.Snapshot(); snap.ConsumerRebalances != 1 {
		t.Fatalf("consumer rebalances %d, want 1", snap.ConsumerRebalances)
	}
	h.converge(a)
	wantStates(t, st.Snapshot().Consumer, map[string]int64{"Stable": 1})
	wantStates(t, st.Snapshot().Classic, nil)

	h.beat(b)
	// b joined: a still owns partitions b is to get.
	wantStates(t, st.Snapshot().Consumer, map[string]int64{"Reconciling": 1})
	h.converge(a, b)
	snap := st.Snapshot()
	wantStates(t, snap.Consumer, map[string]int64{"Stable": 1})
	if snap.ConsumerRebalances != 2 {
		t.Fatalf("consumer rebalances %d, want 2", snap.ConsumerRebalances)
	}

	for _, m := range []*cgSim{a, b} {
		if r := h.cgHeartbeat(cgReq{group: "g", member: m.id, epoch: leaveEpoch}); r.ErrorCode != 0 {
			t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	wantStates(t, st.Snapshot().Consumer, map[string]int64{"Empty": 1})
}

// A node without the broker role has no Stats: its snapshot is zero, with
// every state present (a scrape of it panicked).
func TestNilStatsSnapshot(t *testing.T) {
	var s *Stats
	snap := s.Snapshot()
	if len(snap.Classic) == 0 || len(snap.Consumer) == 0 || snap.Offsets != 0 || snap.OffsetCommits != 0 {
		t.Fatalf("nil snapshot %+v", snap)
	}
	for name, v := range snap.Classic {
		if v != 0 {
			t.Errorf("classic %s = %d", name, v)
		}
	}
}
