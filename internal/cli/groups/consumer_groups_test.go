package groups

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/clitest"
	"weir/internal/servertest"
	"weir/internal/testwait"
)

// produceTo writes n records to a partition.
func produceTo(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte("v")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// groupMember runs a consumer of a group that consumes and commits every
// record of topic, until the test ends.
func groupMember(t *testing.T, addr, group, clientID, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.NumRecords() > 0 {
				cl.CommitUncommittedOffsets(ctx)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cl.Close() })
	return cl
}

// waitGroup waits until a group is Stable with every partition of its
// topics assigned and committed up to want.
func waitGroup(t *testing.T, ctx context.Context, adm *kadm.Client, group string, want map[string]map[int32]int64) {
	t.Helper()
	testwait.For(t, 30*time.Second, "group "+group+" stable and committed", func() error {
		os, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		for topic, ps := range want {
			for p, o := range ps {
				if got, _ := os.Lookup(topic, p); got.At != o {
					return fmt.Errorf("%s-%d committed %d, want %d", topic, p, got.At, o)
				}
			}
		}
		ls, err := adm.ListGroups(ctx)
		if err != nil {
			return err
		}
		if s := ls[group].State; s != "Stable" {
			return fmt.Errorf("state %q", s)
		}
		return nil
	})
}

// The consumer-groups tool against a weir node: a classic group with a
// live member, a KIP-848 group, and a group with only committed offsets,
// listed, described, reset, their offsets deleted and the groups deleted,
// compared with testdata/consumer_groups.golden.
func TestConsumerGroupsCommand(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"group.initial.rebalance.delay.ms": "0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := clitest.TxnTestClient(t, n.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	for topic, parts := range map[string]int32{"orders": 2, "audit": 1} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	produceTo(t, ctx, cl, "orders", 0, 10)
	produceTo(t, ctx, cl, "orders", 1, 5)
	produceTo(t, ctx, cl, "audit", 0, 3)
	var idle kadm.Offsets
	idle.AddOffset("orders", 0, 3, -1)
	idle.AddOffset("orders", 1, 5, -1)
	idle.AddOffset("audit", 0, 1, -1)
	if err := adm.CommitAllOffsets(ctx, "idle", idle); err != nil {
		t.Fatal(err)
	}
	live := groupMember(t, n.Addr, "live", "live-client", "orders")
	modern := groupMember(t, n.Addr, "modern", "modern-client", "audit",
		kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
	waitGroup(t, ctx, adm, "live", map[string]map[int32]int64{"orders": {0: 10, 1: 5}})
	waitGroup(t, ctx, adm, "modern", map[string]map[int32]int64{"audit": {0: 3}})
	produceTo(t, ctx, cl, "orders", 0, 2) // lag 2 for live, until it consumes

	tr := clitest.Transcript{Weir: weir}
	tr.Sub(strings.Split(n.Addr, ":")[1], "<port>")
	for _, c := range []*kgo.Client{live, modern} {
		id, _ := c.GroupMetadata()
		tr.Sub(id, "<member id>")
	}
	run := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"consumer-groups", "--bootstrap-server", n.Addr}, args...)...)
	}
	run("--list")
	run("--list", "--state", "--type")
	run("--list", "--state", "empty")
	run("--list", "--type", "consumer")
	run("--describe", "--group", "idle")
	run("--describe", "--group", "idle", "--offsets", "--verbose")
	run("--describe", "--group", "modern")
	run("--describe", "--group", "live", "--members")
	run("--describe", "--group", "modern", "--members", "--verbose")
	run("--describe", "--all-groups", "--state", "--verbose")
	run("--describe", "--group", "nope")

	// Resetting: the inactive group only, dry runs first.
	run("--reset-offsets", "--group", "idle", "--topic", "orders", "--to-earliest")
	run("--reset-offsets", "--group", "idle", "--all-topics", "--to-latest", "--dry-run")
	run("--reset-offsets", "--group", "idle", "--topic", "orders:1", "--topic", "audit", "--to-offset", "100", "--dry-run")
	run("--reset-offsets", "--group", "idle", "--all-topics", "--shift-by", "-4", "--dry-run")
	run("--reset-offsets", "--group", "idle", "--topic", "audit", "--to-datetime", "2000-01-01T00:00:00.000", "--dry-run")
	run("--reset-offsets", "--group", "idle", "--topic", "audit", "--by-duration", "-PT1H", "--dry-run")
	run("--reset-offsets", "--group", "idle", "--all-topics", "--to-current", "--dry-run", "--export")
	plan := filepath.Join(t.TempDir(), "plan.csv")
	tr.Sub(plan, "plan.csv")
	os.WriteFile(plan, []byte("orders,0,7\norders,1,1\n"), 0o644)
	run("--reset-offsets", "--group", "idle", "--from-file", plan, "--execute")
	run("--describe", "--group", "idle")
	run("--reset-offsets", "--group", "live", "--topic", "orders", "--to-earliest", "--execute")
	run("--reset-offsets", "--group", "idle", "--topic", "orders:x", "--to-earliest", "--dry-run")
	run("--reset-offsets", "--group", "idle", "--to-earliest", "--dry-run")
	run("--reset-offsets", "--group", "idle", "--topic", "orders", "--dry-run")
	run("--reset-offsets", "--group", "idle", "--topic", "nope", "--to-earliest", "--dry-run")

	// Deleting offsets, then groups.
	run("--delete-offsets", "--group", "idle", "--topic", "audit")
	run("--delete-offsets", "--group", "idle", "--topic", "nope")
	run("--delete-offsets", "--group", "live", "--topic", "orders:0")
	run("--delete", "--group", "idle")
	run("--delete", "--group", "live", "--group", "nope")

	// Usage errors, as kafka-consumer-groups.sh.
	run()
	run("--describe")
	run("--describe", "--group", "live", "--members", "--state")
	run("--delete", "--group", "live", "--topic", "orders")
	run("--reset-offsets", "--group", "idle", "--all-topics", "--to-earliest", "--to-latest")
	run("--reset-offsets", "--group", "idle", "--all-topics", "--to-earliest", "--dry-run", "--execute")
	run("--describe", "--group", "live", "--all-groups")
	run("--list", "--group", "live")
	run("--list", "--members")
	run("--list", "--state", "bogus")
	run("--delete-offsets", "--group", "live")
	tr.Run(t, "consumer-groups", "--list")
	clitest.CheckGolden(t, "consumer_groups.golden", tr.String())
}

