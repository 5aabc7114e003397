package group

// Describe: a __consumer_offsets record in the JSON form of Kafka's
// generated JsonConverters, field names and order as Kafka's schemas, for
// offline tools (weir dump-log --offsets-decoder).

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Described is a record decoded for display: the key's type (its version
// field) and fields, and the value's version and fields (Value is nil for
// a tombstone). Key and Value marshal to Kafka's JSON.
type Described struct {
	KeyType      int16
	Key          any
	ValueVersion int16
	Value        any
}

// ErrUnknownRecordType is returned by Describe for key types it does not
// know (share groups, or records of a later version).
type ErrUnknownRecordType int16

func (e ErrUnknownRecordType) Error() string { return fmt.Sprintf("unknown record type %d", int16(e)) }

// Describe decodes a record of __consumer_offsets with the decoders the
// coordinator loads it with.
func Describe(r Record) (Described, error) {
	if len(r.Key) < 2 {
		return Described{}, fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(r.Key))
	}
	d := Described{KeyType: int16(binary.BigEndian.Uint16(r.Key))}
	if r.Value != nil {
		if len(r.Value) < 2 {
			return d, fmt.Errorf("%w: value of %d bytes", ErrBadRecord, len(r.Value))
		}
		d.ValueVersion = int16(binary.BigEndian.Uint16(r.Value))
	}
	switch {
	case d.KeyType == 0 || d.KeyType == offsetCommitKeyVersion:
		return d, describeOffsetCommit(r, &d)
	case d.KeyType == groupMetadataKeyVersion:
		return d, describeGroupMetadata(r, &d)
	case isConsumerGroupKey(d.KeyType):
		return d, describeConsumerGroup(r, &d)
	}
	return d, ErrUnknownRecordType(d.KeyType)
}

func describeOffsetCommit(r Record, d *Described) error {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.Key); err != nil {
		return fmt.Errorf("%w: offset commit key: %v", ErrBadRecord, err)
	}
	d.Key = struct {
		Group     string `json:"group"`
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
	}{k.Group, k.Topic, k.Partition}
	if r.Value == nil {
		return nil
	}
	v := kmsg.NewOffsetCommitValue()
	if err := v.ReadFrom(r.Value); err != nil {
		return fmt.Errorf("%w: offset commit value: %v", ErrBadRecord, err)
	}
	out := struct {
		Offset          int64  `json:"offset"`
		LeaderEpoch     *int32 `json:"leaderEpoch,omitempty"`
		Metadata        string `json:"metadata"`
		CommitTimestamp int64  `json:"commitTimestamp"`
		ExpireTimestamp *int64 `json:"expireTimestamp,omitempty"`
	}{Offset: v.Offset, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp}
	if v.Version >= 3 {
		out.LeaderEpoch = &v.LeaderEpoch
	}
	if v.Version == 1 {
		out.ExpireTimestamp = &v.ExpireTimestamp
	}
	d.Value = out
	return nil
}

// protocolTypeConsumer is the classic protocol type whose subscriptions
// and assignments Kafka's tool decodes.
const protocolTypeConsumer = "consumer"

func describeGroupMetadata(r Record, d *Described) error {
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return fmt.Errorf("%w: group metadata key: %v", ErrBadRecord, err)
	}
	d.Key = struct {
		Group string `json:"group"`
	}{k.Group}
	if r.Value == nil {
		return nil
	}
	v := kmsg.NewGroupMetadataValue()
	if err := v.ReadFrom(r.Value); err != nil {
		return fmt.Errorf("%w: group metadata value: %v", ErrBadRecord, err)
	}
	type member struct {
		MemberID         string `json:"memberId"`
		GroupInstanceID  any    `json:"groupInstanceId,omitempty"` // v3+
		ClientID         string `json:"clientId"`
		ClientHost       string `json:"clientHost"`
		RebalanceTimeout *int32 `json:"rebalanceTimeout,omitempty"`
		SessionTimeout   int32  `json:"sessionTimeout"`
		Subscription     any    `json:"subscription"`
		Assignment       any    `json:"assignment"`
	}
	out := struct {
		ProtocolType          string   `json:"protocolType"`
		Generation            int32    `json:"generation"`
		Protocol              *string  `json:"protocol"`
		Leader                *string  `json:"leader"`
		CurrentStateTimestamp *int64   `json:"currentStateTimestamp,omitempty"`
		Members               []member `json:"members"`
	}{ProtocolType: v.ProtocolType, Generation: v.Generation, Protocol: v.Protocol, Leader: v.Leader, Members: []member{}}
	if v.Version >= 2 {
		out.CurrentStateTimestamp = &v.CurrentStateTimestamp
	}
	for _, m := range v.Members {
		o := member{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, SessionTimeout: m.SessionTimeoutMillis,
			Subscription: base64.StdEncoding.EncodeToString(m.Subscription), Assignment: base64.StdEncoding.EncodeToString(m.Assignment)}
		if v.Version >= 3 {
			o.GroupInstanceID = present(m.InstanceID)
		}
		if v.Version >= 1 {
			o.RebalanceTimeout = &m.RebalanceTimeoutMillis
		}
		if v.ProtocolType == protocolTypeConsumer {
			if s, ok := describeSubscription(m.Subscription); ok {
				o.Subscription = s
			}
			if a, ok := describeAssignment(m.Assignment); ok {
				o.Assignment = a
			}
		}
		out.Members = append(out.Members, o)
	}
	d.Value = out
	return nil
}

