package group

// The __consumer_offsets records of consumer groups (KIP-848), encoded as
// Kafka 4.0 writes them; the layouts are in the package comment. kmsg has
// no types for them, so they are encoded here.

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Key versions of the consumer group records: Kafka's record type ids.
const (
	cgMetadataKey          int16 = 3  // group epoch
	cgPartitionMetadataKey int16 = 4  // subscription metadata
	cgMemberMetadataKey    int16 = 5  // a member's subscription
	cgTargetMetadataKey    int16 = 6  // target assignment epoch
	cgTargetMemberKey      int16 = 7  // a member's target assignment
	cgCurrentMemberKey     int16 = 8  // a member's current assignment
	cgRegexKey             int16 = 16 // a resolved regular expression
)

// isConsumerGroupKey reports whether a key version is a consumer group
// record.
func isConsumerGroupKey(version int16) bool {
	return version >= cgMetadataKey && version <= cgCurrentMemberKey || version == cgRegexKey
}

// cgRecord is one consumer group record, decoded. value is nil for a
// tombstone, else one of:
//
//	cgMetadataKey, cgTargetMetadataKey   int32 (the epoch)
//	cgPartitionMetadataKey               map[string]topicMeta
//	cgMemberMetadataKey                  memberMeta
//	cgTargetMemberKey                    assignment
//	cgCurrentMemberKey                   memberAssignment
//	cgRegexKey                           resolvedRegex
type cgRecord struct {
	kind  int16
	group string
	// member is the member id of kinds 5, 7 and 8, the regular expression
	// of kind 16.
	member string
	value  any
}

// topicMeta is what subscription metadata records of a topic.
type topicMeta struct {
	id         [16]byte
	partitions int32
}

// resolvedRegex is a regular expression resolved against the topics.
type resolvedRegex struct {
	topics    []string // sorted
	version   int64    // the topic image version it was resolved against
	timestamp int64    // ms
}

// encode returns the record's bytes.
func (r cgRecord) encode() Record {
	key := kbin.AppendInt16(nil, r.kind)
	key = kbin.AppendString(key, r.group)
	switch r.kind {
	case cgMemberMetadataKey, cgTargetMemberKey, cgCurrentMemberKey, cgRegexKey:
		key = kbin.AppendString(key, r.member)
	}
	if r.value == nil {
		return Record{Key: key}
	}
	v := kbin.AppendInt16(nil, 0) // every value is at version 0
	switch x := r.value.(type) {
	case int32:
		v = kbin.AppendInt32(v, x)
	case map[string]topicMeta:
		names := make([]string, 0, len(x))
		for name := range x {
			names = append(names, name)
		}
		sort.Strings(names)
		v = kbin.AppendCompactArrayLen(v, len(names))
		for _, name := range names {
			t := x[name]
			v = kbin.AppendUuid(v, t.id)
			v = kbin.AppendCompactString(v, name)
			v = kbin.AppendInt32(v, t.partitions)
			v = kbin.AppendCompactArrayLen(v, 0) // partition racks: none known
			v = kbin.AppendUvarint(v, 0)
		}
	case memberMeta:
		v = kbin.AppendCompactNullableString(v, x.instanceID)
		v = kbin.AppendCompactNullableString(v, x.rackID)
		v = kbin.AppendCompactString(v, x.clientID)
		v = kbin.AppendCompactString(v, x.clientHost)
		v = appendCompactStrings(v, x.topics)
		v = kbin.AppendCompactString(v, x.regex)
		v = kbin.AppendInt32(v, x.rebalanceTimeoutMs)
		v = kbin.AppendCompactNullableString(v, x.serverAssignor)
	case assignment:
		v = appendTopicPartitions(v, x)
	case memberAssignment:
		v = kbin.AppendInt32(v, x.epoch)
		v = kbin.AppendInt32(v, x.prevEpoch)
		v = kbin.AppendInt8(v, x.state)
		v = appendTopicPartitions(v, x.assigned)
		v = appendTopicPartitions(v, x.pending)
	case resolvedRegex:
		v = appendCompactStrings(v, x.topics)
		v = kbin.AppendInt64(v, x.version)
		v = kbin.AppendInt64(v, x.timestamp)
	default:
		panic(fmt.Sprintf("group: encoding a %T", r.value))
	}
	v = kbin.AppendUvarint(v, 0) // no tagged fields
	return Record{Key: key, Value: v}
}

func appendCompactStrings(dst []byte, ss []string) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ss))
	for _, s := range ss {
		dst = kbin.AppendCompactString(dst, s)
	}
	return dst
}

