package links

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/clitest"
	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// A source that is Apache Kafka itself: scripts/java-interop starts a
// Kafka 4.4 node from its jars (scripts/apache-kafka, with
// log.cleaner.backoff.ms=50 so that its cleaner runs within the test) and
// runs this test with the node's address in WEIR_KAFKA_BOOTSTRAP. Kafka's
// own batches, from its idempotent producer path, its transaction
// coordinator's markers (committed, aborted, one transaction left open)
// and its log cleaner (offset gaps), are mirrored by a weir cluster with
// the same offsets and the same bytes, batch for batch, before and while
// the source takes more records.
func TestClusterLinkFromApacheKafka(t *testing.T) {
	sb := os.Getenv("WEIR_KAFKA_BOOTSTRAP")
	if sb == "" {
		t.Skip("needs an Apache Kafka node: scripts/java-interop runs this test against one")
	}
	dst := clustertest.New(t, clustertest.Options{Nodes: 3})
	db := dst.Node(0).Addr + "," + dst.Node(1).Addr + "," + dst.Node(2).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	scl := newClient(t, sb)
	sadm := kadm.NewClient(scl)
	for name, parts := range map[string]int32{"plain": 2, "txn": 1} {
		// A Kafka node just started may not take topics yet.
		testwait.For(t, 60*time.Second, "the Kafka node to create "+name, func() error {
			resp, err := sadm.CreateTopic(ctx, parts, 1, nil, name)
			if err == nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
				err = resp.Err
			}
			return err
		})
	}
	produceN(t, scl, "plain", 0, 100)
	tcl := newClient(t, sb, kgo.TransactionalID("kafka-source"), kgo.DefaultProduceTopic("txn"))
	for i, commit := range []bool{true, false, true, false, true} {
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
	// One more stays open: records without a marker.
	if err := tcl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for j := range 5 {
		if err := tcl.ProduceSync(ctx, kgo.StringRecord("open-"+strconv.Itoa(j))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	compacted(t, sadm, scl)

	props := filepath.Join(t.TempDir(), "link.properties")
	if err := os.WriteFile(props, []byte("bootstrap.servers="+sb+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "kafka", "--config-file", props},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "plain", "--link", "kafka", "--replication-factor", "3"},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "txn", "--link", "kafka", "--replication-factor", "3"},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "compacted", "--link", "kafka", "--replication-factor", "3"},
	} {
		if r := weir.Run(t, args...); r.Code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.Out, r.Err)
		}
	}
	sameLogs(t, sb, "plain", db, "plain", 2)
	sameLogs(t, sb, "txn", db, "txn", 1)
	sameLogs(t, sb, "compacted", db, "compacted", 1)

	// More at the source while the link runs: the open transaction
	// aborted, more records.
	if err := tcl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	produceN(t, scl, "plain", 100, 100)
	sameLogs(t, sb, "plain", db, "plain", 2)
	sameLogs(t, sb, "txn", db, "txn", 1)

	// What a read_committed consumer of the mirror sees is what it sees
	// at the source: the committed transactions only.
	for _, bootstrap := range []string{sb, db} {
		cl := newClient(t, bootstrap, kgo.ConsumeTopics("txn"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		for len(got) < 30 && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		for i, v := range got {
			if want := "t" + strconv.Itoa(2*(i/10)) + "-" + strconv.Itoa(i%10); v != want {
				t.Fatalf("%s: committed record %d is %q, want %q", bootstrap, i, v, want)
			}
		}
	}
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewClusterLinksCommand, NewMirrorsCommand}
