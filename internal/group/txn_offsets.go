package group

// TxnOffsetCommit (versions 0-4) and the transaction markers that end the
// offsets it writes (KIP-98; member checks of KIP-447).
//
// TxnOffsetCommit: an empty group id fails every partition with
// INVALID_GROUP_ID, then the coordinator check fails them. A group that
// does not exist is created, empty and without protocol type, when the
// generation is negative (always for v0-2, which carry no member); any
// other commit gets ILLEGAL_GENERATION. The member checks are Kafka 4.0's
// for transactional commits: a request that names no member, instance or
// generation passes, and so does generation -1 on an Empty group; otherwise
// the instance id, member id and generation must match
// (FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION). Unlike
// OffsetCommit, CompletingRebalance is no error and the member's session is
// not extended. In a consumer group (KIP-848) the member must exist
// (UNKNOWN_MEMBER_ID) and the generation must be its epoch
// (ILLEGAL_GENERATION). Metadata over offset.metadata.max.bytes fails its
// partition with OFFSET_METADATA_TOO_LARGE. The other partitions' records
// are written as one transactional batch of the request's producer id and
// epoch, so the log fences a stale epoch (INVALID_PRODUCER_EPOCH); append
// errors are translated as for OffsetCommit. The response waits until the
// records persist.
//
// The offsets are then pending for their producer: OffsetFetch does not
// return them, and a require_stable fetch answers UNSTABLE_OFFSET_COMMIT
// for their partitions (from the moment they are written). A producer's
// later commit of a partition replaces its earlier pending one.
//
// Markers: TxnMarker reports that a COMMIT or ABORT control record of a
// producer is durable at some offset of a __consumer_offsets partition. It
// ends that producer's pending offsets of the partition whose records lie
// before the marker: a commit makes each one the committed offset, unless
// the committed offset's record is later in the log (a plain commit made
// after the transactional one); an abort drops them. A write whose outcome
// is not yet reported when its producer's marker arrives is matched to the
// marker once its offset is known, so the order in which the driver
// reports writes and markers does not matter. LoadPartition replays control
// records the same way. A tombstone of a partition's offset drops the
// pending offsets of every producer for it, as Kafka's replay does.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffset is one producer's pending offset for one partition of a group.
type txnOffset struct {
	// durable is the latest of the producer's offsets whose record is in
	// the log; nil if none.
	durable *offset
	// inflight are the seqs of the producer's writes of this partition
	// not yet reported by Persisted, in write order.
	inflight []uint64
	// ended are the producer's markers reported while writes were in
	// flight, in log order; a write that lands before one of them belongs
	// to the transaction it ended. Cleared when nothing is in flight.
	ended []txnMarker
}

// txnMarker is a COMMIT or ABORT control record of a producer.
type txnMarker struct {
	producerID int64
	offset     int64
	commit     bool
}

// TxnMarker reports that a COMMIT (commit) or ABORT control record of
// producerID is durable at offset in __consumer_offsets-p (called by the
// driver once the marker is committed, as Kafka's WriteTxnMarkers does for
// the group coordinator). It ends the producer's pending offsets written
// before it. A marker of a partition not led here is ignored; one of a
// loading partition is kept for the end of the load.
func (c *Coordinator) TxnMarker(now time.Time, p int32, producerID int64, commit bool, offset int64) Ready {
	c.begin(now)
	m := txnMarker{producerID: producerID, offset: offset, commit: commit}
	switch ps := c.parts[p]; {
	case ps == nil:
	case ps.loading:
		ps.earlyMarkers = append(ps.earlyMarkers, m)
	default:
		c.offsets.endTxn(p, m)
	}
	return c.end()
}

// endTxn applies marker m to the groups of partition p.
func (om *offsetManager) endTxn(p int32, m txnMarker) {
	ps := om.parts[p]
	ids := ps.txnGroups[m.producerID]
	delete(ps.txnGroups, m.producerID)
	for id := range ids {
		g, offs := om.groups.byID[id], om.byGroup[id]
		if g == nil || g.partition != p || offs == nil {
			continue
		}
		for tp, t := range offs.txn[m.producerID] {
			if t.durable != nil && t.durable.recordOffset < m.offset {
				if m.commit {
					offs.put(tp, *t.durable)
					om.touch(id)
				}
				t.durable = nil
			}
			if len(t.inflight) > 0 {
				t.ended = append(t.ended, m)
			}
			if t.durable == nil && len(t.inflight) == 0 {
				delete(offs.txn[m.producerID], tp)
			}
		}
		if len(offs.txn[m.producerID]) > 0 {
			ps.indexTxn(m.producerID, id) // a later transaction's, or in flight
		} else {
			offs.dropProducer(m.producerID)
		}
	}
}