// appendTopicPartitions writes | topics [topic_id uuid | partitions [int32] |
// tags] |, topics in id order.
func appendTopicPartitions(dst []byte, a assignment) []byte {
	ids := a.topicIDs()
	dst = kbin.AppendCompactArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = kbin.AppendUuid(dst, id)
		ps := a[id]
		dst = kbin.AppendCompactArrayLen(dst, len(ps))
		for _, p := range ps {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

// decodeCGRecord decodes a record whose key version is a consumer group
// record type.
func decodeCGRecord(rec Record) (cgRecord, error) {
	k := kbin.Reader{Src: rec.Key}
	r := cgRecord{kind: k.Int16(), group: k.String()}
	switch r.kind {
	case cgMemberMetadataKey, cgTargetMemberKey, cgCurrentMemberKey, cgRegexKey:
		r.member = k.String()
	}
	if err := k.Complete(); err != nil {
		return r, fmt.Errorf("key of type %d: %v", r.kind, err)
	}
	if rec.Value == nil {
		return r, nil
	}
	v := kbin.Reader{Src: rec.Value}
	if version := v.Int16(); version != 0 && v.Ok() {
		return r, fmt.Errorf("value of type %d: unknown version %d", r.kind, version)
	}
	switch r.kind {
	case cgMetadataKey, cgTargetMetadataKey:
		r.value = v.Int32()
	case cgPartitionMetadataKey:
		topics := make(map[string]topicMeta)
		for n := compactLen(&v); n > 0; n-- {
			id := v.Uuid()
			name := v.CompactString()
			parts := v.Int32()
			for racks := compactLen(&v); racks > 0; racks-- {
				v.Int32()
				for n := compactLen(&v); n > 0; n-- {
					v.CompactString()
				}
				skipTags(&v)
			}
			skipTags(&v)
			topics[name] = topicMeta{id: id, partitions: parts}
		}
		r.value = topics
	case cgMemberMetadataKey:
		var m memberMeta
		m.instanceID = v.CompactNullableString()
		m.rackID = v.CompactNullableString()
		m.clientID = v.CompactString()
		m.clientHost = v.CompactString()
		m.topics = normalizeTopics(readCompactStrings(&v))
		if s := v.CompactNullableString(); s != nil {
			m.regex = *s
		}
		m.rebalanceTimeoutMs = v.Int32()
		m.serverAssignor = v.CompactNullableString()
		r.value = m
	case cgTargetMemberKey:
		r.value = readTopicPartitions(&v)
	case cgCurrentMemberKey:
		var a memberAssignment
		a.epoch = v.Int32()
		a.prevEpoch = v.Int32()
		a.state = v.Int8()
		a.assigned = readTopicPartitions(&v)
		a.pending = readTopicPartitions(&v)
		r.value = a
	case cgRegexKey:
		var x resolvedRegex
		x.topics = normalizeTopics(readCompactStrings(&v))
		x.version = v.Int64()
		x.timestamp = v.Int64()
		r.value = x
	}
	skipTags(&v)
	if err := v.Complete(); err != nil {
		return r, fmt.Errorf("value of type %d: %v", r.kind, err)
	}
	return r, nil
}

// compactLen reads a compact array length; null counts as empty.
func compactLen(r *kbin.Reader) int {
	n := r.CompactArrayLen()
	if n < 0 {
		return 0
	}
	return int(n)
}

func readCompactStrings(r *kbin.Reader) []string {
	n := compactLen(r)
	ss := make([]string, 0, n)
	for ; n > 0 && r.Ok(); n-- {
		ss = append(ss, r.CompactString())
	}
	return ss
}

func readTopicPartitions(r *kbin.Reader) assignment {
	a := make(assignment)
	for n := compactLen(r); n > 0 && r.Ok(); n-- {
		id := r.Uuid()
		var ps []int32
		for m := compactLen(r); m > 0 && r.Ok(); m-- {
			ps = append(ps, r.Int32())
		}
		skipTags(r)
		for _, p := range ps {
			a.add(id, p)
		}
	}
	return a
}

// skipTags reads past a tagged field section; the fields are not needed.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// normalizeTopics sorts and deduplicates topic names.
func normalizeTopics(ts []string) []string {
	out := append([]string{}, ts...)
	sort.Strings(out)
	n := 0
	for i, t := range out {
		if i == 0 || t != out[n-1] {
			out[n] = t
			n++
		}
	}
	return out[:n]
}

// consumerGroupTombstones are the records that delete an Empty consumer
// group, in Kafka's order: target assignment epoch, subscription metadata,
// resolved regular expressions, group epoch.
func consumerGroupTombstones(id string, cg *consumerGroup) []Record {
	var recs []Record
	for _, mid := range sortedIDs(cg.members) {
		recs = append(recs, cgRecord{kind: cgCurrentMemberKey, group: id, member: mid}.encode())
	}
	for _, mid := range sortedIDs(cg.target) {
		recs = append(recs, cgRecord{kind: cgTargetMemberKey, group: id, member: mid}.encode())
	}
	recs = append(recs, cgRecord{kind: cgTargetMetadataKey, group: id}.encode())
	for _, mid := range sortedIDs(cg.members) {
		recs = append(recs, cgRecord{kind: cgMemberMetadataKey, group: id, member: mid}.encode())
	}
	recs = append(recs, cgRecord{kind: cgPartitionMetadataKey, group: id}.encode())
	for _, re := range sortedIDs(cg.regexes) {
		recs = append(recs, cgRecord{kind: cgRegexKey, group: id, member: re}.encode())
	}
	return append(recs, cgRecord{kind: cgMetadataKey, group: id}.encode())
}

// compareIDs orders topic ids bytewise.
func compareIDs(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) }
