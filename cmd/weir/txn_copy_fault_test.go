package main_test

// The transactional copy test against weir processes, in the spirit of
// Kafka's transactions_test.py (the in-process version is
// internal/clustertest/txn_copy_test.go): two franz-go
// GroupTransactSession copiers in one group move 100,000 seeded records
// from copy-in to copy-out, partition p to partition p, in transactions
// of about 750 records, while one broker at a time is bounced: stopped
// with SIGTERM (a clean shutdown) or SIGKILLed, and restarted on its
// data, the cluster healed before the next bounce (SIGTERM and SIGKILL
// alternate, every 1-3 s). The copiers pause after each transaction and
// are held back until enough bounces have begun, so that the copy spans
// at least six bounces; after eight it finishes undisturbed. A
// read_committed reader follows copy-out throughout, and a fresh one
// reads it again at the end: each must see every input record exactly
// once, in input order per partition, and no transaction may be left
// open.
//
// WEIR_TXN_COPY_SEED replays a run's bounce schedule (the seed is logged).
// When the test fails, the servers' and clients' logs are kept in a
// directory it names.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	copyIn         = "copy-in"
	copyOut        = "copy-out"
	copyPartitions = 2
	copyRecords    = 100_000
	copyPerTxn     = 750
	// copyMinBounces is how many bounces the copy must span: the copiers
	// are held back until enough bounces have begun (see copyGate).
	// After copyMaxBounces the copy finishes undisturbed, so that a slow
	// machine, where every bounce takes longer to heal, still finishes
	// in time.
	copyMinBounces = 6
	copyMaxBounces = 8
	// copyPace is the copiers' pause after each transaction, so that
	// transactions are in flight through every bounce.
	copyPace     = 400 * time.Millisecond
	copyDeadline = 120 * time.Second
)

// txnCopyConf is faultConf (short timeouts, internal topics replicated
// three times) with fewer __transaction_state partitions, for a faster
// start.
func txnCopyConf() map[string]string {
	conf := maps.Clone(faultConf)
	conf["transaction.state.log.num.partitions"] = "5"
	return conf
}

// copyGate holds the copiers back so that the copy spans at least
// copyMinBounces bounces however fast the machine: before bounce b has
// begun, the output may hold at most b/(copyMinBounces+1) of the records
// (a copier finishes the transaction it is in, so this is a soft limit).
type copyGate struct {
	bounces atomic.Int64
	read    atomic.Int64 // records the concurrent reader has seen
}