// indexTxn notes that group id may hold pending offsets of producerID.
func (ps *offsetsPartition) indexTxn(producerID int64, id string) {
	if ps.txnGroups == nil {
		ps.txnGroups = make(map[int64]map[string]struct{})
	}
	if ps.txnGroups[producerID] == nil {
		ps.txnGroups[producerID] = make(map[string]struct{})
	}
	ps.txnGroups[producerID][id] = struct{}{}
}

// putOffset makes o the committed offset of tp unless the committed one's
// record is later in the log.
func (offs *groupOffsets) put(tp topicPartition, o offset) {
	if cur, ok := offs.committed[tp]; ok && cur.recordOffset > o.recordOffset {
		return
	}
	offs.committed[tp] = o
}

// hasTxnOffset reports whether some producer has a pending offset for tp.
func (offs *groupOffsets) hasTxnOffset(tp topicPartition) bool {
	for _, tps := range offs.txn {
		if tps[tp] != nil {
			return true
		}
	}
	return false
}

// dropTxnOffsets forgets every producer's pending offset for tp (its
// tombstone is being written); it reports whether there was any.
func (offs *groupOffsets) dropTxnOffsets(tp topicPartition) bool {
	found := false
	for pid, tps := range offs.txn {
		if tps[tp] != nil {
			found = true
			delete(tps, tp)
			if len(tps) == 0 {
				offs.dropProducer(pid)
			}
		}
	}
	return found
}

func (offs *groupOffsets) dropProducer(producerID int64) {
	delete(offs.txn, producerID)
	if len(offs.txn) == 0 {
		offs.txn = nil
	}
}

// txnPartitions returns the partitions with pending offsets, sorted.
func (offs *groupOffsets) txnPartitions() []topicPartition {
	set := make(map[topicPartition]bool)
	for _, tps := range offs.txn {
		for tp := range tps {
			set[tp] = true
		}
	}
	return sortTopicPartitions(set)
}

