package metadata

// weir's own record types: cluster links and mirror topics (see "Cluster
// links" in docs/ARCHITECTURE.md). Kafka has no record types for them, so
// they take api keys from a range Kafka's schemas will never reach: 10000
// and above is reserved for weir. They use the same framing and flexible
// encoding as Kafka's types. A Kafka node reading a weir log with links
// stops at the first of them (unknown api key), as it would at any record
// type newer than itself.

// API keys of weir's record types.
const (
	// APIKeyWeirFirst is the first api key of the range reserved for
	// weir's own record types.
	APIKeyWeirFirst               int16 = 10000
	APIKeyClusterLinkRecord       int16 = 10000
	APIKeyRemoveClusterLinkRecord int16 = 10001
	APIKeyMirrorTopicRecord       int16 = 10002
)

func init() {
	recordTypes[APIKeyClusterLinkRecord] = recordType{"ClusterLinkRecord", func() Record { return &ClusterLinkRecord{} }}
	recordTypes[APIKeyRemoveClusterLinkRecord] = recordType{"RemoveClusterLinkRecord", func() Record { return &RemoveClusterLinkRecord{} }}
	recordTypes[APIKeyMirrorTopicRecord] = recordType{"MirrorTopicRecord", func() Record { return &MirrorTopicRecord{} }}
}

// ClusterLinkRecord (api key 10000, weir's) creates a cluster link, or
// replaces the configuration of the link with the same id. Versions: 0.
//
//	LinkName  string
//	LinkId    uuid
//	Configs   array of { Name string, Value string, tagged fields }
//	          the link's properties (bootstrap.servers and the source's
//	          client settings), sorted by name
type ClusterLinkRecord struct {
	RecordVersion int16

	LinkName string
	LinkId   Uuid
	Configs  []LinkConfig

	UnknownTags []TaggedField
}

// LinkConfig is one property of a cluster link.
type LinkConfig struct {
	Name  string
	Value string

	UnknownTags []TaggedField
}

func (*ClusterLinkRecord) APIKey() int16         { return APIKeyClusterLinkRecord }
func (*ClusterLinkRecord) HighestVersion() int16 { return 0 }
func (x *ClusterLinkRecord) Version() int16      { return x.RecordVersion }
func (x *ClusterLinkRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *ClusterLinkRecord) encodeBody(w *writer) {
	w.str("LinkName", x.LinkName)
	w.uuid(x.LinkId)
	w.arrayLen(len(x.Configs))
	for _, c := range x.Configs {
		w.str("Configs.Name", c.Name)
		w.str("Configs.Value", c.Value)
		w.tags(nil, c.UnknownTags, nil)
	}
	w.tags(nil, x.UnknownTags, nil)
}

func (x *ClusterLinkRecord) decodeBody(r *reader) {
	x.LinkName = r.str("LinkName")
	x.LinkId = r.uuid("LinkId")
	// A config is at least 3 bytes: two empty strings and an empty tag
	// section.
	if n, _ := r.arrayLen("Configs", 3, false); n > 0 {
		x.Configs = make([]LinkConfig, n)
		for i := range x.Configs {
			c := &x.Configs[i]
			c.Name = r.str("Configs.Name")
			c.Value = r.str("Configs.Value")
			c.UnknownTags = r.tags(nil, nil)
		}
	}
	x.UnknownTags = r.tags(nil, nil)
}

// RemoveClusterLinkRecord (api key 10001, weir's) deletes a cluster link.
// Versions: 0.
type RemoveClusterLinkRecord struct {
	RecordVersion int16

	LinkId Uuid

	UnknownTags []TaggedField
}

func (*RemoveClusterLinkRecord) APIKey() int16         { return APIKeyRemoveClusterLinkRecord }
func (*RemoveClusterLinkRecord) HighestVersion() int16 { return 0 }
func (x *RemoveClusterLinkRecord) Version() int16      { return x.RecordVersion }
func (x *RemoveClusterLinkRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *RemoveClusterLinkRecord) encodeBody(w *writer) {
	w.uuid(x.LinkId)
	w.tags(nil, x.UnknownTags, nil)
}

func (x *RemoveClusterLinkRecord) decodeBody(r *reader) {
	x.LinkId = r.uuid("LinkId")
	x.UnknownTags = r.tags(nil, nil)
}

// Mirror topic states (MirrorTopicRecord.State).
const (
	// MirrorActive: the partition leaders fetch from the source; the
	// topic is read-only.
	MirrorActive int8 = 1
	// MirrorPaused: fetching stopped, to be resumed; read-only.
	MirrorPaused int8 = 2
	// MirrorPromoted: mirroring ended after catching up with the
	// source; the topic is an ordinary, writable topic.
	MirrorPromoted int8 = 3
	// MirrorFailedOver: mirroring ended at once, at what the mirror
	// held; the topic is an ordinary, writable topic.
	MirrorFailedOver int8 = 4
)

// MirrorStateName names a mirror state as the tools print it.
func MirrorStateName(s int8) string {
	switch s {
	case MirrorActive:
		return "ACTIVE"
	case MirrorPaused:
		return "PAUSED"
	case MirrorPromoted:
		return "STOPPED (promoted)"
	case MirrorFailedOver:
		return "STOPPED (failed over)"
	}
	return "UNKNOWN"
}

// MirrorTopicRecord (api key 10002, weir's) makes a topic the mirror of a
// source topic through a link, or changes its state; it follows the
// topic's TopicRecord and goes with the topic's RemoveTopicRecord.
// Versions: 0.
//
//	TopicId      uuid     the destination topic
//	LinkId       uuid     the link it mirrors through
//	SourceTopic  string   the topic's name on the source cluster
//	State        int8     MirrorActive, MirrorPaused, MirrorPromoted or
//	                      MirrorFailedOver
//	tag 0: StopEpochs  array of int32: once stopped, per partition (by
//	                      id) the leader epoch its own writes start in;
//	                      the batches before it are the source's
type MirrorTopicRecord struct {
	RecordVersion int16

	TopicId     Uuid
	LinkId      Uuid
	SourceTopic string
	State       int8
	StopEpochs  []int32 // tag 0; nil: not written

	UnknownTags []TaggedField
}

func (*MirrorTopicRecord) APIKey() int16         { return APIKeyMirrorTopicRecord }
func (*MirrorTopicRecord) HighestVersion() int16 { return 0 }
func (x *MirrorTopicRecord) Version() int16      { return x.RecordVersion }
func (x *MirrorTopicRecord) SetVersion(v int16)  { x.RecordVersion = v }

func (x *MirrorTopicRecord) encodeBody(w *writer) {
	w.uuid(x.TopicId)
	w.uuid(x.LinkId)
	w.str("SourceTopic", x.SourceTopic)
	w.int8(x.State)
	var tags []TaggedField
	if x.StopEpochs != nil {
		tags = append(tags, w.tagged(0, func(t *writer) { t.int32s(x.StopEpochs) }))
	}
	w.tags(tags, x.UnknownTags, tag0Only)
}

func (x *MirrorTopicRecord) decodeBody(r *reader) {
	x.TopicId = r.uuid("TopicId")
	x.LinkId = r.uuid("LinkId")
	x.SourceTopic = r.str("SourceTopic")
	x.State = r.int8("State")
	x.UnknownTags = r.tags(tag0Only, func(_ uint32, t *reader) { x.StopEpochs = t.int32s("StopEpochs") })
}
