package metadata

import (
	"maps"
	"slices"
	"sort"
)

// Records returns records that rebuild the image from Empty: what a
// snapshot of the metadata log holds. Applying them to Empty yields an
// image equal to im (but for Offset).
func (im *Image) Records() []Record {
	var out []Record
	for _, name := range slices.Sorted(maps.Keys(im.Features)) {
		out = append(out, &FeatureLevelRecord{Name: name, FeatureLevel: im.Features[name]})
	}
	for _, id := range slices.Sorted(maps.Keys(im.Brokers)) {
		b := im.Brokers[id]
		r := NewRegisterBrokerRecord()
		r.BrokerId, r.IncarnationId, r.BrokerEpoch, r.EndPoints = b.ID, b.IncarnationID, b.Epoch, b.Endpoints
		r.Rack, r.Fenced, r.InControlledShutdown, r.LogDirs = b.Rack, b.Fenced, b.InControlledShutdown, b.LogDirs
		out = append(out, r)
	}
	names := slices.Sorted(im.Topics.Keys())
	for _, name := range names {
		t := im.Topics.Get(name)
		out = append(out, &TopicRecord{Name: t.Name, TopicId: t.ID})
		for _, p := range t.SortedPartitions() {
			r := NewPartitionRecord()
			r.PartitionId, r.TopicId = p.ID, t.ID
			r.Replicas, r.Isr, r.RemovingReplicas, r.AddingReplicas = p.Replicas, p.ISR, p.Removing, p.Adding
			r.Leader, r.LeaderEpoch, r.PartitionEpoch = p.Leader, p.LeaderEpoch, p.PartitionEpoch
			r.LeaderRecoveryState, r.EligibleLeaderReplicas, r.LastKnownElr = p.LeaderRecoveryState, p.ELR, p.LastKnownELR
			out = append(out, r)
		}
	}
	res := slices.Collect(maps.Keys(im.Configs))
	sort.Slice(res, func(i, j int) bool {
		if res[i].Type != res[j].Type {
			return res[i].Type < res[j].Type
		}
		return res[i].Name < res[j].Name
	})
	for _, rc := range res {
		cfg := im.Configs[rc]
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			v := cfg[k]
			out = append(out, &ConfigRecord{ResourceType: rc.Type, ResourceName: rc.Name, Name: k, Value: &v})
		}
	}
	out = append(out, im.linkRecords()...)
	out = append(out, im.scramRecords()...)
	out = append(out, im.aclRecords()...)
	out = append(out, im.quotaRecords()...)
	if im.NextProducerID > 0 {
		r := NewProducerIdsRecord()
		r.NextProducerId = im.NextProducerID
		out = append(out, r)
	}
	return out
}
