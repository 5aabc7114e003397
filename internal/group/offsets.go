package group

// OffsetCommit (versions 0-9), OffsetFetch (0-9, batched from v8),
// OffsetDelete (0), and offsets retention.
//
// OffsetCommit: the coordinator check fails every partition. A group that
// does not exist is created, empty and without protocol type, for a commit
// with generation -1 (a "simple" group that uses Kafka only for offsets);
// any other commit gets ILLEGAL_GENERATION, or GROUP_ID_NOT_FOUND from v9.
// With generation -1 and no member or instance id, a commit needs an Empty
// group (else UNKNOWN_MEMBER_ID); otherwise the member, instance id and
// generation must match (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// ILLEGAL_GENERATION). CompletingRebalance answers REBALANCE_IN_PROGRESS; a
// commit in PreparingRebalance is accepted and, like one in Stable, restarts
// the member's session. Metadata longer than offset.metadata.max.bytes (in
// UTF-16 units, as Java measures) fails its partition with
// OFFSET_METADATA_TOO_LARGE. The response waits until the records persist;
// the offsets become visible to OffsetFetch at that moment (of two commits
// of a partition, the one whose record is later in the log, whatever the
// order their writes are reported in). A group that commits created is
// removed again when all their writes fail and nothing else used it, as
// Kafka's coordinator reverts it.
//
// OffsetFetch answers from committed state whatever the group's state:
// transactional offsets count once their transaction commits
// (txn_offsets.go). With require_stable (v7+), a partition with a commit
// not yet persisted or a transactional offset not yet ended answers
// UNSTABLE_OFFSET_COMMIT (offset -1), as Kafka 3.x does, so the consumer
// retries. Consumer groups (KIP-848) are checked as consumer_admin.go says.
// Unknown groups and partitions answer offset -1 and empty metadata; null
// topics (v2+) mean all of the group's committed offsets. Coordinator
// errors go in each partition for v0-1, in the top-level error for v2-7,
// and in the group for v8+.
//
// OffsetDelete: empty group id is INVALID_GROUP_ID; an unknown group is
// GROUP_ID_NOT_FOUND; a non-empty group is NON_EMPTY_GROUP unless its
// protocol type is "consumer", in which case the topics its members
// subscribe to (all of them if the subscriptions cannot be read) answer
// GROUP_SUBSCRIBED_TO_TOPIC and the others are deleted.
//
// OffsetDelete, group deletion and retention treat a partition's pending
// transactional offsets as Kafka does: a tombstone of the partition ends
// them too, an offset with pending transactional offsets does not expire,
// and a group holding any is not deleted by retention.
//
// Retention, every offsets.retention.check.interval.ms: offsets expire after
// offsets.retention.minutes counted from when an Empty group with a protocol
// type became Empty, from their commit for groups without protocol type, and
// for Stable consumer groups whose subscriptions are known, from their commit
// but only for topics no member subscribes to; a v1 record's explicit expire
// timestamp overrides. An Empty group left without offsets is deleted.

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetManager commits, fetches, deletes and expires the offsets of the
// groups, plain and transactional (txn_offsets.go), as Kafka's
// OffsetMetadataManager. It asks the groupManager whether a commit's member
// may commit, and creates there the group a first commit makes exist.
type offsetManager struct {
	*base
	groups *groupManager
	// byGroup are the offsets of the groups that hold some (committed,
	// being committed, or pending in a transaction). An entry lives as
	// long as its group: forgetting the group forgets it.
	byGroup map[string]*groupOffsets
}

// groupOffsets are one group's offsets.
type groupOffsets struct {
	committed map[topicPartition]offset
	// pendingCommits counts, per partition, the commits whose records are
	// not yet persisted.
	pendingCommits map[topicPartition]pendingCommit
	// commitWrites counts the writes of the group's commits not yet
	// reported.
	commitWrites int
	// txn are the transactional offsets not yet ended by a marker, per
	// producer id (txn_offsets.go); nil when there are none.
	txn map[int64]map[topicPartition]*txnOffset
}