func (g *copyGate) wait(ctx context.Context, done <-chan struct{}) {
	for {
		allowed := int64(copyRecords) * (g.bounces.Load() + 1) / (copyMinBounces + 1)
		if g.read.Load() < allowed {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// copyCheck follows a partitioned stream of "p:i" values: per partition,
// i must come in order 0, 1, 2, ... without gaps or repeats.
type copyCheck struct {
	next [copyPartitions]int
	n    int
}

func (c *copyCheck) add(r *kgo.Record) error {
	var p, i int
	if _, err := fmt.Sscanf(string(r.Value), "%d:%d", &p, &i); err != nil || p != int(r.Partition) || p < 0 || p >= copyPartitions {
		return fmt.Errorf("record %q at offset %d of partition %d was never in the input partition", r.Value, r.Offset, r.Partition)
	}
	if i != c.next[p] {
		return fmt.Errorf("partition %d offset %d: input record %d, want record %d (lost or duplicated input)", p, r.Offset, i, c.next[p])
	}
	c.next[p]++
	c.n++
	return nil
}

// TestTransactionalCopySurvivesBounces: see the file comment.
func TestTransactionalCopySurvivesBounces(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of bounces")
	}
	seed := faultSeed(t, "WEIR_TXN_COPY_SEED")
	t.Logf("bounce schedule seed %d (WEIR_TXN_COPY_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x7c0b1))
	began := time.Now()
	at := func() float64 { return time.Since(began).Seconds() }

	var clientLog lockedBuffer
	nodes, seeds := startFaultCluster(t, txnCopyConf(), "txn-copy-fault", seed, &clientLog)
	logger := func(who string) kgo.Opt {
		return kgo.WithLogger(kgo.BasicLogger(&clientLog, kgo.LogLevelInfo, func() string {
			return fmt.Sprintf("%7.2fs %s ", at(), who)
		}))
	}

	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for _, topic := range []string{copyIn, copyOut} {
		if err := testwait.Poll(30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := adm.CreateTopic(ctx, copyPartitions, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic)
			if err == nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
				err = resp.Err
			}
			return err
		}); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	if err := testwait.Poll(30*time.Second, func() error { return healthy(nodes, copyIn, copyOut) }); err != nil {
		t.Fatalf("the cluster did not come up: %v", err)
	}
	t.Logf("%6.1fs cluster up, topics created", at())

	// The input: record i of partition p is "p:i".
	seeder, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(copyIn),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), logger("seeder"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	var seedErr error
	var seedMu sync.Mutex
	for i := range copyRecords {
		p := i % copyPartitions
		r := &kgo.Record{Partition: int32(p), Value: fmt.Appendf(nil, "%d:%d", p, i/copyPartitions)}
		seeder.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				seedMu.Lock()
				seedErr = cmp.Or(seedErr, err)
				seedMu.Unlock()
			}
		})
	}
	err = seeder.Flush(ctx)
	cancel()
	seeder.Close()
	if err = cmp.Or(err, seedErr); err != nil {
		t.Fatalf("seeding %s: %v", copyIn, err)
	}
	t.Logf("%6.1fs seeded %d records", at(), copyRecords)

	// The copiers, until copied is closed.
	var gate copyGate
	copyCtx, stopCopy := context.WithTimeout(context.Background(), copyDeadline)
	defer stopCopy()
	copied := make(chan struct{})
	var copiers sync.WaitGroup
	copyErrs := make(chan error, 2)
	var txns [2]struct{ committed, aborted atomic.Int64 }
	for i := range 2 {
		copiers.Add(1)
		go func() {
			defer copiers.Done()
			opts := []kgo.Opt{kgo.SeedBrokers(seeds...), logger(fmt.Sprintf("copier-%d", i))}
			if err := txnCopier(copyCtx, opts, fmt.Sprintf("copier-%d", i), &gate, copied, &txns[i].committed, &txns[i].aborted); err != nil {
				copyErrs <- fmt.Errorf("copier %d: %w", i, err)
			}
		}()
	}

	// The concurrent reader, until stopReading is closed.
	var check copyCheck
	readCtx, stopReading := context.WithCancel(context.Background())
	defer stopReading()
	readErr := make(chan error, 1)
	readAll := make(chan struct{})
	reader, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(copyOut),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MetadataMinAge(200*time.Millisecond), logger("reader"))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	go func() {
		defer close(readErr)
		for readCtx.Err() == nil {
			fs := reader.PollFetches(readCtx)
			var err error
			fs.EachRecord(func(r *kgo.Record) {
				if err == nil {
					err = check.add(r)
				}
			})
			if err != nil {
				readErr <- err
				return
			}
			gate.read.Store(int64(check.n))
			if check.n == copyRecords {
				select {
				case <-readAll:
				default:
					close(readAll)
				}
			}
		}
	}()

	// Before the first bounce, the copiers' group and transaction
	// coordinators exist and every internal partition is in sync.
	internal := []string{copyIn, copyOut, "__consumer_offsets", "__transaction_state"}
	if err := testwait.Poll(30*time.Second, func() error { return healthy(nodes, internal...) }); err != nil {
		t.Fatalf("the copiers' coordinators did not come up: %v", err)
	}
	failed := func() {
		select {
		case err := <-copyErrs:
			t.Fatalf("%6.1fs %v", at(), err)
		case err, ok := <-readErr:
			if ok {
				t.Fatalf("%6.1fs reading %s: %v", at(), copyOut, err)
			}
		default:
		}
		if copyCtx.Err() != nil {
			t.Fatalf("%6.1fs the output holds %d of %d records after %v", at(), gate.read.Load(), copyRecords, copyDeadline)
		}
	}

	// Bounce one broker at a time until the output is complete (or
	// copyMaxBounces), alternating a clean stop and a kill, each followed
	// by a restart on the node's data and the cluster healed.
	bounces := 0
	for {
		select {
		case <-readAll:
		case <-time.After(time.Duration(1000+rng.IntN(2000)) * time.Millisecond):
		}
		failed()
		if gate.read.Load() == copyRecords {
			break
		}
		if bounces == copyMaxBounces {
			continue
		}
		n := nodes[rng.IntN(len(nodes))]
		bounces++
		gate.bounces.Store(int64(bounces))
		if bounces%2 == 1 {
			t.Logf("%6.1fs bounce %d: SIGTERM node %d (output %d)", at(), bounces, n.id, gate.read.Load())
			if err := n.p.signal(t, syscall.SIGTERM); err != nil {
				t.Fatalf("node %d exited with %v after SIGTERM", n.id, err)
			}
		} else {
			t.Logf("%6.1fs bounce %d: SIGKILL node %d (output %d)", at(), bounces, n.id, gate.read.Load())
			n.p.signal(t, syscall.SIGKILL)
		}
		n.start(t)
		healStart := time.Now()
		if err := testwait.Poll(45*time.Second, func() error { return healthy(nodes, internal...) }); err != nil {
			t.Fatalf("%6.1fs the cluster did not heal within 45 s of bounce %d: %v", at(), bounces, err)
		}
		t.Logf("%6.1fs node %d restarted, healed in %v", at(), n.id, time.Since(healStart).Round(time.Millisecond))
	}
	close(copied)
	copiers.Wait()
	failed()
	t.Logf("%6.1fs copied %d records over %d bounces; transactions committed %d and %d, aborted %d and %d", at(), copyRecords, bounces,
		txns[0].committed.Load(), txns[1].committed.Load(), txns[0].aborted.Load(), txns[1].aborted.Load())
	if bounces < copyMinBounces {
		t.Errorf("the copy spanned %d bounces, want at least %d", bounces, copyMinBounces)
	}

	// No transaction stays open: copy-out's last stable offsets reach
	// its high watermarks.
	if err := testwait.Poll(30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hws, err := adm.ListEndOffsets(ctx, copyOut)
		if err != nil {
			return err
		}
		lsos, err := adm.ListCommittedOffsets(ctx, copyOut)
		if err != nil {
			return err
		}
		for p := range int32(copyPartitions) {
			hw, _ := hws.Lookup(copyOut, p)
			lso, _ := lsos.Lookup(copyOut, p)
			if err := cmp.Or(hw.Err, lso.Err); err != nil {
				return err
			}
			if hw.Offset != lso.Offset {
				return fmt.Errorf("partition %d: high watermark %d, last stable offset %d", p, hw.Offset, lso.Offset)
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("a transaction stays open on %s: %v", copyOut, err)
	}

	// Nothing more reaches the concurrent reader: no record was copied
	// twice.
	time.Sleep(2 * time.Second)
	stopReading()
	if err := <-readErr; err != nil {
		t.Fatalf("reading %s: %v", copyOut, err)
	}

	// A fresh read_committed reader finds the same.
	var again copyCheck
	fresh, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(copyOut),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), logger("fresh reader"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	quiet, giveUp := time.Time{}, time.Now().Add(60*time.Second)
	for quiet.IsZero() || time.Now().Before(quiet) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := fresh.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if err := again.add(r); err != nil {
				t.Fatalf("reading %s again: %v", copyOut, err)
			}
		})
		if again.n == copyRecords && quiet.IsZero() {
			quiet = time.Now().Add(2 * time.Second)
		}
		if quiet.IsZero() && time.Now().After(giveUp) {
			t.Fatalf("reading %s again: %d of %d records", copyOut, again.n, copyRecords)
		}
	}
	t.Logf("%6.1fs read %s again: %d records", at(), copyOut, again.n)
	for _, n := range nodes {
		if slices.ContainsFunc(n.procs, func(p *proc) bool { return strings.Contains(p.stderr.String(), "panic:") }) {
			t.Errorf("node %d panicked", n.id)
		}
	}
}

