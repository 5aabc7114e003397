package kafka_test

// Transactions with franz-go against the transaction coordinator: a
// transactional producer's commits and aborts as read_committed and
// read_uncommitted consumers see them; the coordinator's admin APIs
// through kadm; fencing of a zombie producer; the consume-transform-produce
// loop of GroupTransactSession.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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

	ds, err := adm.DescribeTransactions(ctx, "txc-1")
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