func newOffsetManager(b *base, groups *groupManager) *offsetManager {
	return &offsetManager{base: b, groups: groups, byGroup: make(map[string]*groupOffsets)}
}

// of returns the offsets of a group, creating its entry.
func (om *offsetManager) of(groupID string) *groupOffsets {
	o := om.byGroup[groupID]
	if o == nil {
		o = &groupOffsets{committed: make(map[topicPartition]offset), pendingCommits: make(map[topicPartition]pendingCommit)}
		om.byGroup[groupID] = o
	}
	return o
}

// live reports whether g and its offsets o are still what the coordinator
// serves (not deleted, unloaded or replaced since a callback was made).
func (om *offsetManager) live(g *group, o *groupOffsets) bool {
	return om.groups.live(g) && om.byGroup[g.id] == o
}

// holds reports whether a group has offsets: committed, being committed,
// or pending in a transaction.
func (om *offsetManager) holds(groupID string) bool { return om.byGroup[groupID].holds() }

func (o *groupOffsets) holds() bool {
	return o != nil && (len(o.committed) > 0 || len(o.pendingCommits) > 0 || len(o.txn) > 0)
}

// loaded serves the offsets of a group rebuilt by a load of partition ps.
func (om *offsetManager) loaded(ps *offsetsPartition, groupID string, o *groupOffsets) {
	om.byGroup[groupID] = o
	om.touch(groupID)
	for pid := range o.txn {
		ps.indexTxn(pid, groupID)
	}
}

// forget drops a group's offsets, with no tombstone: its group is gone.
func (om *offsetManager) forget(groupID string) {
	delete(om.byGroup, groupID)
	om.touch(groupID)
}

func (om *offsetManager) offsetCommit(req Request, r *kmsg.OffsetCommitRequest) {
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Version = r.Version
	codes := make([][]int16, len(r.Topics))
	for i, t := range r.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	answer := func() {
		for i, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for j, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		om.respond(req.Token, resp)
	}
	failAll := func(code int16) {
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		answer()
	}

	p, code := om.route(r.Group)
	if code != 0 {
		failAll(code)
		return
	}
	g := om.groups.byID[r.Group]
	if g == nil {
		switch {
		case r.Generation < 0:
			g = om.groups.createSimple(r.Group, p)
		case r.Version >= 9:
			failAll(errGroupIDNotFound)
			return
		default:
			failAll(errIllegalGeneration)
			return
		}
	}
	if code := g.validateOffsetCommit(r); code != 0 {
		failAll(code)
		return
	}
	if m := g.byID[r.MemberID]; m != nil && (g.state == Stable || g.state == PreparingRebalance) {
		om.groups.scheduleSession(g, m, ms(int64(m.sessionTimeoutMs)))
	}

	nowMs := om.nowMs()
	expire := int64(-1)
	if r.RetentionTimeMillis != -1 {
		expire = nowMs + r.RetentionTimeMillis
	}
	type staged struct {
		tp  topicPartition
		o   offset
		seq uint64
	}
	var stage []staged
	var recs []Record
	offs := om.of(g.id)
	for i, t := range r.Topics {
		for j, pt := range t.Partitions {
			o, code := om.committedOffset(pt.Offset, pt.LeaderEpoch, pt.Metadata, nowMs, expire)
			if code != 0 {
				codes[i][j] = code
				continue
			}
			if pt.Timestamp != -1 {
				o.commitTimestamp = pt.Timestamp
			}
			tp := topicPartition{t.Topic, pt.Partition}
			seq := om.nextSeq()
			pc, ok := offs.pendingCommits[tp]
			if !ok {
				pc.since = seq
			}
			pc.n++
			offs.pendingCommits[tp] = pc
			stage = append(stage, staged{tp, o, seq})
			recs = append(recs, offsetCommitRecord(g.id, tp, o))
		}
	}
	if len(recs) == 0 {
		answer()
		return
	}
	offs.commitWrites++
	om.cfg.Stats.count(offsetCommits, len(recs))
	om.emit(Write{Partition: g.partition, Records: recs}, func(code int16, base int64) {
		for i, s := range stage {
			// A deletion since the commit removed its pending count; the
			// log has the tombstone after this record, so it stays deleted.
			// Of two commits the later record wins, whatever order they
			// are reported in.
			pc, ok := offs.pendingCommits[s.tp]
			if !ok || s.seq < pc.since || !om.live(g, offs) {
				continue
			}
			if pc.n--; pc.n == 0 {
				delete(offs.pendingCommits, s.tp)
			} else {
				offs.pendingCommits[s.tp] = pc
			}
			if code == 0 {
				s.o.recordOffset = base + int64(i)
				offs.put(s.tp, s.o)
				om.touch(g.id)
			}
		}
		om.commitSettled(g, offs, code)
		if code != 0 {
			code = commitErrorCode(code)
			for i, t := range r.Topics {
				for j := range t.Partitions {
					if codes[i][j] == 0 {
						codes[i][j] = code
					}
				}
			}
		}
		answer()
	})
}

