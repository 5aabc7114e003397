package controller

import (
	"fmt"
	"testing"

	"weir/internal/metadata"
)

// placementImage is an image of three unfenced brokers and topics x
// partitions, each partition on all three.
func placementImage(b *testing.B, topics, partitions int) *metadata.Image {
	b.Helper()
	var recs []metadata.Record
	for id := int32(1); id <= 3; id++ {
		r := metadata.NewRegisterBrokerRecord()
		r.BrokerId, r.BrokerEpoch, r.Fenced = id, 1, false
		recs = append(recs, r)
	}
	for t := range topics {
		var id metadata.Uuid
		id[0], id[1], id[2], id[15] = byte(t>>16), byte(t>>8), byte(t), 1
		recs = append(recs, &metadata.TopicRecord{Name: fmt.Sprintf("topic-%d", t), TopicId: id})
		for p := range partitions {
			r := metadata.NewPartitionRecord()
			r.TopicId, r.PartitionId = id, int32(p)
			leader := int32(1 + (t+p)%3)
			r.Replicas = []int32{leader, 1 + leader%3, 1 + (leader+1)%3}
			r.Isr, r.Leader, r.LeaderEpoch, r.PartitionEpoch = r.Replicas, leader, 0, 0
			recs = append(recs, r)
		}
	}
	im, _, err := metadata.Empty().Apply(recs, int64(len(recs)))
	if err != nil {
		b.Fatal(err)
	}
	return im
}

// Placing a new topic of 100 partitions costs the same in an image of 100
// partitions as in one of 100,000: placement reads the brokers' replica
// and preferred leader counts kept by the image, not the partitions
// (issue 16, item 5).
func BenchmarkPlaceNewTopic(b *testing.B) {
	for _, size := range []struct{ topics, partitions int }{{1, 100}, {1000, 100}} {
		b.Run(fmt.Sprintf("%dx%d", size.topics, size.partitions), func(b *testing.B) {
			img := placementImage(b, size.topics, size.partitions)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if got := placeNew(img, nil, 100, 3); len(got) != 100 {
					b.Fatalf("placed %d partitions", len(got))
				}
			}
		})
	}
}
