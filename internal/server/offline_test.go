package server

import (
	"slices"
	"testing"

	"weir/internal/controller"
	"weir/internal/log"
	"weir/internal/metadata"
)

// The report names only the offline replicas the controller must move:
// those leading, or in an ISR with other members.
func TestOfflineReport(t *testing.T) {
	id := metadata.Uuid{1}
	img := &metadata.Image{Topics: metadata.MapOf(map[string]*metadata.Topic{"t": {Name: "t", ID: id, Partitions: map[int32]*metadata.Partition{
		0: {ID: 0, Leader: 1, ISR: []int32{1, 2}},
		1: {ID: 1, Leader: 2, ISR: []int32{2, 1}},
		2: {ID: 2, Leader: 2, ISR: []int32{2}},
		3: {ID: 3, Leader: -1, ISR: []int32{1}},
		4: {ID: 4, Leader: 1, ISR: []int32{1}},
	}}})}
	var offline []log.TopicPartition
	for p := int32(0); p < 5; p++ {
		offline = append(offline, log.TopicPartition{Topic: "t", Partition: p})
	}
	offline = append(offline, log.TopicPartition{Topic: "gone", Partition: 0})
	req := offlineReport(img, 1, 7, offline)
	if req == nil || req.BrokerID != 1 || req.BrokerEpoch != 7 || len(req.Directories) != 1 || req.Directories[0].ID != controller.LostDir {
		t.Fatalf("report %+v", req)
	}
	var got []int32
	for _, rt := range req.Directories[0].Topics {
		if rt.TopicID != id {
			t.Fatalf("topic id %v", rt.TopicID)
		}
		for _, rp := range rt.Partitions {
			got = append(got, rp.Partition)
		}
	}
	if want := []int32{0, 1, 4}; !slices.Equal(got, want) {
		t.Fatalf("reported partitions %v, want %v", got, want)
	}
	if req := offlineReport(img, 1, 7, offline[2:4]); req != nil {
		t.Fatalf("a report with nothing to move: %+v", req)
	}
}
