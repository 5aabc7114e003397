package metadata

// TopicRecord (api key 2) creates a topic. Versions: 0.
type TopicRecord struct {
	RecordVersion int16

	Name    string // topic name
	TopicId Uuid   // topic id

	UnknownTags []TaggedField
}

func (*TopicRecord) APIKey() int16         { return APIKeyTopicRecord }
func (*TopicRecord) HighestVersion() int16 { return 0 }
func (x *TopicRecord) Version() int16      { return x.RecordVersion }
func (x *TopicRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *TopicRecord) encodeBody(w *writer) {
	w.str("Name", x.Name)
	w.uuid(x.TopicId)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *TopicRecord) decodeBody(r *reader) {
	x.Name = r.str("Name")
	x.TopicId = r.uuid("TopicId")
	x.UnknownTags = r.tags(nil, nil)
}

// RemoveTopicRecord (api key 9) deletes a topic and all its partitions.
// Versions: 0.
type RemoveTopicRecord struct {
	RecordVersion int16

	TopicId Uuid // the topic to delete

	UnknownTags []TaggedField
}

func (*RemoveTopicRecord) APIKey() int16         { return APIKeyRemoveTopicRecord }
func (*RemoveTopicRecord) HighestVersion() int16 { return 0 }
func (x *RemoveTopicRecord) Version() int16      { return x.RecordVersion }
func (x *RemoveTopicRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *RemoveTopicRecord) encodeBody(w *writer) {
	w.uuid(x.TopicId)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *RemoveTopicRecord) decodeBody(r *reader) {
	x.TopicId = r.uuid("TopicId")
	x.UnknownTags = r.tags(nil, nil)
}

// PartitionRecord (api key 3) creates a partition or replaces its whole
// state. Versions: 0-2 (1 adds Directories, 2 adds the eligible leader
// replica fields).
type PartitionRecord struct {
	RecordVersion int16

	PartitionId      int32   // partition index; default -1
	TopicId          Uuid    // id of the owning topic
	Replicas         []int32 // replica broker ids, preferred leader first
	Isr              []int32 // in-sync replica broker ids
	RemovingReplicas []int32 // replicas being removed by a reassignment
	AddingReplicas   []int32 // replicas being added by a reassignment
	Leader           int32   // leader broker id, -1 for none; default -1
	// LeaderRecoveryState is 1 while a leader elected uncleanly is
	// recovering, else 0. Tag 0.
	LeaderRecoveryState int8
	LeaderEpoch         int32 // default -1
	PartitionEpoch      int32 // bumped on every change; default -1
	// Directories holds the log directory of each replica, parallel to
	// Replicas. Versions 1+.
	Directories []Uuid
	// EligibleLeaderReplicas (KIP-966) is nullable. Versions 2+, tag 1.
	EligibleLeaderReplicas []int32
	// LastKnownElr (KIP-966) is nullable. Versions 2+, tag 2.
	LastKnownElr []int32

	UnknownTags []TaggedField
}

// NewPartitionRecord returns a PartitionRecord at its highest version with
// Kafka's defaults (ids and epochs -1).
func NewPartitionRecord() *PartitionRecord {
	return &PartitionRecord{RecordVersion: 2, PartitionId: -1, Leader: -1, LeaderEpoch: -1, PartitionEpoch: -1}
}

func (*PartitionRecord) APIKey() int16         { return APIKeyPartitionRecord }
func (*PartitionRecord) HighestVersion() int16 { return 2 }
func (x *PartitionRecord) Version() int16      { return x.RecordVersion }
func (x *PartitionRecord) SetVersion(v int16)  { x.RecordVersion = v }

func partitionRecordTags(v int16, tag uint32) bool {
	return tag == 0 || (v >= 2 && (tag == 1 || tag == 2))
}

