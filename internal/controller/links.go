package controller

// Cluster links and mirror topics (see "Cluster links" in
// docs/ARCHITECTURE.md): the controller validates them against the image
// and writes weir's ClusterLinkRecord, RemoveClusterLinkRecord and
// MirrorTopicRecord. Reaching the source cluster (the source topic's
// partition count, its leader epochs at a promotion) is the broker's
// business; the controller only records the outcome.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clientsec"
	"weir/internal/link"
	"weir/internal/metadata"
)

// linkConfigs are the link properties weir honours. The others of
// Confluent's cluster links are refused: by name, with what is missing,
// when they are known (notYetLinkConfigs), as unknown otherwise.
var linkConfigs = map[string]func(string) error{
	"bootstrap.servers": func(v string) error {
		if v == "" {
			return fmt.Errorf("must not be empty")
		}
		return nil
	},
	"client.id":                   func(string) error { return nil },
	"topic.config.sync.ms":        positiveMs,
	"consumer.offset.sync.enable": trueOrFalse,
	"consumer.offset.sync.ms":     positiveMs,
	"acl.sync.enable":             trueOrFalse,
	"link.mode": func(v string) error {
		if v != "DESTINATION" {
			return fmt.Errorf("weir's links are DESTINATION links only (no source-initiated or bidirectional links yet)")
		}
		return nil
	},
	"connection.mode": func(v string) error {
		if v != "OUTBOUND" {
			return fmt.Errorf("weir's links connect OUTBOUND (from the destination) only")
		}
		return nil
	},
	"acl.sync.ms": positiveMs,
	"acl.filters": func(v string) error {
		_, err := link.ParseACLFilters(v)
		return err
	},
	"link.fetcher.throttle.bytes.per.sec": func(v string) error {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			return fmt.Errorf("must be a positive number of bytes per second")
		}
		return nil
	},
	"auto.create.mirror.topics.enable": trueOrFalse,
	"auto.create.mirror.topics.filters": func(v string) error {
		_, err := link.ParseFilters("topicFilters", v)
		return err
	},
	"cluster.link.prefix": func(v string) error {
		if err := ValidateTopicName(v); err != nil {
			return fmt.Errorf("mirror topic names would not be valid: %v", err)
		}
		return nil
	},
	"consumer.group.filters": func(v string) error {
		_, err := link.ParseFilters("groupFilters", v)
		return err
	},
	"link.fetcher.max.bytes": func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			return fmt.Errorf("must be a positive int32")
		}
		return nil
	},
}

var notYetLinkConfigs = map[string]string{
	"cluster.link.paused":                              "paused links (pause the mirror topics)",
	"mirror.start.offset.spec":                         "mirrors starting elsewhere than the source's log start",
	"consumer.group.prefix.enable":                     "prefixed consumer group names",
	"topic.config.sync.include":                        "a choice of synced topic configs",
	"availability.check.ms":                            "link availability checks",
	"cluster.link.retry.timeout.ms":                    "link availability checks",
	"availability.check.consecutive.failure.threshold": "link availability checks",
}

func init() {
	// The client security properties (security.protocol, ssl.*, sasl.*)
	// are checked together by clientsec.Opts in ValidateLinkConfigs.
	for k := range clientsec.Properties {
		linkConfigs[k] = func(string) error { return nil }
	}
}

func trueOrFalse(v string) error {
	if v != "true" && v != "false" {
		return fmt.Errorf("must be true or false")
	}
	return nil
}

func positiveMs(v string) error {
	if n, err := strconv.ParseInt(v, 10, 32); err != nil || n <= 0 {
		return fmt.Errorf("must be a positive number of milliseconds")
	}
	return nil
}

// LinkDefaultFetchMaxBytes is link.fetcher.max.bytes when not set.
const LinkDefaultFetchMaxBytes = 1 << 20

