package logdirs

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/clitest"
	"weir/internal/cli/tool"
	"weir/internal/cli/topics"
	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// Kafka's tool prints partitions in the order of Java's HashMap of
// TopicPartition: these orders are from kafka-log-dirs.sh's output.
func TestJavaHashMapOrder(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"l07.storage.test-0", "l07.storage.test-1", "l07.storage.test-2"}, []string{"l07.storage.test-2", "l07.storage.test-1", "l07.storage.test-0"}},
		{[]string{"NEW-TOPIC-2-0", "NEW-TOPIC-2-1", "NEW-TOPIC-2-2", "NEW-TOPIC-2-3", "NEW-TOPIC-2-4"}, []string{"NEW-TOPIC-2-4", "NEW-TOPIC-2-3", "NEW-TOPIC-2-2", "NEW-TOPIC-2-1", "NEW-TOPIC-2-0"}},
	} {
		got := slices.Clone(tc.in)
		tool.JavaOrder(got, func(s string) int32 {
			i := strings.LastIndexByte(s, '-')
			var p int32
			fmt.Sscan(s[i+1:], &p)
			return tool.JavaTopicPartitionHash(s[:i], p)
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("order of %v: %v, want %v", tc.in, got, tc.want)
		}
	}
}

// replicasCaughtUp waits until every replica of the topic has its
// leader's size and no offset lag.
func replicasCaughtUp(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) {
	t.Helper()
	testwait.For(t, 30*time.Second, topic+"'s replicas caught up", func() error {
		all, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			return err
		}
		sizes := map[int32][]int64{}
		all.Each(func(d kadm.DescribedLogDir) {
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				if p.Topic != topic {
					return
				}
				sizes[p.Partition] = append(sizes[p.Partition], p.Size)
				if p.OffsetLag != 0 {
					sizes[p.Partition] = append(sizes[p.Partition], -1)
				}
			})
		})
		for p, s := range sizes {
			if len(s) < 2 || slices.Min(s) != slices.Max(s) {
				return fmt.Errorf("%s-%d sizes %v", topic, p, s)
			}
		}
		return nil
	})
}

// The log-dirs tool against a three-node weir cluster, compared with
// testdata/log_dirs.golden.
func TestLogDirsCommand(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	cl := c.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	tr := clitest.Transcript{Weir: weir}
	for i := 0; i < c.Size(); i++ {
		tr.Sub(filepath.Join(c.Node(i).Dir, "logs"), fmt.Sprintf("<logs of %d>", c.Node(i).ID))
	}
	run := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"log-dirs", "--bootstrap-server", bs}, args...)...)
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", bs, "--create", "--topic", "orders", "--replica-assignment", "1:2,2:3,3:1"); r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", bs, "--create", "--topic", "empty", "--replica-assignment", "2"); r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	clitest.Settled(t, c)
	for i := 0; i < 6; i++ {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte("value")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	replicasCaughtUp(t, ctx, adm, "orders")
	run("--describe", "--topic-list", "orders,empty")
	run("--describe", "--broker-list", "2", "--topic-list", "empty")
	run("--describe", "--broker-list", "1,3", "--topic-list", "nope")

	// Bad input.
	run("--describe", "--broker-list", "1,7,9")
	run("--describe", "--broker-list", "one")
	run("--topic-list", "orders")
	tr.Run(t, "log-dirs", "--describe")
	clitest.CheckGolden(t, "log_dirs.golden", tr.String())
}

// The same tool against kfake.
func TestLogDirsCommandKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	tr := clitest.Transcript{Weir: weir}
	tr.Run(t, "log-dirs", "--bootstrap-server", bs, "--describe", "--topic-list", "orders")
	tr.Run(t, "log-dirs", "--bootstrap-server", bs, "--describe", "--broker-list", "5")
	clitest.CheckGolden(t, "log_dirs_kfake.golden", tr.String())
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand, topics.NewCommand}
