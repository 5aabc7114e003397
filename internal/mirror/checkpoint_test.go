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
	return c.waitCheckpointsFor(t, topic, group, remote, partitions, fmt.Sprintf("at %d", up), func(cp Checkpoint) bool { return cp.UpstreamOffset == up })
}

// waitCheckpointsFor is waitCheckpoints until every partition's latest
// checkpoint satisfies ok (described by what).
func (c *cluster) waitCheckpointsFor(t *testing.T, topic, group, remote string, partitions int32, what string, ok func(Checkpoint) bool) map[int32]Checkpoint {
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
			if cp, seen := latest[p]; !seen || !ok(cp) {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no checkpoint of %s %s on every partition of %s: %+v", group, what, remote, latest)
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

	// Mid-stream: the translation never passes the group's position, and
	// once the syncs of the records past it are read it is exact (the
	// partitions have no gaps), where MM2's rule re-reads from one past
	// the sync below 40 (30 at best).
	a.produce(t, "orders", 2, 30, 20)
	b.readAll(t, "A.orders", 2, 50)
	a.commit(t, "app", "orders", 2, 40)
	cps = b.waitCheckpointsFor(t, "A.checkpoints.internal", "app", "A.orders", 2, "at 40, translated exactly", func(cp Checkpoint) bool {
		if cp.UpstreamOffset == 40 && (cp.DownstreamOffset > 40 || cp.DownstreamOffset < 30) {
			t.Errorf("checkpoint %+v outside [30, 40]", cp)
		}
		return cp.UpstreamOffset == 40 && cp.DownstreamOffset == 40
	})
	fail := kadm.Offsets{}
	for p, cp := range cps {
		fail.Add(kadm.Offset{Topic: "A.orders", Partition: p, At: cp.DownstreamOffset, LeaderEpoch: -1})
	}

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

func TestOffsetsToSync(t *testing.T) {
	cp := func(p int32, down int64) Checkpoint {
		return Checkpoint{Group: "g", Topic: "A.t", Partition: p, UpstreamOffset: down + 100, DownstreamOffset: down, Metadata: "m"}
	}
	cps := map[topicPartition]Checkpoint{{"A.t", 0}: cp(0, 10), {"A.t", 1}: cp(1, 20), {"A.t", 2}: cp(2, 30)}
	cases := []struct {
		name      string
		state     string
		committed map[topicPartition]int64
		want      []int32 // partitions synced
	}{
		{"absent", "", nil, []int32{0, 1, 2}},
		{"dead", "Dead", nil, []int32{0, 1, 2}},
		{"empty, nothing committed", "Empty", map[topicPartition]int64{}, []int32{0, 1, 2}},
		{"empty, only forwards", "Empty", map[topicPartition]int64{{"A.t", 0}: 9, {"A.t", 1}: 20, {"A.t", 2}: 31}, []int32{0}},
		{"stable", "Stable", nil, nil},
		{"rebalancing", "PreparingRebalance", nil, nil},
		{"completing", "CompletingRebalance", nil, nil},
	}
	for _, c := range cases {
		var got []int32
		for _, s := range offsetsToSync(cps, c.state, c.committed) {
			if s != cps[topicPartition{s.Topic, s.Partition}] {
				t.Errorf("%s: synced %+v, not the checkpoint", c.name, s)
			}
			got = append(got, s.Partition)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: synced partitions %v, want %v", c.name, got, c.want)
		}
	}
}

// waitCommitted waits until group has committed at least at on every
// partition of topic on c, and returns the offsets.
func (c *cluster) waitCommitted(t *testing.T, group, topic string, partitions int32, at int64) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		got := map[int32]int64{}
		if offs, err := c.adm.FetchOffsets(ctx, group); err == nil {
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == topic && o.Err == nil && o.At >= at {
					got[o.Partition] = o.At
				}
			})
		}
		if int32(len(got)) == partitions {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never committed %d on every partition of %s: %v", group, at, topic, got)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A group fails over from A to B through synced group offsets: absent on
// B, it gets the translated offsets there; a later commit on A moves them
// forwards, never back; an active group on B is left alone.
func TestGroupOffsetSyncFailover(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	a.create(t, "orders", 2)
	a.produce(t, "orders", 2, 0, 50)
	a.commit(t, "app", "orders", 2, 50)
	a.commit(t, "back", "orders", 2, 50)
	// "back" is ahead on B (it consumed there): its older position on A
	// must not move it back.
	b.create(t, "A.orders", 2)
	b.commit(t, "back", "A.orders", 2, 60)
	props := mirrorProps(a, b, "A->B")
	props["emit.checkpoints.enabled"] = "true"
	props["emit.checkpoints.interval.seconds"] = "1"
	props["sync.group.offsets.enabled"] = "true"
	props["sync.group.offsets.interval.seconds"] = "1"
	startMirror(t, props)
	b.readAll(t, "A.orders", 2, 50)

	got := b.waitCommitted(t, "app", "A.orders", 2, 50)
	for p, at := range got {
		if at != 50 {
			t.Fatalf("partition %d: synced at %d, want 50", p, at)
		}
	}

	// Mid-stream on A: the synced offsets move forwards to the translation,
	// never past the group's position.
	a.produce(t, "orders", 2, 50, 30)
	b.readAll(t, "A.orders", 2, 80)
	a.commit(t, "app", "orders", 2, 70)
	got = b.waitCommitted(t, "app", "A.orders", 2, 60)
	reread := int64(0)
	for p, at := range got {
		if at > 70 {
			t.Fatalf("partition %d: synced at %d, past the group's 70", p, at)
		}
		reread += 70 - at
	}
	t.Logf("failover through synced offsets re-reads %d records of 2 partitions", reread)
	if offs, err := b.adm.FetchOffsets(context.Background(), "back"); err != nil {
		t.Fatal(err)
	} else {
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == "A.orders" && o.At != 60 {
				t.Errorf("back: partition %d at %d on B, want 60 (never moved back)", o.Partition, o.At)
			}
		})
	}

	// The group fails over: it consumes on B from the synced offsets.
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
		if want := fmt.Sprintf("orders-%d-%d", p, got[p]); v != want {
			t.Errorf("partition %d: resumed at %s, want %s", p, v, want)
		}
	}
}
