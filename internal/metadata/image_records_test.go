package metadata

import (
	"reflect"
	"testing"
)

// Records rebuilds the image it was taken from, through an encode/decode
// round trip as a snapshot does.
func TestImageRecordsRebuildTheImage(t *testing.T) {
	rack := "r1"
	v := "1000"
	id := Uuid{1, 2, 3}
	recs := []Record{
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 25},
		&RegisterBrokerRecord{BrokerId: 1, BrokerEpoch: 7, Rack: &rack, Fenced: true,
			EndPoints: []BrokerEndpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}},
		&UnfenceBrokerRecord{Id: 1, Epoch: 7},
		&TopicRecord{Name: "t", TopicId: id},
		&PartitionRecord{PartitionId: 0, TopicId: id, Replicas: []int32{1}, Isr: []int32{1}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 4},
		&PartitionRecord{PartitionId: 1, TopicId: id, Replicas: []int32{1}, Isr: []int32{1}, Leader: -1, LeaderEpoch: 0, PartitionEpoch: 0},
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "retention.ms", Value: &v},
		&ConfigRecord{ResourceType: ResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: &v},
		&ProducerIdsRecord{BrokerId: 1, BrokerEpoch: 7, NextProducerId: 2000},
	}
	for _, r := range recs {
		r.SetVersion(r.HighestVersion())
	}
	want, _, err := Empty().Apply(recs, 10)
	if err != nil {
		t.Fatal(err)
	}
	var again []Record
	for _, r := range want.Records() {
		b, err := AppendRecord(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		d, err := DecodeRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		again = append(again, d)
	}
	got, _, err := Empty().Apply(again, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		t.Fatalf("rebuilt image differs:\n got %+v\nwant %+v", got, want)
	}
}

// normalize makes nil and empty slices compare equal.
func normalize(im *Image) *Image {
	c := *im
	for _, t := range c.Topics.All() {
		for _, p := range t.Partitions {
			for _, s := range []*[]int32{&p.Replicas, &p.ISR, &p.Removing, &p.Adding, &p.ELR, &p.LastKnownELR} {
				if len(*s) == 0 {
					*s = nil
				}
			}
		}
	}
	for _, b := range c.Brokers {
		if len(b.LogDirs) == 0 {
			b.LogDirs = nil
		}
	}
	return &c
}
