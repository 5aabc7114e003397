package links

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/clustertest"
	"weir/internal/record"
	"weir/internal/testwait"
)

// Both clusters hand out producer ids from 0, so the first transactional
// producer of the destination gets the id whose transactions the promoted
// mirror holds, ended by markers of the source's coordinator at a higher
// coordinator epoch (its transaction log partition changed leaders). The
// destination producer's transaction is open when the destination node
// crashes; the log rebuilds its producer state on restart, and the
// destination coordinator's commit marker must not be fenced by the
// source coordinator's epoch: the transaction commits.
func TestPromotedMirrorKeepsProducersApartAcrossACrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes and restarts nodes")
	}
	src := clustertest.New(t, clustertest.Options{Nodes: 1})
	dst := clustertest.New(t, clustertest.Options{Nodes: 1})
	sb, db := src.Node(0).Addr, dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(newClient(t, sb)).CreateTopic(ctx, 1, 1, nil, "txn"); err != nil {
		t.Fatal(err)
	}
	// The source's transaction coordinator moves up a few epochs: its
	// transaction log partition is led anew after each restart.
	stx := newClient(t, sb, kgo.TransactionalID("src"), kgo.DefaultProduceTopic("txn"))
	if _, _, err := stx.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	stx.Close()
	for range 3 {
		src.Restart(0, true)
	}
	stx = newClient(t, sb, kgo.TransactionalID("src"), kgo.DefaultProduceTopic("txn"))
	srcPID, _, err := stx.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := stx.ProduceSync(ctx, kgo.StringRecord("from the source")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := stx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	props := filepath.Join(t.TempDir(), "link.properties")
	if err := os.WriteFile(props, []byte("bootstrap.servers="+sb+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "txn", "--link", "dr"},
	} {
		if r := weir.Run(t, args...); r.Code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.Out, r.Err)
		}
	}
	sameLogs(t, sb, "txn", db, "txn", 1)
	if r := weir.Run(t, "mirrors", "--bootstrap-server", db, "--promote", "--topics", "txn"); r.Code != 0 {
		t.Fatalf("promote: %s%s", r.Out, r.Err)
	}
	batches, _ := batchesOf(t, db, "txn", 0)
	if len(batches) != 2 || record.Batch(batches[1]).ProducerID() != srcPID {
		t.Fatalf("the mirror holds %d batches", len(batches))
	}

	dtx := newClient(t, db, kgo.TransactionalID("dst"), kgo.DefaultProduceTopic("txn"))
	dstPID, _, err := dtx.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dstPID != srcPID {
		t.Fatalf("the destination's producer got id %d, the source's had %d: the test needs them equal", dstPID, srcPID)
	}
	if err := dtx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := dtx.ProduceSync(ctx, kgo.StringRecord("from the destination")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dst.Kill(0)
	dst.Restart(0, true)
	if err := dtx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("committing after the crash: %v", err)
	}
	cl := newClient(t, db, kgo.ConsumeTopics("txn"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	testwait.For(t, 60*time.Second, "both committed records", func() error {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) < 2 {
			return context.DeadlineExceeded
		}
		return nil
	})
	if got[0] != "from the source" || got[1] != "from the destination" || len(got) != 2 {
		t.Fatalf("read %q", got)
	}
}
