package main_test

// Replication under process faults: three combined weir processes, a
// topic with three replicas and min.insync.replicas=2, an idempotent
// acks=all producer and a consumer running throughout, while one broker
// at a time is SIGKILLed (and restarted on its data) or SIGSTOPped (and
// continued). Afterwards the topic is read back and checked against what
// the producer was told: every acknowledged record exactly once and in
// order, nothing that was never sent, nothing twice.
//
// WEIR_FAULT_SEED replays a run's fault schedule (the seed is logged).
// When the test fails, the servers' and clients' logs are kept in a
// directory it names.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testwait"
)

const (
	faultTopic      = "faults"
	faultPartitions = 3
	faultDuration   = 60 * time.Second
)

// faultConf is the nodes' server.properties: timeouts short enough that a
// fault is noticed and healed within seconds (as clustertest.Defaults),
// and every internal topic replicated three times.
var faultConf = map[string]string{
	"broker.heartbeat.interval.ms":             "200",
	"broker.session.timeout.ms":                "1500",
	"controller.quorum.election.timeout.ms":    "500",
	"initial.broker.registration.timeout.ms":   "30000",
	"replica.lag.time.max.ms":                  "3000",
	"offsets.topic.replication.factor":         "3",
	"transaction.state.log.replication.factor": "3",
	"transaction.state.log.min.isr":            "2",
	"group.initial.rebalance.delay.ms":         "0",
}

// produced is the producer's ledger: per partition, the fate of every
// sequence number sent.
type produced struct {
	mu     sync.Mutex
	status [faultPartitions][]sendStatus
}

type sendStatus uint8

const (
	sendPending sendStatus = iota
	sendAcked
	sendFailed
)

func (l *produced) send(p int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status[p] = append(l.status[p], sendPending)
	return len(l.status[p]) - 1
}

func (l *produced) done(p, seq int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.status[p][seq] = sendFailed
	} else {
		l.status[p][seq] = sendAcked
	}
}

// faultNode is a cluster node with every process it ran, and a client
// kept for asking it directly.
type faultNode struct {
	*clusterNode
	procs []*proc
	cl    *kgo.Client
}

func (n *faultNode) start(t *testing.T) {
	t.Helper()
	n.clusterNode.start(t)
	n.procs = append(n.procs, n.p)
}

// isr asks this node for the topic's partitions: leader and ISR of each.
func (n *faultNode) isr(topic string) (brokers int, leaders []int32, isrs [][]int32, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := n.cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return 0, nil, nil, err
	}
	r := resp.(*kmsg.MetadataResponse)
	if len(r.Topics) != 1 {
		return 0, nil, nil, errors.New("malformed Metadata answer")
	}
	if err := kerr.ErrorForCode(r.Topics[0].ErrorCode); err != nil {
		return 0, nil, nil, err
	}
	leaders, isrs = make([]int32, len(r.Topics[0].Partitions)), make([][]int32, len(r.Topics[0].Partitions))
	for _, p := range r.Topics[0].Partitions {
		if int(p.Partition) >= len(leaders) {
			return 0, nil, nil, fmt.Errorf("partition %d of %d", p.Partition, len(leaders))
		}
		leaders[p.Partition], isrs[p.Partition] = p.Leader, p.ISR
	}
	return len(r.Brokers), leaders, isrs, nil
}

// healthy checks that every node sees all brokers, and every partition of
// the topics led and fully in sync.
func healthy(nodes []*faultNode, topics ...string) error {
	for _, n := range nodes {
		for _, topic := range topics {
			brokers, leaders, isrs, err := n.isr(topic)
			if err != nil {
				return fmt.Errorf("node %d, %s: %w", n.id, topic, err)
			}
			if brokers != len(nodes) {
				return fmt.Errorf("node %d sees %d brokers", n.id, brokers)
			}
			for p := range leaders {
				if leaders[p] < 0 || len(isrs[p]) != len(nodes) {
					return fmt.Errorf("node %d: %s-%d has leader %d, ISR %v", n.id, topic, p, leaders[p], isrs[p])
				}
			}
		}
	}
	return nil
}

// startFaultCluster formats and starts three nodes with conf, each with a
// client of its own for health checks, and keeps the nodes' output and
// clientLog when the test fails (see keepLogsOnFailure). It returns the
// nodes and their addresses.
func startFaultCluster(t *testing.T, conf map[string]string, name string, seed uint64, clientLog *lockedBuffer) ([]*faultNode, []string) {
	var nodes []*faultNode
	for _, cn := range formatClusterConf(t, 3, conf) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(cn.addr), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		nodes = append(nodes, &faultNode{clusterNode: cn, cl: cl})
	}
	keepLogsOnFailure(t, name, seed, nodes, clientLog)
	var addrs []string
	for _, n := range nodes {
		n.start(t)
		addrs = append(addrs, n.addr)
	}
	return nodes, addrs
}

