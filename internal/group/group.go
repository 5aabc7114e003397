package group

import (
	"bytes"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is the state of a classic group, named as Kafka names it in
// DescribeGroups and ListGroups.
type State int8

const (
	// Empty: no members; the group may still hold committed offsets.
	Empty State = iota
	// PreparingRebalance: waiting for members to (re)join.
	PreparingRebalance
	// CompletingRebalance: joined; waiting for the leader's assignment.
	CompletingRebalance
	// Stable: every member has its assignment.
	Stable
	// Dead: removed; only ever seen by describing an unknown group.
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s State) String() string { return stateNames[s] }

// consumerProtocolType is the protocol type of Kafka consumers, whose
// subscriptions the coordinator can read.
const consumerProtocolType = "consumer"

// waiter is a request that will be answered later.
type waiter struct {
	token   uint64
	version int16
}

// member is one member of a classic group.
type member struct {
	id         string
	instanceID *string // static membership (KIP-345)
	clientID   string
	clientHost string

	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []protocol // the member's order of preference

	// assignment is what the leader gave this member; nil until the
	// first assignment.
	assignment []byte

	join *waiter // a JoinGroup waiting for the join phase to end
	sync *waiter // a SyncGroup waiting for the leader's assignment

	// isNew: joined but never completed a join phase; its JoinGroup is
	// bounded by Config.NewMemberJoinTimeout.
	isNew        bool
	sessionTimer uint64
}

type protocol struct {
	name     string
	metadata []byte
}

func (m *member) static() bool { return m.instanceID != nil }

// metadata returns the member's metadata for a protocol (nil if it does not
// support it).
func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether the member would join with exactly these
// protocols, in this order, with byte-identical metadata.
func (m *member) matches(ps []kmsg.JoinGroupRequestProtocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i, p := range ps {
		if p.Name != m.protocols[i].name || !bytes.Equal(p.Metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// vote is the member's most preferred protocol among the candidates.
func (m *member) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name
		}
	}
	return ""
}

func copyProtocols(ps []kmsg.JoinGroupRequestProtocol) []protocol {
	out := make([]protocol, len(ps))
	for i, p := range ps {
		out[i] = protocol{name: p.Name, metadata: append([]byte(nil), p.Metadata...)}
	}
	return out
}

// topicPartition keys committed offsets.
type topicPartition struct {
	topic     string
	partition int32
}

// offset is one committed offset, as stored in an OffsetCommitValue.
type offset struct {
	offset          int64
	leaderEpoch     int32 // -1: none
	metadata        string
	commitTimestamp int64 // ms
	expireTimestamp int64 // ms; -1: none (only v1 records carry one)
	// recordOffset is the log offset of its record: of two commits of a
	// partition, the later record wins when a transaction commits.
	recordOffset int64
}

// pendingCommit counts a partition's commits not yet persisted, all made
// since its offset was last deleted: each has a seq at least since.
type pendingCommit struct {
	since uint64
	n     int
}

// group is one group, classic or of the consumer protocol; its offsets
// are the offsetManager's (groupOffsets).
type group struct {
	id        string
	partition int32

	state, prevState State
	// stateTimestamp is when the group entered its state (ms), -1 if
	// unknown (Kafka's currentStateTimestamp).
	stateTimestamp int64
	generation     int32
	protocolType   string // "" if none
	protocol       string // the selected protocol; "" if none
	leader         string // "" if none

	members []*member // in join order; the order of every listing
	byID    map[string]*member
	// static maps group.instance.id to the member id holding it.
	static map[string]string
	// pendingJoin are member ids handed out with MEMBER_ID_REQUIRED and not
	// yet used, each with its session timer.
	pendingJoin map[string]uint64
	// pendingSync are members that have not sent SyncGroup since the last
	// join phase ended.
	pendingSync map[string]bool
	// supported counts, per protocol name, the members that support it.
	supported    map[string]int
	awaitingJoin int

	// newMemberAdded extends the initial rebalance delay.
	newMemberAdded bool
	// The join timer; for the initial delay, its current delay and the
	// time remaining before the rebalance timeout.
	joinTimer                        uint64
	initialJoin                      bool
	initialDelayMs, initialRemaining int64
	syncTimer                        uint64

	// subscribed are the topics the consumer members subscribe to;
	// subscribedKnown is false when they cannot be read.
	subscribed      map[string]bool
	subscribedKnown bool

	// unlogged: a commit created the group and none of its records has
	// persisted yet; if they all fail, the group goes too.
	unlogged bool

	// consumer, when set, makes this a consumer group (KIP-848): the
	// classic fields above are unused but for id, partition and
	// protocolType ("consumer").
	consumer *consumerGroup
}

func newGroup(id string, partition int32, nowMs int64) *group {
	return &group{
		id:             id,
		partition:      partition,
		stateTimestamp: nowMs,
		byID:           make(map[string]*member),
		static:         make(map[string]string),
		pendingJoin:    make(map[string]uint64),
		pendingSync:    make(map[string]bool),
		supported:      make(map[string]int),
	}
}

func (gm *groupManager) transition(g *group, to State) {
	gm.touch(g.id)
	g.prevState, g.state = g.state, to
	g.stateTimestamp = gm.nowMs()
}

func (g *group) canRebalance() bool {
	return g.state == Stable || g.state == CompletingRebalance || g.state == Empty
}

func (g *group) hasAllMembersJoined() bool {
	return len(g.members) == g.awaitingJoin && len(g.pendingJoin) == 0
}

// rebalanceTimeoutMs is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeoutMs() int64 {
	var max int32
	for _, m := range g.members {
		if m.rebalanceTimeoutMs > max {
			max = m.rebalanceTimeoutMs
		}
	}
	return int64(max)
}

