package group

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgClient is a KIP-848 consumer driven at random. It owns partitions as a
// real one does: what an assignment adds it takes at once, what an
// assignment drops it gives up at once, unless it is slow to revoke (then
// it keeps them for a few more heartbeats, and may miss its rebalance
// timeout). A crash loses everything it owned; a lost response leaves it at
// its old epoch (to be accepted as the previous epoch, or fenced).
type cgClient struct {
	name, group, instance string
	topics                []string
	assignor              string
	id                    string
	epoch                 int32
	joined                bool
	owned, assigned       assignment // what it holds; what it was last given
	slow                  int        // heartbeats it still holds revoked partitions
	full                  bool       // send a full heartbeat next
	inFlight              uint64
	silentUntil           time.Time
	restarts              int
}

func (s *cgClient) lose() {
	s.joined, s.epoch, s.owned, s.assigned, s.slow = false, 0, assignment{}, assignment{}, 0
}

func TestConsumerRandomized(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runConsumerRandom(t, seed, 3000) })
	}
}

func runConsumerRandom(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t, cgConfig())
	h.autoPersist = false
	counts := map[string]int32{"a": 6, "b": 4, "c": 3}
	h.setTopics(counts)

	var clients []*cgClient
	for g, setup := range []struct {
		assignor string
		topics   func() []string
	}{
		{UniformAssignor, func() []string { return []string{"a", "b"} }},
		{RangeAssignor, func() []string {
			ts := []string{"a", "b", "c"}
			return ts[:1+rng.Intn(3)]
		}},
		{UniformAssignor, func() []string { return []string{[]string{"a", "b", "c"}[rng.Intn(3)]} }},
	} {
		for i := 0; i < 5; i++ {
			s := &cgClient{name: fmt.Sprintf("c%d-%d", g, i), group: fmt.Sprintf("g%d", g),
				topics: setup.topics(), assignor: setup.assignor}
			if i%2 == 1 {
				s.instance = "i" + s.name
			}
			s.lose()
			clients = append(clients, s)
		}
	}
	unrevoked := 0
	send := func(s *cgClient, q cgReq) {
		q.group, q.instance, q.assignor = s.group, s.instance, s.assignor
		s.inFlight = h.cgSend(q)
	}
	heartbeat := func(s *cgClient) {
		if !s.joined {
			s.restarts++
			if s.id == "" || s.instance != "" {
				s.id = fmt.Sprintf("%s-%d", s.name, s.restarts) // a new process
			}
			send(s, cgReq{member: s.id, epoch: 0, topics: s.topics, rebalance: 8 * time.Second})
			return
		}
		if s.slow > 0 {
			s.slow--
		} else {
			s.owned = s.assigned.clone() // revocation done
		}
		q := cgReq{member: s.id, epoch: s.epoch, owned: s.owned}
		if s.full {
			q.topics, q.rebalance, s.full = s.topics, 8*time.Second, false
		}
		send(s, q)
	}

	for step := 0; step < steps; step++ {
		// Durability: persist, fail or delay the oldest write. A failure
		// fails the later writes of its partition too (the driver stops
		// appending there), so the log never holds a write whose
		// predecessor was lost.
		if len(h.pending) > 0 && rng.Intn(3) > 0 {
			w := h.pending[0]
			h.pending = h.pending[1:]
			if rng.Intn(25) == 0 {
				var rest []Write
				failed := []Write{w}
				for _, x := range h.pending {
					if x.Partition == w.Partition {
						failed = append(failed, x)
					} else {
						rest = append(rest, x)
					}
				}
				h.pending = rest
				for _, x := range failed {
					h.apply(h.c.Persisted(h.now, x.ID, -1, kerr.NotLeaderForPartition))
				}
			} else {
				h.persist(w)
			}
		}
		if rng.Intn(4) == 0 {
			h.advance(time.Duration(rng.Intn(2500)) * time.Millisecond)
		}
		if rng.Intn(300) == 0 {
			counts[[]string{"a", "b", "c"}[rng.Intn(3)]]++
			h.setTopics(counts)
		}
		s := clients[rng.Intn(len(clients))]
		if s.inFlight != 0 {
			if !h.answered(s.inFlight) {
				continue
			}
			if s.joined && rng.Intn(30) == 0 {
				// The response is lost: the client keeps its old epoch and,
				// as after any error, sends a full heartbeat next.
				s.inFlight, s.full = 0, true
			} else {
				handleCGResponse(t, h, s)
				s.inFlight = 0
			}
		}
		if h.now.Before(s.silentUntil) {
			continue
		}
		switch r := rng.Intn(100); {
		case !s.joined || r >= 10:
			heartbeat(s)
		case r < 2:
			epoch := leaveEpoch
			if s.instance != "" && rng.Intn(2) == 0 {
				epoch = staticLeaveEpoch
			}
			send(s, cgReq{member: s.id, epoch: epoch})
			s.lose()
		case r < 4:
			s.lose() // crash: the next process has a new member id
			s.id = ""
			s.silentUntil = h.now.Add(time.Duration(rng.Intn(60000)) * time.Millisecond)
		case r < 6:
			s.slow = 1 + rng.Intn(6)
			heartbeat(s)
		default:
			s.inFlight = h.cgCommit(s)
		}
		checkConsumerInvariants(t, h, clients)
		for _, g := range h.c.groups.byID {
			if g.consumer != nil {
				for _, m := range g.consumer.members {
					if m.state == memberUnrevoked {
						unrevoked++
					}
				}
			}
		}
	}

	// Input stops: everything persists, silent clients come back, and
	// heartbeats alone must bring every group to a Stable, complete and
	// balanced assignment.
	h.autoPersist = true
	h.persistAll()
	for _, s := range clients {
		if s.inFlight != 0 {
			handleCGResponse(t, h, s)
			s.inFlight = 0
		}
		s.slow, s.silentUntil = 0, time.Time{}
	}
	// Long enough for members of crashed static instances to expire.
	for round := 0; round < 90; round++ {
		for _, s := range clients {
			heartbeat(s)
			handleCGResponse(t, h, s)
			s.inFlight = 0
		}
		checkConsumerInvariants(t, h, clients)
		h.advance(time.Second)
	}
	for tok := uint64(1); tok <= h.lastToken; tok++ {
		if !h.answered(tok) {
			t.Fatalf("request %d never answered", tok)
		}
	}
	for g := 0; g < 3; g++ {
		id := fmt.Sprintf("g%d", g)
		cg := h.cg(id)
		if cg.state() != cgStable || len(cg.members) != 5 {
			t.Fatalf("%s: %s with %d members", id, cg.state(), len(cg.members))
		}
		var sims []*cgSim
		subscribed := map[string]int32{}
		for _, s := range clients {
			if s.group == id {
				sims = append(sims, &cgSim{id: s.id, owned: s.owned})
				for _, topic := range s.topics {
					subscribed[topic] = counts[topic]
				}
			}
		}
		spread := 1
		if g > 0 {
			spread = 1 << 20 // heterogeneous: checked below
		}
		h.checkPartitioned(sims, subscribed, spread)
		if g == 1 {
			// Range: per topic, the subscribers' shares differ by one at most.
			for name := range subscribed {
				lo, hi := 1<<20, 0
				for _, m := range cg.members {
					if slices.Contains(m.topics, name) {
						n := len(m.assigned[topicID(name)])
						lo, hi = min(lo, n), max(hi, n)
					}
				}
				if hi-lo > 1 {
					t.Fatalf("%s: range shares of %s from %d to %d", id, name, lo, hi)
				}
			}
			continue
		}
		// Heterogeneous subscriptions: no partition could move to a member
		// of that topic with two fewer.
		for _, from := range cg.members {
			for _, to := range cg.members {
				for topic := range from.assigned {
					if from.assigned.count()-to.assigned.count() > 1 && slices.ContainsFunc(cg.memberTopics(to),
						func(name string) bool { return cg.subMeta[name].id == topic }) {
						t.Fatalf("%s: %s could give %s a partition", id, from.id, to.id)
					}
				}
			}
		}
	}
	h.reload()
	codes := make(map[string]int)
	for _, r := range h.responses {
		switch r := r.(type) {
		case *kmsg.ConsumerGroupHeartbeatResponse:
			codes[fmt.Sprint(kerr.ErrorForCode(r.ErrorCode))]++
		case *kmsg.OffsetCommitResponse:
			codes["commit/"+fmt.Sprint(kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))]++
		}
	}
	t.Logf("answers %v; unrevoked steps %d", codes, unrevoked)
}

