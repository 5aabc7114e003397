package mirror

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/servertest"
)

// cluster is a one-node weir cluster with a client.
type cluster struct {
	node *servertest.Node
	cl   *kgo.Client
	adm  *kadm.Client
}

func startCluster(t *testing.T) *cluster { return startClusterWith(t, nil) }

// startClusterWith starts a cluster with config overrides; its client
// connects to the PLAINTEXT listener.
func startClusterWith(t *testing.T, overrides map[string]string) *cluster {
	n := servertest.Start(t, servertest.Options{Overrides: overrides})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &cluster{node: n, cl: cl, adm: kadm.NewClient(cl)}
}

func (c *cluster) create(t *testing.T, topic string, partitions int32) {
	t.Helper()
	if r, err := c.adm.CreateTopic(context.Background(), partitions, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, r.Err)
	}
}

// produce writes n records to each partition of topic, values
// "<topic>-<partition>-<i>", with a header and a fixed timestamp.
func (c *cluster) produce(t *testing.T, topic string, partitions int32, from, n int) {
	t.Helper()
	var recs []*kgo.Record
	for p := range partitions {
		for i := from; i < from+n; i++ {
			recs = append(recs, &kgo.Record{
				Topic: topic, Partition: p,
				Key:       []byte(fmt.Sprintf("k%d", i)),
				Value:     []byte(fmt.Sprintf("%s-%d-%d", topic, p, i)),
				Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte{byte(i)}}},
				Timestamp: time.UnixMilli(int64(1_000_000 + i)),
			})
		}
	}
	// A new client each time: a client's metadata may not show partitions
	// just added.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every partition of topic until it holds at least want