// ValidateLinkConfigs checks a link's properties.
func ValidateLinkConfigs(cfg map[string]string) error {
	if _, ok := cfg["bootstrap.servers"]; !ok {
		return topicErr(kerr.InvalidConfig, "a cluster link needs bootstrap.servers (the source cluster)")
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		check, ok := linkConfigs[k]
		switch {
		case !ok && notYetLinkConfigs[k] != "":
			return topicErr(kerr.InvalidConfig, "cluster link property %s is not supported yet (weir's links have no %s)", k, notYetLinkConfigs[k])
		case !ok:
			return topicErr(kerr.InvalidConfig, "unknown cluster link property %s", k)
		}
		if len(cfg[k]) > math.MaxInt16 {
			return topicErr(kerr.InvalidConfig, "the value of cluster link property %s is longer than %d bytes", k, math.MaxInt16)
		}
		if err := check(cfg[k]); err != nil {
			return topicErr(kerr.InvalidConfig, "invalid value %q for cluster link property %s: %v", cfg[k], k, err)
		}
	}
	if cfg["acl.sync.enable"] == "true" && cfg["acl.filters"] == "" {
		return topicErr(kerr.InvalidConfig, "cluster link property acl.sync.enable=true needs acl.filters (the ACLs to sync)")
	}
	if _, err := clientsec.Opts(cfg); err != nil {
		return topicErr(kerr.InvalidConfig, "cluster link: %v", err)
	}
	return nil
}

// The cluster link operations answer with the offset to wait for only
// (Committed); each is refused as a whole with a *TopicError.

// CreateClusterLink creates the link named name.
func (c *Controller) CreateClusterLink(name string, cfg map[string]string, validateOnly bool) (Committed, error) {
	return run(c, func(img *metadata.Image) (result[Committed], error) {
		return createClusterLink(img, name, cfg, validateOnly)
	})
}

// createClusterLink builds CreateClusterLink.
func createClusterLink(img *metadata.Image, name string, cfg map[string]string, validateOnly bool) (result[Committed], error) {
	res := result[Committed]{Answer: Committed{img.Offset}}
	if err := ValidateTopicName(name); err != nil {
		return res, topicErr(kerr.InvalidRequest, "Cluster link name is invalid: %v", err)
	}
	if img.LinkByName(name) != nil {
		return res, topicErr(kerr.InvalidRequest, "Cluster link '%s' already exists.", name)
	}
	if err := ValidateLinkConfigs(cfg); err != nil {
		return res, err
	}
	r := &metadata.ClusterLinkRecord{LinkName: name, LinkId: newUUID()}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		r.Configs = append(r.Configs, metadata.LinkConfig{Name: k, Value: cfg[k]})
	}
	if !validateOnly {
		res.Records = []metadata.Record{r}
	}
	return res, nil
}

// DeleteClusterLink deletes the link named name; it is refused while
// mirror topics follow the link.
func (c *Controller) DeleteClusterLink(name string) (Committed, error) {
	return run(c, func(img *metadata.Image) (result[Committed], error) { return deleteClusterLink(img, name) })
}

// deleteClusterLink builds DeleteClusterLink.
func deleteClusterLink(img *metadata.Image, name string) (result[Committed], error) {
	res := result[Committed]{Answer: Committed{img.Offset}}
	l := img.LinkByName(name)
	if l == nil {
		return res, topicErr(kerr.InvalidRequest, "Cluster link '%s' does not exist.", name)
	}
	var following []string
	for id, m := range img.Mirrors {
		if m.LinkID == l.ID && m.ReadOnly() {
			following = append(following, img.TopicsByID.Get(id).Name)
		}
	}
	if len(following) > 0 {
		slices.Sort(following)
		return res, topicErr(kerr.InvalidRequest, "Cluster link '%s' still has mirror topics %v: promote, fail over or delete them first.", name, following)
	}
	res.Records = []metadata.Record{&metadata.RemoveClusterLinkRecord{LinkId: l.ID}}
	return res, nil
}

// MirrorTopic is a mirror topic to create.
type MirrorTopic struct {
	Topic             string
	Link              string
	SourceTopic       string
	Partitions        int32 // the source topic's count
	ReplicationFactor int16 // -1: default.replication.factor
	Configs           map[string]string
}