// cgCommit sends an OffsetCommit v9 with the client's member epoch.
func (h *harness) cgCommit(s *cgClient) uint64 {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.MemberID, r.Generation = 9, s.group, s.id, s.epoch
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = "a"
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset = int64(h.lastToken)
	tp.Partitions = append(tp.Partitions, p)
	r.Topics = append(r.Topics, tp)
	return h.send("c", r)
}

func handleCGResponse(t *testing.T, h *harness, s *cgClient) {
	t.Helper()
	switch r := h.responses[s.inFlight].(type) {
	case *kmsg.OffsetCommitResponse:
		switch code := r.Topics[0].Partitions[0].ErrorCode; code {
		case 0, kerr.StaleMemberEpoch.Code, kerr.UnknownMemberID.Code, kerr.NotCoordinator.Code:
		default:
			t.Fatalf("%s: commit error %v", s.name, kerr.ErrorForCode(code))
		}
	case *kmsg.ConsumerGroupHeartbeatResponse:
		if r.MemberEpoch < 0 { // the answer to a leave
			return
		}
		switch r.ErrorCode {
		case 0:
			if !s.joined && r.MemberEpoch == 0 {
				t.Fatalf("%s: joined at epoch 0", s.name)
			}
			s.joined, s.id, s.epoch = true, *r.MemberID, r.MemberEpoch
			if a := respAssignment(r); a != nil {
				s.assigned = a
				// New partitions are taken at once; dropped ones are
				// given up now unless the client is slow.
				kept := s.owned
				s.owned = a.clone()
				if s.slow > 0 {
					kept.each(s.owned.add)
				}
			}
		case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code, kerr.NotCoordinator.Code,
			kerr.UnreleasedInstanceID.Code, kerr.FencedInstanceID.Code, kerr.GroupIDNotFound.Code:
			s.lose()
		default:
			t.Fatalf("%s: heartbeat error %v %s", s.name, kerr.ErrorForCode(r.ErrorCode), derefString(r.ErrorMessage))
		}
	case nil:
		t.Fatalf("%s: request %d not answered", s.name, s.inFlight)
	default:
		t.Fatalf("%s: unexpected %T", s.name, r)
	}
}

