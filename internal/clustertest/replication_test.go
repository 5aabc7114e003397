package clustertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testwait"
)

// createReplicated creates topic with partitions of replication factor rf
// through the cluster's clients.
func createReplicated(t *testing.T, c *Cluster, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(c.Client(t)).CreateTopic(ctx, partitions, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// produceAll produces n records to topic with acks=all and returns them
// by partition, in order.
func produceAll(t *testing.T, c *Cluster, topic string, n int, opts ...kgo.Opt) map[int32][]string {
	t.Helper()
	cl := c.Client(t, append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[int32][]string{}
	for i := 0; i < n; i++ {
		r, err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", topic, i))).First()
		if err != nil {
			t.Fatalf("producing record %d: %v", i, err)
		}
		out[r.Partition] = append(out[r.Partition], string(r.Value))
	}
	return out
}

// consumeAll reads every partition of topic from the start until it has
// want records, and returns them by partition.
func consumeAll(t *testing.T, c *Cluster, topic string, want int) map[int32][]string {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[int32][]string{}
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", got, want, topic)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], string(r.Value))
			got++
		})
	}
	return out
}

func sameRecords(t *testing.T, want, got map[int32][]string) {
	t.Helper()
	for p, w := range want {
		g := got[p]
		if len(g) != len(w) {
			t.Fatalf("partition %d: %d records, want %d", p, len(g), len(w))
		}
		for i := range w {
			if g[i] != w[i] {
				t.Fatalf("partition %d offset %d: %q, want %q", p, i, g[i], w[i])
			}
		}
	}
}

// Records produced with acks=all to a partition of three replicas survive
// the crash of its leader: a follower from the ISR takes over and serves
// every one of them.
func TestLeaderKilledFollowerTakesOver(t *testing.T) {
	// Two fetcher sessions per leader (num.replica.fetchers).
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{"num.replica.fetchers": "2"}})
	createReplicated(t, c, "r3", 1, 3, map[string]*string{"min.insync.replicas": ptr("2")})
	sent := produceAll(t, c, "r3", 200)
	sameRecords(t, sent, consumeAll(t, c, "r3", 200))

	img := c.Node(0).Server.Image()
	leader := img.Topics.Get("r3").Partitions[0].Leader
	c.Kill(int(leader - 1))
	testwait.For(t, 15*time.Second, "a new leader", func() error {
		for _, i := range c.Live() {
			p := c.Node(i).Server.Image().Topics.Get("r3").Partitions[0]
			if p.Leader < 0 || p.Leader == leader {
				return fmt.Errorf("node %d sees leader %d", i, p.Leader)
			}
		}
		return nil
	})
	sameRecords(t, sent, consumeAll(t, c, "r3", 200))
	more := produceAll(t, c, "r3", 50)
	for p, rs := range more {
		sent[p] = append(sent[p], rs...)
	}
	sameRecords(t, sent, consumeAll(t, c, "r3", 250))
}

func ptr(s string) *string { return &s }

// partitionState is partition p of topic as node i's image has it
// (leader -2 and epoch -1 while the image does not have it).
func partitionState(c *Cluster, i int, topic string, p int32) (leader int32, isr []int32, partitionEpoch int32) {
	t := c.Node(i).Server.Image().Topics.Get(topic)
	if t == nil || t.Partitions[p] == nil {
		return -2, nil, -1
	}
	mp := t.Partitions[p]
	return mp.Leader, mp.ISR, mp.PartitionEpoch
}

