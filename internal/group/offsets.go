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
}

func newOffsetManager(b *base, groups *groupManager) *offsetManager {
	return &offsetManager{base: b, groups: groups}
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
			g = newGroup(r.Group, p, om.nowMs())
			g.unlogged = true
			om.groups.byID[g.id] = g
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
			pc, ok := g.pendingCommits[tp]
			if !ok {
				pc.since = seq
			}
			pc.n++
			g.pendingCommits[tp] = pc
			stage = append(stage, staged{tp, o, seq})
			recs = append(recs, offsetCommitRecord(g.id, tp, o))
		}
	}
	if len(recs) == 0 {
		answer()
		return
	}
	g.commitWrites++
	om.emit(Write{Partition: g.partition, Records: recs}, func(code int16, base int64) {
		for i, s := range stage {
			// A deletion since the commit removed its pending count; the
			// log has the tombstone after this record, so it stays deleted.
			// Of two commits the later record wins, whatever order they
			// are reported in.
			pc, ok := g.pendingCommits[s.tp]
			if !ok || s.seq < pc.since || !om.groups.live(g) {
				continue
			}
			if pc.n--; pc.n == 0 {
				delete(g.pendingCommits, s.tp)
			} else {
				g.pendingCommits[s.tp] = pc
			}
			if code == 0 {
				s.o.recordOffset = base + int64(i)
				g.putOffset(s.tp, s.o)
			}
		}
		om.commitSettled(g, code)
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
func (om *offsetManager) commitSettled(g *group, code int16) {
	g.commitWrites--
	switch {
	case !g.unlogged || !om.groups.live(g):
	case code == 0:
		g.unlogged = false
	case g.commitWrites == 0 && g.consumer == nil && g.state == Empty && g.protocolType == "" &&
		len(g.offsets) == 0 && len(g.pendingCommits) == 0 && len(g.txn) == 0:
		delete(om.groups.byID, g.id)
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
	g := om.groups.byID[groupID]
	var out []kmsg.OffsetFetchResponseTopic
	if topics == nil {
		if g == nil {
			return nil, 0
		}
		tps := g.sortedOffsets()
		for i, tp := range tps {
			if i == 0 || tps[i-1].topic != tp.topic {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = tp.topic
				out = append(out, rt)
			}
			rt := &out[len(out)-1]
			if stable && g.unstable(tp) {
				rt.Partitions = append(rt.Partitions, unstableOffset(tp.partition))
			} else {
				rt.Partitions = append(rt.Partitions, offsetFetched(tp.partition, g.offsets[tp]))
			}
		}
		return out, 0
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			o, ok := offset{}, false
			if g != nil {
				o, ok = g.offsets[topicPartition{t.Topic, p}]
			}
			if stable && g != nil && g.unstable(topicPartition{t.Topic, p}) {
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
func (g *group) unstable(tp topicPartition) bool {
	_, pending := g.pendingCommits[tp]
	return pending || g.hasTxnOffset(tp)
}

func offsetFetched(partition int32, o offset) kmsg.OffsetFetchResponseTopicPartition {
	rp := kmsg.NewOffsetFetchResponseTopicPartition()
	metadata := o.metadata
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = partition, o.offset, o.leaderEpoch, &metadata
	return rp
}

func (g *group) sortedOffsets() []topicPartition { return sortTopicPartitions(g.offsets) }

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
			} else if rec, ok := g.deleteOffset(topicPartition{t.Topic, p.Partition}); ok {
				recs = append(recs, rec)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(recs) == 0 {
		om.respond(req.Token, resp)
		return
	}
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
func (g *group) deleteOffset(tp topicPartition) (Record, bool) {
	_, committed := g.offsets[tp]
	_, pending := g.pendingCommits[tp]
	txn := g.dropTxnOffsets(tp)
	if !committed && !pending && !txn {
		return Record{}, false
	}
	delete(g.offsets, tp)
	delete(g.pendingCommits, tp)
	return offsetTombstone(g.id, tp), true
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
	nowMs := c.nowMs()
	retentionMs := c.cfg.OffsetsRetention.Milliseconds()
	byPartition := make(map[int32][]Record)
	var parts []int32
	for _, g := range c.groups.sortedGroups(nil) {
		if ps := c.parts[g.partition]; ps == nil || ps.loading {
			continue
		}
		var recs []Record
		allExpired := true
		if base, ok := g.expiryBase(); ok {
			for _, tp := range g.sortedOffsets() {
				o := g.offsets[tp]
				pending := g.unstable(tp)
				expired := nowMs-base(o) >= retentionMs
				if o.expireTimestamp >= 0 {
					expired = nowMs >= o.expireTimestamp
				}
				if g.isSubscribedTo(tp.topic) || pending || !expired {
					allExpired = false
					continue
				}
				rec, _ := g.deleteOffset(tp)
				recs = append(recs, rec)
			}
		} else if len(g.offsets) > 0 {
			allExpired = false
		}
		if allExpired && len(g.pendingCommits) == 0 && len(g.txn) == 0 && g.isEmpty() {
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

// deleteGroup removes an Empty group and returns the tombstones of its
// offsets and of its metadata.
func (c *Coordinator) deleteGroup(g *group) []Record {
	if !g.isEmpty() {
		panic(fmt.Sprintf("group: deleting non-empty group %q", g.id))
	}
	var recs []Record
	for _, tp := range g.sortedOffsets() {
		rec, _ := g.deleteOffset(tp)
		recs = append(recs, rec)
	}
	for _, tp := range sortTopicPartitions(g.pendingCommits) {
		recs = append(recs, offsetTombstone(g.id, tp))
	}
	for _, tp := range g.txnPartitions() {
		if _, done := g.pendingCommits[tp]; !done {
			recs = append(recs, offsetTombstone(g.id, tp))
		}
	}
	clear(g.pendingCommits)
	g.txn = nil
	recs = append(recs, g.tombstones()...)
	if g.consumer == nil {
		c.groups.transition(g, Dead)
	}
	delete(c.groups.byID, g.id)
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
