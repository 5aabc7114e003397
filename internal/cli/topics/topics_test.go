package topics

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/clitest"
	"weir/internal/cli/tool"
	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// topicIDs names the ids of the topics in the transcript.
func topicIDs(t *testing.T, ctx context.Context, adm *kadm.Client, tr *clitest.Transcript) {
	t.Helper()
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, td := range md.Topics {
		tr.TopicID(name, td.ID)
	}
}

// The topics tool against a three-node weir cluster: every action, the
// replication reports with a node down, and Kafka's messages for bad
// input, compared with testdata/topics.golden.
func TestTopicsCommand(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	isTerminal := tool.StdinIsTerminal
	defer func() { tool.StdinIsTerminal = isTerminal }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	cl := c.Client(t, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	adm := kadm.NewClient(cl)
	tr := clitest.Transcript{Weir: weir}
	run := func(args ...string) clitest.Result {
		t.Helper()
		r := tr.Run(t, append([]string{"topics", "--bootstrap-server", bs}, args...)...)
		clitest.Settled(t, c)
		return r
	}

	run("--create", "--topic", "orders", "--replica-assignment", "1:2:3,2:3:1,3:1:2", "--config", "cleanup.policy=compact", "--config", "min.insync.replicas = 2")
	run("--create", "--topic", "orders", "--partitions", "1")
	run("--create", "--topic", "orders", "--partitions", "1", "--if-not-exists")
	run("--create", "--topic", "solo", "--replica-assignment", "3")
	run("--create", "--topic", "pairs", "--replica-assignment", "1:2,2:3")
	run("--create", "--topic", "tmp.one", "--partitions", "2", "--replication-factor", "1")
	if r := run("--create", "--topic", "spread", "--partitions", "2", "--replication-factor", "3"); r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	run("--list")
	run("--list", "--topic", "o.*,solo")
	topicIDs(t, ctx, adm, &tr)
	run("--describe", "--topic", "orders")
	run("--describe", "--topic", "pairs|solo")
	run("--describe", "--topics-with-overrides")
	run("--describe", "--at-min-isr-partitions", "--topic", "orders|solo|pairs")
	run("--describe", "--under-replicated-partitions")

	// Adding partitions: silently to a topic without keys; to one whose
	// records carry keys with a warning, going ahead when stdin is no
	// terminal (as Kafka's tool, for scripts), asking on a terminal.
	run("--alter", "--topic", "pairs", "--partitions", "3", "--replica-assignment", "1:2,2:3,3:1")
	clitest.ProduceKeyed(t, ctx, cl, "orders", 5)
	if r := run("--alter", "--topic", "orders", "--partitions", "4"); r.Code != 0 || !strings.HasPrefix(r.Out, keyedWarning+"\n") {
		t.Fatalf("adding partitions to a keyed topic from a script: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	tool.StdinIsTerminal = func(io.Reader) bool { return true }
	tr.RunIn(t, "n\n", "topics", "--bootstrap-server", bs, "--alter", "--topic", "orders", "--partitions", "5")
	tr.RunIn(t, "y\n", "topics", "--bootstrap-server", bs, "--alter", "--topic", "orders", "--partitions", "5")
	clitest.Settled(t, c)
	tool.StdinIsTerminal = isTerminal
	run("--describe", "--topic", "pairs")
	run("--alter", "--topic", "pairs", "--partitions", "2")

	// Node 3 down: its partitions lose it from their ISR, and "solo",
	// whose only replica it holds, its leader.
	c.Kill(2)
	testwait.For(t, 30*time.Second, "node 3 out of every ISR", func() error {
		md, err := adm.Metadata(ctx, "orders", "solo", "pairs")
		if err != nil {
			return err
		}
		for _, td := range md.Topics {
			for _, p := range td.Partitions {
				for _, r := range p.ISR {
					if r == 3 && td.Topic != "solo" {
						return fmt.Errorf("%s-%d ISR %v", td.Topic, p.Partition, p.ISR)
					}
				}
				if td.Topic == "solo" && p.Leader != -1 {
					return fmt.Errorf("solo leader %d", p.Leader)
				}
			}
		}
		return nil
	})
	run("--describe", "--under-replicated-partitions", "--topic", "orders|solo|pairs")
	run("--describe", "--under-min-isr-partitions", "--topic", "orders|solo|pairs")
	run("--describe", "--unavailable-partitions", "--topic", "orders|solo|pairs")
	run("--describe", "--at-min-isr-partitions", "--topic", "orders|solo|pairs")

	run("--delete", "--topic", "tmp\\..*")
	run("--delete", "--topic", "tmp\\..*")
	run("--delete", "--topic", "tmp\\..*", "--if-exists")
	run("--list", "--exclude-internal")

	// Bad input: Kafka's messages, exit code 1.
	run("--describe", "--topic", "nope")
	run("--describe", "--topic", "nope", "--if-exists")
	run("--describe", "--topic", "(")
	run("--create", "--topic", "bad", "--config", "no.such.key=1")
	run("--create", "--topic", "bad", "--config", "retention.ms")
	run("--create", "--topic", "bad", "--replica-assignment", "1:1")
	run("--create", "--topic", "bad", "--replica-assignment", "1:2,3")
	run("--create", "--topic", "bad", "--replica-assignment", "1:x")
	run("--create", "--topic", "bad", "--replication-factor", "0")
	run("--create", "--topic", "bad", "--partitions", "0")
	run("--create", "--topic", "bad", "--replication-factor", "4")
	run("--create", "--topic", "bad/name")
	run("--create", "--topic", "bad", "--partitions", "1", "--replica-assignment", "1")
	run("--alter", "--topic", "orders")
	run("--alter", "--topic", "orders", "--partitions", "5", "--config", "a=b")
	run("--list", "--describe")
	run("--describe", "--if-exists")
	run("--create")
	run("--list", "--partitions", "3")
	run("--describe", "--topics-with-overrides", "--under-replicated-partitions")
	run("--delete", "--topic", "orders", "--exclude-internal")
	tr.Run(t, "topics", "--list")

	// --command-config: client settings are honoured, what weir's client
	// does not do is refused.
	dir := t.TempDir()
	good, bad, unknown := filepath.Join(dir, "good.properties"), filepath.Join(dir, "ssl.properties"), filepath.Join(dir, "unknown.properties")
	os.WriteFile(good, []byte("# plain\nclient.id=ops\nsecurity.protocol=PLAINTEXT\nrequest.timeout.ms=20000\n"), 0o644)
	os.WriteFile(bad, []byte("security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/x\n"), 0o644)
	os.WriteFile(unknown, []byte("linger.ms=5\n"), 0o644)
	tr.Sub(dir, "<dir>")
	run("--list", "--topic", "orders", "--command-config", good)
	run("--list", "--command-config", bad)
	run("--list", "--command-config", unknown)
	run("--list", "--command-config", filepath.Join(dir, "missing"))

	clitest.CheckGolden(t, "topics.golden", tr.String())
}

// The same commands against franz-go's kfake: the tool is a plain Kafka
// client.
func TestTopicsCommandKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tr := clitest.Transcript{Weir: weir}
	run := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"topics", "--bootstrap-server", bs}, args...)...)
	}
	run("--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "3", "--config", "cleanup.policy=compact")
	run("--create", "--topic", "orders", "--partitions", "3")
	run("--create", "--topic", "solo", "--partitions", "1", "--replication-factor", "1")
	run("--list")
	topicIDs(t, ctx, adm, &tr)
	run("--describe", "--topic", "orders", "--topics-with-overrides")
	// kfake places replicas at random: the layout is checked, not the ids.
	r := weir.Run(t, "topics", "--bootstrap-server", bs, "--describe", "--topic", "orders|solo")
	if r.Code != 0 {
		t.Fatalf("describe against kfake: %+v", r)
	}
	id := func(name string) string {
		md, err := adm.Metadata(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		tid := md.Topics[name].ID
		return base64.RawURLEncoding.EncodeToString(tid[:])
	}
	part := func(topic string, p int, rf int) string {
		ids := strings.TrimSuffix(strings.Repeat(`\d,`, rf), ",")
		return fmt.Sprintf(`\tTopic: %s\tPartition: %d\tLeader: \d\tReplicas: %s\tIsr: %s\tElr: \tLastKnownElr: `, topic, p, ids, ids)
	}
	clitest.MatchLines(t, r.Out,
		`Topic: orders\tTopicId: `+id("orders")+`\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: cleanup.policy=compact`,
		part("orders", 0, 3), part("orders", 1, 3), part("orders", 2, 3),
		`Topic: solo\tTopicId: `+id("solo")+`\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: `,
		part("solo", 0, 1))
	run("--alter", "--topic", "orders", "--partitions", "5")
	run("--describe", "--topic", "orders", "--under-replicated-partitions")
	run("--delete", "--topic", "solo")
	run("--list")
	run("--describe", "--topic", "solo")
	clitest.CheckGolden(t, "topics_kfake.golden", tr.String())
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand}
