package group

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgConfig is testConfig with deterministic consumer member ids.
func cgConfig() Config {
	cfg := testConfig()
	n := 0
	cfg.Consumer.NewMemberID = func() string { n++; return fmt.Sprintf("m-%d", n) }
	return cfg
}

// topicID is a test topic's id: its name, zero padded.
func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

// setTopics gives the coordinator topics with these partition counts.
func (h *harness) setTopics(counts map[string]int32) {
	h.t.Helper()
	topics := make(map[string]TopicInfo, len(counts))
	for name, n := range counts {
		topics[name] = TopicInfo{ID: topicID(name), Partitions: n}
	}
	h.apply(h.c.SetTopics(h.now, topics))
}

// cgReq describes one ConsumerGroupHeartbeat.
type cgReq struct {
	group, member, instance string
	epoch                   int32
	topics                  []string // nil: unchanged (a join defaults to "t")
	regex                   *string
	assignor                string
	owned                   assignment // nil: not reported (a join sends none)
	rebalance               time.Duration
	version                 int16 // 0 means 1
}

func (h *harness) cgSend(q cgReq) uint64 {
	h.t.Helper()
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = q.version
	if r.Version == 0 {
		r.Version = 1
	} else if r.Version < 0 {
		r.Version = 0
	}
	r.Group, r.MemberID, r.MemberEpoch = q.group, q.member, q.epoch
	if q.instance != "" {
		r.InstanceID = &q.instance
	}
	r.SubscribedTopicNames = q.topics
	r.SubscribedTopicRegex = q.regex
	if q.assignor != "" {
		r.ServerAssignor = &q.assignor
	}
	if q.epoch == 0 {
		r.RebalanceTimeoutMillis = int32(orDefault(q.rebalance, 10*time.Second).Milliseconds())
		if r.SubscribedTopicNames == nil && r.SubscribedTopicRegex == nil {
			r.SubscribedTopicNames = []string{"t"}
		}
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else if q.rebalance != 0 {
		r.RebalanceTimeoutMillis = int32(q.rebalance.Milliseconds())
	}
	if q.owned != nil {
		r.Topics = ownedTopics(q.owned)
	}
	return h.send("consumer", r)
}

func ownedTopics(a assignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, id := range a.topicIDs() {
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: slices.Clone(a[id])})
	}
	return out
}

// cgHeartbeat sends a heartbeat and returns its (immediate) response.
func (h *harness) cgHeartbeat(q cgReq) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	return h.cgResp(h.cgSend(q))
}

func (h *harness) cgResp(tok uint64) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	r, ok := h.responses[tok].(*kmsg.ConsumerGroupHeartbeatResponse)
	if !ok {
		h.t.Fatalf("request %d: no ConsumerGroupHeartbeat response (have %T)", tok, h.responses[tok])
	}
	return r
}

// respAssignment is the assignment of a heartbeat response, nil if none.
func respAssignment(r *kmsg.ConsumerGroupHeartbeatResponse) assignment {
	if r.Assignment == nil {
		return nil
	}
	a := assignment{}
	for _, t := range r.Assignment.Topics {
		for _, p := range t.Partitions {
			a.add(t.TopicID, p)
		}
	}
	return a
}

func (h *harness) cg(id string) *consumerGroup {
	h.t.Helper()
	g := h.group(id)
	if g.consumer == nil {
		h.t.Fatalf("group %q is not a consumer group", id)
	}
	return g.consumer
}

// cgSim is a simulated KIP-848 consumer: it owns what its last assignment
// gave it and revokes at once what a new one leaves out.
type cgSim struct {
	group, id, instance string
	epoch               int32
	owned               assignment
	topics              []string
	assignor            string
}

func (h *harness) newMember(group string, topics ...string) *cgSim {
	if topics == nil {
		topics = []string{"t"}
	}
	return &cgSim{group: group, topics: topics, owned: assignment{}}
}

// beat sends one heartbeat (a join at epoch 0) and takes in the answer.
func (h *harness) beat(m *cgSim) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	q := cgReq{group: m.group, member: m.id, instance: m.instance, epoch: m.epoch, assignor: m.assignor}
	if m.epoch == 0 {
		q.topics = m.topics
		if m.id == "" {
			q.version = -1 // v0: the coordinator names the member
		}
	} else {
		q.owned = m.owned
	}
	r := h.cgHeartbeat(q)
	if r.ErrorCode == 0 {
		m.take(r)
	}
	return r
}

func (m *cgSim) take(r *kmsg.ConsumerGroupHeartbeatResponse) {
	m.id, m.epoch = *r.MemberID, r.MemberEpoch
	if a := respAssignment(r); a != nil {
		m.owned = a
	}
}