func (x *PartitionRecord) encodeBody(w *writer) {
	w.int32(x.PartitionId)
	w.uuid(x.TopicId)
	w.int32s(x.Replicas)
	w.int32s(x.Isr)
	w.int32s(x.RemovingReplicas)
	w.int32s(x.AddingReplicas)
	w.int32(x.Leader)
	w.int32(x.LeaderEpoch)
	w.int32(x.PartitionEpoch)
	if w.v >= 1 {
		w.uuids(x.Directories)
	} else {
		w.absent("Directories", 1, len(x.Directories) == 0)
	}
	var tags []TaggedField
	if x.LeaderRecoveryState != 0 {
		tags = append(tags, w.tagged(0, func(t *writer) { t.int8(x.LeaderRecoveryState) }))
	}
	if w.v >= 2 {
		if x.EligibleLeaderReplicas != nil {
			tags = append(tags, w.tagged(1, func(t *writer) { t.nullableInt32s(x.EligibleLeaderReplicas) }))
		}
		if x.LastKnownElr != nil {
			tags = append(tags, w.tagged(2, func(t *writer) { t.nullableInt32s(x.LastKnownElr) }))
		}
	} else {
		w.absent("EligibleLeaderReplicas", 2, x.EligibleLeaderReplicas == nil)
		w.absent("LastKnownElr", 2, x.LastKnownElr == nil)
	}
	w.tags(tags, x.UnknownTags, partitionRecordTags)
}

func (x *PartitionRecord) decodeBody(r *reader) {
	x.PartitionId = r.int32("PartitionId")
	x.TopicId = r.uuid("TopicId")
	x.Replicas = r.int32s("Replicas")
	x.Isr = r.int32s("Isr")
	x.RemovingReplicas = r.int32s("RemovingReplicas")
	x.AddingReplicas = r.int32s("AddingReplicas")
	x.Leader = r.int32("Leader")
	x.LeaderEpoch = r.int32("LeaderEpoch")
	x.PartitionEpoch = r.int32("PartitionEpoch")
	if r.v >= 1 {
		x.Directories = r.uuids("Directories")
	}
	x.UnknownTags = r.tags(partitionRecordTags, func(tag uint32, t *reader) {
		switch tag {
		case 0:
			x.LeaderRecoveryState = t.int8("LeaderRecoveryState")
		case 1:
			x.EligibleLeaderReplicas = t.nullableInt32s("EligibleLeaderReplicas")
		case 2:
			x.LastKnownElr = t.nullableInt32s("LastKnownElr")
		}
	})
}

// PartitionChangeRecord (api key 5) changes some of a partition's state.
// Apart from the ids, every field is tagged and means "unchanged" when it
// holds its default (nil, -2 or -1 as noted). Versions: 0-2 (1 adds
// Directories, 2 adds the eligible leader replica fields).
type PartitionChangeRecord struct {
	RecordVersion int16

	PartitionId int32 // partition index; default -1
	TopicId     Uuid  // id of the owning topic

	Isr []int32 // new ISR, or nil. Tag 0.
	// Leader is the new leader; -1 means no leader and -2 (the default)
	// means unchanged. Tag 1.
	Leader           int32
	Replicas         []int32 // new replicas, or nil. Tag 2.
	RemovingReplicas []int32 // new removing replicas, or nil. Tag 3.
	AddingReplicas   []int32 // new adding replicas, or nil. Tag 4.
	// LeaderRecoveryState is the new recovery state (0 recovered, 1
	// recovering) or -1 (the default) for unchanged. Tag 5.
	LeaderRecoveryState int8
	// EligibleLeaderReplicas is the new ELR, or nil. Versions 2+, tag 6.
	EligibleLeaderReplicas []int32
	// LastKnownElr is the new last known ELR, or nil. Versions 2+, tag 7.
	LastKnownElr []int32
	// Directories is the new log directory of each replica, or nil.
	// Versions 1+, tag 8.
	Directories []Uuid

	UnknownTags []TaggedField
}