// records per partition, failing after a generous deadline.
func (c *cluster) readAll(t *testing.T, topic string, partitions int32, want int) map[int32][]*kgo.Record {
	t.Helper()
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := map[int32][]*kgo.Record{}
	done := func() bool {
		for p := range partitions {
			if len(out[p]) < want {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s on %s: only %d partitions' records of %d wanted each: %v", topic, c.node, len(out), want, fs.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { out[r.Partition] = append(out[r.Partition], r) })
	}
	return out
}

func (c *cluster) topics(t *testing.T) []string {
	t.Helper()
	ts, err := c.adm.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ts.Names()
}

// startMirror runs the mirror on props until the returned stop is called.
func startMirror(t *testing.T, props map[string]string) (stop func()) {
	t.Helper()
	cfg, _, err := Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("mirror: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func mirrorProps(a, b *cluster, flows ...string) map[string]string {
	p := map[string]string{
		"clusters":                              "A, B",
		"A.bootstrap.servers":                   a.node.Addr,
		"B.bootstrap.servers":                   b.node.Addr,
		"replication.factor":                    "1",
		"offset-syncs.topic.replication.factor": "1",
		"heartbeats.topic.replication.factor":   "1",
		"offset.storage.replication.factor":     "1",
		"checkpoints.topic.replication.factor":  "1",
		"refresh.topics.interval.seconds":       "1",
		"offset.lag.max":                        "10",
		"emit.checkpoints.enabled":              "false",
		"sync.topic.configs.enabled":            "false",
		"sync.topic.acls.enabled":               "false",
	}
	for _, f := range flows {
		p[f+".enabled"] = "true"
	}
	return p
}

// checkCopy checks that remote holds exactly the source's records of each
// partition, in order, with keys, headers and timestamps.
func checkCopy(t *testing.T, src, remote map[int32][]*kgo.Record) {
	t.Helper()
	for p, rs := range src {
		got := remote[p]
		if len(got) != len(rs) {
			t.Fatalf("partition %d: %d records mirrored, want %d", p, len(got), len(rs))
		}
		for i, r := range rs {
			g := got[i]
			if string(g.Key) != string(r.Key) || string(g.Value) != string(r.Value) || !g.Timestamp.Equal(r.Timestamp) ||
				len(g.Headers) != 1 || g.Headers[0].Key != "h" || string(g.Headers[0].Value) != string(r.Headers[0].Value) {
				t.Fatalf("partition %d record %d: %s=%s at %v %v, want %s=%s at %v %v", p, i,
					g.Key, g.Value, g.Timestamp, g.Headers, r.Key, r.Value, r.Timestamp, r.Headers)
			}
		}
	}
}

func TestActiveStandbyResume(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	a.create(t, "orders", 3)
	a.produce(t, "orders", 3, 0, 25)
	stop := startMirror(t, mirrorProps(a, b, "A->B"))
	checkCopy(t, a.readAll(t, "orders", 3, 25), b.readAll(t, "A.orders", 3, 25))
	stop()

	// Restarted on more data, the mirror resumes where it stopped.
	a.produce(t, "orders", 3, 25, 10)
	startMirror(t, mirrorProps(a, b, "A->B"))
	checkCopy(t, a.readAll(t, "orders", 3, 35), b.readAll(t, "A.orders", 3, 35))

	// The source grows: the remote topic grows with it.
	if r, err := a.adm.CreatePartitions(context.Background(), 1, "orders"); err != nil || r.Error() != nil {
		t.Fatalf("adding a partition: %v %v", err, r.Error())
	}
	a.produce(t, "orders", 4, 35, 5)
	src := a.readAll(t, "orders", 4, 5)
	if len(src[3]) != 5 {
		t.Fatalf("new partition holds %d records", len(src[3]))
	}
	checkCopy(t, src, b.readAll(t, "A.orders", 4, 5))

	// MM2's offset syncs on the source: the first record of each partition
	// is synced at (0, 0), and every sync maps an upstream offset to the
	// same downstream offset (the remote partitions began empty).
	syncs := a.readAll(t, "mm2-offset-syncs.B.internal", 1, 4)[0]
	first := map[string]bool{}
	for _, r := range syncs {
		s, err := DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if s.Topic != "orders" || s.UpstreamOffset != s.DownstreamOffset {
			t.Fatalf("offset sync %+v", s)
		}
		if k := fmt.Sprint(s.Partition); !first[k] {
			first[k] = true
			if s.UpstreamOffset != 0 {
				t.Fatalf("first sync of partition %d at %d", s.Partition, s.UpstreamOffset)
			}
		}
	}

	// Heartbeats on the target.
	hb := b.readAll(t, "heartbeats", 1, 1)[0][0]
	if h, err := DecodeHeartbeat(hb.Key, hb.Value); err != nil || h.Source != "A" || h.Target != "B" || h.Timestamp <= 0 {
		t.Fatalf("heartbeat %+v %v", h, err)
	}
}

func TestActiveActiveNoLoop(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	a.create(t, "orders", 2)
	b.create(t, "events", 2)
	a.produce(t, "orders", 2, 0, 10)
	b.produce(t, "events", 2, 0, 10)
	startMirror(t, mirrorProps(a, b, "A->B", "B->A"))
	checkCopy(t, a.readAll(t, "orders", 2, 10), b.readAll(t, "A.orders", 2, 10))
	checkCopy(t, b.readAll(t, "events", 2, 10), a.readAll(t, "B.events", 2, 10))

	// Topics created now are mirrored by refreshes that also see the
	// mirrored topics above: once they arrive, those were not sent back.
	a.create(t, "late", 1)
	b.create(t, "late", 1)
	a.produce(t, "late", 1, 0, 1)
	b.produce(t, "late", 1, 0, 1)
	b.readAll(t, "A.late", 1, 1)
	a.readAll(t, "B.late", 1, 1)
	for _, c := range []struct {
		cl        *cluster
		forbidden []string
	}{{a, []string{"B.A.orders", "A.B.events", "B.A.late", "B.A.heartbeats"}}, {b, []string{"A.B.events", "B.A.orders", "A.B.late", "A.B.heartbeats"}}} {
		names := c.cl.topics(t)
		for _, f := range c.forbidden {
			if slices.Contains(names, f) {
				t.Errorf("%s has %s: a loop (topics %v)", c.cl.node, f, names)
			}
		}
	}
	// Each side's heartbeats are mirrored to the other once.
	a.readAll(t, "B.heartbeats", 1, 1)
	b.readAll(t, "A.heartbeats", 1, 1)
}

// Forwarding A->B->C: C gets B's copy of A's topic as B.A.orders, and
// aggregation keeps each source's topics apart.
func TestForwarding(t *testing.T) {
	a, b, c := startCluster(t), startCluster(t), startCluster(t)
	a.create(t, "orders", 1)
	a.produce(t, "orders", 1, 0, 5)
	c.create(t, "orders", 1)
	c.produce(t, "orders", 1, 0, 3)
	props := mirrorProps(a, b, "A->B", "B->C", "C->B")
	props["clusters"] = "A, B, C"
	props["C.bootstrap.servers"] = c.node.Addr
	startMirror(t, props)
	src := a.readAll(t, "orders", 1, 5)
	checkCopy(t, src, b.readAll(t, "A.orders", 1, 5))
	checkCopy(t, src, c.readAll(t, "B.A.orders", 1, 5))
	checkCopy(t, c.readAll(t, "orders", 1, 3), b.readAll(t, "C.orders", 1, 3))
	// B's heartbeats (from A->B and C->B) reach C, not back to B.
	c.readAll(t, "B.heartbeats", 1, 1)
	b.create(t, "late", 1)
	b.produce(t, "late", 1, 0, 1)
	c.readAll(t, "B.late", 1, 1)
	for _, name := range c.topics(t) {
		if name == "B.C.orders" {
			t.Errorf("C got its own topic back as %s", name)
		}
	}
}
