package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
	"weir/internal/testwait"
)

// The transaction coordinator fails over in the middle of a commit. The
// coordinator C (leader of the transactional id's __transaction_state
// partition) is cut off from D, the only replica of the data partition:
// PrepareCommit becomes durable on C and the third node K once D leaves
// the state partition's ISR, the producer's commit is answered, but no
// marker can reach D, so read_committed consumers are held back. Then C
// crashes: K becomes the coordinator, loads PrepareCommit from its copy of
// the log, writes the markers at its own coordinator epoch and completes
// the commit.
func TestTxnCoordinatorFailoverMidCommit(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
		"transaction.state.log.num.partitions":     "3",
		"replica.lag.time.max.ms":                  "1000",
		"auto.leader.rebalance.enable":             "false",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k := c.Leader() // the active controller: cut from nobody
	cl := c.Client(t)
	// Create __transaction_state, then pick a transactional id whose
	// coordinator is not the controller.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey = 1, "probe"
	testwait.For(t, 20*time.Second, "__transaction_state", func() error {
		resp, err := fc.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode != 0 {
			err = fmt.Errorf("FindCoordinator: error %d", resp.ErrorCode)
		}
		return err
	})
	var id string
	var coord int
	testwait.For(t, 20*time.Second, "a coordinator other than the controller", func() error {
		leaders := partitionLeaders(metadataFrom(t, c.Node(k)), "__transaction_state")
		for i := range 100 {
			cand := fmt.Sprintf("failover-%d", i)
			if l := leaders[coordinator.PartitionFor(cand, 3)]; l > 0 && int(l-1) != k {
				id, coord = cand, int(l-1)
				return nil
			}
		}
		return fmt.Errorf("leaders %v", leaders)
	})
	d := 3 - k - coord
	t.Logf("controller node %d, coordinator node %d of %s, data on node %d", k, coord, id, d)
	createTopics(t, c.Node(k), 1, []int32{int32(d + 1)}, nil, "failover")

	p := c.Client(t, kgo.TransactionalID(id), kgo.DefaultProduceTopic("failover"), kgo.TransactionTimeout(60*time.Second),
		kgo.RequestTimeoutOverhead(30*time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.Cut(coord, d)
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	adm := kadm.NewClient(cl)
	lso := func() int64 {
		offs, err := adm.ListCommittedOffsets(ctx, "failover")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("failover", 0)
		return o.Offset
	}
	Consistently(t, 500*time.Millisecond, "the commit stays unreadable while its markers cannot be written", func() error {
		if got := lso(); got != 0 {
			return fmt.Errorf("last stable offset %d, want 0", got)
		}
		return nil
	})
	ds, err := adm.DescribeTransactions(ctx, id)
	if err != nil || ds[id].State != "PrepareCommit" {
		t.Fatalf("before the failover: %+v %v", ds, err)
	}

	c.Kill(coord)
	testwait.For(t, 30*time.Second, "the new coordinator completes the commit", func() error {
		// A new client each time: a client keeps the coordinator it
		// found, and the old one cannot be dialled.
		fresh, err := kgo.NewClient(kgo.SeedBrokers(c.Node(k).Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		ds, err := kadm.NewClient(fresh).DescribeTransactions(ctx, id)
		if err != nil {
			return err
		}
		if s := ds[id]; s.Err != nil || s.State != "CompleteCommit" || s.Coordinator != int32(k+1) {
			return fmt.Errorf("%s at node %d (%v)", s.State, s.Coordinator, s.Err)
		}
		return nil
	})
	if got := lso(); got != 11 {
		t.Fatalf("last stable offset %d after the failover, want 11 (10 records and the marker)", got)
	}
	r := c.Client(t, kgo.ConsumeTopics("failover"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for len(got) < 10 && ctx.Err() == nil {
		r.PollFetches(ctx).EachRecord(func(rec *kgo.Record) { got = append(got, string(rec.Value)) })
	}
	if len(got) != 10 || got[0] != "v0" || got[9] != "v9" {
		t.Fatalf("read_committed read %v", got)
	}
	// The producer, restarted (a client may keep the dead coordinator
	// while the metadata no longer names its broker), goes on with the
	// new coordinator: its epoch is bumped and it commits.
	p.Close()
	p = c.Client(t, kgo.TransactionalID(id), kgo.DefaultProduceTopic("failover"), kgo.TransactionTimeout(60*time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the failover: %v", err)
	}
	testwait.For(t, 10*time.Second, "the commit after the restart", func() error {
		ds, err := kadm.NewClient(p).DescribeTransactions(ctx, id)
		if err == nil && (ds[id].ProducerEpoch != 1 || ds[id].State != "CompleteCommit") {
			err = fmt.Errorf("%s at epoch %d", ds[id].State, ds[id].ProducerEpoch)
		}
		return err
	})
	c.Heal()
	c.Restart(coord, true)
}