type topicPartitionsJSON struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// describeSubscription is a consumer protocol subscription as Kafka's
// ConsumerProtocolSubscriptionJsonConverter writes it.
func describeSubscription(b []byte) (any, bool) {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(b); err != nil {
		return nil, false
	}
	out := struct {
		Topics          []string `json:"topics"`
		UserData        *string  `json:"userData"`
		OwnedPartitions any      `json:"ownedPartitions,omitempty"` // v1+
		GenerationID    any      `json:"generationId,omitempty"`    // v2+
		RackID          any      `json:"rackId,omitempty"`          // v3+
	}{Topics: orEmpty(s.Topics), UserData: bytesJSON(s.UserData)}
	if s.Version >= 1 {
		owned := []topicPartitionsJSON{}
		for _, t := range s.OwnedPartitions {
			owned = append(owned, topicPartitionsJSON{t.Topic, orEmpty(t.Partitions)})
		}
		out.OwnedPartitions = owned
	}
	if s.Version >= 2 {
		out.GenerationID = s.Generation
	}
	if s.Version >= 3 {
		out.RackID = present(s.Rack)
	}
	return out, true
}

// present is a nullable string of a field the version has: its value, or
// null (where a nil interface would leave the field out).
func present(s *string) any {
	if s == nil {
		return json.RawMessage("null")
	}
	return *s
}

// describeAssignment is a consumer protocol assignment as Kafka's
// ConsumerProtocolAssignmentJsonConverter writes it.
func describeAssignment(b []byte) (any, bool) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, false
	}
	tps := []topicPartitionsJSON{}
	for _, t := range a.Topics {
		tps = append(tps, topicPartitionsJSON{t.Topic, orEmpty(t.Partitions)})
	}
	return struct {
		AssignedPartitions []topicPartitionsJSON `json:"assignedPartitions"`
		UserData           *string               `json:"userData"`
	}{tps, bytesJSON(a.UserData)}, true
}

func bytesJSON(b []byte) *string {
	if b == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func uuidJSON(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

type topicIDPartitionsJSON struct {
	TopicID    string  `json:"topicId"`
	Partitions []int32 `json:"partitions"`
}

func assignmentJSON(a assignment) []topicIDPartitionsJSON {
	out := []topicIDPartitionsJSON{}
	for _, id := range slices.SortedFunc(func(yield func([16]byte) bool) {
		for id := range a {
			if !yield(id) {
				return
			}
		}
	}, compareIDs) {
		out = append(out, topicIDPartitionsJSON{uuidJSON(id), orEmpty(a[id])})
	}
	return out
}

// describeConsumerGroup describes the records of consumer groups (KIP-848)
// with the names of Kafka's ConsumerGroup*Key and *Value schemas.
func describeConsumerGroup(r Record, d *Described) error {
	rec, err := decodeCGRecord(r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	switch rec.kind {
	case cgMemberMetadataKey, cgTargetMemberKey, cgCurrentMemberKey:
		d.Key = struct {
			GroupID  string `json:"groupId"`
			MemberID string `json:"memberId"`
		}{rec.group, rec.member}
	case cgRegexKey:
		d.Key = struct {
			GroupID string `json:"groupId"`
			Regex   string `json:"regularExpression"`
		}{rec.group, rec.member}
	default:
		d.Key = struct {
			GroupID string `json:"groupId"`
		}{rec.group}
	}
	switch x := rec.value.(type) {
	case nil:
	case int32:
		if rec.kind == cgMetadataKey {
			d.Value = struct {
				Epoch int32 `json:"epoch"`
			}{x}
		} else {
			d.Value = struct {
				AssignmentEpoch int32 `json:"assignmentEpoch"`
			}{x}
		}
	case map[string]topicMeta:
		type topic struct {
			TopicID           string `json:"topicId"`
			TopicName         string `json:"topicName"`
			NumPartitions     int32  `json:"numPartitions"`
			PartitionMetadata []int  `json:"partitionMetadata"`
		}
		topics := []topic{}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range x {
				if !yield(n) {
					return
				}
			}
		}) {
			topics = append(topics, topic{uuidJSON(x[name].id), name, x[name].partitions, []int{}})
		}
		d.Value = struct {
			Topics []topic `json:"topics"`
		}{topics}
	case memberMeta:
		var regex *string
		if x.regex != "" {
			regex = &x.regex
		}
		d.Value = struct {
			InstanceID         *string  `json:"instanceId"`
			RackID             *string  `json:"rackId"`
			ClientID           string   `json:"clientId"`
			ClientHost         string   `json:"clientHost"`
			SubscribedTopics   []string `json:"subscribedTopicNames"`
			SubscribedRegex    *string  `json:"subscribedTopicRegex"`
			RebalanceTimeoutMs int32    `json:"rebalanceTimeoutMs"`
			ServerAssignor     *string  `json:"serverAssignor"`
		}{x.instanceID, x.rackID, x.clientID, x.clientHost, orEmpty(x.topics), regex, x.rebalanceTimeoutMs, x.serverAssignor}
	case assignment:
		d.Value = struct {
			TopicPartitions []topicIDPartitionsJSON `json:"topicPartitions"`
		}{assignmentJSON(x)}
	case memberAssignment:
		d.Value = struct {
			MemberEpoch         int32                   `json:"memberEpoch"`
			PreviousMemberEpoch int32                   `json:"previousMemberEpoch"`
			State               int8                    `json:"state"`
			Assigned            []topicIDPartitionsJSON `json:"assignedPartitions"`
			Pending             []topicIDPartitionsJSON `json:"partitionsPendingRevocation"`
		}{x.epoch, x.prevEpoch, x.state, assignmentJSON(x.assigned), assignmentJSON(x.pending)}
	case resolvedRegex:
		d.Value = struct {
			Topics    []string `json:"topics"`
			Version   int64    `json:"version"`
			Timestamp int64    `json:"timestamp"`
		}{orEmpty(x.topics), x.version, x.timestamp}
	}
	return nil
}
