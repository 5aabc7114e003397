package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// t0 is the fake clock's start; time only moves when a test moves it.
var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// testConfig is Kafka's defaults with few offsets partitions, no initial
// rebalance delay and deterministic member ids.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.OffsetsTopicPartitions = 4
	cfg.InitialRebalanceDelay = 0
	n := 0
	cfg.NewUUID = func() string { n++; return fmt.Sprintf("uuid-%d", n) }
	return cfg
}

// harness drives a Coordinator the way a broker would: it keeps every
// response, holds Writes until persisted (at once when autoPersist), keeps
// the persisted log of each partition, and fires timers at their deadlines.
type harness struct {
	t           testing.TB
	c           *Coordinator
	now         time.Time
	lastToken   uint64
	responses   map[uint64]kmsg.Response
	pending     []Write
	log         map[int32][]LogRecord
	deadline    time.Time
	autoPersist bool
	// requests are the requests sent, by token; answers the tokens in the
	// order they were answered.
	requests map[uint64]kmsg.Request
	answers  []uint64
}

func newHarness(t testing.TB, cfg Config) *harness {
	if cfg.Stats == nil {
		cfg.Stats = &Stats{}
	}
	h := &harness{
		t:           t,
		c:           New(cfg),
		now:         t0,
		responses:   make(map[uint64]kmsg.Response),
		log:         make(map[int32][]LogRecord),
		autoPersist: true,
		requests:    make(map[uint64]kmsg.Request),
	}
	for p := int32(0); p < cfg.OffsetsTopicPartitions; p++ {
		rd, err := h.c.LoadPartition(h.now, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.apply(rd)
	}
	return h
}

// apply takes in one Ready.
func (h *harness) apply(rd Ready) {
	h.t.Helper()
	for _, r := range rd.Responses {
		if _, dup := h.responses[r.Token]; dup {
			h.t.Fatalf("request %d answered twice: %#v", r.Token, r.Body)
		}
		if r.Token == 0 || r.Token > h.lastToken {
			h.t.Fatalf("response to unknown request %d", r.Token)
		}
		h.responses[r.Token] = r.Body
		h.answers = append(h.answers, r.Token)
	}
	h.pending = append(h.pending, rd.Writes...)
	h.deadline = rd.Deadline
	if h.autoPersist {
		h.persistAll()
	}
}

// persistAll makes every pending write durable, including writes that
// persisting causes.
func (h *harness) persistAll() {
	for len(h.pending) > 0 {
		w := h.pending[0]
		h.pending = h.pending[1:]
		h.persist(w)
	}
}

// persist appends w to its partition's log and reports it durable.
func (h *harness) persist(w Write) {
	h.apply(h.c.Persisted(h.now, w.ID, h.appendLog(w), nil))
}

// appendLog appends w's records to the log, as one batch, and returns the
// offset of the first.
func (h *harness) appendLog(w Write) int64 {
	base := int64(len(h.log[w.Partition]))
	for i, r := range w.Records {
		h.log[w.Partition] = append(h.log[w.Partition], LogRecord{Record: r, Offset: base + int64(i),
			Transactional: w.Transactional, ProducerID: w.ProducerID})
	}
	return base
}

// logRecords gives records consecutive offsets from 0, outside
// transactions.
func logRecords(recs ...Record) []LogRecord {
	out := make([]LogRecord, len(recs))
	for i, r := range recs {
		out[i] = LogRecord{Record: r, Offset: int64(i)}
	}
	return out
}

// failWrites fails every pending write with err.
func (h *harness) failWrites(err error) {
	ws := h.pending
	h.pending = nil
	for _, w := range ws {
		h.apply(h.c.Persisted(h.now, w.ID, -1, err))
	}
}

func (h *harness) send(clientID string, body kmsg.Request) uint64 {
	h.t.Helper()
	h.lastToken++
	tok := h.lastToken
	h.requests[tok] = body
	h.apply(h.c.Handle(h.now, Request{Token: tok, ClientID: clientID, ClientHost: "/127.0.0.1", Body: body}))
	return tok
}

// advance moves the clock by d, firing timers at their deadlines.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	end := h.now.Add(d)
	spins := 0
	for !h.deadline.IsZero() && !h.deadline.After(end) {
		if h.deadline.After(h.now) {
			h.now = h.deadline
			spins = 0
		}
		if spins++; spins > 100 {
			h.t.Fatalf("Tick at %v keeps asking to be called again", h.now)
		}
		h.apply(h.c.Tick(h.now))
	}
	h.now = end
}

// tick fires whatever is due now (zero delays).
func (h *harness) tick() { h.advance(0) }

func (h *harness) answered(tok uint64) bool { _, ok := h.responses[tok]; return ok }

func (h *harness) joinResp(tok uint64) *kmsg.JoinGroupResponse {
	h.t.Helper()
	r, ok := h.responses[tok].(*kmsg.JoinGroupResponse)
	if !ok {
		h.t.Fatalf("request %d: no JoinGroup response (have %T)", tok, h.responses[tok])
	}
	return r
}

func (h *harness) syncResp(tok uint64) *kmsg.SyncGroupResponse {
	h.t.Helper()
	r, ok := h.responses[tok].(*kmsg.SyncGroupResponse)
	if !ok {
		h.t.Fatalf("request %d: no SyncGroup response (have %T)", tok, h.responses[tok])
	}
	return r
}

// offsets returns the offsets of a group (nil: none).
func (h *harness) offsets(id string) *groupOffsets { return h.c.offsets.byGroup[id] }