func (om *offsetManager) txnOffsetCommit(req Request, r *kmsg.TxnOffsetCommitRequest) {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.Version = r.Version
	codes := make([][]int16, len(r.Topics))
	for i, t := range r.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	answer := func() {
		for i, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
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

	if r.Group == "" {
		failAll(errInvalidGroupID)
		return
	}
	p, code := om.route(r.Group)
	if code != 0 {
		failAll(code)
		return
	}
	g := om.groups.byID[r.Group]
	if g == nil {
		if r.Generation >= 0 {
			failAll(errIllegalGeneration)
			return
		}
		g = om.groups.createSimple(r.Group, p)
	}
	if code := g.validateTxnOffsetCommit(r); code != 0 {
		failAll(code)
		return
	}

	pid := r.ProducerID
	nowMs := om.nowMs()
	type staged struct {
		tp  topicPartition
		o   offset
		seq uint64
	}
	var stage []staged
	var recs []Record
	for i, t := range r.Topics {
		for j, pt := range t.Partitions {
			o, code := om.committedOffset(pt.Offset, pt.LeaderEpoch, pt.Metadata, nowMs, -1)
			if code != 0 {
				codes[i][j] = code
				continue
			}
			tp := topicPartition{t.Topic, pt.Partition}
			stage = append(stage, staged{tp, o, om.nextSeq()})
			recs = append(recs, offsetCommitRecord(g.id, tp, o))
		}
	}
	if len(recs) == 0 {
		answer()
		return
	}
	offs := om.of(g.id)
	for _, s := range stage {
		t := offs.txnOffsetFor(pid, s.tp)
		t.inflight = append(t.inflight, s.seq)
	}
	om.parts[p].indexTxn(pid, g.id)
	w := Write{Partition: p, Records: recs, Transactional: true, ProducerID: pid, ProducerEpoch: r.ProducerEpoch,
		VerifyTxn: req.VerifyTxn, Guard: req.Guard}
	offs.commitWrites++
	om.cfg.Stats.count(offsetCommits, len(recs))
	om.emit(w, func(code int16, base int64) {
		for i, s := range stage {
			s.o.recordOffset = base + int64(i)
			om.txnPersisted(g, offs, pid, s.tp, s.seq, s.o, code == 0)
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

// txnOffsetFor returns the producer's pending entry for tp, creating it.
func (offs *groupOffsets) txnOffsetFor(producerID int64, tp topicPartition) *txnOffset {
	if offs.txn == nil {
		offs.txn = make(map[int64]map[topicPartition]*txnOffset)
	}
	tps := offs.txn[producerID]
	if tps == nil {
		tps = make(map[topicPartition]*txnOffset)
		offs.txn[producerID] = tps
	}
	t := tps[tp]
	if t == nil {
		t = &txnOffset{}
		tps[tp] = t
	}
	return t
}

// txnPersisted settles the write seq of a producer's offset o for tp:
// persisted (ok, o.recordOffset set) or failed. A write whose entry is
// gone (a tombstone, a deleted or unloaded group) changes nothing.
func (om *offsetManager) txnPersisted(g *group, offs *groupOffsets, producerID int64, tp topicPartition, seq uint64, o offset, ok bool) {
	if !om.live(g, offs) {
		return
	}
	t := offs.txn[producerID][tp]
	if t == nil {
		return
	}
	i := slices.Index(t.inflight, seq)
	if i < 0 {
		return
	}
	t.inflight = slices.Delete(t.inflight, i, i+1)
	if ok {
		j := slices.IndexFunc(t.ended, func(m txnMarker) bool { return m.offset > o.recordOffset })
		switch {
		case j >= 0:
			// Its transaction already ended.
			if t.ended[j].commit {
				offs.put(tp, o)
				om.touch(g.id)
			}
		case t.durable == nil || t.durable.recordOffset < o.recordOffset:
			t.durable = &o
		}
	}
	if len(t.inflight) == 0 {
		t.ended = nil
		if t.durable == nil {
			delete(offs.txn[producerID], tp)
			if len(offs.txn[producerID]) == 0 {
				offs.dropProducer(producerID)
			}
		}
	}
}

// validateTxnOffsetCommit is Kafka's member check of a transactional
// offset commit (ClassicGroup and ConsumerGroup.validateOffsetCommit with
// isTransactional set; a stale member epoch is ILLEGAL_GENERATION).
func (g *group) validateTxnOffsetCommit(r *kmsg.TxnOffsetCommitRequest) int16 {
	if g.consumer != nil {
		switch {
		case r.Generation < 0 && len(g.consumer.members) == 0:
			return 0
		case r.Generation == -1 && r.MemberID == "" && r.InstanceID == nil:
			return 0
		}
		m := g.consumer.members[r.MemberID]
		switch {
		case m == nil:
			return errUnknownMemberID
		case r.Generation != m.epoch:
			return errIllegalGeneration
		}
		return 0
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
	}
	return 0
}

// replayTxns are the pending transactional offsets met while replaying a
// partition: producer id -> group -> partition.
type replayTxns map[int64]map[string]map[topicPartition]offset

func (x replayTxns) add(producerID int64, group string, tp topicPartition, o offset) {
	if x[producerID] == nil {
		x[producerID] = make(map[string]map[topicPartition]offset)
	}
	if x[producerID][group] == nil {
		x[producerID][group] = make(map[topicPartition]offset)
	}
	x[producerID][group][tp] = o
}

// drop applies a tombstone of tp.
func (x replayTxns) drop(group string, tp topicPartition) {
	for _, groups := range x {
		delete(groups[group], tp)
	}
}

// end applies a control record: a COMMIT moves the producer's pending
// offsets into offsets (where their records are later), an ABORT drops them.
func (x replayTxns) end(r LogRecord, offsets map[string]map[topicPartition]offset) error {
	var k kmsg.ControlRecordKey
	if err := k.ReadFrom(r.Key); err != nil {
		return err
	}
	switch k.Type {
	case 0: // ABORT
	case 1: // COMMIT
		for id, tps := range x[r.ProducerID] {
			for tp, o := range tps {
				if cur, ok := offsets[id][tp]; ok && cur.recordOffset > o.recordOffset {
					continue
				}
				if offsets[id] == nil {
					offsets[id] = make(map[topicPartition]offset)
				}
				offsets[id][tp] = o
			}
		}
	default:
		return nil
	}
	delete(x, r.ProducerID)
	return nil
}

// groups returns the ids of the groups with pending offsets.
func (x replayTxns) groups() map[string]bool {
	ids := make(map[string]bool)
	for _, groups := range x {
		for id, tps := range groups {
			if len(tps) > 0 {
				ids[id] = true
			}
		}
	}
	return ids
}

// restore gives the group groupID its pending offsets.
func (x replayTxns) restore(groupID string, offs *groupOffsets) {
	for pid, groups := range x {
		for tp, o := range groups[groupID] {
			o := o
			offs.txnOffsetFor(pid, tp).durable = &o
		}
	}
}
