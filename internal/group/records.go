package group

// The __consumer_offsets records (layouts in the package comment), and
// LoadPartition, which rebuilds groups and offsets by replaying them.

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Key versions: 0 and 1 are offset commits, 2 is group metadata. Higher
// versions are the records of other group types (KIP-848, share groups).
const (
	offsetCommitKeyVersion  = 1
	groupMetadataKeyVersion = 2
	groupMetadataVersion    = 3
)

// EncodeOffsetCommit returns the record of a committed offset: key version
// 1, and value version 3, or version 1 when v carries an expire timestamp
// (v.ExpireTimestamp other than -1; v.Version is ignored).
func EncodeOffsetCommit(group, topic string, partition int32, v kmsg.OffsetCommitValue) Record {
	v.Version = 3
	if v.ExpireTimestamp != -1 {
		v.Version = 1
	}
	return Record{Key: offsetKey(group, topic, partition), Value: v.AppendTo(nil)}
}

// EncodeOffsetTombstone returns the record that deletes a committed offset.
func EncodeOffsetTombstone(group, topic string, partition int32) Record {
	return Record{Key: offsetKey(group, topic, partition)}
}

// EncodeGroupMetadata returns the record of a group's metadata: key
// version 2, value version 3 (v.Version is ignored).
func EncodeGroupMetadata(group string, v kmsg.GroupMetadataValue) Record {
	v.Version = groupMetadataVersion
	return Record{Key: groupKey(group), Value: v.AppendTo(nil)}
}

// EncodeGroupTombstone returns the record that deletes a group.
func EncodeGroupTombstone(group string) Record {
	return Record{Key: groupKey(group)}
}

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: group}
	return k.AppendTo(nil)
}

func offsetCommitRecord(group string, tp topicPartition, o offset) Record {
	v := kmsg.NewOffsetCommitValue()
	v.Offset, v.LeaderEpoch, v.Metadata = o.offset, o.leaderEpoch, o.metadata
	v.CommitTimestamp, v.ExpireTimestamp = o.commitTimestamp, o.expireTimestamp
	return EncodeOffsetCommit(group, tp.topic, tp.partition, v)
}

func offsetTombstone(group string, tp topicPartition) Record {
	return EncodeOffsetTombstone(group, tp.topic, tp.partition)
}

func groupTombstone(group string) Record { return EncodeGroupTombstone(group) }

// groupMetadataValue is the persisted form of g, with the given
// assignments (members missing from it are written with empty bytes).
func (g *group) groupMetadataValue(assignment map[string][]byte) kmsg.GroupMetadataValue {
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	v.Protocol = optString(g.protocol)
	v.Leader = optString(g.leader)
	v.CurrentStateTimestamp = g.stateTimestamp
	for _, m := range g.members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = m.instanceID
		vm.ClientID = m.clientID
		vm.ClientHost = m.clientHost
		vm.RebalanceTimeoutMillis = m.rebalanceTimeoutMs
		vm.SessionTimeoutMillis = m.sessionTimeoutMs
		vm.Subscription = m.metadata(g.protocol)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		vm.Assignment = assignment[m.id]
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return v
}

// storeGroup writes g's metadata with these assignments; done (may be nil)
// gets the outcome.
func (gm *groupManager) storeGroup(g *group, assignment map[string][]byte, done func(code int16)) {
	gm.write(g.partition, []Record{EncodeGroupMetadata(g.id, g.groupMetadataValue(assignment))}, done)
}

// BeginLoad marks __consumer_offsets-p as led here but not yet loaded: its
// groups answer COORDINATOR_LOAD_IN_PROGRESS until LoadPartition. A
// partition served here already (re-elected in a new epoch) is served on
// until LoadPartition replaces it.
func (c *Coordinator) BeginLoad(now time.Time, p int32) Ready {
	c.out.Begin(now)
	if ps := c.parts[p]; ps == nil {
		c.parts[p] = &offsetsPartition{loading: true}
	}
	return c.out.End()
}

// ErrBadRecord reports a record of __consumer_offsets that cannot be
// decoded.
var ErrBadRecord = errors.New("group: bad __consumer_offsets record")

