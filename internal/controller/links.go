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
	"client.id": func(string) error { return nil },
	"security.protocol": func(v string) error {
		if v != "PLAINTEXT" {
			return fmt.Errorf("weir's cluster links reach their source over PLAINTEXT only")
		}
		return nil
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
	"auto.create.mirror.topics.enable":    "auto-created mirror topics",
	"auto.create.mirror.topics.filters":   "auto-created mirror topics",
	"consumer.offset.sync.enable":         "consumer offset sync",
	"consumer.offset.sync.ms":             "consumer offset sync",
	"consumer.group.filters":              "consumer offset sync",
	"acl.sync.enable":                     "ACL sync",
	"acl.filters":                         "ACL sync",
	"topic.config.sync.ms":                "topic config sync",
	"cluster.link.prefix":                 "mirror topic prefixes",
	"link.fetcher.throttle.bytes.per.sec": "link throttles",
	"sasl.mechanism":                      "SASL to the source",
	"sasl.jaas.config":                    "SASL to the source",
	"ssl.truststore.location":             "TLS to the source",
	"ssl.keystore.location":               "TLS to the source",
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
	return nil
}

// CreateClusterLink creates the link named name. It returns the offset of
// the record committed.
func (c *Controller) CreateClusterLink(name string, cfg map[string]string, validateOnly bool) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return -1, err
	}
	img := c.Image()
	if err := ValidateTopicName(name); err != nil {
		return -1, topicErr(kerr.InvalidRequest, "Cluster link name is invalid: %v", err)
	}
	if img.LinkByName(name) != nil {
		return -1, topicErr(kerr.InvalidRequest, "Cluster link '%s' already exists.", name)
	}
	if err := ValidateLinkConfigs(cfg); err != nil {
		return -1, err
	}
	r := &metadata.ClusterLinkRecord{LinkName: name, LinkId: newUUID()}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		r.Configs = append(r.Configs, metadata.LinkConfig{Name: k, Value: cfg[k]})
	}
	if validateOnly {
		return img.Offset, nil
	}
	return c.commit([]metadata.Record{r})
}

// DeleteClusterLink deletes the link named name; it is refused while
// mirror topics follow the link.
func (c *Controller) DeleteClusterLink(name string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return -1, err
	}
	img := c.Image()
	l := img.LinkByName(name)
	if l == nil {
		return -1, topicErr(kerr.InvalidRequest, "Cluster link '%s' does not exist.", name)
	}
	var following []string
	for id, m := range img.Mirrors {
		if m.LinkID == l.ID && m.ReadOnly() {
			following = append(following, img.TopicsByID.Get(id).Name)
		}
	}
	if len(following) > 0 {
		slices.Sort(following)
		return -1, topicErr(kerr.InvalidRequest, "Cluster link '%s' still has mirror topics %v: promote, fail over or delete them first.", name, following)
	}
	return c.commit([]metadata.Record{&metadata.RemoveClusterLinkRecord{LinkId: l.ID}})
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
func (c *Controller) CreateMirrorTopic(m MirrorTopic) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return -1, err
	}
	img := c.Image()
	l := img.LinkByName(m.Link)
	if l == nil {
		return -1, topicErr(kerr.InvalidRequest, "Cluster link '%s' does not exist.", m.Link)
	}
	if m.Partitions <= 0 {
		return -1, topicErr(kerr.InvalidRequest, "a mirror topic needs its source topic's partition count")
	}
	if err := ValidateTopicName(m.SourceTopic); err != nil {
		return -1, topicErr(kerr.InvalidRequest, "Source topic: %v", err)
	}
	if m.Topic == metadata.LogTopic || m.Topic == "__consumer_offsets" || m.Topic == "__transaction_state" {
		return -1, topicErr(kerr.InvalidRequest, "internal topic %s cannot be a mirror topic", m.Topic)
	}
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = m.Topic, m.Partitions, m.ReplicationFactor
	for _, k := range slices.Sorted(maps.Keys(m.Configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(m.Configs[k])
		t.Configs = append(t.Configs, c)
	}
	recs, res, err := c.planTopic(img, t, map[string]bool{})
	if err != nil {
		return -1, err
	}
	recs = append(recs, &metadata.MirrorTopicRecord{TopicId: res.ID, LinkId: l.ID, SourceTopic: m.SourceTopic, State: metadata.MirrorActive})
	var u userRecords
	if err := u.add(recs...); err != nil {
		return -1, err
	}
	return c.commit(u)
}

// SetMirrorState pauses (MirrorPaused) or resumes (MirrorActive) a
// mirror topic.
func (c *Controller) SetMirrorState(topic string, state int8) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return -1, err
	}
	img := c.Image()
	m, err := readOnlyMirror(img, topic)
	if err != nil {
		return -1, err
	}
	if state != metadata.MirrorActive && state != metadata.MirrorPaused {
		return -1, topicErr(kerr.InvalidRequest, "mirror state %d cannot be set directly", state)
	}
	if m.State == state {
		return img.Offset, nil
	}
	return c.commit([]metadata.Record{&metadata.MirrorTopicRecord{TopicId: m.TopicID, LinkId: m.LinkID, SourceTopic: m.SourceTopic, State: state}})
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
func (c *Controller) StopMirror(topic string, state int8, logEpochs, leaderEpochs map[int32]int32) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return -1, err
	}
	img := c.Image()
	m, err := readOnlyMirror(img, topic)
	if err != nil {
		return -1, err
	}
	if state != metadata.MirrorPromoted && state != metadata.MirrorFailedOver {
		return -1, topicErr(kerr.InvalidRequest, "mirror state %d does not stop a mirror", state)
	}
	if m.State != metadata.MirrorPaused {
		return -1, topicErr(kerr.InvalidRequest, "mirror topic %s must be paused before it stops", topic)
	}
	t := img.Topics.Get(topic)
	stop := &metadata.MirrorTopicRecord{TopicId: m.TopicID, LinkId: m.LinkID, SourceTopic: m.SourceTopic, State: state,
		StopEpochs: make([]int32, len(t.Partitions))}
	recs := []metadata.Record{stop}
	for _, p := range t.SortedPartitions() {
		if int(p.ID) >= len(stop.StopEpochs) {
			return -1, fmt.Errorf("topic %s has partition %d of %d", topic, p.ID, len(t.Partitions))
		}
		stop.StopEpochs[p.ID] = p.LeaderEpoch
		e, ok := logEpochs[p.ID]
		le, lok := leaderEpochs[p.ID]
		switch {
		case !ok || !lok:
			return -1, topicErr(kerr.InvalidRequest, "the latest log epoch of %s-%d is missing", topic, p.ID)
		case le != p.LeaderEpoch:
			return -1, topicErr(kerr.FencedLeaderEpoch, "the leader epoch of %s-%d is %d, not %d, since its log epoch was read: read it again", topic, p.ID, p.LeaderEpoch, le)
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
	return c.commit(recs)
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
