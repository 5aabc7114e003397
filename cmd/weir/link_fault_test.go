package main_test

// A cluster link under process faults: a source and a destination cluster
// of three weir processes each, a link mirroring a plain topic (an
// idempotent acks=all producer running throughout), a transactional topic
// (a transactional producer committing and aborting throughout) and a
// compacted topic (offset gaps), while nodes of both clusters are
// SIGKILLed and restarted on their data, one at a time, each after every
// partition of both clusters is fully in sync again. After each kill the
// test waits until every mirror partition of the plain topic has moved on
// (the link follows new leaders on both sides), then restarts the node.
// Finally every mirror partition must hold the same batches as its
// source, byte for byte at the same offsets, up to the same high
// watermark.
//
// WEIR_LINK_FAULT_SEED replays a run's fault schedule (the seed is
// logged). When the test fails, the servers' and clients' logs are kept in
// directories it names.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/record"
	"weir/internal/testwait"
)

// linkFaultKills is how many nodes the test kills, alternating between
// the source and the destination cluster.
const linkFaultKills = 14

// linkTopics are the mirrored topics: partitions and replication factor
// on the source (the compacted topic has one replica, so that the log the
// cleaner rewrote is the only copy and cannot differ between replicas;
// replicas compact independently, in Kafka too).
var linkTopics = []struct {
	name       string
	partitions int32
	rf         int16
}{{"plain", 3, 3}, {"txn", 2, 3}, {"compacted", 1, 1}}

