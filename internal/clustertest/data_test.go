package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testwait"
)

// A node that crashes keeps every record it acknowledged: once restarted
// and unfenced it leads its partition again and serves all of them.
func TestKilledNodeKeepsAcknowledgedRecords(t *testing.T) {
	c := New(t, Options{Nodes: 3})
	createTopics(t, c.Node(0), 3, []int32{1, 2, 3}, nil, "acked")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 300; i++ {
		r := &kgo.Record{Topic: "acked", Partition: int32(i % 3), Value: []byte(fmt.Sprint(i))}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, victim := range []int{c.Leader(), (c.Leader() + 1) % c.Size()} {
		c.Kill(victim)
		// Fenced, so its partition goes offline and comes back with it.
		testwait.For(t, 10*time.Second, fmt.Sprintf("node %d fenced", victim), func() error {
			if l := partitionLeaders(metadataFrom(t, c.Node(c.Leader())), "acked")[int32(victim)]; l != -1 {
				return fmt.Errorf("acked-%d led by %d", victim, l)
			}
			return nil
		})
		c.Restart(victim, true)
		testwait.For(t, 10*time.Second, fmt.Sprintf("node %d to lead its partition again", victim), func() error {
			if l := partitionLeaders(metadataFrom(t, c.Node(victim)), "acked")[int32(victim)]; l != c.Node(victim).ID {
				return fmt.Errorf("acked-%d led by %d", victim, l)
			}
			return nil
		})
		// Every node's metadata catches up with the elections in a moment;
		// until then a client may be told LEADER_NOT_AVAILABLE.
		adm := kadm.NewClient(c.Client(t))
		var ends kadm.ListedOffsets
		testwait.For(t, 10*time.Second, "every partition's end offset", func() error {
			var err error
			if ends, err = adm.ListEndOffsets(ctx, "acked"); err != nil {
				return err
			}
			return ends.Error()
		})
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil || o.Offset != 100 {
				t.Errorf("after node %d crashed and restarted, acked-%d ends at %d (%v), want 100", victim, o.Partition, o.Offset, o.Err)
			}
		})
	}
}