// LogRecord is a record of __consumer_offsets as LoadPartition reads it:
// its key and value, its offset, and what its batch says of it.
type LogRecord struct {
	Record
	// Offset is the record's offset in the partition.
	Offset int64
	// Transactional: the record's batch is a transactional batch of
	// ProducerID; its offset commits count once a COMMIT marker of that
	// producer follows, and never after an ABORT.
	Transactional bool
	// Control: a control record of ProducerID (Key and Value are the
	// control record's; types other than COMMIT and ABORT are skipped).
	Control    bool
	ProducerID int64
}

// LoadPartition makes this broker the coordinator of the groups of
// __consumer_offsets-p, rebuilt from records (the whole partition, in log
// order, control records included). Members get a fresh session; a group
// over group.max.size rebalances. Markers reported by TxnMarker since
// BeginLoad that lie beyond the records are applied after them. A record
// that cannot be decoded is skipped: skipped has one error (wrapping
// ErrBadRecord) for each, for the caller to report.
func (c *Coordinator) LoadPartition(now time.Time, p int32, records []LogRecord) (r Ready, skipped []error) {
	c.out.Begin(now)
	var early []txnMarker
	if ps := c.parts[p]; ps != nil && ps.loading {
		early = ps.earlyMarkers
	}
	c.dropPartition(p, errNotCoordinator)
	ps := &offsetsPartition{loading: true, earlyMarkers: early}
	c.parts[p] = ps
	groups, offsets, last, skipped := replay(p, records, c.out.NowMs())
	ps.loading, ps.earlyMarkers = false, nil
	if c.nextCleanup.IsZero() {
		c.nextCleanup = now.Add(c.cfg.OffsetsRetentionCheckInterval)
	}
	for _, g := range groups {
		c.groups.loaded(g)
		if o := offsets[g.id]; o != nil {
			c.offsets.loaded(ps, g.id, o)
		}
	}
	for _, m := range early {
		if m.offset > last {
			c.offsets.endTxn(p, m)
		}
	}
	return c.out.End(), skipped
}

// UnloadPartition gives up __consumer_offsets-p: every waiting request of its
// groups and every unfinished write gets NOT_COORDINATOR, and the groups are
// forgotten.
func (c *Coordinator) UnloadPartition(now time.Time, p int32) Ready {
	c.out.Begin(now)
	c.dropPartition(p, errNotCoordinator)
	delete(c.parts, p)
	if len(c.parts) == 0 {
		c.nextCleanup = time.Time{}
	}
	return c.out.End()
}

func (c *Coordinator) dropPartition(p int32, code int16) {
	dropped := c.groups.sortedGroups(func(g *group) bool { return g.partition == p })
	for _, g := range dropped {
		c.groups.forget(g)
	}
	// Then the writes fail: their callbacks find the groups gone.
	c.out.FailWrites(p, code)
	c.groups.dropped(dropped, code)
}

// replay rebuilds the groups of partition p and their offsets from its
// records. It returns them and the largest offset among the records (-1 if
// none).
func replay(p int32, records []LogRecord, nowMs int64) (groups []*group, offs map[string]*groupOffsets, last int64, skipped []error) {
	metadata := make(map[string]*kmsg.GroupMetadataValue)
	offsets := make(map[string]map[topicPartition]offset)
	consumers := make(map[string]*consumerGroup)
	txns := make(replayTxns)
	// simple are the ids an offset commit created a group for, as Kafka's
	// replay does, until a group tombstone.
	simple := make(map[string]bool)
	last = -1
	for _, r := range records {
		last = max(last, r.Offset)
		if err := replayRecord(r, metadata, offsets, consumers, txns, simple); err != nil {
			skipped = append(skipped, fmt.Errorf("%w at offset %d: %v", ErrBadRecord, r.Offset, err))
		}
	}

	for id, v := range metadata {
		groups = append(groups, groupFromRecord(id, p, v))
	}
	for id, cg := range consumers {
		groups = append(groups, loadedConsumerGroup(id, p, cg, nowMs))
	}
	// Groups with offsets (committed or pending) but no metadata use
	// Kafka only for offsets; so do those an offset commit created.
	for id := range txns.groups() {
		simple[id] = true
	}
	for id, os := range offsets {
		if len(os) > 0 {
			simple[id] = true
		}
	}
	for id := range simple {
		if _, ok := metadata[id]; !ok && consumers[id] == nil {
			groups = append(groups, newGroup(id, p, nowMs))
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].id < groups[j].id })
	offs = make(map[string]*groupOffsets)
	for _, g := range groups {
		o := &groupOffsets{committed: make(map[topicPartition]offset), pendingCommits: make(map[topicPartition]pendingCommit)}
		for tp, v := range offsets[g.id] {
			o.committed[tp] = v
		}
		txns.restore(g.id, o)
		if o.holds() {
			offs[g.id] = o
		}
	}
	return groups, offs, last, skipped
}