// TestClusterLinkSurvivesProcessFaults: see the file comment.
func TestClusterLinkSurvivesProcessFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts nodes of two clusters")
	}
	seed := faultSeed(t, "WEIR_LINK_FAULT_SEED")
	t.Logf("fault schedule seed %d (WEIR_LINK_FAULT_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x11a4))
	began := time.Now()
	logf := func(format string, args ...any) {
		t.Logf("%6.1fs "+format, append([]any{time.Since(began).Seconds()}, args...)...)
	}

	var clientLog lockedBuffer
	srcConf := maps.Clone(faultConf)
	srcConf["log.cleaner.backoff.ms"] = "50"
	src, srcAddrs := startFaultCluster(t, srcConf, "link-fault-source", seed, &clientLog)
	dst, dstAddrs := startFaultCluster(t, faultConf, "link-fault-destination", seed, &clientLog)
	sb, db := strings.Join(srcAddrs, ","), strings.Join(dstAddrs, ",")
	topics := make([]string, len(linkTopics))
	for i, lt := range linkTopics {
		topics[i] = lt.name
	}

	admin := newLinkClient(t, srcAddrs)
	for _, lt := range linkTopics {
		conf := map[string]*string{"min.insync.replicas": kmsg.StringPtr(strconv.Itoa(min(2, int(lt.rf))))}
		if lt.name == "compacted" {
			conf["cleanup.policy"] = kmsg.StringPtr("compact")
			conf["segment.ms"] = kmsg.StringPtr("1")
			conf["min.cleanable.dirty.ratio"] = kmsg.StringPtr("0.01")
		}
		testwait.For(t, 30*time.Second, "creating "+lt.name, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := kadm.NewClient(admin).CreateTopic(ctx, lt.partitions, lt.rf, conf, lt.name)
			if err == nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
				err = resp.Err
			}
			return err
		})
	}
	testwait.For(t, 60*time.Second, "the source's topics in sync", func() error { return inSync(src, topics...) })
	compactSource(t, admin, srcAddrs)
	logf("source up, compacted topic cleaned")

	// The link and its mirrors, three replicas each.
	props := filepath.Join(t.TempDir(), "link.properties")
	if err := os.WriteFile(props, []byte("bootstrap.servers="+sb+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, "the destination's brokers", func() error { return inSync(dst) })
	// A call that timed out may still have done its work: a retry that
	// finds it done is done.
	tool := func(args ...string) {
		t.Helper()
		testwait.For(t, 30*time.Second, strings.Join(args[:3], " "), func() error {
			out, stderr, err := runWeir(t, args...)
			if err != nil && !strings.Contains(stderr, "already exists") {
				return fmt.Errorf("%v: %s%s", err, out, stderr)
			}
			return nil
		})
	}
	tool("cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props)
	for _, name := range topics {
		tool("mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", name, "--link", "dr", "--replication-factor", "3")
	}
	testwait.For(t, 60*time.Second, "the mirrors in sync", func() error { return inSync(dst, topics...) })
	logf("link and mirrors created")

	// The producers run until stop is closed.
	stop := make(chan struct{})
	var plainAcked, plainFailed atomic.Int64
	plainDone := make(chan struct{})
	producer := newLinkClient(t, srcAddrs, kgo.DefaultProduceTopic("plain"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.MaxBufferedRecords(2000), kgo.MetadataMinAge(200*time.Millisecond),
		kgo.WithLogger(kgo.BasicLogger(&clientLog, kgo.LogLevelInfo, func() string { return "producer " })))
	go func() {
		defer close(plainDone)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for p := range int32(3) {
				r := &kgo.Record{Partition: p, Key: []byte(strconv.Itoa(seq % 100)), Value: fmt.Appendf(nil, "%d-%d", p, seq)}
				producer.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
					if err != nil {
						plainFailed.Add(1)
					} else {
						plainAcked.Add(1)
					}
				})
			}
		}
	}()
	var committed, aborted, txnErrors atomic.Int64
	txnDone := make(chan struct{})
	go func() {
		defer close(txnDone)
		transact(srcAddrs, &clientLog, stop, &committed, &aborted, &txnErrors)
	}()
	stopProducers := func() {
		select {
		case <-stop:
			return
		default:
		}
		close(stop)
		<-plainDone
		<-txnDone
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := producer.Flush(ctx); err != nil {
			t.Errorf("the producer did not finish within 60 s: %v", err)
		}
	}
	defer stopProducers()

	dadm := kadm.NewClient(newLinkClient(t, dstAddrs))
	for kill := range linkFaultKills {
		cluster, side := src, "source"
		if kill%2 == 1 {
			cluster, side = dst, "destination"
		}
		testwait.For(t, 60*time.Second, "both clusters in sync", func() error {
			if err := inSync(src, topics...); err != nil {
				return err
			}
			return inSync(dst, topics...)
		})
		var before map[int32]int64
		testwait.Until(t, 30*time.Second, "the plain mirror's end offsets", func() bool {
			before = mirrorEnds(dadm, "plain")
			return len(before) == 3
		})
		n := cluster[rng.IntN(len(cluster))]
		logf("kill %d: SIGKILL %s node %d (mirror ends %v, %d records acknowledged)", kill+1, side, n.id, before, plainAcked.Load())
		n.p.cmd.Process.Kill()
		n.p.cmd.Wait()
		testwait.For(t, 60*time.Second, "every plain mirror partition to move on", func() error {
			now := mirrorEnds(dadm, "plain")
			for p, end := range before {
				if now[p] <= end {
					return fmt.Errorf("mirror ends %v, were %v", now, before)
				}
			}
			return nil
		})
		logf("the mirrors moved on; restarting %s node %d", side, n.id)
		n.start(t)
	}
	testwait.For(t, 60*time.Second, "both clusters in sync", func() error {
		if err := inSync(src, topics...); err != nil {
			return err
		}
		return inSync(dst, topics...)
	})
	stopProducers()
	logf("producers stopped: %d records acknowledged, %d failed; %d transactions committed, %d aborted, %d failed",
		plainAcked.Load(), plainFailed.Load(), committed.Load(), aborted.Load(), txnErrors.Load())
	if plainAcked.Load() == 0 || committed.Load() == 0 || aborted.Load() == 0 {
		t.Fatal("the producers did not get through")
	}

	scl, dcl := newLinkClient(t, srcAddrs), newLinkClient(t, dstAddrs)
	for _, lt := range linkTopics {
		for p := range lt.partitions {
			var batches int
			testwait.For(t, 90*time.Second, fmt.Sprintf("%s-%d mirrored", lt.name, p), func() error {
				a, aHW, err := leaderBatches(scl, lt.name, p)
				if err != nil {
					return fmt.Errorf("source: %w", err)
				}
				b, bHW, err := leaderBatches(dcl, lt.name, p)
				if err != nil {
					return fmt.Errorf("mirror: %w", err)
				}
				if aHW != bHW || len(a) != len(b) {
					return fmt.Errorf("source %d batches (HW %d), mirror %d batches (HW %d)", len(a), aHW, len(b), bHW)
				}
				for i := range a {
					if !bytes.Equal(a[i], b[i]) {
						return fmt.Errorf("batch %d of %d differs", i, len(a))
					}
				}
				batches = len(a)
				return nil
			})
			logf("%s-%d: %d batches identical", lt.name, p, batches)
		}
	}
	for _, n := range append(slices.Clone(src), dst...) {
		if slices.ContainsFunc(n.procs, func(p *proc) bool { return strings.Contains(p.stderr.String(), "panic:") }) {
			t.Errorf("node %d panicked", n.id)
		}
	}
}

