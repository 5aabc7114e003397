package group

import (
	"fmt"
	"maps"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// simClient is a group client driven at random: it joins, syncs,
// heartbeats, commits, leaves, rejoins and goes silent, as a real consumer
// might, and reacts to errors as the Java client does.
type simClient struct {
	group, name string
	instance    string // "" for a dynamic member
	memberID    string
	generation  int32
	joined      bool // has a generation and must sync
	rejoin      bool // told to rejoin with its member id
	assigned    bool
	members     []string // when leader: the members to assign
	inFlight    uint64
	kind        string
	silentUntil time.Time
}

func (s *simClient) reset() {
	s.memberID, s.joined, s.assigned, s.rejoin, s.generation = "", false, false, false, -1
}

func TestRandomized(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 5
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandom(t, seed, 2500) })
	}
}

func runRandom(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	cfg := testConfig()
	cfg.InitialRebalanceDelay = time.Duration(rng.Intn(3)) * time.Second
	cfg.MaxSize = 3 + rng.Intn(4)
	h := newHarness(t, cfg)
	h.autoPersist = false

	var clients []*simClient
	for g := 0; g < 3; g++ {
		for c := 0; c < 5; c++ {
			s := &simClient{group: fmt.Sprintf("g%d", g), name: fmt.Sprintf("c%d-%d", g, c)}
			if c%2 == 1 {
				s.instance = "i" + s.name
			}
			s.reset()
			clients = append(clients, s)
		}
	}
	opts := func(s *simClient) joinOpts {
		o := joinOpts{version: int16(4 + rng.Intn(5)), instance: s.instance, session: 6 * time.Second,
			rebalance: time.Duration(5+rng.Intn(10)) * time.Second}
		if rng.Intn(4) == 0 {
			o.metadata = subscription("t", fmt.Sprint(rng.Intn(2)))
		}
		return o
	}
	believers := make(map[string]map[int32]map[string]bool)
	inv := &invariants{t: t, lastGen: make(map[string]int32)}

	for step := 0; step < steps; step++ {
		// Durability: persist, fail or delay the oldest write.
		if len(h.pending) > 0 && rng.Intn(3) > 0 {
			w := h.pending[0]
			h.pending = h.pending[1:]
			if rng.Intn(20) == 0 {
				h.apply(h.c.Persisted(h.now, w.ID, -1, kerr.NotLeaderForPartition))
			} else {
				h.persist(w)
			}
		}
		if rng.Intn(4) == 0 {
			h.advance(time.Duration(rng.Intn(2500)) * time.Millisecond)
		}
		s := clients[rng.Intn(len(clients))]
		if s.inFlight != 0 {
			if !h.answered(s.inFlight) {
				continue
			}
			handleSimResponse(t, h, s, believers)
			s.inFlight = 0
		}
		if h.now.Before(s.silentUntil) {
			continue
		}
		switch r := rng.Intn(100); {
		case s.memberID == "" || s.rejoin || !s.joined || r < 3:
			s.kind = "join"
			s.inFlight = h.join(s.group, s.name, s.memberID, opts(s))
		case s.joined && !s.assigned:
			var assign map[string][]byte
			if len(s.members) > 0 {
				assign = make(map[string][]byte)
				for _, m := range s.members {
					assign[m] = []byte(m)
				}
			}
			s.kind = "sync"
			s.inFlight = h.sync(s.group, s.memberID, s.generation, s.instance, assign)
		case r < 6:
			s.kind = "leave"
			lr := kmsg.NewPtrLeaveGroupRequest()
			lr.Version, lr.Group = 5, s.group
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = s.memberID
			if s.instance != "" {
				m.InstanceID = &s.instance
			}
			lr.Members = []kmsg.LeaveGroupRequestMember{m}
			s.inFlight = h.send(s.name, lr)
		case r < 9:
			// Crash: silent for a while, then back with no member id.
			s.reset()
			s.silentUntil = h.now.Add(time.Duration(rng.Intn(15000)) * time.Millisecond)
		case r < 20:
			s.kind = "commit"
			s.inFlight = h.commit(s.group, s.memberID, s.generation, map[string]int64{"t": int64(step)})
		default:
			s.kind = "heartbeat"
			hr := kmsg.NewPtrHeartbeatRequest()
			hr.Version, hr.Group, hr.MemberID, hr.Generation = 4, s.group, s.memberID, s.generation
			if s.instance != "" {
				hr.InstanceID = &s.instance
			}
			s.inFlight = h.send(s.name, hr)
		}
		inv.check(h, believers)
	}

	// Quiesce: persist everything and let every timer run out; every
	// request must then have been answered exactly once.
	h.autoPersist = true
	h.persistAll()
	h.advance(time.Hour)
	for tok := uint64(1); tok <= h.lastToken; tok++ {
		if !h.answered(tok) {
			t.Fatalf("request %d never answered", tok)
		}
	}
	inv.check(h, believers)
	codes := make(map[string]int)
	for _, r := range h.responses {
		var code int16
		switch r := r.(type) {
		case *kmsg.JoinGroupResponse:
			code = r.ErrorCode
		case *kmsg.SyncGroupResponse:
			code = r.ErrorCode
		case *kmsg.HeartbeatResponse:
			code = r.ErrorCode
		default:
			continue
		}
		codes[fmt.Sprintf("%T/%v", r, kerr.ErrorForCode(code))]++
	}
	t.Logf("stats %+v; answers %v", h.c.cfg.Stats.Snapshot(), codes)
}