// committedOf is a group's committed offsets, nil if none.
func committedOf(o *groupOffsets) map[topicPartition]offset {
	if o == nil || len(o.committed) == 0 {
		return nil
	}
	return o.committed
}

func (h *harness) group(id string) *group {
	h.t.Helper()
	g := h.c.groups.byID[id]
	if g == nil {
		h.t.Fatalf("group %q does not exist", id)
	}
	return g
}

// joinOpts describe one JoinGroup.
type joinOpts struct {
	version   int16
	instance  string
	session   time.Duration
	rebalance time.Duration
	protocols []string // default "range"
	metadata  []byte   // default: a consumer subscription to topic "t"
	protoType string   // default "consumer"
}

func subscription(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func (h *harness) join(group, client, memberID string, o joinOpts) uint64 {
	h.t.Helper()
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = o.version // 0 means the default, 7; -1 means version 0
	switch {
	case o.version == 0:
		r.Version = 7
	case o.version < 0:
		r.Version = 0
	}
	r.Group, r.MemberID = group, memberID
	if o.instance != "" {
		r.InstanceID = &o.instance
	}
	r.SessionTimeoutMillis = int32(orDefault(o.session, 10*time.Second).Milliseconds())
	r.RebalanceTimeoutMillis = int32(orDefault(o.rebalance, 20*time.Second).Milliseconds())
	r.ProtocolType = o.protoType
	if r.ProtocolType == "" {
		r.ProtocolType = consumerProtocolType
	}
	names := o.protocols
	if names == nil {
		names = []string{"range"}
	}
	md := o.metadata
	if md == nil {
		md = subscription("t")
	}
	for _, n := range names {
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: n, Metadata: md})
	}
	return h.send(client, r)
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// joinNew does the KIP-394 dance for a dynamic member: the first JoinGroup
// gets MEMBER_ID_REQUIRED, the second one (returned) waits in the group.
func (h *harness) joinNew(group, client string, o joinOpts) (memberID string, tok uint64) {
	h.t.Helper()
	first := h.joinResp(h.join(group, client, "", o))
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		h.t.Fatalf("first join of %s: error %d, want MEMBER_ID_REQUIRED", client, first.ErrorCode)
	}
	return first.MemberID, h.join(group, client, first.MemberID, o)
}

func (h *harness) sync(group, memberID string, gen int32, instance string, assign map[string][]byte) uint64 {
	h.t.Helper()
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation = group, memberID, gen
	if instance != "" {
		r.InstanceID = &instance
	}
	for id, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a})
	}
	return h.send("c", r)
}

func (h *harness) heartbeat(group, memberID string, gen int32, instance string) int16 {
	h.t.Helper()
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation = group, memberID, gen
	if instance != "" {
		r.InstanceID = &instance
	}
	return h.responses[h.send("c", r)].(*kmsg.HeartbeatResponse).ErrorCode
}

func (h *harness) commit(group, memberID string, gen int32, offsets map[string]int64) uint64 {
	h.t.Helper()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group, r.MemberID, r.Generation = group, memberID, gen
	for _, topic := range sortedKeys(offsets) {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = topic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset = offsets[topic]
		md := "md-" + topic
		p.Metadata = &md
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
	}
	return h.send("c", r)
}

// commitCodes flattens an OffsetCommit response's codes.
func (h *harness) commitCodes(tok uint64) []int16 {
	h.t.Helper()
	r, ok := h.responses[tok].(*kmsg.OffsetCommitResponse)
	if !ok {
		h.t.Fatalf("request %d: no OffsetCommit response", tok)
	}
	var codes []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// fetch returns the committed offset of partition 0 of each topic.
func (h *harness) fetch(group string, topics ...string) map[string]int64 {
	h.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = group
	for _, t := range topics {
		r.Topics = append(r.Topics, kmsg.OffsetFetchRequestTopic{Topic: t, Partitions: []int32{0}})
	}
	resp := h.responses[h.send("c", r)].(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		h.t.Fatalf("fetch %s: error %d", group, resp.ErrorCode)
	}
	out := make(map[string]int64)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[t.Topic] = p.Offset
		}
	}
	return out
}

// stable brings members (all already waiting in JoinGroup or about to be
// answered) through the end of the join phase and SyncGroup; the leader
// assigns each member its own id as bytes. It returns the generation.
func (h *harness) stable(group string, joins map[string]uint64) int32 {
	h.t.Helper()
	h.tick()
	var gen int32
	var leader string
	for id, tok := range joins {
		r := h.joinResp(tok)
		if r.ErrorCode != 0 {
			h.t.Fatalf("join of %s: error %d", id, r.ErrorCode)
		}
		gen, leader = r.Generation, r.LeaderID
	}
	assign := make(map[string][]byte)
	for id := range joins {
		assign[id] = []byte(id)
	}
	syncs := make(map[string]uint64)
	for _, id := range sortedKeys(joins) {
		if id != leader {
			syncs[id] = h.sync(group, id, gen, "", nil)
		}
	}
	syncs[leader] = h.sync(group, leader, gen, "", assign)
	for id, tok := range syncs {
		r := h.syncResp(tok)
		if r.ErrorCode != 0 || string(r.MemberAssignment) != id {
			h.t.Fatalf("sync of %s: error %d, assignment %q", id, r.ErrorCode, r.MemberAssignment)
		}
	}
	if g := h.group(group); g.state != Stable {
		h.t.Fatalf("group %s is %v, want Stable", group, g.state)
	}
	return gen
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func wantCode(t testing.TB, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
	}
}
