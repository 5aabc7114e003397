package txns

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/clitest"
	"weir/internal/cli/tool"
	"weir/internal/servertest"
	"weir/internal/txntest"
)

// tableRows splits a table printed by printTable into its cells.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var cells []string
		for _, c := range strings.Split(strings.TrimSuffix(line, "\t"), "\t") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return rows
}

// openHangingTxn leaves a transaction open on topic-0 that no
// coordinator knows of: a producer initialized with a transactional id
// writes a transactional batch without adding the partition (the node
// does not verify), as a client of before KIP-890 could after a timeout.
func openHangingTxn(t *testing.T, ctx context.Context, cl *kgo.Client, txnID, topic string) (int64, int16) {
	t.Helper()
	return txntest.OpenHanging(t, ctx, cl, cl, txnID, topic)
}

func TestTransactionsCommand(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"transaction.partition.verification.enable": "false"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := clitest.TxnTestClient(t, n.Addr)
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"normal", "hang"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	p := clitest.TxnTestClient(t, n.Addr, kgo.TransactionalID("ok-txn"), kgo.DefaultProduceTopic("normal"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// EndTxn answers once the commit is prepared; the markers, and
	// CompleteCommit, follow.
	var out string
	var rows [][]string
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		if out, _, err = weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "list"); err != nil {
			t.Fatal(err)
		}
		rows = tableRows(out)
		if len(rows) != 2 || rows[1][3] != "PrepareCommit" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(rows) != 2 || strings.Join(rows[0], " ") != "TransactionalId Coordinator ProducerId TransactionState" ||
		rows[1][0] != "ok-txn" || rows[1][1] != "1" || rows[1][3] != "CompleteCommit" {
		t.Fatalf("list printed:\n%s", out)
	}
	if !strings.HasPrefix(out, "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\n") {
		t.Fatalf("list header not padded as Kafka's: %q", out)
	}

	out, _, err = weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "describe", "--transactional-id", "ok-txn")
	if err != nil {
		t.Fatal(err)
	}
	rows = tableRows(out)
	if len(rows) != 2 || len(rows[1]) != 9 || rows[1][0] != "1" || rows[1][1] != "ok-txn" || rows[1][3] != "0" ||
		rows[1][4] != "CompleteCommit" || rows[1][5] != "40000" || !regexp.MustCompile(`^\d+$`).MatchString(rows[1][6]) || rows[1][8] != "" {
		t.Fatalf("describe printed:\n%s", out)
	}
	_, _, err = weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "describe", "--transactional-id", "nope")
	if err == nil || !strings.Contains(err.Error(), "Failed to describe transaction state of transactional-id `nope`") ||
		!strings.Contains(err.Error(), "TRANSACTIONAL_ID_NOT_FOUND") {
		t.Fatalf("describe of an unknown id: %v", err)
	}

	// A hanging transaction: found, then aborted by its start offset.
	pid, epoch := openHangingTxn(t, ctx, cl, "h", "hang")
	out, _, err = weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "describe-producers", "--topic", "hang", "--partition", "0")
	if err != nil {
		t.Fatal(err)
	}
	rows = tableRows(out)
	if len(rows) != 2 || rows[1][0] != tool.Itoa(pid) || rows[1][1] != tool.Itoa(int64(epoch)) || rows[1][5] != "0" {
		t.Fatalf("describe-producers printed:\n%s", out)
	}
	time.Sleep(10 * time.Millisecond)
	out, _, err = weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "find-hanging", "--topic", "hang", "--max-transaction-timeout", "0")
	if err != nil {
		t.Fatal(err)
	}
	rows = tableRows(out)
	if len(rows) != 2 || strings.Join(rows[0], " ") != "Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset LastTimestamp Duration(min)" ||
		rows[1][0] != "hang" || rows[1][2] != tool.Itoa(pid) || rows[1][5] != "0" {
		t.Fatalf("find-hanging printed:\n%s", out)
	}
	out, _, err = weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "find-hanging", "--topic", "normal", "--max-transaction-timeout", "0")
	if err != nil || len(tableRows(out)) != 1 {
		t.Fatalf("find-hanging of a topic without hanging transactions: %v\n%s", err, out)
	}
	lso := func() int64 {
		t.Helper()
		offs, err := adm.ListCommittedOffsets(ctx, "hang")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("hang", 0)
		return o.Offset
	}
	if got := lso(); got != 0 {
		t.Fatalf("last stable offset %d under the hanging transaction, want 0", got)
	}
	if _, _, err := weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "abort", "--topic", "hang", "--partition", "0", "--start-offset", "5"); err == nil ||
		!strings.Contains(err.Error(), "Could not find any open transactions starting at offset 5 on partition hang-0") {
		t.Fatalf("abort at a wrong offset: %v", err)
	}
	if _, _, err := weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "abort", "--topic", "hang", "--partition", "0", "--start-offset", "0"); err != nil {
		t.Fatal(err)
	}
	out, _, err = weir.Execute(t, "transactions", "--bootstrap-server", n.Addr, "describe-producers", "--topic", "hang", "--partition", "0")
	if err != nil || len(tableRows(out)) != 2 || tableRows(out)[1][5] != "None" {
		t.Fatalf("describe-producers after the abort: %v\n%s", err, out)
	}
	// read_committed consumers are no longer held back: the marker is
	// after the record.
	if got := lso(); got != 2 {
		t.Fatalf("last stable offset %d after the abort, want 2", got)
	}

	// Usage errors, with Kafka's messages.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"abort", "--topic", "hang", "--partition", "0"}, "must be identified either with --start-offset"},
		{[]string{"abort", "--topic", "hang", "--partition", "0", "--producer-id", "5"}, "Missing required argument --producer-epoch"},
		{[]string{"find-hanging"}, "requires either --topic or --broker-id"},
		{[]string{"find-hanging", "--broker-id", "1", "--partition", "0"}, "The --partition argument requires --topic"},
		{[]string{"describe"}, "Missing required argument --transactional-id"},
	} {
		_, _, err := weir.Execute(t, append([]string{"transactions", "--bootstrap-server", n.Addr}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand}
