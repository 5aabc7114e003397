package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testwait"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// A replica whose log cannot be created (every open in its directory
// fails with EIO on its node) is reported to the controller, which moves
// the partition's leadership and ISR membership away from it: the other
// replicas serve the partition, and the controller counts nothing
// offline.
func TestOfflineReplicaLosesLeadership(t *testing.T) {
	failing := vfstest.Inject(vfs.OS, vfstest.Failing(func(op vfstest.Op) bool {
		return op.Kind == vfstest.OpOpen && strings.Contains(op.Path, "/broken-")
	}, 0, -1, syscall.EIO))
	c := New(t, Options{Nodes: 3, NodeFS: map[int32]vfs.FS{2: failing}})
	n := c.Node(0)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "broken", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{2, 1, 3} // node 2 the preferred leader
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	testwait.For(t, 30*time.Second, "the topic created", func() error {
		resp, err := ask(t, n, req)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
			return err
		}
		return nil
	})
	testwait.For(t, 60*time.Second, "the offline replica's leadership and ISR membership moved away", func() error {
		for i := range c.Size() {
			img := c.Node(i).Server.Image()
			t := img.Topics.Get("broken")
			if t == nil {
				return fmt.Errorf("node %d has no topic yet", i)
			}
			p := t.Partitions[0]
			if p.Leader == 2 || p.Leader < 0 || slices.Contains(p.ISR, 2) {
				return fmt.Errorf("node %d: leader %d, ISR %v", i, p.Leader, p.ISR)
			}
		}
		return nil
	})
	for i := range c.Size() {
		if c.Node(i).ID != 2 {
			continue
		}
		for _, mt := range metadataFrom(t, c.Node(i)).Topics {
			if mt.Topic != nil && *mt.Topic == "broken" && !slices.Contains(mt.Partitions[0].OfflineReplicas, 2) {
				t.Fatalf("node 2's Metadata does not list its replica offline: %+v", mt.Partitions[0])
			}
		}
	}
	// The partition is served by the others.
	cl := c.Client(t, kgo.DefaultProduceTopic("broken"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ConsumeTopics("broken"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("consume: %d records, %v", fs.NumRecords(), err)
	}
}
