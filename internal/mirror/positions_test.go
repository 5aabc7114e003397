package mirror

import "testing"

// TestPositionRecord checks position records against those MM2 4.3.1's
// Connect worker wrote for the same source partitions into its
// 25-partition offset store (seen in the interop/mm2 run): the same key
// bytes, value and store partition.
func TestPositionRecord(t *testing.T) {
	f := &flow{cfg: &FlowConfig{Source: "A"}, positionsPartitions: 25}
	for _, c := range []struct {
		partition int32
		key       string
		store     int32
	}{
		{0, `["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"orders"}]`, 3},
		{1, `["MirrorSourceConnector",{"cluster":"A","partition":1,"topic":"orders"}]`, 11},
		{2, `["MirrorSourceConnector",{"cluster":"A","partition":2,"topic":"orders"}]`, 7},
	} {
		r := f.positionRecord(topicPartition{"orders", c.partition}, 64)
		if r.Topic != "mm2-offsets.A.internal" || string(r.Key) != c.key || string(r.Value) != `{"offset":64}` || r.Partition != c.store {
			t.Errorf("position of orders-%d: %s-%d %s=%s, want mm2-offsets.A.internal-%d %s={\"offset\":64}",
				c.partition, r.Topic, r.Partition, r.Key, r.Value, c.store, c.key)
		}
	}
	f.positionsPartitions = 1
	if r := f.positionRecord(topicPartition{"orders", 2}, 0); r.Partition != 0 {
		t.Errorf("position in a one-partition store on partition %d", r.Partition)
	}
}
