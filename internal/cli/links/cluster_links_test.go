package links

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/clustertest"
	"weir/internal/record"
	"weir/internal/testwait"
)

// Two weir clusters in one process: a cluster link from the source to the
// destination mirrors a plain, a transactional (committed and aborted
// transactions, markers) and a compacted topic (offset gaps) with the same
// offsets and the same bytes, batch for batch; the mirrors are read-only; pause and resume; a
// promotion waits for the source's high watermark and makes the topic
// writable in a newer epoch; a failover with the source gone.
func TestClusterLinkMirrorsTopics(t *testing.T) {
	src := clustertest.New(t, clustertest.Options{Nodes: 1, Overrides: map[string]string{"log.cleaner.backoff.ms": "50"}})
	dst := clustertest.New(t, clustertest.Options{Nodes: 3})
	sb, db := src.Node(0).Addr, dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	scl := newClient(t, sb)
	sadm := kadm.NewClient(scl)
	for name, parts := range map[string]int32{"plain": 2, "txn": 1} {
		if _, err := sadm.CreateTopic(ctx, parts, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	produceN(t, scl, "plain", 0, 100)
	tcl := newClient(t, sb, kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("txn"))
	for i, commit := range []bool{true, false, true} {
		if err := tcl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 10 {
			if err := tcl.ProduceSync(ctx, kgo.StringRecord("t"+strconv.Itoa(i)+"-"+strconv.Itoa(j))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tcl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	// A fourth transaction stays open: offsets 33-37, no marker.
	if err := tcl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for j := range 5 {
		if err := tcl.ProduceSync(ctx, kgo.StringRecord("open-"+strconv.Itoa(j))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	compacted(t, sadm, scl)

	dir := t.TempDir()
	props := filepath.Join(dir, "link.properties")
	os.WriteFile(props, []byte("bootstrap.servers="+sb+"\n"), 0o644)
	bad := filepath.Join(dir, "bad.properties")
	os.WriteFile(bad, []byte("bootstrap.servers="+sb+"\ncluster.link.paused=true\n"), 0o644)

	mustRun := func(want string, args ...string) string {
		t.Helper()
		r := weir.Run(t, args...)
		if r.Code != 0 || !strings.Contains(r.Out, want) {
			t.Fatalf("weir %v: exit %d\n%s%s", args, r.Code, r.Out, r.Err)
		}
		return r.Out
	}
	mustFail := func(want string, args ...string) {
		t.Helper()
		r := weir.Run(t, args...)
		if r.Code == 0 || !strings.Contains(r.Err, want) {
			t.Fatalf("weir %v: exit %d, want a failure with %q\n%s%s", args, r.Code, want, r.Out, r.Err)
		}
	}
	mustFail("not supported yet", "cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", bad)
	mustRun("creation successfully completed", "cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props)
	mustRun("source bootstrap servers: '"+sb+"'", "cluster-links", "--bootstrap-server", db, "--list")
	mustRun("Created topic plain.", "mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "plain", "--link", "dr", "--replication-factor", "2")
	mustRun("Created topic txn-copy.", "mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "txn-copy",
		"--source-topic", "txn", "--link", "dr", "--replication-factor", "3")
	mustFail("source topic nope: UNKNOWN_TOPIC_OR_PARTITION", "mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "x", "--source-topic", "nope", "--link", "dr")

	sameLogs(t, sb, "plain", db, "plain", 2)
	sameLogs(t, sb, "txn", db, "txn-copy", 1)
	mustRun("Created topic compacted.", "mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "compacted", "--link", "dr")
	sameLogs(t, sb, "compacted", db, "compacted", 1)
	// The mirror took the source topic's log configs.
	rcs, err := kadm.NewClient(newClient(t, db)).DescribeTopicConfigs(ctx, "compacted")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rcs[0].Configs {
		got[c.Key] = c.MaybeValue()
	}
	if got["cleanup.policy"] != "delete" || got["retention.ms"] != "-1" || got["segment.ms"] != "1" {
		t.Fatalf("mirror configs: cleanup.policy=%s retention.ms=%s segment.ms=%s", got["cleanup.policy"], got["retention.ms"], got["segment.ms"])
	}
	out := mustRun("State: ACTIVE", "mirrors", "--bootstrap-server", db, "--describe", "--topics", "plain")
	if !strings.Contains(out, "Lag: 0") || !strings.Contains(out, "SourceTopic: plain") {
		t.Fatalf("describe:\n%s", out)
	}

	// Read-only, and the link stays while it has mirrors.
	dcl := newClient(t, db)
	err = dcl.ProduceSync(ctx, &kgo.Record{Topic: "plain", Value: []byte("no")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("produce to a mirror: %v", err)
	}
	mustFail("still has mirror topics", "cluster-links", "--bootstrap-server", db, "--delete", "--link", "dr")
	dadm := kadm.NewClient(dcl)
	cp, err := dadm.CreatePartitions(ctx, 1, "plain")
	if err == nil {
		err = cp.Error()
	}
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("CreatePartitions on a mirror: %v", err)
	}

	// Paused, then resumed: it catches up.
	mustRun("Mirror topic plain paused.", "mirrors", "--bootstrap-server", db, "--pause", "--topics", "plain")
	mustRun("State: PAUSED", "mirrors", "--bootstrap-server", db, "--describe", "--link", "dr")
	produceN(t, scl, "plain", 100, 50)
	mustRun("Mirror topic plain resumed.", "mirrors", "--bootstrap-server", db, "--resume", "--topics", "plain")
	sameLogs(t, sb, "plain", db, "plain", 2)

	// Promoted: it has what the source had committed when asked, and
	// takes produces in an epoch above every source epoch in its log.
	produceN(t, scl, "plain", 150, 50)
	mustRun("Mirror topic plain promoted", "mirrors", "--bootstrap-server", db, "--promote", "--topics", "plain")
	sameLogs(t, sb, "plain", db, "plain", 2)
	ends := endsOf(t, dadm, "plain")
	pcl := newClient(t, db, kgo.DefaultProduceTopic("plain"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	r, err := pcl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("after promotion")}).First()
	if err != nil || r.Offset != ends[0] {
		t.Fatalf("produce after promotion: offset %d (want %d): %v", r.Offset, ends[0], err)
	}
	mustRun("STOPPED (promoted)", "mirrors", "--bootstrap-server", db, "--describe", "--topics", "plain")

	// Failover with the source gone.
	src.Kill(0)
	mustFail("use --failover", "mirrors", "--bootstrap-server", db, "--promote", "--topics", "txn-copy")
	mustRun("Mirror topic compacted failed over", "mirrors", "--bootstrap-server", db, "--failover", "--topics", "txn-copy,compacted")
	// The open transaction went: the mirror is writable at its last
	// stable offset, after 30 records and 3 markers.
	r, err = pcl.ProduceSync(ctx, &kgo.Record{Topic: "txn-copy", Partition: 0, Value: []byte("after failover")}).First()
	if err != nil || r.Offset != 33 {
		t.Fatalf("produce after failover: offset %d (want 33): %v", r.Offset, err)
	}
	lo, err := dadm.ListCommittedOffsets(ctx, "txn-copy") // read_committed: the last stable offset
	if o, _ := lo.Lookup("txn-copy", 0); err != nil || o.Offset != 34 {
		t.Fatalf("last stable offset after failover %d: %v", o.Offset, err)
	}
	mustRun("deletion successfully completed", "cluster-links", "--bootstrap-server", db, "--delete", "--link", "dr")
}

func newClient(t *testing.T, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tool.SeedList(bootstrap)...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceN produces n records to every partition of topic, numbered from
// first, in batches of 10, with a client of cl's seeds and opts.
func produceN(t *testing.T, cl *kgo.Client, topic string, first, n int, opts ...kgo.Opt) {
	t.Helper()
	ctx := context.Background()
	for i := first; i < first+n; i += 10 {
		var rs []*kgo.Record
		for j := i; j < i+10 && j < first+n; j++ {
			for p := range int32(2) {
				rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(strconv.Itoa(j % 7)), Value: []byte("v" + strconv.Itoa(j))})
			}
		}
		pcl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...),
			kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		err = pcl.ProduceSync(ctx, rs...).FirstErr()
		pcl.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func endsOf(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil || lo.Error() != nil {
		t.Fatalf("end offsets of %s: %v %v", topic, err, lo.Error())
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// sameLogs waits until every partition of mirror on dst holds the same
// batches, byte for byte at the same offsets, as topic on src, up to the
// high watermarks.
func sameLogs(t *testing.T, src, topic, dst, mirror string, partitions int32) {
	t.Helper()
	sameLogsWith(t, nil, src, topic, dst, mirror, partitions)
}

// sameLogsWith is sameLogs reaching the source with srcOpts (its TLS or
// SASL settings).
func sameLogsWith(t *testing.T, srcOpts []kgo.Opt, src, topic, dst, mirror string, partitions int32) {
	t.Helper()
	for p := range partitions {
		testwait.For(t, 60*time.Second, fmt.Sprintf("%s-%d mirrored as %s", topic, p, mirror), func() error {
			a, aHW := batchesOf(t, src, topic, p, srcOpts...)
			b, bHW := batchesOf(t, dst, mirror, p)
			if aHW != bHW || len(a) != len(b) || len(a) == 0 || !sameBatches(a, b) {
				return fmt.Errorf("source %d batches (HW %d), mirror %d batches (HW %d)", len(a), aHW, len(b), bHW)
			}
			return nil
		})
	}
}

// batchesOf reads the raw batches of a partition below its high
// watermark, and the high watermark.
func batchesOf(t *testing.T, bootstrap, topic string, p int32, opts ...kgo.Opt) ([][]byte, int64) {
	t.Helper()
	cl := newClient(t, bootstrap, opts...)
	defer cl.Close()
	ctx := context.Background()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[topic]
	pd, ok := td.Partitions[p]
	if td.Err != nil || !ok || pd.Leader < 0 {
		return nil, -1
	}
	var out [][]byte
	hw := int64(-1)
	for off := int64(0); ; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<24, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p, off, 1<<24, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(int(pd.Leader)).Request(ctx, req)
		if err != nil {
			return nil, -1
		}
		sp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != 0 {
			return nil, -1
		}
		hw = sp.HighWatermark
		buf := sp.RecordBatches
		if len(buf) == 0 {
			return out, hw
		}
		for len(buf) > 0 {
			b, rest, err := record.Next(buf)
			if err != nil {
				break
			}
			out = append(out, bytes.Clone(buf[:len(buf)-len(rest)]))
			off = b.LastOffset() + 1
			buf = rest
		}
		if off >= hw {
			return out, hw
		}
	}
}

// A mirror follows its source through leader changes on both sides: the
// source's partition leaders killed one after the other (clean elections,
// new leader epochs), and the destination's leader killed too; every batch
// stays identical at the same offset.
func TestClusterLinkFollowsLeaderChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts nodes of two clusters")
	}
	src := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{"min.insync.replicas": "2"}})
	dst := clustertest.New(t, clustertest.Options{Nodes: 3})
	sb, db := src.Node(0).Addr+","+src.Node(1).Addr+","+src.Node(2).Addr, dst.Node(0).Addr+","+dst.Node(1).Addr+","+dst.Node(2).Addr
	ctx := context.Background()
	scl := newClient(t, sb)
	if _, err := kadm.NewClient(scl).CreateTopic(ctx, 2, 3, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	produceN(t, scl, "plain", 0, 50)
	props := filepath.Join(t.TempDir(), "link.properties")
	os.WriteFile(props, []byte("bootstrap.servers="+sb+"\nlink.fetcher.max.bytes=2048\n"), 0o644)
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "plain", "--link", "dr", "--replication-factor", "2"},
	} {
		if r := weir.Run(t, args...); r.Code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.Out, r.Err)
		}
	}
	sameLogs(t, sb, "plain", db, "plain", 2)
	for round := range 2 {
		// The source's leader of partition 0 goes, then comes back. Each
		// kill waits for a whole ISR first: a leader killed while its
		// only follower is still catching up leaves the partition
		// offline, as it would in Kafka with unclean election off.
		fullISR(t, sb, "plain", 0)
		victim := leaderIndex(t, src, sb, "plain", 0)
		src.Kill(victim)
		produceN(t, scl, "plain", 50+100*round, 50)
		src.Restart(victim, true)
		// The destination's leader of partition 0 goes too.
		fullISR(t, db, "plain", 0)
		dv := leaderIndex(t, dst, db, "plain", 0)
		dst.Kill(dv)
		produceN(t, scl, "plain", 100+100*round, 50)
		sameLogs(t, sb, "plain", db, "plain", 2)
		dst.Restart(dv, true)
	}
	sameLogs(t, sb, "plain", db, "plain", 2)
}

// fullISR waits until every replica of topic's partition p is in its ISR.
func fullISR(t *testing.T, bootstrap, topic string, p int32) {
	t.Helper()
	cl := newClient(t, bootstrap)
	defer cl.Close()
	testwait.For(t, 60*time.Second, fmt.Sprintf("every replica of %s-%d in the ISR", topic, p), func() error {
		md, err := kadm.NewClient(cl).Metadata(context.Background(), topic)
		if err != nil {
			return err
		}
		pd, ok := md.Topics[topic].Partitions[p]
		if !ok || len(pd.ISR) != len(pd.Replicas) {
			return fmt.Errorf("replicas %v, ISR %v", pd.Replicas, pd.ISR)
		}
		return nil
	})
}

// leaderIndex is the index in c of the node leading topic's partition p.
func leaderIndex(t *testing.T, c *clustertest.Cluster, bootstrap, topic string, p int32) int {
	t.Helper()
	cl := newClient(t, bootstrap)
	defer cl.Close()
	leader := -1
	testwait.For(t, 30*time.Second, fmt.Sprintf("a live leader of %s-%d", topic, p), func() error {
		md, err := kadm.NewClient(cl).Metadata(context.Background(), topic)
		if err != nil {
			return err
		}
		if pd, ok := md.Topics[topic].Partitions[p]; ok && pd.Leader >= 0 {
			for i := range c.Size() {
				if c.Node(i).ID == pd.Leader && c.Node(i).Up() {
					leader = i
					return nil
				}
			}
		}
		return errors.New("no live leader")
	})
	return leader
}

// A source that is not weir: franz-go's kfake.
func TestClusterLinkFromKfake(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sb := src.ListenAddrs()[0]
	dst := clustertest.New(t, clustertest.Options{Nodes: 1})
	db := dst.Node(0).Addr
	produceN(t, newClient(t, sb), "plain", 0, 60)
	props := filepath.Join(t.TempDir(), "link.properties")
	os.WriteFile(props, []byte("bootstrap.servers="+sb+"\n"), 0o644)
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "k", "--config-file", props},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "plain", "--link", "k"},
	} {
		if r := weir.Run(t, args...); r.Code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.Out, r.Err)
		}
	}
	sameLogs(t, sb, "plain", db, "plain", 2)
}