func newLinkClient(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// transact runs transactions of ten records over the txn topic's two
// partitions until stop is closed, committing two of three and aborting
// the third. A transaction that fails is aborted; when the abort fails
// too, the client is replaced (its successor's InitProducerID fences it
// and ends what it left open).
func transact(seeds []string, clientLog *lockedBuffer, stop <-chan struct{}, committed, aborted, failed *atomic.Int64) {
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("link-fault"),
			kgo.DefaultProduceTopic("txn"), kgo.TransactionTimeout(10*time.Second),
			kgo.RecordDeliveryTimeout(20*time.Second), kgo.MetadataMinAge(200*time.Millisecond),
			kgo.WithLogger(kgo.BasicLogger(clientLog, kgo.LogLevelInfo, func() string { return "transactions " })))
		if err != nil {
			panic(err)
		}
		return cl
	}
	cl := newClient()
	defer func() { cl.Close() }()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		commit := n%3 != 2
		err := cl.BeginTransaction()
		for i := 0; err == nil && i < 10; i++ {
			err = cl.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "t%d-%d", n, i)}).FirstErr()
		}
		if err == nil {
			err = cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		}
		switch {
		case err == nil && commit:
			committed.Add(1)
		case err == nil:
			aborted.Add(1)
		default:
			failed.Add(1)
			if cl.EndTransaction(ctx, kgo.TryAbort) != nil {
				cl.Close()
				cl = newClient()
			}
		}
		cancel()
	}
}

// inSync checks that every node sees every node as a live broker, and
// every partition of topics led, with all its replicas in the ISR.
func inSync(nodes []*faultNode, topics ...string) error {
	for _, n := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		for _, topic := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := n.cl.SeedBrokers()[0].Request(ctx, req)
		cancel()
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
		r := resp.(*kmsg.MetadataResponse)
		if len(r.Brokers) != len(nodes) {
			return fmt.Errorf("node %d sees %d brokers", n.id, len(r.Brokers))
		}
		for _, rt := range r.Topics {
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
				return fmt.Errorf("node %d, %s: %w", n.id, *rt.Topic, err)
			}
			for _, p := range rt.Partitions {
				if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
					return fmt.Errorf("node %d: %s-%d has leader %d, replicas %v, ISR %v", n.id, *rt.Topic, p.Partition, p.Leader, p.Replicas, p.ISR)
				}
			}
		}
	}
	return nil
}

// mirrorEnds is the end offset of every partition of topic, nil when one
// is not known.
func mirrorEnds(adm *kadm.Client, topic string) map[int32]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || lo.Error() != nil {
		return nil
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// compactSource makes the source's compacted topic hold a log its cleaner
// rewrote (offset gaps), then turns compaction off so that it stays as it
// is while mirrored.
func compactSource(t *testing.T, admin *kgo.Client, seeds []string) {
	t.Helper()
	ctx := context.Background()
	cl := newLinkClient(t, seeds, kgo.DefaultProduceTopic("compacted"))
	const n = 200
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k" + strconv.Itoa(i%5)), Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 60*time.Second, "the source's cleaner to compact the topic", func() error {
		if b, _, err := leaderBatches(cl, "compacted", 0); err != nil || len(b) == 0 || len(b) >= n/2 {
			return fmt.Errorf("%d batches: %v", len(b), err)
		}
		return nil
	})
	res, err := kadm.NewClient(admin).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr("delete")},
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
	// change the log: wait until it has stayed the same for half a second.
	prev, _, _ := leaderBatches(cl, "compacted", 0)
	since := time.Now()
	testwait.For(t, 30*time.Second, "the compacted log to stay the same", func() error {
		cur, _, err := leaderBatches(cl, "compacted", 0)
		if err != nil || len(cur) != len(prev) || !slices.EqualFunc(cur, prev, bytes.Equal) {
			prev, since = cur, time.Now()
			return fmt.Errorf("changed: %v", err)
		}
		if time.Since(since) < 500*time.Millisecond {
			return errors.New("not for long enough")
		}
		return nil
	})
}

// leaderBatches reads the raw batches of a partition from its leader
// below its high watermark, and the high watermark.
func leaderBatches(cl *kgo.Client, topic string, p int32) ([][]byte, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return nil, -1, err
	}
	td := md.Topics[topic]
	pd, ok := td.Partitions[p]
	if td.Err != nil || !ok || pd.Leader < 0 {
		return nil, -1, fmt.Errorf("no leader of %s-%d: %v", topic, p, td.Err)
	}
	var out [][]byte
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
			return nil, -1, err
		}
		sp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
			return nil, -1, err
		}
		buf := sp.RecordBatches
		if len(buf) == 0 || off >= sp.HighWatermark {
			return out, sp.HighWatermark, nil
		}
		for len(buf) > 0 {
			b, rest, err := record.Next(buf)
			if err != nil {
				break // a batch cut short at the fetch's size limit
			}
			if b.BaseOffset() >= sp.HighWatermark {
				return out, sp.HighWatermark, nil
			}
			out = append(out, bytes.Clone(buf[:len(buf)-len(rest)]))
			off = b.LastOffset() + 1
			buf = rest
		}
		if off >= sp.HighWatermark {
			return out, sp.HighWatermark, nil
		}
	}
}