// replayRecord applies one record to the state replay builds; an error
// means the record cannot be decoded, and it changed nothing.
func replayRecord(r LogRecord, metadata map[string]*kmsg.GroupMetadataValue, offsets map[string]map[topicPartition]offset,
	consumers map[string]*consumerGroup, txns replayTxns, simple map[string]bool) error {
	if r.Control {
		if err := txns.end(r, offsets); err != nil {
			return fmt.Errorf("control record: %v", err)
		}
		return nil
	}
	if len(r.Key) < 2 {
		return fmt.Errorf("key of %d bytes", len(r.Key))
	}
	switch version := int16(r.Key[0])<<8 | int16(r.Key[1]); {
	case version == 0 || version == 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("offset commit key: %v", err)
		}
		tp := topicPartition{k.Topic, k.Partition}
		if r.Value == nil {
			delete(offsets[k.Group], tp)
			txns.drop(k.Group, tp)
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("offset commit value: %v", err)
		}
		o := offset{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata,
			commitTimestamp: v.CommitTimestamp, expireTimestamp: -1}
		if v.Version >= 3 {
			o.leaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			o.expireTimestamp = v.ExpireTimestamp
		}
		o.recordOffset = r.Offset
		simple[k.Group] = true
		if r.Transactional {
			txns.add(r.ProducerID, k.Group, tp, o)
			return nil
		}
		if offsets[k.Group] == nil {
			offsets[k.Group] = make(map[topicPartition]offset)
		}
		offsets[k.Group][tp] = o
	case version == groupMetadataKeyVersion:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("group metadata key: %v", err)
		}
		if r.Value == nil {
			delete(metadata, k.Group)
			delete(simple, k.Group)
			return nil
		}
		v := new(kmsg.GroupMetadataValue)
		if err := v.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("group metadata value: %v", err)
		}
		metadata[k.Group] = v
		delete(consumers, k.Group) // the id became a classic group
	case isConsumerGroupKey(version):
		id, live, err := replayConsumerRecord(consumers, r.Record)
		if err != nil {
			return fmt.Errorf("consumer group record: %v", err)
		}
		if live {
			delete(metadata, id) // the id became a consumer group
		} else if r.Value == nil {
			delete(simple, id)
		}
	}
	return nil
}

// groupFromRecord rebuilds a group: Stable with its members, or Empty.
func groupFromRecord(id string, p int32, v *kmsg.GroupMetadataValue) *group {
	g := newGroup(id, p, -1)
	g.generation = v.Generation
	g.protocolType = v.ProtocolType
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Version >= 2 {
		g.stateTimestamp = v.CurrentStateTimestamp
	}
	for _, vm := range v.Members {
		m := &member{
			id:                 vm.MemberID,
			instanceID:         cloneString(vm.InstanceID),
			clientID:           vm.ClientID,
			clientHost:         vm.ClientHost,
			rebalanceTimeoutMs: vm.RebalanceTimeoutMillis,
			sessionTimeoutMs:   vm.SessionTimeoutMillis,
			protocolType:       v.ProtocolType,
			protocols:          []protocol{{name: g.protocol, metadata: append([]byte{}, vm.Subscription...)}},
			assignment:         append([]byte{}, vm.Assignment...),
		}
		if v.Version == 0 {
			m.rebalanceTimeoutMs = m.sessionTimeoutMs
		}
		g.add(m, nil)
	}
	if v.Leader != nil && g.byID[*v.Leader] != nil {
		g.leader = *v.Leader
	}
	if len(g.members) > 0 {
		g.state = Stable
	}
	g.prevState = g.state
	g.computeSubscribed()
	return g
}