// Consistently checks cond every 50 ms for d and fails at its first error.
func Consistently(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A record three times replica.fetch.max.bytes replicates whole (the
// first batch of a fetch is returned even when larger than the limit),
// so the followers stay in the ISR: the seeds' "ISR flaps every 30 s".
func TestLargeRecordDoesNotStallFollowers(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{
		"replica.fetch.max.bytes": "1048576",
		"replica.lag.time.max.ms": "1500",
	}})
	createReplicated(t, c, "big", 1, 3, map[string]*string{"max.message.bytes": ptr("5242880"), "min.insync.replicas": ptr("3")})
	waitState(t, c, "big", 0, "all in sync", func(_ int32, isr []int32) bool { return len(isr) == 3 })
	_, _, epoch := partitionState(c, 0, "big", 0)
	cl := c.Client(t, kgo.DefaultProduceTopic("big"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(5<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := make([]byte, 3<<20)
	for i := range value {
		value[i] = byte(i * 7)
	}
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("producing a 3 MiB record with acks=all and min.insync.replicas=3: %v", err)
		}
	}
	Consistently(t, 3*time.Second, "the ISR stays whole", func() error {
		for _, i := range c.Live() {
			_, isr, e := partitionState(c, i, "big", 0)
			if len(isr) != 3 || e != epoch {
				return fmt.Errorf("node %d: ISR %v, partition epoch %d (was %d)", i, isr, e, epoch)
			}
		}
		return nil
	})
}

// createAssigned creates topic with partition p on replicas[p], the
// first being the preferred leader.
func createAssigned(t *testing.T, c *Cluster, topic string, replicas [][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, rs := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.Client(t))
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// waitState waits until every live node's image has partition p of topic
// in a state accepted by ok.
func waitState(t *testing.T, c *Cluster, topic string, p int32, what string, ok func(leader int32, isr []int32) bool) {
	t.Helper()
	waitStateOn(t, c, c.Live(), topic, p, what, ok)
}

// waitStateOn is waitState on the given nodes only.
func waitStateOn(t *testing.T, c *Cluster, nodes []int, topic string, p int32, what string, ok func(leader int32, isr []int32) bool) {
	t.Helper()
	testwait.For(t, 20*time.Second, what, func() error {
		for _, i := range nodes {
			tp := c.Node(i).Server.Image().Topics.Get(topic)
			if tp == nil || tp.Partitions[p] == nil {
				return fmt.Errorf("node %d does not know %s-%d", i, topic, p)
			}
			mp := tp.Partitions[p]
			if !ok(mp.Leader, mp.ISR) {
				return fmt.Errorf("node %d: leader %d, ISR %v", i, mp.Leader, mp.ISR)
			}
		}
		return nil
	})
}

func isrIs(want ...int32) func(int32, []int32) bool {
	return func(_ int32, isr []int32) bool {
		return len(isr) == len(want) && !slices.ContainsFunc(want, func(id int32) bool { return !slices.Contains(isr, id) })
	}
}

// A follower cut off from its leader falls out of the ISR after
// replica.lag.time.max.ms, so acks=all writes go on with the other two;
// once the link is back it catches up and rejoins the ISR.
func TestSlowFollowerLeavesAndRejoinsTheISR(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{"replica.lag.time.max.ms": "1000"}})
	createAssigned(t, c, "lag", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, c, "lag", 0, "node 1 leading", func(l int32, isr []int32) bool { return l == 1 && len(isr) == 3 })
	// The follower cut off from the leader leaves the ISR by lagging, or
	// by being fenced if the leader is also the active controller (then
	// the follower's own image stops following the metadata log, so it
	// is not asked).
	follower := 2
	if c.Leader() == 2 {
		follower = 1
	}
	c.Cut(0, follower)
	sent := produceAll(t, c, "lag", 100)
	waitStateOn(t, c, []int{0, 3 - follower}, "lag", 0, "the cut follower out of the ISR", isrIs(1, int32(3-follower+1)))
	c.Mend(0, follower)
	waitState(t, c, "lag", 0, "the follower back in the ISR", isrIs(1, 2, 3))
	more := produceAll(t, c, "lag", 50)
	for p, rs := range more {
		sent[p] = append(sent[p], rs...)
	}
	sameRecords(t, sent, consumeAll(t, c, "lag", 150))
}

