package kafka_test

// Transactions with franz-go against the transaction coordinator: a
// transactional producer's commits and aborts as read_committed and
// read_uncommitted consumers see them; the coordinator's admin APIs
// through kadm; fencing of a zombie producer; the consume-transform-produce
// loop of GroupTransactSession.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txcProducer is a transactional kgo producer.
func txcProducer(t *testing.T, addr, txnID, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return cliFranz(t, addr, append([]kgo.Opt{kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(30 * time.Second)}, opts...)...)
}

// txcTxn produces n records tagged tag in one transaction and ends it.
func txcTxn(t *testing.T, ctx context.Context, cl *kgo.Client, tag string, n int, commit bool) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", tag, i)}).FirstErr(); err != nil {
			t.Fatalf("producing %s-%d: %v", tag, i, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("ending %s (commit %v): %v", tag, commit, err)
	}
}

// txcTags counts the consumed records by tag.
func txcTags(recs []*kgo.Record) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		tag, _, _ := strings.Cut(string(r.Value), "-")
		out[tag]++
	}
	return out
}

// txcSettled describes id until its transaction is no longer being
// prepared: EndTxn answers once the commit or abort is prepared, and
// CompleteCommit/CompleteAbort follow once its markers are written.
func txcSettled(t *testing.T, ctx context.Context, adm *kadm.Client, id string) (kadm.DescribedTransactions, error) {
	t.Helper()
	for {
		ds, err := adm.DescribeTransactions(ctx, id)
		if err != nil || ctx.Err() != nil || !strings.HasPrefix(ds[id].State, "Prepare") {
			return ds, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTxnFranzCommitAbort(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "txc-commit-abort"
	cliCreateTopic(t, ctx, adm, topic, 3, nil)
	p := txcProducer(t, n.Addr, "txc-1", topic)
	txcTxn(t, ctx, p, "c1", 30, true)
	txcTxn(t, ctx, p, "a1", 30, false)
	txcTxn(t, ctx, p, "c2", 30, true)

	got := txcTags(cliConsume(t, ctx, n.Addr, topic, cliFromStart(3), 60, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	if got["c1"] != 30 || got["c2"] != 30 || got["a1"] != 0 {
		t.Fatalf("read_committed consumed %v, want c1 and c2 only", got)
	}
	got = txcTags(cliConsume(t, ctx, n.Addr, topic, cliFromStart(3), 90))
	if got["c1"] != 30 || got["c2"] != 30 || got["a1"] != 30 {
		t.Fatalf("read_uncommitted consumed %v, want all 90", got)
	}

	ds, err := txcSettled(t, ctx, adm, "txc-1")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := ds["txc-1"]
	if !ok || d.Err != nil || d.State != "CompleteCommit" || d.ProducerEpoch != 0 {
		t.Fatalf("DescribeTransactions: %+v", ds)
	}
	ls, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := ls.Sorted(); len(l) != 1 || l[0].TxnID != "txc-1" || l[0].State != "CompleteCommit" {
		t.Fatalf("ListTransactions: %+v", l)
	}
}

// A second producer with the same transactional id fences the first: the
// zombie's open transaction is aborted and its commit refused; the new
// incarnation commits.
func TestTxnFranzFencing(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "txc-fencing"
	cliCreateTopic(t, ctx, adm, topic, 2, nil)
	zombie := txcProducer(t, n.Addr, "txc-fence", topic)
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := zombie.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "zombie-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	fresh := txcProducer(t, n.Addr, "txc-fence", topic)
	txcTxn(t, ctx, fresh, "fresh", 10, true)
	err := zombie.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's commit failed with %v, want PRODUCER_FENCED", err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie-late")}).FirstErr(); err == nil {
		t.Fatal("the fenced producer produced")
	}
	got := txcTags(cliConsume(t, ctx, n.Addr, topic, cliFromStart(2), 10, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	if got["fresh"] != 10 || len(got) != 1 {
		t.Fatalf("read_committed consumed %v, want the new producer's 10 only", got)
	}
	d, err := txcSettled(t, ctx, adm, "txc-fence")
	if err != nil || d["txc-fence"].ProducerEpoch != 2 || d["txc-fence"].State != "CompleteCommit" {
		t.Fatalf("after fencing: %+v %v (want epoch 2: the abort's, then the new producer's)", d, err)
	}
}

// A transaction open longer than its timeout is aborted by the
// coordinator, which fences its producer.
func TestTxnFranzTimeout(t *testing.T) {
	n := cliNode(t, map[string]string{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"})
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "txc-timeout"
	cliCreateTopic(t, ctx, adm, topic, 1, nil)
	p := txcProducer(t, n.Addr, "txc-timeout", topic, kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("late-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	grpWait(t, ctx, "the coordinator aborts the timed-out transaction", func() (bool, string) {
		d, err := adm.DescribeTransactions(ctx, "txc-timeout")
		if err != nil {
			return false, err.Error()
		}
		s := d["txc-timeout"]
		return s.State == "CompleteAbort", fmt.Sprintf("%s at epoch %d", s.State, s.ProducerEpoch)
	})
	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("a timed-out transaction committed")
	}
	// Its record is aborted: read_committed reaches the end without it.
	offs, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup(topic, 0); o.Offset != 2 {
		t.Fatalf("last stable offset %d, want 2 (the record and the abort marker)", o.Offset)
	}
	q := txcProducer(t, n.Addr, "txc-timeout-2", topic)
	txcTxn(t, ctx, q, "after", 1, true)
	got := txcTags(cliConsume(t, ctx, n.Addr, topic, cliFromStart(1), 1, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	if got["after"] != 1 || got["late"] != 0 {
		t.Fatalf("read_committed consumed %v", got)
	}
}

// Consume-transform-produce with GroupTransactSession: sessions copy an
// input topic to an output topic, committing their offsets in the
// transactions, while some transactions abort and members come and go. A
// read_committed reader of the output sees every input record exactly
// once.
func TestTxnFranzGroupTransactSession(t *testing.T) {
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	in, out, group := "txc-etl-in", "txc-etl-out", "txc-etl"
	cliCreateTopic(t, ctx, adm, in, 4, nil)
	cliCreateTopic(t, ctx, adm, out, 4, nil)
	const total = 2000
	prod := cliFranz(t, n.Addr, kgo.DefaultProduceTopic(in))
	for i := range total {
		prod.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r-%d", i)}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	aborts, commits := 0, 0
	run := func(ctx context.Context, id string, abortEvery int) {
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(n.Addr), kgo.TransactionalID(id),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(), kgo.DefaultProduceTopic(out), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.TransactionTimeout(30*time.Second), kgo.SessionTimeout(6*time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer sess.Close()
		for batch := 0; ctx.Err() == nil; batch++ {
			fs := sess.PollRecords(ctx, 50)
			if ctx.Err() != nil {
				return
			}
			if fs.Empty() {
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Errorf("%s: Begin: %v", id, err)
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				sess.Produce(ctx, &kgo.Record{Value: append([]byte(nil), r.Value...)}, nil)
			})
			abort := abortEvery > 0 && batch%abortEvery == abortEvery-1
			committed, err := sess.End(ctx, kgo.TransactionEndTry(!abort))
			if err != nil && ctx.Err() == nil {
				t.Errorf("%s: End: %v", id, err)
				return
			}
			mu.Lock()
			if committed {
				commits++
			} else {
				aborts++
			}
			mu.Unlock()
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	start := func(id string, abortEvery int) context.CancelFunc {
		c, cancel := context.WithCancel(runCtx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(c, id, abortEvery)
		}()
		return cancel
	}
	start("txc-etl-a", 3)
	stopB := start("txc-etl-b", 5)
	// A member leaves mid-stream, once transactions are being ended.
	for ended := 0; ended < 4 && ctx.Err() == nil; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		ended = commits + aborts
		mu.Unlock()
	}
	stopB()
	start("txc-etl-c", 4)

	reader := cliFranz(t, n.Addr, kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]int{}
	began := time.Now()
	for len(seen) < total && ctx.Err() == nil {
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	t.Logf("all %d records copied after %v", total, time.Since(began))
	// Whatever is committed after the last record arrived must not
	// duplicate any: wait out a few more transactions.
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()
	drain, cancel := context.WithTimeout(ctx, time.Second)
	for drain.Err() == nil {
		reader.PollFetches(drain).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	cancel()
	if len(seen) != total {
		t.Fatalf("output holds %d distinct input records, want %d", len(seen), total)
	}
	for v, c := range seen {
		if c != 1 {
			t.Fatalf("%s is in the output %d times", v, c)
		}
	}
	t.Logf("%d transactions committed, %d aborted", commits, aborts)
	if aborts == 0 || commits == 0 {
		t.Fatalf("%d commits and %d aborts; the test wants both", commits, aborts)
	}
}
