package controller

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/config"
	"weir/internal/metadata"
)

// MirrorSync is what a link's sync task (internal/link) read of a mirror
// topic's source topic: the synced configs set on it and its partition
// count.
type MirrorSync struct {
	Topic       string
	SourceTopic string
	Configs     map[string]string // of metadata.MirrorSyncedConfigs; others are ignored
	Partitions  int32
}

// SyncMirror makes a mirror topic's synced configs and partition count
// the source's. It commits nothing when they already are.
func (c *Controller) SyncMirror(s MirrorSync) (Committed, error) {
	return run(c, func(img *metadata.Image) (result[Committed], error) {
		recs, err := planMirrorSync(img, s)
		if err != nil {
			return result[Committed]{}, err
		}
		var u userRecords
		if err := u.add(recs...); err != nil {
			return result[Committed]{}, err
		}
		return result[Committed]{Records: u, Answer: Committed{img.Offset}}, nil
	})
}

// planMirrorSync returns the records that bring a mirror topic in line
// with its source: ConfigRecords for the synced configs that differ (set,
// or removed when the source has none), and the partitions the source
// added, placed as CreatePartitions places them. A topic that no longer
// mirrors s.SourceTopic (promoted, failed over, deleted meanwhile) is
// refused; a source with fewer partitions is left alone (Kafka cannot
// remove partitions, so a smaller count is a recreated source topic, which
// the mirror does not follow).
func planMirrorSync(img *metadata.Image, s MirrorSync) ([]metadata.Record, error) {
	m, err := readOnlyMirror(img, s.Topic)
	if err != nil {
		return nil, err
	}
	if m.SourceTopic != s.SourceTopic {
		return nil, topicErr(kerr.InvalidRequest, "Mirror topic '%s' mirrors %s, not %s.", s.Topic, m.SourceTopic, s.SourceTopic)
	}
	current := img.TopicConfig(s.Topic)
	next := maps.Clone(current)
	for _, k := range metadata.MirrorSyncedConfigs {
		if v, ok := s.Configs[k]; ok {
			next[k] = v
		} else {
			delete(next, k)
		}
	}
	if err := config.ValidateTopicConfigs(next); err != nil {
		return nil, topicErr(kerr.InvalidConfig, "the source topic's configs are not valid here: %v", err)
	}
	recs := configRecords(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: s.Topic}, current, next)
	t := img.Topics.Get(s.Topic)
	cur := int32(len(t.Partitions))
	if s.Partitions <= cur {
		return recs, nil
	}
	if s.Partitions-cur > MaxPartitionsPerRequest {
		return nil, errTooManyPartitions
	}
	rf := len(t.Partitions[0].Replicas)
	if brokers := usableBrokers(img); rf > len(brokers) {
		return nil, topicErr(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): only %d broker(s) are usable.", rf, len(brokers))
	}
	for j, replicas := range placeNew(img, t, int(s.Partitions-cur), rf) {
		pr := metadata.NewPartitionRecord()
		pr.PartitionId, pr.TopicId = cur+int32(j), t.ID
		pr.Replicas, pr.Isr = replicas, liveReplicas(img, replicas)
		pr.Leader, pr.LeaderEpoch, pr.PartitionEpoch = firstOr(pr.Isr, -1), 0, 0
		pr.SetVersion(0)
		recs = append(recs, pr)
	}
	return recs, nil
}

// configRecords returns the ConfigRecords that turn a resource's dynamic
// configs current into next.
func configRecords(res metadata.ConfigResource, current, next map[string]string) []metadata.Record {
	var recs []metadata.Record
	for _, k := range slices.Sorted(maps.Keys(current)) {
		if _, ok := next[k]; !ok {
			recs = append(recs, &metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: k})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(next)) {
		if v, ok := current[k]; ok && v == next[k] {
			continue
		}
		v := next[k]
		recs = append(recs, &metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: k, Value: &v})
	}
	return recs
}

// checkMirrorConfigs refuses a change of a synced config of a topic that
// still mirrors its source.
func checkMirrorConfigs(img *metadata.Image, topic string, current, next map[string]string) error {
	m := img.MirrorOf(topic)
	if m == nil || !m.ReadOnly() {
		return nil
	}
	for _, k := range metadata.MirrorSyncedConfigs {
		v, ok := next[k]
		if w, had := current[k]; ok != had || v != w {
			return mirrorErr(img, m, topic, "config "+k+" follows the source topic's")
		}
	}
	return nil
}
