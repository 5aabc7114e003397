package metadata

import (
	"fmt"
	"testing"
)

// benchImage is an image of topics x partitions (three replicas each).
func benchImage(b *testing.B, topics, partitions int) *Image {
	b.Helper()
	im := Empty()
	var recs []Record
	for id := int32(1); id <= 3; id++ {
		recs = append(recs, registerRec(id, int64(id)))
	}
	for t := range topics {
		var id Uuid
		id[0], id[1], id[2] = byte(t>>16), byte(t>>8), byte(t)
		id[15] = 1
		recs = append(recs, topicRecs(fmt.Sprintf("topic-%d", t), id, partitions, 1, 2, 3)...)
	}
	im, _, err := im.Apply(recs, int64(len(recs)))
	if err != nil {
		b.Fatal(err)
	}
	return im
}

// Applying a change of one partition (an ISR shrink, as AlterPartition
// commits) costs what copying the image's topic maps costs: the topic's
// partition map and the image's maps of topics by name and by id are
// copied, the rest is shared (issue 16, item 5).
func BenchmarkApplyOnePartitionChange(b *testing.B) {
	for _, size := range []struct{ topics, partitions int }{{1, 100}, {1000, 100}, {100000, 1}} {
		b.Run(fmt.Sprintf("%dx%d", size.topics, size.partitions), func(b *testing.B) {
			im := benchImage(b, size.topics, size.partitions)
			t := im.Topics.Get("topic-0")
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				rec := NewPartitionChangeRecord()
				rec.TopicId, rec.PartitionId = t.ID, int32(i%size.partitions)
				rec.Isr = []int32{1, 2}
				if _, _, err := im.Apply([]Record{rec}, im.Offset+1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