// add makes m a member; w is its waiting JoinGroup, if any.
func (g *group) add(m *member, w *waiter) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members = append(g.members, m)
	g.byID[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	if w != nil {
		m.join = w
		g.awaitingJoin++
	}
	delete(g.pendingJoin, m.id)
}

// remove takes m out of the group. Its waiters must have been answered.
func (g *group) remove(m *member) {
	if g.byID[m.id] != m {
		return
	}
	delete(g.byID, m.id)
	for i, x := range g.members {
		if x == m {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	for _, p := range m.protocols {
		g.supported[p.name]--
	}
	if m.join != nil {
		g.awaitingJoin--
		m.join = nil
	}
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if len(g.members) > 0 {
			g.leader = g.members[0].id
		}
	}
	delete(g.pendingJoin, m.id)
	delete(g.pendingSync, m.id)
	m.sessionTimer = 0
}

// updateMember replaces a member's protocols and timeouts and sets its
// waiting JoinGroup (nil: none). The caller answers any superseded waiter.
func (g *group) updateMember(m *member, ps []protocol, rebalanceMs, sessionMs int32, w *waiter) {
	for _, p := range m.protocols {
		g.supported[p.name]--
	}
	m.protocols = ps
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	m.rebalanceTimeoutMs, m.sessionTimeoutMs = rebalanceMs, sessionMs
	switch {
	case w != nil && m.join == nil:
		g.awaitingJoin++
	case w == nil && m.join != nil:
		g.awaitingJoin--
	}
	m.join = w
}

// supportsProtocols reports whether a member joining with this protocol
// type and these protocol names can be part of the group: any type and at
// least one protocol for an Empty group, else the group's type and a
// protocol that every current member supports.
func (g *group) supportsProtocols(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if g.state == Empty {
		return protocolType != "" && len(ps) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	for _, p := range ps {
		if g.supported[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol of the next generation: each member
// votes for its most preferred protocol that all members support, and the
// most votes win. Kafka breaks ties by hash map order; here the current
// protocol wins a tie, then the smallest name.
func (g *group) selectProtocol() string {
	candidates := make(map[string]bool)
	for name, n := range g.supported {
		if n == len(g.members) && n > 0 {
			candidates[name] = true
		}
	}
	votes := make(map[string]int)
	for _, m := range g.members {
		votes[m.vote(candidates)]++
	}
	names := make([]string, 0, len(votes))
	for name := range votes {
		names = append(names, name)
	}
	sort.Strings(names)
	best := ""
	for _, name := range names {
		switch {
		case best == "" || votes[name] > votes[best]:
			best = name
		case votes[name] == votes[best] && name == g.protocol:
			best = name
		}
	}
	return best
}

// computeSubscribed reads the consumer subscriptions of the members for
// the selected protocol. Like Kafka it parses only the version-0 prefix
// (topics), which every version of ConsumerProtocolSubscription shares, and
// knows nothing when the protocol type is not "consumer" or a subscription
// cannot be parsed.
func (g *group) computeSubscribed() {
	g.subscribed, g.subscribedKnown = nil, false
	if g.protocolType != consumerProtocolType {
		return
	}
	topics := make(map[string]bool)
	if len(g.members) > 0 {
		if g.protocol == "" {
			return
		}
		for _, m := range g.members {
			ts, ok := subscriptionTopics(m.metadata(g.protocol))
			if !ok {
				return
			}
			for _, t := range ts {
				topics[t] = true
			}
		}
	}
	g.subscribed, g.subscribedKnown = topics, true
}

// subscriptionTopics parses | version int16 | topics [string] | of a
// ConsumerProtocolSubscription.
func subscriptionTopics(b []byte) ([]string, bool) {
	r := kbin.Reader{Src: b}
	if r.Int16() < 0 {
		return nil, false
	}
	n := r.ArrayLen()
	if !r.Ok() || n < 0 || int(n) > len(r.Src)/2 {
		return nil, false
	}
	topics := make([]string, 0, n)
	for i := int32(0); i < n; i++ {
		l := r.Int16()
		if l < 0 {
			return nil, false
		}
		topics = append(topics, string(r.Span(int(l))))
	}
	return topics, r.Ok()
}

// isSubscribedTo reports whether the group consumes topic. When it cannot
// tell, a "consumer" group counts as subscribed and any other group not.
func (g *group) isSubscribedTo(topic string) bool {
	if g.consumer != nil {
		return g.consumer.isSubscribedTo(topic)
	}
	if g.subscribedKnown {
		return g.subscribed[topic]
	}
	return g.protocolType == consumerProtocolType
}

// validateMember is Kafka's check of the member id and instance id of a
// request: an instance id must map to the member id (FENCED_INSTANCE_ID if
// another member holds it), and the member must exist.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		holder, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMemberID
		}
		if holder != memberID {
			return errFencedInstanceID
		}
	}
	if g.byID[memberID] == nil {
		return errUnknownMemberID
	}
	return 0
}

// assignments returns every member's current assignment.
func (g *group) assignments() map[string][]byte {
	a := make(map[string][]byte, len(g.members))
	for _, m := range g.members {
		a[m.id] = m.assignment
	}
	return a
}