// With the ISR down to its leader and min.insync.replicas=2, acks=all
// produces fail with NOT_ENOUGH_REPLICAS and write nothing, while acks=1
// still works; when a follower returns and catches up, acks=all works
// again and nothing acknowledged was lost.
func TestISRBelowMinInsyncRefusesAcksAll(t *testing.T) {
	c := New(t, Options{Nodes: 3, Brokers: 2})
	createAssigned(t, c, "min", [][]int32{{1, 4, 5}}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, c, "min", 0, "all in sync", isrIs(1, 4, 5))
	sent := produceAll(t, c, "min", 50)
	c.Kill(3)
	c.Kill(4)
	waitState(t, c, "min", 0, "the ISR down to the leader", isrIs(1))

	cl := c.Client(t, kgo.DefaultProduceTopic("min"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1),
		kgo.DisableIdempotentWrite())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, kgo.StringRecord("refused")).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR [1]: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := c.Client(t, kgo.DefaultProduceTopic("min"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	r, err := one.ProduceSync(ctx, kgo.StringRecord("min-acks1")).First()
	if err != nil {
		t.Fatalf("acks=1 with ISR [1]: %v", err)
	}
	sent[r.Partition] = append(sent[r.Partition], "min-acks1")

	c.Restart(3, true)
	waitState(t, c, "min", 0, "node 4 back in the ISR", isrIs(1, 4))
	more := produceAll(t, c, "min", 20)
	for p, rs := range more {
		sent[p] = append(sent[p], rs...)
	}
	sameRecords(t, sent, consumeAll(t, c, "min", 71))
}

// With every ISR member down and unclean election off the partition goes
// offline rather than elect the stale replica that is up, and comes back
// with every acknowledged record when an ISR member returns. With unclean
// election turned on, the stale replica is elected and the records only
// the ISR had are visibly lost.
func TestEveryISRMemberDown(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		t.Run(fmt.Sprintf("unclean=%v", unclean), func(t *testing.T) {
			c := New(t, Options{Nodes: 3, Brokers: 2})
			createAssigned(t, c, "down", [][]int32{{4, 5}}, map[string]string{"min.insync.replicas": "1"})
			waitState(t, c, "down", 0, "both in sync", isrIs(4, 5))
			sent := produceAll(t, c, "down", 40)
			c.Kill(4) // node 5: the ISR shrinks to node 4
			waitState(t, c, "down", 0, "node 4 alone", func(l int32, isr []int32) bool { return l == 4 && len(isr) == 1 })
			more := produceAll(t, c, "down", 30) // only on node 4
			c.Kill(3)                            // node 4: nothing in the ISR is up
			waitState(t, c, "down", 0, "offline", func(l int32, _ []int32) bool { return l == -1 })
			c.Restart(4, true) // the stale node 5
			if !unclean {
				Consistently(t, 2*time.Second, "no unclean election", func() error {
					if l, _, _ := partitionState(c, 0, "down", 0); l != -1 {
						return fmt.Errorf("node %d leads", l)
					}
					return nil
				})
				c.Restart(3, true)
				waitState(t, c, "down", 0, "node 4 leads again", func(l int32, _ []int32) bool { return l == 4 })
				for p, rs := range more {
					sent[p] = append(sent[p], rs...)
				}
				sameRecords(t, sent, consumeAll(t, c, "down", 70))
				return
			}
			alterTopicConfig(t, c.Node(0), "down", "unclean.leader.election.enable", "true")
			waitState(t, c, "down", 0, "the stale node 5 elected", func(l int32, _ []int32) bool { return l == 5 })
			// Node 5 has the first 40 records only: the 30 acknowledged by
			// node 4 alone are gone, as unclean election allows.
			sameRecords(t, sent, consumeAll(t, c, "down", 40))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ends, err := kadm.NewClient(c.Client(t)).ListEndOffsets(ctx, "down")
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := ends.Lookup("down", 0); o.Offset != 40 {
				t.Fatalf("end offset after the unclean election %d, want 40", o.Offset)
			}
			// Node 4 returns, truncates to node 5's log and follows it.
			c.Restart(3, true)
			waitState(t, c, "down", 0, "node 4 back in the ISR", isrIs(4, 5))
			next := produceAll(t, c, "down", 10)
			for p, rs := range next {
				sent[p] = append(sent[p], rs...)
			}
			sameRecords(t, sent, consumeAll(t, c, "down", 50))
		})
	}
}