// txnCopier consumes copy-in in the group "copiers" and produces each
// record to the same partition of copy-out, committing a transaction
// every copyPerTxn records (or when polls come back empty) and pausing
// copyPace after each, until done is closed.
func txnCopier(ctx context.Context, opts []kgo.Opt, id string, gate *copyGate, done <-chan struct{}, committed, aborted *atomic.Int64) error {
	sess, err := kgo.NewGroupTransactSession(append(opts,
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup("copiers"),
		kgo.ConsumeTopics(copyIn),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(copyOut),
		kgo.MaxBufferedRecords(2*copyPerTxn),
		kgo.MetadataMinAge(200*time.Millisecond),
	)...)
	if err != nil {
		return err
	}
	defer sess.Close()
	for {
		gate.wait(ctx, done)
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return nil
		default:
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		n := 0
		for n < copyPerTxn {
			pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := sess.PollRecords(pctx, copyPerTxn-n)
			cancel()
			if fs.Empty() {
				break
			}
			fs.EachRecord(func(r *kgo.Record) {
				n++
				sess.Produce(ctx, &kgo.Record{Partition: r.Partition, Value: r.Value}, nil)
			})
		}
		ok, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("end: %w", err)
		}
		if ok {
			committed.Add(1)
		} else {
			aborted.Add(1)
		}
		select {
		case <-time.After(copyPace):
		case <-done:
		}
	}
}