func handleSimResponse(t *testing.T, h *harness, s *simClient, believers map[string]map[int32]map[string]bool) {
	body := h.responses[s.inFlight]
	var code int16
	switch r := body.(type) {
	case *kmsg.JoinGroupResponse:
		code = r.ErrorCode
		switch code {
		case 0:
			s.memberID, s.generation, s.joined, s.assigned, s.rejoin = r.MemberID, r.Generation, true, false, false
			s.members = nil
			if r.LeaderID == r.MemberID {
				for _, m := range r.Members {
					s.members = append(s.members, m.MemberID)
				}
				if believers[s.group] == nil {
					believers[s.group] = make(map[int32]map[string]bool)
				}
				if believers[s.group][r.Generation] == nil {
					believers[s.group][r.Generation] = make(map[string]bool)
				}
				believers[s.group][r.Generation][r.MemberID] = true
			}
			return
		case kerr.MemberIDRequired.Code:
			s.memberID, s.rejoin = r.MemberID, true
			return
		}
	case *kmsg.SyncGroupResponse:
		code = r.ErrorCode
		if code == 0 {
			s.assigned = true
			// The leader assigns each member its id; a restarted static
			// member keeps the assignment made for its earlier id.
			got := string(r.MemberAssignment)
			if got != s.memberID && len(got) > 0 && (s.instance == "" || !strings.HasPrefix(got, s.instance+"-")) {
				t.Fatalf("%s got assignment %q", s.memberID, r.MemberAssignment)
			}
			return
		}
	case *kmsg.HeartbeatResponse:
		code = r.ErrorCode
	case *kmsg.OffsetCommitResponse:
		code = r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.LeaveGroupResponse:
		s.reset()
		return
	default:
		t.Fatalf("unexpected %T", body)
	}
	switch code {
	case 0:
	case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
		s.joined, s.assigned, s.rejoin = false, false, true
	default:
		s.reset()
	}
}

type invariants struct {
	t       *testing.T
	lastGen map[string]int32
	seen    int
}