// NewPartitionChangeRecord returns a PartitionChangeRecord at its highest
// version that changes nothing (PartitionId -1, Leader -2,
// LeaderRecoveryState -1).
func NewPartitionChangeRecord() *PartitionChangeRecord {
	return &PartitionChangeRecord{RecordVersion: 2, PartitionId: -1, Leader: -2, LeaderRecoveryState: -1}
}

func (*PartitionChangeRecord) APIKey() int16         { return APIKeyPartitionChangeRecord }
func (*PartitionChangeRecord) HighestVersion() int16 { return 2 }
func (x *PartitionChangeRecord) Version() int16      { return x.RecordVersion }
func (x *PartitionChangeRecord) SetVersion(v int16)  { x.RecordVersion = v }

func partitionChangeRecordTags(v int16, tag uint32) bool {
	switch {
	case tag <= 5:
		return true
	case tag == 6 || tag == 7:
		return v >= 2
	case tag == 8:
		return v >= 1
	}
	return false
}

func (x *PartitionChangeRecord) encodeBody(w *writer) {
	w.int32(x.PartitionId)
	w.uuid(x.TopicId)
	var tags []TaggedField
	if x.Isr != nil {
		tags = append(tags, w.tagged(0, func(t *writer) { t.nullableInt32s(x.Isr) }))
	}
	if x.Leader != -2 {
		tags = append(tags, w.tagged(1, func(t *writer) { t.int32(x.Leader) }))
	}
	if x.Replicas != nil {
		tags = append(tags, w.tagged(2, func(t *writer) { t.nullableInt32s(x.Replicas) }))
	}
	if x.RemovingReplicas != nil {
		tags = append(tags, w.tagged(3, func(t *writer) { t.nullableInt32s(x.RemovingReplicas) }))
	}
	if x.AddingReplicas != nil {
		tags = append(tags, w.tagged(4, func(t *writer) { t.nullableInt32s(x.AddingReplicas) }))
	}
	if x.LeaderRecoveryState != -1 {
		tags = append(tags, w.tagged(5, func(t *writer) { t.int8(x.LeaderRecoveryState) }))
	}
	if w.v >= 2 {
		if x.EligibleLeaderReplicas != nil {
			tags = append(tags, w.tagged(6, func(t *writer) { t.nullableInt32s(x.EligibleLeaderReplicas) }))
		}
		if x.LastKnownElr != nil {
			tags = append(tags, w.tagged(7, func(t *writer) { t.nullableInt32s(x.LastKnownElr) }))
		}
	} else {
		w.absent("EligibleLeaderReplicas", 2, x.EligibleLeaderReplicas == nil)
		w.absent("LastKnownElr", 2, x.LastKnownElr == nil)
	}
	if w.v >= 1 {
		if x.Directories != nil {
			tags = append(tags, w.tagged(8, func(t *writer) { t.nullableUuids(x.Directories) }))
		}
	} else {
		w.absent("Directories", 1, x.Directories == nil)
	}
	w.tags(tags, x.UnknownTags, partitionChangeRecordTags)
}

func (x *PartitionChangeRecord) decodeBody(r *reader) {
	x.PartitionId = r.int32("PartitionId")
	x.TopicId = r.uuid("TopicId")
	x.UnknownTags = r.tags(partitionChangeRecordTags, func(tag uint32, t *reader) {
		switch tag {
		case 0:
			x.Isr = t.nullableInt32s("Isr")
		case 1:
			x.Leader = t.int32("Leader")
		case 2:
			x.Replicas = t.nullableInt32s("Replicas")
		case 3:
			x.RemovingReplicas = t.nullableInt32s("RemovingReplicas")
		case 4:
			x.AddingReplicas = t.nullableInt32s("AddingReplicas")
		case 5:
			x.LeaderRecoveryState = t.int8("LeaderRecoveryState")
		case 6:
			x.EligibleLeaderReplicas = t.nullableInt32s("EligibleLeaderReplicas")
		case 7:
			x.LastKnownElr = t.nullableInt32s("LastKnownElr")
		case 8:
			x.Directories = t.nullableUuids("Directories")
		}
	})
}