// The same tool against kfake, with a group that has committed offsets.
func TestConsumerGroupsCommandKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := clitest.TxnTestClient(t, bs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	produceTo(t, ctx, cl, "orders", 0, 4)
	produceTo(t, ctx, cl, "orders", 1, 6)
	var os kadm.Offsets
	os.AddOffset("orders", 0, 1, -1)
	os.AddOffset("orders", 1, 6, -1)
	if err := adm.CommitAllOffsets(ctx, "idle", os); err != nil {
		t.Fatal(err)
	}
	tr := clitest.Transcript{Weir: weir}
	tr.Sub(strings.Split(bs, ":")[1], "<port>")
	run := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"consumer-groups", "--bootstrap-server", bs}, args...)...)
	}
	run("--list")
	run("--describe", "--group", "idle")
	run("--describe", "--group", "idle", "--state")
	run("--reset-offsets", "--group", "idle", "--topic", "orders", "--to-earliest", "--execute")
	run("--reset-offsets", "--group", "idle", "--topic", "orders:1", "--shift-by", "2", "--execute")
	run("--describe", "--group", "idle")
	run("--delete-offsets", "--group", "idle", "--topic", "orders:1")
	run("--delete", "--group", "idle")
	run("--describe", "--group", "idle")
	clitest.CheckGolden(t, "consumer_groups_kfake.golden", tr.String())
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand}