func (inv *invariants) check(h *harness, believers map[string]map[int32]map[string]bool) {
	t := inv.t
	t.Helper()
	// A group's join phases answer with generations that only go up, and
	// never above the group's current one.
	for _, tok := range h.answers[inv.seen:] {
		jr, ok := h.responses[tok].(*kmsg.JoinGroupResponse)
		if !ok || jr.ErrorCode != 0 {
			continue
		}
		id := h.requests[tok].(*kmsg.JoinGroupRequest).Group
		if last, known := inv.lastGen[id]; known && jr.Generation < last {
			t.Fatalf("%s: a join answered generation %d after %d", id, jr.Generation, last)
		}
		if g := h.c.groups.byID[id]; g == nil || jr.Generation > g.generation {
			t.Fatalf("%s: a join answered generation %d beyond the group's", id, jr.Generation)
		}
		inv.lastGen[id] = jr.Generation
	}
	inv.seen = len(h.answers)
	checkStats(t, h.c)

	for id, gens := range believers {
		for gen, ids := range gens {
			if len(ids) > 1 {
				t.Fatalf("%s generation %d has %d leaders: %v", id, gen, len(ids), ids)
			}
		}
	}
	for id, g := range h.c.groups.byID {
		if len(g.members) != len(g.byID) {
			t.Fatalf("%s: %d members, %d ids", id, len(g.members), len(g.byID))
		}
		awaiting, static := 0, 0
		supported := make(map[string]int)
		for _, m := range g.members {
			if g.byID[m.id] != m {
				t.Fatalf("%s: member %s not indexed", id, m.id)
			}
			if m.join != nil {
				awaiting++
			}
			if m.join != nil && m.sync != nil {
				t.Fatalf("%s: member %s waits in both JoinGroup and SyncGroup", id, m.id)
			}
			if m.instanceID != nil {
				static++
				if g.static[*m.instanceID] != m.id {
					t.Fatalf("%s: instance %s maps to %s, not %s", id, *m.instanceID, g.static[*m.instanceID], m.id)
				}
			}
			for _, p := range m.protocols {
				supported[p.name]++
			}
			if g.state == Stable && m.assignment == nil {
				t.Fatalf("%s: Stable member %s has no assignment", id, m.id)
			}
			if (g.state == Stable || g.state == CompletingRebalance) && m.metadata(g.protocol) == nil {
				t.Fatalf("%s: member %s does not support protocol %q", id, m.id, g.protocol)
			}
		}
		if awaiting != g.awaitingJoin || static != len(g.static) {
			t.Fatalf("%s: awaiting %d/%d static %d/%d", id, awaiting, g.awaitingJoin, static, len(g.static))
		}
		for name, n := range g.supported {
			if supported[name] != n {
				t.Fatalf("%s: protocol %s counted %d, is %d", id, name, n, supported[name])
			}
		}
		switch {
		case len(g.members) == 0 && g.leader != "":
			t.Fatalf("%s: leader %s without members", id, g.leader)
		case len(g.members) > 0 && g.byID[g.leader] == nil:
			t.Fatalf("%s: leader %q is not a member", id, g.leader)
		case g.state == Empty && len(g.members) > 0:
			t.Fatalf("%s: Empty with %d members", id, len(g.members))
		case (g.state == Stable || g.state == CompletingRebalance) && g.protocol == "":
			t.Fatalf("%s: %v without protocol", id, g.state)
		}
		for m := range g.pendingSync {
			if g.byID[m] == nil {
				t.Fatalf("%s: pending sync of non-member %s", id, m)
			}
		}
	}
}

// checkStats fails unless the gauges the coordinator keeps incrementally
// equal a count of the groups and offsets it serves.
func checkStats(t *testing.T, c *Coordinator) {
	t.Helper()
	want := StatsSnapshot{Classic: map[string]int64{}, Consumer: map[string]int64{}}
	for _, name := range stateNames[:Dead] {
		want.Classic[name] = 0
	}
	for _, name := range consumerStates {
		want.Consumer[name] = 0
	}
	for id, g := range c.groups.byID {
		if g.consumer != nil {
			want.Consumer[g.consumer.state()]++
		} else {
			want.Classic[g.state.String()]++
		}
		if o := c.offsets.byGroup[id]; o != nil {
			want.Offsets += int64(len(o.committed))
		}
	}
	got := c.cfg.Stats.Snapshot()
	if !maps.Equal(got.Classic, want.Classic) || !maps.Equal(got.Consumer, want.Consumer) || got.Offsets != want.Offsets {
		t.Fatalf("gauges %v %v %d offsets, the groups served have %v %v %d", got.Classic, got.Consumer, got.Offsets,
			want.Classic, want.Consumer, want.Offsets)
	}
}
