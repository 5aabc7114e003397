package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// Link is a cluster link: a source cluster this cluster mirrors topics
// from, and the client properties to reach it.
type Link struct {
	Name    string
	ID      Uuid
	Configs map[string]string
}

// Mirror is the mirror state of a topic.
type Mirror struct {
	TopicID     Uuid
	LinkID      Uuid
	SourceTopic string
	State       int8 // MirrorActive ...
	// StopEpochs are, once stopped, per partition the leader epoch its
	// own writes start in (MirrorTopicRecord).
	StopEpochs []int32
}

// ReadOnly reports whether the mirror still follows its source (active
// or paused): producers and the admin calls that would fork the log are
// refused.
func (m *Mirror) ReadOnly() bool { return m.State == MirrorActive || m.State == MirrorPaused }

// MirrorSyncedConfigs are the topic configs a mirror topic takes from its
// source topic, at its creation and then as they change there: those that
// shape the log and its records. The destination's own business (replica
// placement, min.insync.replicas, throttles, flushing, unclean leader
// election) is not synced and stays alterable; these are not, while the
// topic mirrors.
var MirrorSyncedConfigs = []string{
	"cleanup.policy", "compression.type", "delete.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
	"message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
	"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "retention.bytes", "retention.ms", "segment.bytes", "segment.ms",
}

// LinkByName returns the link named name, or nil.
func (im *Image) LinkByName(name string) *Link {
	for _, l := range im.Links {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// MirrorOf returns the mirror state of the topic named topic, or nil when
// it is not a mirror topic.
func (im *Image) MirrorOf(topic string) *Mirror {
	t := im.Topics.Get(topic)
	if t == nil {
		return nil
	}
	return im.Mirrors[t.ID]
}

// applyLinkRecord applies weir's link and mirror records; it reports
// whether r was one.
func (b *builder) applyLinkRecord(r Record) (bool, error) {
	switch r := r.(type) {
	case *ClusterLinkRecord:
		if l := b.im.LinkByName(r.LinkName); l != nil && l.ID != r.LinkId {
			return true, fmt.Errorf("link %q exists with another id", r.LinkName)
		}
		cfg := make(map[string]string, len(r.Configs))
		for _, c := range r.Configs {
			cfg[c.Name] = c.Value
		}
		b.im.Links = cloneMap(b.im.Links)
		b.im.Links[r.LinkId] = &Link{Name: r.LinkName, ID: r.LinkId, Configs: cfg}
		b.delta.ChangedLinks = true
	case *RemoveClusterLinkRecord:
		if b.im.Links[r.LinkId] == nil {
			return true, fmt.Errorf("unknown link id %s", r.LinkId)
		}
		b.im.Links = maps.Clone(b.im.Links)
		delete(b.im.Links, r.LinkId)
		b.delta.ChangedLinks = true
	case *MirrorTopicRecord:
		t := b.im.TopicsByID.Get(r.TopicId)
		if t == nil {
			return true, fmt.Errorf("unknown topic id %s", r.TopicId)
		}
		if r.State < MirrorActive || r.State > MirrorFailedOver {
			return true, fmt.Errorf("unknown mirror state %d", r.State)
		}
		b.im.Mirrors = cloneMap(b.im.Mirrors)
		b.im.Mirrors[r.TopicId] = &Mirror{TopicID: r.TopicId, LinkID: r.LinkId, SourceTopic: r.SourceTopic, State: r.State, StopEpochs: r.StopEpochs}
		// Every partition's replicas take the new state.
		b.changed(t, -1)
		for id := range t.Partitions {
			b.changed(t, id)
		}
	default:
		return false, nil
	}
	return true, nil
}

// cloneMap copies m for mutation (an image built without Empty has nil
// maps).
func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return maps.Clone(m)
}

// dropMirror forgets the mirror state of a deleted topic.
func (b *builder) dropMirror(id Uuid) {
	if _, ok := b.im.Mirrors[id]; ok {
		b.im.Mirrors = maps.Clone(b.im.Mirrors)
		delete(b.im.Mirrors, id)
	}
}

// linkRecords returns the records that rebuild the links and the mirror
// states; they follow the topics in a snapshot.
func (im *Image) linkRecords() []Record {
	var out []Record
	ids := slices.SortedFunc(maps.Keys(im.Links), func(a, b Uuid) int { return slices.Compare(a[:], b[:]) })
	for _, id := range ids {
		l := im.Links[id]
		r := &ClusterLinkRecord{LinkName: l.Name, LinkId: l.ID}
		for _, k := range slices.Sorted(maps.Keys(l.Configs)) {
			r.Configs = append(r.Configs, LinkConfig{Name: k, Value: l.Configs[k]})
		}
		out = append(out, r)
	}
	ids = slices.SortedFunc(maps.Keys(im.Mirrors), func(a, b Uuid) int { return slices.Compare(a[:], b[:]) })
	for _, id := range ids {
		m := im.Mirrors[id]
		out = append(out, &MirrorTopicRecord{TopicId: m.TopicID, LinkId: m.LinkID, SourceTopic: m.SourceTopic, State: m.State, StopEpochs: m.StopEpochs})
	}
	return out
}