// compacted makes a one-partition topic "compacted" on the source whose
// log the cleaner compacted (offset gaps), then turns compaction off
// (cleanup.policy=delete) so that the log stays as it is while mirrored.
func compacted(t *testing.T, adm *kadm.Client, cl *kgo.Client) {
	t.Helper()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.ms":                kadm.StringPtr("1"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, "compacted"); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		r := &kgo.Record{Topic: "compacted", Key: []byte("k" + strconv.Itoa(i%5)), Value: []byte("v" + strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	bootstrap := cl.OptValue(kgo.SeedBrokers).([]string)[0]
	testwait.For(t, 60*time.Second, "the source's cleaner to compact the topic", func() error {
		if b, _ := batchesOf(t, bootstrap, "compacted", 0); len(b) == 0 || len(b) >= n/2 {
			return fmt.Errorf("%d batches", len(b))
		}
		return nil
	})
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr("delete")},
		{Name: "retention.ms", Value: kadm.StringPtr("-1")}}, "compacted")
	for _, r := range res {
		if err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	// A cleaning pass under way when compaction was turned off may still
	// change the log: wait until two reads agree.
	// The reads are 200 ms apart: a stability window, not a poll.
	prev, _ := batchesOf(t, bootstrap, "compacted", 0)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		cur, _ := batchesOf(t, bootstrap, "compacted", 0)
		if len(cur) == len(prev) && sameBatches(cur, prev) {
			return
		}
		prev = cur
	}
	t.Fatal("the source's log kept changing after compaction was turned off")
}

func sameBatches(a, b [][]byte) bool {
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
