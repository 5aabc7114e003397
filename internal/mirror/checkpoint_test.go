package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// commit sets group's committed offset of every partition of topic.
func (c *cluster) commit(t *testing.T, group, topic string, partitions int32, at int64) {
	t.Helper()
	offs := kadm.Offsets{}
	for p := range partitions {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1, Metadata: "m"})
	}
	r, err := c.adm.CommitOffsets(context.Background(), group, offs)
	if err == nil {
		err = r.Error()
	}
	if err != nil {
		t.Fatalf("committing %s: %v", group, err)
	}
}

// waitCheckpoints reads the checkpoints topic until every partition of
// remote has a checkpoint of group with upstream offset up, and returns
// the latest of each partition.
func (c *cluster) waitCheckpoints(t *testing.T, topic, group, remote string, partitions int32, up int64) map[int32]Checkpoint {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	latest := map[int32]Checkpoint{}
	done := func() bool {
		for p := range partitions {
			if cp, ok := latest[p]; !ok || cp.UpstreamOffset != up {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no checkpoint of %s at %d on every partition of %s: %+v", group, up, remote, latest)
		}
		fs.EachRecord(func(r *kgo.Record) {
			cp, err := DecodeCheckpoint(r.Key, r.Value)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Group == group && cp.Topic == remote {
				latest[cp.Partition] = cp
			}
		})
	}
	return latest
}

// A group fails over from A to B through the checkpoints: committed on B
// at the translated offsets, it resumes on records it had not processed or
// a few before, never after.
func TestCheckpointFailover(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	a.create(t, "orders", 2)
	a.produce(t, "orders", 2, 0, 30)
	a.commit(t, "app", "orders", 2, 30) // the group has read everything
	props := mirrorProps(a, b, "A->B")
	props["emit.checkpoints.enabled"] = "true"
	props["emit.checkpoints.interval.seconds"] = "1"
	props["groups.exclude"] = "skipped"
	a.commit(t, "skipped", "orders", 2, 30)
	startMirror(t, props)
	b.readAll(t, "A.orders", 2, 30)

	// At the end of the partitions: the latest sync translates exactly.
	cps := b.waitCheckpoints(t, "A.checkpoints.internal", "app", "A.orders", 2, 30)
	for p, cp := range cps {
		if cp.DownstreamOffset != 30 || cp.Metadata != "m" {
			t.Fatalf("partition %d: checkpoint %+v, want downstream 30", p, cp)
		}
	}

	// Mid-stream: the translation never passes the group's position.
	a.produce(t, "orders", 2, 30, 20)
	b.readAll(t, "A.orders", 2, 50)
	a.commit(t, "app", "orders", 2, 40)
	cps = b.waitCheckpoints(t, "A.checkpoints.internal", "app", "A.orders", 2, 40)
	reread := int64(0)
	fail := kadm.Offsets{}
	for p, cp := range cps {
		if cp.DownstreamOffset > 40 || cp.DownstreamOffset < 30 {
			t.Fatalf("partition %d: checkpoint %+v outside [30, 40]", p, cp)
		}
		reread += 40 - cp.DownstreamOffset
		fail.Add(kadm.Offset{Topic: "A.orders", Partition: p, At: cp.DownstreamOffset, LeaderEpoch: -1})
	}
	t.Logf("failover re-reads %d records of 2 partitions (MM2's rule)", reread)

	// Fail over: the group commits the checkpoints on B and resumes there.
	if r, err := b.adm.CommitOffsets(context.Background(), "app", fail); err != nil || r.Error() != nil {
		t.Fatalf("committing on B: %v %v", err, r.Error())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.node.Addr), kgo.ConsumerGroup("app"), kgo.ConsumeTopics("A.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := map[int32]string{}
	for len(first) < 2 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the failed-over group read %v", first)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = string(r.Value)
			}
		})
	}
	for p, v := range first {
		if want := fmt.Sprintf("orders-%d-%d", p, cps[p].DownstreamOffset); v != want {
			t.Errorf("partition %d: resumed at %s, want %s", p, v, want)
		}
	}

	// The excluded group has no checkpoint.
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b.node.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"A.checkpoints.internal": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	end, err := b.adm.ListEndOffsets(context.Background(), "A.checkpoints.internal")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := end.Lookup("A.checkpoints.internal", 0)
	for n := int64(0); n < e.Offset; {
		fs := cl2.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("reading the checkpoints")
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if cp, _ := DecodeCheckpoint(r.Key, r.Value); cp.Group == "skipped" {
				t.Errorf("checkpoint of an excluded group: %+v", cp)
			}
		})
	}
}