// commitSettled notes the outcome of a commit's write. A group that
// commits created is forgotten once all of them have failed and nothing
// else used it: the log has no trace of it.
func (om *offsetManager) commitSettled(g *group, o *groupOffsets, code int16) {
	o.commitWrites--
	switch {
	case !g.unlogged || !om.live(g, o):
	case code == 0:
		g.unlogged = false
	case o.commitWrites == 0 && g.consumer == nil && g.state == Empty && g.protocolType == "" && !o.holds():
		om.groups.forget(g)
	}
}

// validateOffsetCommit is Kafka's member check of a (non-transactional)
// offset commit.
func (g *group) validateOffsetCommit(r *kmsg.OffsetCommitRequest) int16 {
	if g.consumer != nil {
		return g.consumer.validateOffsetCommit(r)
	}
	if r.Generation < 0 && g.state == Empty {
		return 0
	}
	if r.Generation >= 0 || r.MemberID != "" || r.InstanceID != nil {
		if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
			return code
		}
		if r.Generation != g.generation {
			return errIllegalGeneration
		}
	} else if g.state != Empty {
		return errUnknownMemberID
	}
	if g.state == CompletingRebalance {
		return errRebalanceInProgress
	}
	return 0
}

func (om *offsetManager) offsetFetch(req Request, r *kmsg.OffsetFetchRequest) {
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.Version = r.Version
	defer om.respond(req.Token, resp)
	if r.Version >= 8 {
		for _, rg := range r.Groups {
			fg := kmsg.NewOffsetFetchResponseGroup()
			fg.Group = rg.Group
			if code := om.groups.offsetFetchMemberError(rg.Group, rg.MemberID, rg.MemberEpoch); code != 0 {
				fg.ErrorCode = code
				resp.Groups = append(resp.Groups, fg)
				continue
			}
			var topics []kmsg.OffsetFetchRequestTopic
			if rg.Topics != nil {
				topics = make([]kmsg.OffsetFetchRequestTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
			var fetched []kmsg.OffsetFetchResponseTopic
			fetched, fg.ErrorCode = om.fetchOffsets(rg.Group, topics, r.RequireStable)
			for _, t := range fetched {
				ft := kmsg.NewOffsetFetchResponseGroupTopic()
				ft.Topic = t.Topic
				for _, p := range t.Partitions {
					fp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					fp.Partition, fp.Offset, fp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
					fp.Metadata, fp.ErrorCode = p.Metadata, p.ErrorCode
					ft.Partitions = append(ft.Partitions, fp)
				}
				fg.Topics = append(fg.Topics, ft)
			}
			resp.Groups = append(resp.Groups, fg)
		}
		return
	}
	topics := r.Topics
	if r.Version < 2 && topics == nil {
		topics = []kmsg.OffsetFetchRequestTopic{}
	}
	var code int16
	resp.Topics, code = om.fetchOffsets(r.Group, topics, r.Version >= 7 && r.RequireStable)
	if code == 0 {
		return
	}
	if r.Version >= 2 {
		resp.ErrorCode = code
		return
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := noOffset(p)
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func noOffset(partition int32) kmsg.OffsetFetchResponseTopicPartition {
	rp := kmsg.NewOffsetFetchResponseTopicPartition()
	empty := ""
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = partition, -1, -1, &empty
	return rp
}

// fetchOffsets answers one group of an OffsetFetch: the requested partitions
// or, for nil topics, every committed offset (sorted), or a group error.
// stable asks for UNSTABLE_OFFSET_COMMIT where commits are in progress.
func (om *offsetManager) fetchOffsets(groupID string, topics []kmsg.OffsetFetchRequestTopic, stable bool) ([]kmsg.OffsetFetchResponseTopic, int16) {
	if _, code := om.route(groupID); code != 0 {
		return nil, code
	}
	var offs *groupOffsets // nil: none
	if om.groups.byID[groupID] != nil {
		offs = om.byGroup[groupID]
	}
	var out []kmsg.OffsetFetchResponseTopic
	if topics == nil {
		tps := offs.sorted()
		for i, tp := range tps {
			if i == 0 || tps[i-1].topic != tp.topic {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = tp.topic
				out = append(out, rt)
			}
			rt := &out[len(out)-1]
			if stable && offs.unstable(tp) {
				rt.Partitions = append(rt.Partitions, unstableOffset(tp.partition))
			} else {
				rt.Partitions = append(rt.Partitions, offsetFetched(tp.partition, offs.committed[tp]))
			}
		}
		return out, 0
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p}
			o, ok := offs.get(tp)
			if stable && offs.unstable(tp) {
				rt.Partitions = append(rt.Partitions, unstableOffset(p))
			} else if ok {
				rt.Partitions = append(rt.Partitions, offsetFetched(p, o))
			} else {
				rt.Partitions = append(rt.Partitions, noOffset(p))
			}
		}
		out = append(out, rt)
	}
	return out, 0
}

func unstableOffset(partition int32) kmsg.OffsetFetchResponseTopicPartition {
	rp := noOffset(partition)
	rp.ErrorCode = errUnstableOffsetCommit
	return rp
}

// unstable reports whether a commit of tp is in progress: written but not
// persisted, or transactional and not yet ended.
func (o *groupOffsets) unstable(tp topicPartition) bool {
	if o == nil {
		return false
	}
	_, pending := o.pendingCommits[tp]
	return pending || o.hasTxnOffset(tp)
}

// get returns the committed offset of tp.
func (o *groupOffsets) get(tp topicPartition) (offset, bool) {
	if o == nil {
		return offset{}, false
	}
	off, ok := o.committed[tp]
	return off, ok
}

func offsetFetched(partition int32, o offset) kmsg.OffsetFetchResponseTopicPartition {
	rp := kmsg.NewOffsetFetchResponseTopicPartition()
	metadata := o.metadata
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = partition, o.offset, o.leaderEpoch, &metadata
	return rp
}

// sorted returns the partitions with a committed offset, in order.
func (o *groupOffsets) sorted() []topicPartition {
	if o == nil {
		return nil
	}
	return sortTopicPartitions(o.committed)
}

func sortTopicPartitions[V any](m map[topicPartition]V) []topicPartition {
	tps := make([]topicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
	return tps
}

func (om *offsetManager) offsetDelete(req Request, r *kmsg.OffsetDeleteRequest) {
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.Version = r.Version
	if code := om.offsetDeleteGroupError(r.Group); code != 0 {
		resp.ErrorCode = code
		om.respond(req.Token, resp)
		return
	}
	g := om.groups.byID[r.Group]
	offs := om.byGroup[r.Group]
	var recs []Record
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		subscribed := g.isSubscribedTo(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if subscribed {
				rp.ErrorCode = errGroupSubscribedToTopic
			} else if rec, ok := offs.delete(g.id, topicPartition{t.Topic, p.Partition}); ok {
				recs = append(recs, rec)
				om.touch(g.id)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(recs) == 0 {
		om.respond(req.Token, resp)
		return
	}
	om.cfg.Stats.count(offsetDeletions, len(recs))
	om.write(g.partition, recs, func(code int16) {
		if code != 0 {
			resp.ErrorCode, resp.Topics = groupErrorCode(code), nil
		}
		om.respond(req.Token, resp)
	})
}

func (om *offsetManager) offsetDeleteGroupError(groupID string) int16 {
	if groupID == "" {
		return errInvalidGroupID
	}
	if _, code := om.route(groupID); code != 0 {
		return code
	}
	g := om.groups.byID[groupID]
	switch {
	case g == nil:
		return errGroupIDNotFound
	case g.state != Empty && g.protocolType != consumerProtocolType:
		return errNonEmptyGroup
	}
	return 0
}

// deleteOffset removes a committed (or committing, or pending
// transactional) offset and returns its tombstone; ok is false if there was
// nothing to delete.
func (o *groupOffsets) delete(groupID string, tp topicPartition) (Record, bool) {
	if o == nil {
		return Record{}, false
	}
	_, committed := o.committed[tp]
	_, pending := o.pendingCommits[tp]
	txn := o.dropTxnOffsets(tp)
	if !committed && !pending && !txn {
		return Record{}, false
	}
	delete(o.committed, tp)
	delete(o.pendingCommits, tp)
	return offsetTombstone(groupID, tp), true
}

// expiryBase returns, for an offset, the time its retention counts from,
// and false if the group's offsets do not expire in its current state.
func (g *group) expiryBase() (func(offset) int64, bool) {
	switch {
	case g.consumer != nil:
		return func(o offset) int64 { return o.commitTimestamp }, true
	case g.protocolType == "":
		return func(o offset) int64 { return o.commitTimestamp }, true
	case g.state == Empty:
		return func(o offset) int64 {
			if g.stateTimestamp >= 0 {
				return g.stateTimestamp
			}
			return o.commitTimestamp
		}, true
	case g.state == Stable && g.protocolType == consumerProtocolType && g.subscribedKnown:
		return func(o offset) int64 { return o.commitTimestamp }, true
	}
	return nil, false
}

// cleanupGroupMetadata expires offsets and deletes Empty groups left with
// none, writing their tombstones.
func (c *Coordinator) cleanupGroupMetadata() {
	byPartition := make(map[int32][]Record)
	var parts []int32
	for _, g := range c.groups.sortedGroups(nil) {
		if ps := c.parts[g.partition]; ps == nil || ps.loading {
			continue
		}
		recs, allExpired := c.offsets.expire(g)
		c.cfg.Stats.count(offsetExpirations, len(recs))
		if allExpired && !c.offsets.committing(g.id) && g.isEmpty() {
			recs = append(recs, c.deleteGroup(g)...)
		}
		if len(recs) > 0 {
			if byPartition[g.partition] == nil {
				parts = append(parts, g.partition)
			}
			byPartition[g.partition] = append(byPartition[g.partition], recs...)
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		c.write(p, byPartition[p], nil)
	}
}

// expire deletes the expired offsets of g and returns their tombstones;
// allExpired reports that none is left.
func (om *offsetManager) expire(g *group) (recs []Record, allExpired bool) {
	offs := om.byGroup[g.id]
	nowMs := om.nowMs()
	retentionMs := om.cfg.OffsetsRetention.Milliseconds()
	allExpired = true
	if base, ok := g.expiryBase(); ok {
		for _, tp := range offs.sorted() {
			o := offs.committed[tp]
			pending := offs.unstable(tp)
			expired := nowMs-base(o) >= retentionMs
			if o.expireTimestamp >= 0 {
				expired = nowMs >= o.expireTimestamp
			}
			if g.isSubscribedTo(tp.topic) || pending || !expired {
				allExpired = false
				continue
			}
			rec, _ := offs.delete(g.id, tp)
			recs = append(recs, rec)
			om.touch(g.id)
		}
	} else if offs != nil && len(offs.committed) > 0 {
		allExpired = false
	}
	return recs, allExpired
}

// committing reports whether a group has commits not yet persisted or
// transactional offsets not yet ended.
func (om *offsetManager) committing(groupID string) bool {
	offs := om.byGroup[groupID]
	return offs != nil && (len(offs.pendingCommits) > 0 || len(offs.txn) > 0)
}

// deleteGroup removes an Empty group and returns the tombstones of its
// offsets and of its metadata.
func (c *Coordinator) deleteGroup(g *group) []Record {
	if !g.isEmpty() {
		panic(fmt.Sprintf("group: deleting non-empty group %q", g.id))
	}
	recs := c.offsets.deleteAll(g.id)
	recs = append(recs, g.tombstones()...)
	if g.consumer == nil {
		c.groups.transition(g, Dead)
	}
	c.groups.forget(g)
	return recs
}

// deleteAll deletes every offset of a group, committed, being committed
// or pending in a transaction, and returns their tombstones.
func (om *offsetManager) deleteAll(groupID string) []Record {
	offs := om.byGroup[groupID]
	if offs == nil {
		return nil
	}
	var recs []Record
	om.touch(groupID)
	for _, tp := range offs.sorted() {
		rec, _ := offs.delete(groupID, tp)
		recs = append(recs, rec)
	}
	for _, tp := range sortTopicPartitions(offs.pendingCommits) {
		recs = append(recs, offsetTombstone(groupID, tp))
	}
	for _, tp := range offs.txnPartitions() {
		if _, done := offs.pendingCommits[tp]; !done {
			recs = append(recs, offsetTombstone(groupID, tp))
		}
	}
	clear(offs.pendingCommits)
	offs.txn = nil
	return recs
}

// committedOffset is the offset a commit (plain or transactional) states
// for one partition at nowMs, expiring at expire (-1: never), or
// OFFSET_METADATA_TOO_LARGE.
func (om *offsetManager) committedOffset(off int64, leaderEpoch int32, metadata *string, nowMs, expire int64) (offset, int16) {
	m := ""
	if metadata != nil {
		m = *metadata
	}
	if javaUTF16Len(m) > om.cfg.OffsetMetadataMaxBytes {
		return offset{}, errOffsetMetadataTooLarge
	}
	return offset{offset: off, leaderEpoch: max(leaderEpoch, -1), metadata: m,
		commitTimestamp: nowMs, expireTimestamp: expire}, 0
}

// javaUTF16Len is Java's String.length(): the number of UTF-16 code units.
// Kafka compares offset commit metadata against offset.metadata.max.bytes
// with it, so the limit counts characters, not bytes.
func javaUTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// committedOffsets lists the committed offsets of the groups served, in
// group, topic and partition order.
func (c *Coordinator) committedOffsets() []CommittedOffset {
	var out []CommittedOffset
	for _, g := range c.groups.sortedGroups(nil) {
		o := c.offsets.byGroup[g.id]
		if o == nil {
			continue
		}
		for _, tp := range o.sorted() {
			out = append(out, CommittedOffset{Group: g.id, Topic: tp.topic, Partition: tp.partition, Offset: o.committed[tp].offset})
		}
	}
	return out
}