// checkConsumerInvariants: no partition has two owners, in the
// coordinator's view (members' assigned and pending partitions) or in the
// clients' (what each current member holds, which the coordinator's view
// must cover); and the derived indexes match the members.
func checkConsumerInvariants(t *testing.T, h *harness, clients []*cgClient) {
	t.Helper()
	checkStats(t, h.c)
	for id, g := range h.c.groups.byID {
		cg := g.consumer
		if cg == nil {
			continue
		}
		owners := make(map[tpid]string)
		static := make(map[string]string)
		for mid, m := range cg.members {
			if m.id != mid {
				t.Fatalf("%s: member %s indexed as %s", id, m.id, mid)
			}
			for _, a := range []assignment{m.assigned, m.pending} {
				a.each(func(topic [16]byte, p int32) {
					if o, dup := owners[tpid{topic, p}]; dup {
						t.Fatalf("%s: %v-%d owned by %s and %s", id, topic, p, o, mid)
					}
					owners[tpid{topic, p}] = mid
				})
			}
			if m.instanceID != nil {
				static[*m.instanceID] = mid
			}
		}
		if !maps.Equal(owners, cg.owners) || !maps.Equal(static, cg.static) {
			t.Fatalf("%s: indexes out of date", id)
		}
	}
	held := make(map[string]map[tpid]string)
	for _, s := range clients {
		g := h.c.groups.byID[s.group]
		if !s.joined || g == nil || g.consumer == nil || g.consumer.members[s.id] == nil {
			continue
		}
		m := g.consumer.members[s.id]
		if held[s.group] == nil {
			held[s.group] = make(map[tpid]string)
		}
		s.owned.each(func(topic [16]byte, p int32) {
			if !m.assigned.has(topic, p) && !m.pending.has(topic, p) {
				t.Fatalf("%s holds %v-%d; the coordinator has %v / %v", s.name, topic, p, m.assigned, m.pending)
			}
			if o, dup := held[s.group][tpid{topic, p}]; dup {
				t.Fatalf("%v-%d held by %s and %s", topic, p, o, s.name)
			}
			held[s.group][tpid{topic, p}] = s.name
		})
		if slices.Contains(s.topics, "") {
			t.Fatal("empty topic")
		}
	}
}
