package group

// The state of a consumer group (KIP-848). Everything but the fields marked
// runtime is rebuilt from the group's records: apply is the only way the
// persisted state changes, whether a record is replayed from the log or
// was just produced by a handler (which keeps apply's undo until the record
// is durable).

import (
	"slices"
	"sort"
)

// Member states, as Kafka's MemberState stores them.
const (
	memberStable     int8 = 0 // reconciled to the member's epoch
	memberUnrevoked  int8 = 1 // must revoke partitions to move to the next epoch
	memberUnreleased int8 = 2 // at the target epoch, waiting for partitions others still own
	memberUnknown    int8 = 127
)

// Member epochs with a meaning of their own.
const (
	leaveEpoch       int32 = -1 // a dynamic member leaves
	staticLeaveEpoch int32 = -2 // a static member leaves, for now
)

// assignment maps a topic id to its partitions, ascending. Topics without
// partitions are absent.
type assignment map[[16]byte][]int32

func (a assignment) add(id [16]byte, p int32) {
	ps := a[id]
	i, found := slices.BinarySearch(ps, p)
	if !found {
		a[id] = slices.Insert(ps, i, p)
	}
}

func (a assignment) has(id [16]byte, p int32) bool {
	_, found := slices.BinarySearch(a[id], p)
	return found
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// topicIDs returns the topics in id order.
func (a assignment) topicIDs() [][16]byte {
	ids := make([][16]byte, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareIDs)
	return ids
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

func (a assignment) clone() assignment {
	c := make(assignment, len(a))
	for id, ps := range a {
		c[id] = slices.Clone(ps)
	}
	return c
}

// each calls f for every partition, in topic id and partition order.
func (a assignment) each(f func(id [16]byte, p int32)) {
	for _, id := range a.topicIDs() {
		for _, p := range a[id] {
			f(id, p)
		}
	}
}

// memberMeta is what ConsumerGroupMemberMetadataValue records of a member.
type memberMeta struct {
	instanceID         *string
	rackID             *string
	clientID           string
	clientHost         string
	topics             []string // sorted, unique
	regex              string   // "" when none
	rebalanceTimeoutMs int32
	serverAssignor     *string
}

func (m memberMeta) equal(o memberMeta) bool {
	return eqPtr(m.instanceID, o.instanceID) && eqPtr(m.rackID, o.rackID) &&
		m.clientID == o.clientID && m.clientHost == o.clientHost &&
		slices.Equal(m.topics, o.topics) && m.regex == o.regex &&
		m.rebalanceTimeoutMs == o.rebalanceTimeoutMs && eqPtr(m.serverAssignor, o.serverAssignor)
}

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// memberAssignment is what ConsumerGroupCurrentMemberAssignmentValue
// records of a member.
type memberAssignment struct {
	epoch, prevEpoch int32
	state            int8
	assigned         assignment // owned by the member
	pending          assignment // still owned, being revoked
}

func (a memberAssignment) equal(b memberAssignment) bool {
	return a.epoch == b.epoch && a.prevEpoch == b.prevEpoch && a.state == b.state &&
		a.assigned.equal(b.assigned) && a.pending.equal(b.pending)
}

// cMember is one member of a consumer group. Members are never modified in
// place: a change replaces the pointer, so that an undo can put the old one
// back.
type cMember struct {
	id string
	memberMeta
	memberAssignment
}

// newCMember is a member as Kafka creates one before its first record.
func newCMember(id string) *cMember {
	return &cMember{
		id:               id,
		memberMeta:       memberMeta{rebalanceTimeoutMs: -1},
		memberAssignment: memberAssignment{prevEpoch: -1, assigned: assignment{}, pending: assignment{}},
	}
}

func (m *cMember) clone() *cMember {
	c := *m
	c.topics = slices.Clone(m.topics)
	c.assigned = m.assigned.clone()
	c.pending = m.pending.clone()
	return &c
}

// reconciledTo reports whether the member has converged on the target of
// this epoch.
func (m *cMember) reconciledTo(epoch int32) bool {
	return m.state == memberStable && m.epoch == epoch
}

// tpid is one partition of a topic given by id.
type tpid struct {
	topic     [16]byte
	partition int32
}

// consumerGroup is the KIP-848 state of a group.
type consumerGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of the target assignment; -1 once deleted
	subMeta         map[string]topicMeta
	members         map[string]*cMember
	target          map[string]assignment
	regexes         map[string]resolvedRegex

	// Derived from members.
	static    map[string]string // instance id -> member id
	owners    map[tpid]string   // partition -> member that owns or revokes it
	names     map[string]int    // topic -> members subscribing by name
	regexSubs map[string]int    // regex -> members subscribing with it
	assignors map[string]int    // server assignor -> members preferring it

	// Runtime state, not persisted.
	refresh bool // topics changed: recompute subscription metadata
	timers  map[string]*cTimers
	pending []*cgWrite // writes not yet durable, in order
}

// cTimers are the timer identities of one member (see timer).
type cTimers struct {
	session        uint64
	rebalance      uint64
	rebalanceEpoch int32 // the epoch the member must leave in time
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		subMeta:   map[string]topicMeta{},
		members:   map[string]*cMember{},
		target:    map[string]assignment{},
		regexes:   map[string]resolvedRegex{},
		static:    map[string]string{},
		owners:    map[tpid]string{},
		names:     map[string]int{},
		regexSubs: map[string]int{},
		assignors: map[string]int{},
		timers:    map[string]*cTimers{},
	}
}