// A preferred leader that returns after a crash gets its leadership back
// from the automatic rebalance once it is in sync.
func TestPreferredLeaderRestored(t *testing.T) {
	c := New(t, Options{Nodes: 3, Brokers: 1, Overrides: map[string]string{
		"leader.imbalance.check.interval.seconds": "1",
	}})
	createAssigned(t, c, "pref", [][]int32{{4, 1, 2}}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, c, "pref", 0, "node 4 leading", func(l int32, isr []int32) bool { return l == 4 && len(isr) == 3 })
	sent := produceAll(t, c, "pref", 30)
	c.Kill(3)
	waitState(t, c, "pref", 0, "another leader", func(l int32, _ []int32) bool { return l == 1 || l == 2 })
	more := produceAll(t, c, "pref", 30)
	c.Restart(3, true)
	waitState(t, c, "pref", 0, "node 4 leading again", func(l int32, isr []int32) bool { return l == 4 && len(isr) == 3 })
	for p, rs := range more {
		sent[p] = append(sent[p], rs...)
	}
	sameRecords(t, sent, consumeAll(t, c, "pref", 60))
}

// A partition moves to a new broker under a replication throttle: the
// new replica catches up at the throttled rate, joins the ISR, and the
// reassignment completes with the old replica dropped and every record
// on the new one.
func TestReassignmentOntoANewBrokerUnderThrottle(t *testing.T) {
	c := New(t, Options{Nodes: 3, Brokers: 1, Overrides: map[string]string{
		"replication.quota.window.num":          "2",
		"replication.quota.window.size.seconds": "1",
		"auto.leader.rebalance.enable":          "false",
	}})
	createAssigned(t, c, "move", [][]int32{{1, 2}}, nil)
	cl := c.Client(t, kgo.DefaultProduceTopic("move"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	value := make([]byte, 64<<10)
	sent := map[int32][]string{}
	for i := 0; i < 48; i++ { // 3 MiB
		copy(value, fmt.Sprintf("record-%03d", i))
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).First()
		if err != nil {
			t.Fatal(err)
		}
		sent[r.Partition] = append(sent[r.Partition], string(r.Value))
	}

	adm := kadm.NewClient(c.Client(t))
	const rate = "1048576" // 1 MiB/s each side
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.rate", Value: ptr(rate)},
		{Name: "follower.replication.throttled.rate", Value: ptr(rate)},
	}); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": "0:4"} {
		alterTopicConfig(t, c.Node(0), "move", k, v)
	}
	start := time.Now()
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("move", 0, []int32{4, 1})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	res.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Fatalf("reassigning %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	testwait.For(t, 30*time.Second, "the reassignment to complete", func() error {
		l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"move": {0: {}}})
		if err != nil {
			return err
		}
		if len(l) > 0 {
			return fmt.Errorf("still reassigning: %v", l)
		}
		mp := c.Node(0).Server.Image().Topics.Get("move").Partitions[0]
		if !slices.Equal(mp.Replicas, []int32{4, 1}) {
			return fmt.Errorf("replicas %v", mp.Replicas)
		}
		return nil
	})
	t.Logf("3 MiB moved under a 1 MiB/s throttle in %v", time.Since(start).Round(10*time.Millisecond))
	c.Kill(0) // node 1: node 4 must serve everything
	waitState(t, c, "move", 0, "node 4 leading", func(l int32, _ []int32) bool { return l == 4 })
	got := consumeAll(t, c, "move", 48)
	for i, v := range got[0] {
		if v[:10] != fmt.Sprintf("record-%03d", i) || len(v) != 64<<10 {
			t.Fatalf("record %d on the new replica: %q...", i, v[:10])
		}
	}
}