// converge heartbeats every member in turn until a whole round changes
// nothing, and fails if that takes too long.
func (h *harness) converge(ms ...*cgSim) {
	h.t.Helper()
	for round := 0; round < 50; round++ {
		changed := false
		for _, m := range ms {
			before := fmt.Sprint(m.epoch, m.owned)
			if r := h.beat(m); r.ErrorCode != 0 {
				h.t.Fatalf("heartbeat of %s: error %d %v", m.id, r.ErrorCode, derefString(r.ErrorMessage))
			}
			changed = changed || fmt.Sprint(m.epoch, m.owned) != before
		}
		if !changed {
			return
		}
	}
	h.t.Fatal("members did not converge")
}

func derefString(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// checkPartitioned checks that the members own every partition of topics
// exactly once and that counts differ by at most maxSpread.
func (h *harness) checkPartitioned(ms []*cgSim, counts map[string]int32, maxSpread int) {
	h.t.Helper()
	seen := make(map[tpid]string)
	lo, hi := -1, 0
	for _, m := range ms {
		m.owned.each(func(id [16]byte, p int32) {
			if other, dup := seen[tpid{id, p}]; dup {
				h.t.Fatalf("partition %s-%d owned by %s and %s", id, p, other, m.id)
			}
			seen[tpid{id, p}] = m.id
		})
		n := m.owned.count()
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	total := 0
	for name, n := range counts {
		total += int(n)
		for p := int32(0); p < n; p++ {
			if _, ok := seen[tpid{topicID(name), p}]; !ok {
				h.t.Fatalf("partition %s-%d owned by nobody", name, p)
			}
		}
	}
	if len(seen) != total {
		h.t.Fatalf("%d partitions owned, want %d", len(seen), total)
	}
	if hi-lo > maxSpread {
		h.t.Fatalf("unbalanced: %d to %d partitions per member", lo, hi)
	}
}

// consumerSnapshot is the persisted state of every consumer group, comparable.
func consumerSnapshot(c *Coordinator) map[string]string {
	out := make(map[string]string)
	for id, g := range c.groups.byID {
		cg := g.consumer
		if cg == nil {
			continue
		}
		s := fmt.Sprintf("epoch=%d assignmentEpoch=%d meta=%v regexes=%v\n", cg.epoch, cg.assignmentEpoch,
			sortedMeta(cg.subMeta), cg.regexes)
		for _, mid := range sortedIDs(cg.members) {
			m := cg.members[mid]
			s += fmt.Sprintf("member %s %s/%s %v %q %d %s e=%d/%d s=%d %v %v\n", m.id, derefString(m.instanceID),
				derefString(m.rackID), m.topics, m.regex, m.rebalanceTimeoutMs, derefString(m.serverAssignor),
				m.epoch, m.prevEpoch, m.state, m.assigned, m.pending)
		}
		for _, mid := range sortedIDs(cg.target) {
			s += fmt.Sprintf("target %s %v\n", mid, cg.target[mid])
		}
		out[id] = s + fmt.Sprint("offsets ", committedOf(c.offsets.byGroup[id]))
	}
	return out
}

func sortedMeta(m map[string]topicMeta) string {
	s := ""
	for _, name := range sortedIDs(m) {
		s += fmt.Sprintf("%s:%d ", name, m[name].partitions)
	}
	return s
}

// reload replays every partition's log into a new coordinator and checks
// that it rebuilds the consumer groups exactly.
func (h *harness) reload() *Coordinator {
	h.t.Helper()
	cfg := h.c.cfg
	cfg.Stats = &Stats{}
	c := New(cfg)
	c.groups.topics = h.c.groups.topics
	for p := int32(0); p < h.c.cfg.OffsetsTopicPartitions; p++ {
		if _, err := c.LoadPartition(h.now, p, h.log[p]); err != nil {
			h.t.Fatal(err)
		}
	}
	want, got := consumerSnapshot(h.c), consumerSnapshot(c)
	if fmt.Sprint(want) != fmt.Sprint(got) {
		h.t.Fatalf("replay differs:\n got %v\nwant %v", got, want)
	}
	return c
}

// classicLeave sends a LeaveGroup v5 for one member.
func (h *harness) classicLeave(group, memberID, instance string) *kmsg.LeaveGroupResponse {
	h.t.Helper()
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version, lr.Group = 5, group
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = memberID
	if instance != "" {
		m.InstanceID = &instance
	}
	lr.Members = []kmsg.LeaveGroupRequestMember{m}
	return h.responses[h.send("c", lr)].(*kmsg.LeaveGroupResponse)
}
