package election

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"weir/internal/cli/clitest"
	"weir/internal/cli/topics"
	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// partitionState waits until a partition has this leader and ISR.
func partitionState(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, p int32, leader int32, isr ...int32) {
	t.Helper()
	testwait.For(t, 30*time.Second, fmt.Sprintf("%s-%d led by %d with ISR %v", topic, p, leader, isr), func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		pd := md.Topics[topic].Partitions[p]
		got := slices.Clone(pd.ISR)
		slices.Sort(got)
		if pd.Leader != leader || !slices.Equal(got, isr) {
			return fmt.Errorf("leader %d ISR %v", pd.Leader, pd.ISR)
		}
		return nil
	})
}

// The leader-election tool against a three-node weir cluster: preferred
// elections needed and not, a preferred leader that is down, and Kafka's
// messages for bad input, compared with testdata/leader_election.golden.
func TestLeaderElectionCommand(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	bs := c.Node(1).Addr
	tr := clitest.Transcript{Weir: weir}
	run := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"leader-election", "--bootstrap-server", bs}, args...)...)
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", bs, "--create", "--topic", "orders", "--replica-assignment", "1:2:3,2:3:1,3:1:2"); r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	partitionState(t, ctx, adm, "orders", 0, 1, 1, 2, 3)
	run("--election-type", "preferred", "--topic", "orders", "--partition", "0")

	// Node 1 goes down and comes back: orders-0 is led by 2 until a
	// preferred election gives it back.
	c.Kill(0)
	partitionState(t, ctx, adm, "orders", 0, 2, 2, 3)
	partitionState(t, ctx, adm, "orders", 2, 3, 2, 3)
	run("--election-type", "preferred", "--topic", "orders", "--partition", "0")
	c.Restart(0, true)
	partitionState(t, ctx, adm, "orders", 0, 2, 1, 2, 3)
	partitionState(t, ctx, adm, "orders", 2, 3, 1, 2, 3)
	dir := t.TempDir()
	tr.Sub(dir, "<dir>")
	file := filepath.Join(dir, "elect.json")
	os.WriteFile(file, []byte(`{"partitions": [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}, {"topic": "nope", "partition": 0}]}`), 0o644)
	run("--election-type", "preferred", "--all-topic-partitions")
	partitionState(t, ctx, adm, "orders", 0, 1, 1, 2, 3)
	run("--election-type", "PREFERRED", "--path-to-json-file", file)
	run("--election-type", "unclean", "--topic", "orders", "--partition", "1")

	// Bad input.
	for name, body := range map[string]string{"dup.json": `{"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}`,
		"none.json": `{"topics": []}`, "bad.json": `{"partitions": `} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	for _, name := range []string{"dup.json", "none.json", "bad.json", "missing.json"} {
		run("--election-type", "preferred", "--path-to-json-file", filepath.Join(dir, name))
	}
	run("--election-type", "preferred")
	run("--election-type", "preferred", "--topic", "orders")
	run("--election-type", "preferred", "--partition", "0", "--all-topic-partitions")
	run("--election-type", "preferred", "--topic", "orders", "--partition", "0", "--all-topic-partitions")
	run("--election-type", "sideways", "--all-topic-partitions")
	run("--topic", "orders", "--partition", "0")
	tr.Run(t, "leader-election", "--election-type", "preferred", "--all-topic-partitions")
	clitest.CheckGolden(t, "leader_election.golden", tr.String())
}

// The same tool against kfake.
func TestLeaderElectionCommandKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	tr := clitest.Transcript{Weir: weir}
	run := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"leader-election", "--bootstrap-server", bs}, args...)...)
	}
	run("--election-type", "preferred", "--topic", "orders", "--partition", "0")
	run("--election-type", "unclean", "--topic", "orders", "--partition", "1")
	run("--election-type", "preferred", "--topic", "nope", "--partition", "0")
	clitest.CheckGolden(t, "leader_election_kfake.golden", tr.String())
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand, topics.NewCommand}