// keepLogsOnFailure saves every node's output and the clients' logs when
// the test fails, in a directory named for the test (name) and its seed.
func keepLogsOnFailure(t *testing.T, name string, seed uint64, nodes []*faultNode, clientLog *lockedBuffer) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir, err := os.MkdirTemp("", fmt.Sprintf("weir-%s-%d-", name, seed))
		if err != nil {
			t.Logf("keeping logs: %v", err)
			return
		}
		for _, n := range nodes {
			for i, p := range n.procs {
				out := "---- stdout\n" + p.stdout.String() + "---- stderr\n" + p.stderr.String()
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("node%d-run%d.log", n.id, i+1)), []byte(out), 0o644)
			}
		}
		os.WriteFile(filepath.Join(dir, "clients.log"), []byte(clientLog.String()), 0o644)
		t.Logf("server and client logs kept in %s", dir)
	})
}

// faultSeed is the seed of a fault schedule: the environment variable
// env's, which replays a logged run, else a new one.
func faultSeed(t *testing.T, env string) uint64 {
	if s := os.Getenv(env); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", env, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// TestReplicationSurvivesProcessFaults: see the file comment.
func TestReplicationSurvivesProcessFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of faults")
	}
	seed := faultSeed(t, "WEIR_FAULT_SEED")
	t.Logf("fault schedule seed %d (WEIR_FAULT_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	began := time.Now()

	var clientLog lockedBuffer
	nodes, addrs := startFaultCluster(t, faultConf, "replication-fault", seed, &clientLog)

	admin, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := testwait.Poll(30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := kadm.NewClient(admin).CreateTopic(ctx, faultPartitions, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, faultTopic)
		if err == nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			err = resp.Err
		}
		return err
	}); err != nil {
		t.Fatalf("creating the topic: %v", err)
	}
	if err := testwait.Poll(30*time.Second, func() error { return healthy(nodes, faultTopic) }); err != nil {
		t.Fatalf("the cluster did not come up: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	rcs, err := kadm.NewClient(admin).DescribeTopicConfigs(ctx, faultTopic)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := rcs.On(faultTopic, nil); err != nil || !slices.ContainsFunc(rc.Configs, func(c kadm.Config) bool {
		return c.Key == "min.insync.replicas" && c.MaybeValue() == "2"
	}) {
		t.Fatalf("the topic's min.insync.replicas is not 2: %v %+v", err, rc.Configs)
	}
	t.Logf("cluster up and topic created after %v", time.Since(began).Round(time.Millisecond))

	// The consumer reads throughout; what it sees must never be taken
	// back: at each offset, the final read finds the same record.
	seen := [faultPartitions]map[int64]string{}
	for p := range seen {
		seen[p] = map[int64]string{}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(faultTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(200*time.Millisecond),
		kgo.WithLogger(kgo.BasicLogger(&clientLog, kgo.LogLevelInfo, func() string { return "consumer " })))
	if err != nil {
		t.Fatal(err)
	}
	consumeCtx, stopConsuming := context.WithCancel(context.Background())
	consumed := make(chan int, 1)
	go func() {
		n := 0
		for consumeCtx.Err() == nil {
			fs := consumer.PollFetches(consumeCtx)
			fs.EachRecord(func(r *kgo.Record) {
				n++
				seen[r.Partition][r.Offset] = string(r.Value)
			})
		}
		consumed <- n
	}()
	defer func() {
		stopConsuming()
		consumer.Close()
	}()

	// The producer sends p-seq to partition p, seq counting up: a record
	// to every partition each 2 ms (about a thousand records/s), waiting
	// while 2000 are unanswered.
	var ledger produced
	producer, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(faultTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(30*time.Second), kgo.MaxBufferedRecords(2000),
		kgo.MetadataMinAge(200*time.Millisecond), kgo.MetadataMaxAge(5*time.Second),
		kgo.WithLogger(kgo.BasicLogger(&clientLog, kgo.LogLevelInfo, func() string { return "producer " })))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	stopProducing := make(chan struct{})
	producing := make(chan struct{})
	go func() {
		defer close(producing)
		for {
			select {
			case <-stopProducing:
				return
			case <-time.After(2 * time.Millisecond):
			}
			for p := range faultPartitions {
				seq := ledger.send(p)
				r := &kgo.Record{Partition: int32(p), Key: []byte(strconv.Itoa(p)), Value: fmt.Appendf(nil, "%d-%d", p, seq)}
				producer.Produce(context.Background(), r, func(_ *kgo.Record, err error) { ledger.done(p, seq, err) })
			}
		}
	}()

	// Faults: one broker at a time, and the cluster healed (every replica
	// back in the ISR) before the next.
	faultsEnd := time.Now().Add(faultDuration)
	faults := 0
	for time.Now().Before(faultsEnd) {
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		n := nodes[rng.IntN(len(nodes))]
		down := time.Duration(1000+rng.IntN(3000)) * time.Millisecond
		faults++
		if rng.IntN(2) == 0 {
			t.Logf("%6.1fs fault %d: SIGKILL node %d, restart after %v", time.Since(began).Seconds(), faults, n.id, down)
			n.p.cmd.Process.Kill()
			n.p.cmd.Wait()
			time.Sleep(down)
			n.start(t)
		} else {
			t.Logf("%6.1fs fault %d: SIGSTOP node %d for %v", time.Since(began).Seconds(), faults, n.id, down)
			if err := n.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(down)
			if err := n.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
		healStart := time.Now()
		if err := testwait.Poll(45*time.Second, func() error { return healthy(nodes, faultTopic) }); err != nil {
			t.Fatalf("the cluster did not heal within 45 s of fault %d: %v", faults, err)
		}
		t.Logf("%6.1fs healed in %v", time.Since(began).Seconds(), time.Since(healStart).Round(time.Millisecond))
	}

	// Stop producing and wait for every record's outcome.
	close(stopProducing)
	<-producing
	flushCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	err = producer.Flush(flushCtx)
	cancel()
	if err != nil {
		t.Fatalf("the producer did not finish within 60 s: %v", err)
	}
	var acked, failed, sent int
	ledger.mu.Lock()
	status := ledger.status
	ledger.mu.Unlock()
	for p := range status {
		sent += len(status[p])
		for _, s := range status[p] {
			switch s {
			case sendAcked:
				acked++
			case sendFailed:
				failed++
			}
		}
	}
	stopConsuming()
	concurrentReads := <-consumed
	t.Logf("%6.1fs %d faults; sent %d records: %d acknowledged, %d failed; the concurrent consumer read %d",
		time.Since(began).Seconds(), faults, sent, acked, failed, concurrentReads)
	if acked == 0 {
		t.Fatal("no record was acknowledged")
	}

	// Read the whole topic back with a fresh consumer.
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, faultTopic)
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of partition %d: %v", o.Partition, o.Err)
		}
		offsets[o.Partition], want[o.Partition] = kgo.NewOffset().AtStart(), o.Offset
	})
	reader, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{faultTopic: offsets}),
		kgo.WithLogger(kgo.BasicLogger(&clientLog, kgo.LogLevelInfo, func() string { return "reader " })))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var back [faultPartitions][]*kgo.Record
	next := map[int32]int64{}
	for p := range want {
		next[p] = 0
	}
	for {
		behind := false
		for p, end := range want {
			behind = behind || next[p] < end
		}
		if !behind {
			break
		}
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the topic back: %v; read up to %v of %v", ctx.Err(), next, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("reading partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			back[r.Partition] = append(back[r.Partition], r)
			next[r.Partition] = r.Offset + 1
		})
	}

	// Check the log against the ledger and the concurrent consumer.
	var read int
	for p := range back {
		last := -1 // last acknowledged sequence read
		got := map[int]int64{}
		byOffset := map[int64]string{}
		for _, r := range back[p] {
			read++
			byOffset[r.Offset] = string(r.Value)
			var rp, seq int
			if _, err := fmt.Sscanf(string(r.Value), "%d-%d", &rp, &seq); err != nil || rp != p || seq < 0 || seq >= len(status[p]) {
				t.Errorf("partition %d offset %d: %q was never sent to it", p, r.Offset, r.Value)
				continue
			}
			if prev, dup := got[seq]; dup {
				t.Errorf("partition %d: %q at offsets %d and %d", p, r.Value, prev, r.Offset)
				continue
			}
			got[seq] = r.Offset
			switch status[p][seq] {
			case sendAcked:
				if seq < last {
					t.Errorf("partition %d offset %d: acknowledged %q after acknowledged %d-%d", p, r.Offset, r.Value, p, last)
				}
				last = seq
			case sendPending:
				t.Errorf("partition %d offset %d: %q has no outcome after the flush", p, r.Offset, r.Value)
			}
		}
		missing := 0
		for seq, s := range status[p] {
			if _, ok := got[seq]; s == sendAcked && !ok {
				if missing++; missing <= 10 {
					t.Errorf("partition %d: acknowledged %d-%d is not in the log", p, p, seq)
				}
			}
		}
		if missing > 10 {
			t.Errorf("partition %d: %d acknowledged records missing in all", p, missing)
		}
		lost := 0
		for off, v := range seen[p] {
			if byOffset[off] != v {
				if lost++; lost <= 10 {
					t.Errorf("partition %d offset %d: the concurrent consumer read %q, the log now has %q", p, off, v, byOffset[off])
				}
			}
		}
		if lost > 10 {
			t.Errorf("partition %d: %d records read by the concurrent consumer are gone", p, lost)
		}
	}
	t.Logf("%6.1fs read back %d records (%d faults; acked %d, failed %d, sent %d)",
		time.Since(began).Seconds(), read, faults, acked, failed, sent)
	for _, n := range nodes {
		if slices.ContainsFunc(n.procs, func(p *proc) bool { return strings.Contains(p.stderr.String(), "panic:") }) {
			t.Errorf("node %d panicked", n.id)
		}
	}
}