// apply changes the group as the record says and returns how to undo it.
// A group epoch tombstone is the caller's business (the group goes).
func (cg *consumerGroup) apply(r cgRecord) (undo func()) {
	switch r.kind {
	case cgMetadataKey:
		old := cg.epoch
		if e, ok := r.value.(int32); ok {
			cg.epoch = e
		}
		return func() { cg.epoch = old }
	case cgTargetMetadataKey:
		old := cg.assignmentEpoch
		cg.assignmentEpoch = -1
		if e, ok := r.value.(int32); ok {
			cg.assignmentEpoch = e
		}
		return func() { cg.assignmentEpoch = old }
	case cgPartitionMetadataKey:
		old := cg.subMeta
		cg.subMeta = map[string]topicMeta{}
		if m, ok := r.value.(map[string]topicMeta); ok {
			cg.subMeta = m
		}
		return func() { cg.subMeta = old }
	case cgTargetMemberKey:
		old, had := cg.target[r.member]
		if a, ok := r.value.(assignment); ok {
			cg.target[r.member] = a
		} else {
			delete(cg.target, r.member)
		}
		return func() {
			if had {
				cg.target[r.member] = old
			} else {
				delete(cg.target, r.member)
			}
		}
	case cgRegexKey:
		old, had := cg.regexes[r.member]
		if x, ok := r.value.(resolvedRegex); ok {
			cg.regexes[r.member] = x
		} else {
			delete(cg.regexes, r.member)
		}
		return func() {
			if had {
				cg.regexes[r.member] = old
			} else {
				delete(cg.regexes, r.member)
			}
		}
	}

	// The member records.
	old := cg.members[r.member]
	var next *cMember
	switch v := r.value.(type) {
	case memberMeta:
		next = newCMember(r.member)
		if old != nil {
			next = old.clone()
		}
		next.memberMeta = v
	case memberAssignment:
		next = newCMember(r.member)
		if old != nil {
			next = old.clone()
		}
		next.memberAssignment = v
	case nil:
		switch {
		case old == nil:
		case r.kind == cgCurrentMemberKey:
			// The member leaves its assignment: epoch -1, nothing owned.
			next = old.clone()
			next.epoch, next.prevEpoch = leaveEpoch, leaveEpoch
			next.assigned, next.pending = assignment{}, assignment{}
		}
	}
	cg.setMember(r.member, next)
	return func() { cg.setMember(r.member, old) }
}

// setMember replaces (nil: removes) a member and keeps the derived indexes.
func (cg *consumerGroup) setMember(id string, m *cMember) {
	if old := cg.members[id]; old != nil {
		cg.index(old, -1)
		delete(cg.members, id)
	}
	if m != nil {
		cg.members[id] = m
		cg.index(m, 1)
	}
}

func (cg *consumerGroup) index(m *cMember, delta int) {
	bump := func(counts map[string]int, key string) {
		if counts[key] += delta; counts[key] <= 0 {
			delete(counts, key)
		}
	}
	for _, t := range m.topics {
		bump(cg.names, t)
	}
	if m.regex != "" {
		bump(cg.regexSubs, m.regex)
	}
	if m.serverAssignor != nil {
		bump(cg.assignors, *m.serverAssignor)
	}
	if m.instanceID != nil {
		if delta > 0 {
			cg.static[*m.instanceID] = m.id
		} else if cg.static[*m.instanceID] == m.id {
			delete(cg.static, *m.instanceID)
		}
	}
	// A partition has at most one owner while the protocol is followed;
	// a log that breaks that (a write lost before later ones) keeps the
	// last claim.
	for _, a := range []assignment{m.assigned, m.pending} {
		a.each(func(id [16]byte, p int32) {
			k := tpid{id, p}
			if delta > 0 {
				cg.owners[k] = m.id
			} else if cg.owners[k] == m.id {
				delete(cg.owners, k)
			}
		})
	}
}

// staticMember returns the member holding an instance id, or nil.
func (cg *consumerGroup) staticMember(instanceID string) *cMember {
	if id, ok := cg.static[instanceID]; ok {
		return cg.members[id]
	}
	return nil
}

// State names, as Kafka's ConsumerGroupState prints them.
const (
	cgEmpty       = "Empty"
	cgAssigning   = "Assigning"
	cgReconciling = "Reconciling"
	cgStable      = "Stable"
)

// state is the group state Kafka computes from members and epochs.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return cgEmpty
	case cg.epoch > cg.assignmentEpoch:
		return cgAssigning
	}
	for _, m := range cg.members {
		if !m.reconciledTo(cg.assignmentEpoch) {
			return cgReconciling
		}
	}
	return cgStable
}

// memberTopics are the topic names a member subscribes to: its names and
// what its regular expression resolved to.
func (cg *consumerGroup) memberTopics(m *cMember) []string {
	if m.regex == "" {
		return m.topics
	}
	re, ok := cg.regexes[m.regex]
	if !ok {
		return m.topics
	}
	return normalizeTopics(append(slices.Clone(m.topics), re.topics...))
}

// subscribedTopics is the union of every member's topics, sorted.
func (cg *consumerGroup) subscribedTopics() []string {
	set := make(map[string]bool, len(cg.names))
	for t := range cg.names {
		set[t] = true
	}
	for re := range cg.regexSubs {
		for _, t := range cg.regexes[re].topics {
			set[t] = true
		}
	}
	return sortedIDs(set)
}

// isSubscribedTo reports whether any member consumes topic.
func (cg *consumerGroup) isSubscribedTo(topic string) bool {
	return slices.Contains(cg.subscribedTopics(), topic)
}

// preferredAssignor is the server assignor most members ask for; ties go
// to the one configured first, and def is used when no member asks.
func (cg *consumerGroup) preferredAssignor(configured []string, def string) string {
	best, bestN := def, 0
	for _, name := range configured {
		if n := cg.assignors[name]; n > bestN {
			best, bestN = name, n
		}
	}
	return best
}

// sortedIDs returns a map's keys in order.
func sortedIDs[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
