package clustertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The copy test in the spirit of Kafka's transactions system test:
// transactional copiers in one consumer group move seeded records from an
// input topic to an output topic, partition p to partition p, in
// transactions of about 750 records, while the brokers are bounced one at
// a time, cleanly and by crashes. A read_committed reader of the output
// must see every input record exactly once, in input order per partition.
func TestTransactionalCopyWhileBrokersBounce(t *testing.T) {
	if testing.Short() {
		t.Skip("long: copies 100,000 records through transactions while bouncing brokers")
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	c := New(t, Options{Nodes: 3, Overrides: map[string]string{
		"offsets.topic.replication.factor":         "3",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
		"transaction.state.log.num.partitions":     "5",
		"min.insync.replicas":                      "2",
		"default.replication.factor":               "3",
		"auto.leader.rebalance.enable":             "false",
	}})
	const (
		partitions = 2
		total      = 100_000
		perTxn     = 750
	)
	createReplicated(t, c, "copy-in", partitions, 3, nil)
	createReplicated(t, c, "copy-out", partitions, 3, nil)

	// The input: record i of partition p is "p:i".
	seedInput(t, c, "copy-in", partitions, total)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	copied := make(chan struct{})
	var copiers sync.WaitGroup
	copyErrs := make(chan error, 2)
	for i := range 2 {
		copiers.Add(1)
		go func() {
			defer copiers.Done()
			if err := copier(ctx, c, fmt.Sprintf("copier-%d", i), perTxn, 250*time.Millisecond, copied); err != nil {
				copyErrs <- fmt.Errorf("copier %d: %w", i, err)
			}
		}()
	}

	// Bounce one broker at a time until the output is complete.
	out := newTally(partitions)
	reader := c.Client(t, kgo.ConsumeTopics("copy-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	next := time.Now().Add(time.Second)
	bounces := 0
	for out.n < total {
		if time.Now().After(next) && bounces < 8 {
			i := rng.IntN(c.Size())
			if bounces%2 == 0 {
				t.Logf("stopping node %d cleanly (read %d)", i, out.n)
				c.Stop(i)
			} else {
				t.Logf("killing node %d (read %d)", i, out.n)
				c.Kill(i)
			}
			c.Restart(i, true)
			bounces++
			next = time.Now().Add(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := reader.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("the output holds %d of %d records after 5 minutes", out.n, total)
		}
		fs.EachRecord(func(r *kgo.Record) { out.add(t, r) })
		select {
		case err := <-copyErrs:
			t.Fatal(err)
		default:
		}
	}
	close(copied)
	copiers.Wait()
	t.Logf("copied %d records through transactions over %d bounces", out.n, bounces)

	// Nothing more arrives: no record was copied twice.
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	reader.PollFetches(pctx).EachRecord(func(r *kgo.Record) { out.add(t, r) })
	if out.n != total {
		t.Fatalf("the output holds %d records, want %d", out.n, total)
	}
}

// seedInput produces n records, spread evenly over the partitions, with
// an idempotent acks=all producer.
func seedInput(t *testing.T, c *Cluster, topic string, partitions, n int) {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var firstErr error
	var mu sync.Mutex
	for i := range n {
		p := i % partitions
		r := &kgo.Record{Partition: int32(p), Value: []byte(fmt.Sprintf("%d:%d", p, i/partitions))}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				firstErr = cmpErr(firstErr, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if firstErr != nil {
		t.Fatalf("seeding %s: %v", topic, firstErr)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// copier consumes copy-in in the group "copiers" and produces each record
// to the same partition of copy-out, committing a transaction every perTxn
// records (or when polls come back empty) and pausing pace after each,
// until done is closed.
func copier(ctx context.Context, c *Cluster, id string, perTxn int, pace time.Duration, done <-chan struct{}) error {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(c.Seeds()...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup("copiers"),
		kgo.ConsumeTopics("copy-in"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic("copy-out"),
		kgo.MaxBufferedRecords(2*perTxn),
	)
	if err != nil {
		return err
	}
	defer sess.Close()
	for {
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
		for n < perTxn {
			pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := sess.PollRecords(pctx, perTxn-n)
			cancel()
			if fs.Empty() {
				break
			}
			fs.EachRecord(func(r *kgo.Record) {
				n++
				sess.Produce(ctx, &kgo.Record{Partition: r.Partition, Value: r.Value}, nil)
			})
		}
		if _, err := sess.End(ctx, kgo.TryCommit); err != nil && ctx.Err() == nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return fmt.Errorf("end: %w", err)
		}
		// Paced, so that the copy spans the bounces.
		select {
		case <-time.After(pace):
		case <-done:
		}
	}
}

// tally checks a partitioned stream of "p:i" values: per partition, i
// must come in order 0, 1, 2, ... without gaps or repeats.
type tally struct {
	next []int
	n    int
}

func newTally(partitions int) *tally { return &tally{next: make([]int, partitions)} }

func (ta *tally) add(t *testing.T, r *kgo.Record) {
	t.Helper()
	var p, i int
	if _, err := fmt.Sscanf(string(r.Value), "%d:%d", &p, &i); err != nil || p != int(r.Partition) {
		t.Fatalf("record %q in partition %d", r.Value, r.Partition)
	}
	if i != ta.next[p] {
		t.Fatalf("partition %d: record %d at offset %d, want record %d (duplicated or lost input)", p, i, r.Offset, ta.next[p])
	}
	ta.next[p]++
	ta.n++
}