// CreateMirrorTopic creates a topic that mirrors SourceTopic through Link.
func (c *Controller) CreateMirrorTopic(m MirrorTopic) (Committed, error) {
	return run(c, func(img *metadata.Image) (result[Committed], error) { return c.createMirrorTopic(img, m) })
}

// createMirrorTopic builds CreateMirrorTopic.
func (c *Controller) createMirrorTopic(img *metadata.Image, m MirrorTopic) (result[Committed], error) {
	res := result[Committed]{Answer: Committed{img.Offset}}
	l := img.LinkByName(m.Link)
	if l == nil {
		return res, topicErr(kerr.InvalidRequest, "Cluster link '%s' does not exist.", m.Link)
	}
	if m.Partitions <= 0 {
		return res, topicErr(kerr.InvalidRequest, "a mirror topic needs its source topic's partition count")
	}
	if err := ValidateTopicName(m.SourceTopic); err != nil {
		return res, topicErr(kerr.InvalidRequest, "Source topic: %v", err)
	}
	if p := l.Configs["cluster.link.prefix"]; p != "" && m.Topic != p+m.SourceTopic {
		return res, topicErr(kerr.InvalidRequest, "Cluster link '%s' has cluster.link.prefix %s: the mirror of %s is named %s%s, not %s.",
			m.Link, p, m.SourceTopic, p, m.SourceTopic, m.Topic)
	}
	if m.Topic == metadata.LogTopic || m.Topic == "__consumer_offsets" || m.Topic == "__transaction_state" {
		return res, topicErr(kerr.InvalidRequest, "internal topic %s cannot be a mirror topic", m.Topic)
	}
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = m.Topic, m.Partitions, m.ReplicationFactor
	for _, k := range slices.Sorted(maps.Keys(m.Configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(m.Configs[k])
		t.Configs = append(t.Configs, c)
	}
	recs, created, err := c.planTopic(img, t, map[string]bool{})
	if err != nil {
		return res, err
	}
	recs = append(recs, &metadata.MirrorTopicRecord{TopicId: created.ID, LinkId: l.ID, SourceTopic: m.SourceTopic, State: metadata.MirrorActive})
	var u userRecords
	if err := u.add(recs...); err != nil {
		return res, err
	}
	res.Records = u
	return res, nil
}

// SetMirrorState pauses (MirrorPaused) or resumes (MirrorActive) a
// mirror topic.
func (c *Controller) SetMirrorState(topic string, state int8) (Committed, error) {
	return run(c, func(img *metadata.Image) (result[Committed], error) { return setMirrorState(img, topic, state) })
}

// setMirrorState builds SetMirrorState.
func setMirrorState(img *metadata.Image, topic string, state int8) (result[Committed], error) {
	res := result[Committed]{Answer: Committed{img.Offset}}
	m, err := readOnlyMirror(img, topic)
	if err != nil {
		return res, err
	}
	if state != metadata.MirrorActive && state != metadata.MirrorPaused {
		return res, topicErr(kerr.InvalidRequest, "mirror state %d cannot be set directly", state)
	}
	if m.State != state {
		res.Records = []metadata.Record{&metadata.MirrorTopicRecord{TopicId: m.TopicID, LinkId: m.LinkID, SourceTopic: m.SourceTopic, State: state}}
	}
	return res, nil
}

// StopMirror ends a PAUSED mirror topic's mirroring (state MirrorPromoted
// or MirrorFailedOver): the topic becomes writable, and each partition's
// leader epoch rises above logEpochs[partition], the latest (source)
// epoch in its log, which the caller learnt from its leader once that
// leader had applied the pause, in leader epoch leaderEpochs[partition];
// so the topic's own writes start a newer epoch than any in its log. The
// record keeps those epochs (StopEpochs): producers whose batches all come
// before them are the source's (see log.LeaderAppend.ForeignBelow). A
// partition whose leader epoch moved since is refused (read again).
func (c *Controller) StopMirror(topic string, state int8, logEpochs, leaderEpochs map[int32]int32) (Committed, error) {
	return run(c, func(img *metadata.Image) (result[Committed], error) {
		return stopMirror(img, topic, state, logEpochs, leaderEpochs)
	})
}

// stopMirror builds StopMirror.
func stopMirror(img *metadata.Image, topic string, state int8, logEpochs, leaderEpochs map[int32]int32) (result[Committed], error) {
	res := result[Committed]{Answer: Committed{img.Offset}}
	m, err := readOnlyMirror(img, topic)
	if err != nil {
		return res, err
	}
	if state != metadata.MirrorPromoted && state != metadata.MirrorFailedOver {
		return res, topicErr(kerr.InvalidRequest, "mirror state %d does not stop a mirror", state)
	}
	if m.State != metadata.MirrorPaused {
		return res, topicErr(kerr.InvalidRequest, "mirror topic %s must be paused before it stops", topic)
	}
	t := img.Topics.Get(topic)
	stop := &metadata.MirrorTopicRecord{TopicId: m.TopicID, LinkId: m.LinkID, SourceTopic: m.SourceTopic, State: state,
		StopEpochs: make([]int32, len(t.Partitions))}
	recs := []metadata.Record{stop}
	for _, p := range t.SortedPartitions() {
		if int(p.ID) >= len(stop.StopEpochs) {
			return res, fmt.Errorf("topic %s has partition %d of %d", topic, p.ID, len(t.Partitions))
		}
		stop.StopEpochs[p.ID] = p.LeaderEpoch
		e, ok := logEpochs[p.ID]
		le, lok := leaderEpochs[p.ID]
		switch {
		case !ok || !lok:
			return res, topicErr(kerr.InvalidRequest, "the latest log epoch of %s-%d is missing", topic, p.ID)
		case le != p.LeaderEpoch:
			return res, topicErr(kerr.FencedLeaderEpoch, "the leader epoch of %s-%d is %d, not %d, since its log epoch was read: read it again", topic, p.ID, p.LeaderEpoch, le)
		}
		if e < p.LeaderEpoch {
			continue
		}
		stop.StopEpochs[p.ID] = e + 1
		// Kafka has no record to set a leader epoch; a PartitionRecord
		// restates the partition whole, with the epochs raised.
		r := metadata.NewPartitionRecord()
		r.PartitionId, r.TopicId = p.ID, t.ID
		r.Replicas, r.Isr, r.RemovingReplicas, r.AddingReplicas = p.Replicas, p.ISR, p.Removing, p.Adding
		r.Leader, r.LeaderEpoch, r.PartitionEpoch = p.Leader, e+1, p.PartitionEpoch+1
		r.LeaderRecoveryState, r.EligibleLeaderReplicas, r.LastKnownElr = p.LeaderRecoveryState, p.ELR, p.LastKnownELR
		recs = append(recs, r)
	}
	res.Records = recs
	return res, nil
}

func readOnlyMirror(img *metadata.Image, topic string) (*metadata.Mirror, error) {
	m := img.MirrorOf(topic)
	switch {
	case img.Topics.Get(topic) == nil:
		return nil, topicErr(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", topic)
	case m == nil:
		return nil, topicErr(kerr.InvalidRequest, "Topic '%s' is not a mirror topic.", topic)
	case !m.ReadOnly():
		return nil, topicErr(kerr.InvalidRequest, "Mirror topic '%s' is already %s.", topic, metadata.MirrorStateName(m.State))
	}
	return m, nil
}

// mirrorErr refuses a change to a mirror topic that still follows its
// source.
func mirrorErr(img *metadata.Image, m *metadata.Mirror, topic, why string) error {
	link := "(deleted)"
	if l := img.Links[m.LinkID]; l != nil {
		link = l.Name
	}
	return topicErr(kerr.InvalidRequest, "Topic '%s' is a mirror of cluster link '%s' (%s): %s.", topic, link, metadata.MirrorStateName(m.State), why)
}
