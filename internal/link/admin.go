package link

// The admin API of cluster links: weir's own internal API (Kafka has no
// public one), which `weir cluster-links` and `weir mirrors` send to any
// broker listener. A frame is a Kafka request frame with api key
// AdminAPIKey and version 0 (header v1: correlation id and client id),
// whose body is one AdminRequest as JSON; the answer's body (after the
// correlation id) is one AdminResponse as JSON. ApiVersions does not list
// the key. Ops:
//
//	list-links        Links (all, or the one named Link)
//	create-link       Link, Configs, ValidateOnly
//	delete-link       Link
//	create-mirror     Topics[0] (the mirror topic), Link, SourceTopic
//	                  ("": the same name), ReplicationFactor (-1: default);
//	                  the broker asks the source for the partition count
//	                  and the configs (metadata.MirrorSyncedConfigs) it copies
//	list-mirrors      Mirrors (all, of Link, or of Topics)
//	source-offsets    Link, Topics (source topics): the source's high
//	                  watermarks (Offsets), read by the broker through
//	                  the link, with its security settings
//	pause-mirrors     Topics
//	resume-mirrors    Topics
//	mirror-epochs     Topics, MinOffset: once this broker's metadata has
//	                  MinOffset (the pause's MetadataOffset), for each
//	                  partition of the paused mirrors it leads, the latest
//	                  epoch in its log (Epochs) and its leader epoch
//	                  (LeaderEpochs); no mirrored append can follow
//	sync-offsets      Link: one consumer offset sync of the link now, on
//	                  the active controller's node (nothing when the link
//	                  does not sync offsets); a promotion waits for it
//	stop-mirrors      Topics, State ("promoted" or "failed-over"), Epochs
//	                  and LeaderEpochs from mirror-epochs for every
//	                  partition (see StopMirror in internal/controller)
//
// Per-topic ops answer one Result per topic; the others ErrorCode and
// ErrorMessage. Changes answer the metadata offset that has them.

// AdminAPIKey is the internal api key of the cluster link admin API.
const AdminAPIKey int16 = 32002

// AdminRequest is one admin call.
type AdminRequest struct {
	Op                string                     `json:"op"`
	Link              string                     `json:"link,omitempty"`
	Configs           map[string]string          `json:"configs,omitempty"`
	ValidateOnly      bool                       `json:"validate_only,omitempty"`
	Topics            []string                   `json:"topics,omitempty"`
	SourceTopic       string                     `json:"source_topic,omitempty"`
	ReplicationFactor int16                      `json:"replication_factor,omitempty"`
	Partitions        int32                      `json:"partitions,omitempty"` // set by the broker for create-mirror
	State             string                     `json:"state,omitempty"`
	Epochs            map[string]map[int32]int32 `json:"epochs,omitempty"`
	LeaderEpochs      map[string]map[int32]int32 `json:"leader_epochs,omitempty"`
	MinOffset         int64                      `json:"min_offset,omitempty"`
}

// AdminResponse is the answer to an AdminRequest.
type AdminResponse struct {
	ErrorCode    int16         `json:"error_code"`
	ErrorMessage string        `json:"error_message,omitempty"`
	Results      []TopicResult `json:"results,omitempty"`
	Links        []LinkInfo    `json:"links,omitempty"`
	Mirrors      []MirrorInfo  `json:"mirrors,omitempty"`
	// MetadataOffset is the metadata log offset that has a change.
	MetadataOffset int64                      `json:"metadata_offset,omitempty"`
	Epochs         map[string]map[int32]int32 `json:"epochs,omitempty"`
	LeaderEpochs   map[string]map[int32]int32 `json:"leader_epochs,omitempty"`
	Offsets        map[string]map[int32]int64 `json:"offsets,omitempty"`
}

// TopicResult is the outcome of a per-topic op for one topic.
type TopicResult struct {
	Topic        string `json:"topic"`
	ErrorCode    int16  `json:"error_code"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// SensitiveConfigs are the link properties whose values list-links
// hides (HiddenValue), as Kafka's DescribeConfigs hides passwords.
var SensitiveConfigs = map[string]bool{"sasl.jaas.config": true, "ssl.keystore.key": true}

// HiddenValue stands for a sensitive property's value in list-links.
const HiddenValue = "[hidden]"

// LinkInfo describes a link.
type LinkInfo struct {
	Name    string            `json:"name"`
	ID      string            `json:"id"`
	Configs map[string]string `json:"configs"`
}

// MirrorInfo describes a mirror topic.
type MirrorInfo struct {
	Topic       string `json:"topic"`
	Link        string `json:"link"` // "" once the link is deleted
	SourceTopic string `json:"source_topic"`
	State       string `json:"state"`
	Partitions  int32  `json:"partitions"`
}

// Mirror states as the admin API names them.
const (
	StatePromoted   = "promoted"
	StateFailedOver = "failed-over"
)
