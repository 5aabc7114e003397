package consoletool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/clitest"
	"weir/internal/cli/groups"
	"weir/internal/cli/tool"
	"weir/internal/cli/topics"
	"weir/internal/clustertest"
)

// The console producer and consumer against a three-node weir cluster:
// keys, headers and null markers in, Kafka's formatter out, groups that
// commit what was printed, and Kafka's messages for bad input, compared
// with testdata/console.golden.
func TestConsoleCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{"auto.create.topics.enable": "false"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	tr := clitest.Transcript{Weir: weir}
	produce := func(stdin string, args ...string) clitest.Result {
		t.Helper()
		return tr.RunIn(t, stdin, append([]string{"console-producer", "--bootstrap-server", bs}, args...)...)
	}
	consume := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"console-consumer", "--bootstrap-server", bs}, args...)...)
	}
	for _, create := range [][]string{{"--topic", "lines", "--replica-assignment", "1:2:3"}, {"--topic", "stamped", "--replica-assignment", "2:3:1,3:1:2"}} {
		if r := weir.Run(t, append([]string{"topics", "--bootstrap-server", bs, "--create"}, create...)...); r.Code != 0 {
			t.Fatalf("create: %+v", r)
		}
	}
	clitest.Settled(t, c)

	produce("k1\tv1\nk2\tv2\n", "--topic", "lines", "--property", "parse.key=true", "--sync")
	produce("trace:abc,src:web|k3|v3\nsrc:cli|k4|v4\n", "--topic", "lines", "--property", "parse.headers=true", "--property", "headers.delimiter=|",
		"--property", "parse.key=true", "--property", "key.separator=|", "--request-required-acks", "1")
	produce("NULL:v5\nk6:NULL\n", "--topic", "lines", "--reader-property", "parse.key=true", "--reader-property", "key.separator=:", "--reader-property", "null.marker=NULL",
		"--producer-property", "compression.type=zstd", "--compression-codec", "lz4")
	produce("gz\n", "--topic", "lines", "--compression-codec", "--sync")
	produce("x\n", "--topic", "lines", "--compression-codec", "brotli")
	produce("plain\n", "--topic", "lines")

	// Records with known timestamps, for print.timestamp.
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i, ts := range []int64{1700000000000, 1700000000001, 1700000000002} {
		r := &kgo.Record{Topic: "stamped", Partition: int32(i % 2), Value: []byte("s" + tool.Itoa(int64(i))), Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	consume("--topic", "lines", "--from-beginning", "--max-messages", "7", "--timeout-ms", "20000", "--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
		"--formatter-property", "print.offset=true", "--formatter-property", "print.partition=true")
	consume("--topic", "lines", "--partition", "0", "--offset", "2", "--max-messages", "2", "--property", "print.key=true", "--property", "key.separator= => ",
		"--property", "null.literal=<null>", "--property", "print.value=false")
	consume("--topic", "stamped", "--partition", "1", "--offset", "earliest", "--timeout-ms", "5000", "--formatter-property", "print.timestamp=true")
	consume("--include", "line.*", "--from-beginning", "--max-messages", "2", "--formatter-property", "print.partition=true",
		"--formatter-property", "print.offset=true", "--formatter-property", "line.separator=;\n")

	// A group commits what it printed: the second run goes on from there.
	consume("--topic", "lines", "--group", "audit", "--from-beginning", "--max-messages", "2")
	consume("--topic", "lines", "--group", "audit", "--max-messages", "2", "--consumer-property", "group.id=audit")
	tr.Run(t, "consumer-groups", "--bootstrap-server", bs, "--describe", "--group", "audit", "--offsets")

	// Bad input, producer.
	produce("k1\tv1\nnokey\n", "--topic", "lines", "--property", "parse.key=true", "--sync")
	produce("h1\tv\n", "--topic", "lines", "--property", "parse.headers=true")
	produce("\tv\n", "--topic", "lines", "--property", "parse.headers=true")
	produce("x\n", "--topic", "lines", "--property", "parse.headers=true", "--property", "headers.delimiter=,")
	produce("x\n", "--topic", "lines", "--request-required-acks", "2")
	produce("x\n", "--topic", "lines", "--producer-property", "interceptor.classes=com.example.Audit")
	produce("x\n", "--topic", "lines", "--line-reader", "com.example.Reader")
	produce("x\n", "--topic", "nope", "--max-block-ms", "300")
	produce("x\n", "--topic", "nope", "--max-block-ms", "300", "--sync")
	produce("x\n", "--topic", "lines", "--request-required-acks", "1", "--producer-property", "enable.idempotence=true")
	tr.RunIn(t, "x\n", "console-producer", "--topic", "lines")
	produce("x\n")
	tr.RunIn(t, "x\n", "console-producer", "--topic", "lines", "--bootstrap-server", "localhost")

	// Bad input, consumer.
	consume("--topic", "lines", "--offset", "3")
	consume("--topic", "lines", "--partition", "0", "--group", "g")
	consume("--topic", "lines", "--partition", "0", "--offset", "-3")
	consume("--topic", "lines", "--partition", "0", "--offset", "2", "--from-beginning")
	consume("--topic", "lines", "--include", "l.*")
	consume("--topic", "lines", "--group", "a", "--consumer-property", "group.id=b")
	consume("--topic", "lines", "--from-beginning", "--consumer-property", "auto.offset.reset=latest")
	consume("--topic", "lines", "--isolation-level", "read_some")
	consume("--topic", "lines", "--formatter", "kafka.tools.LoggingMessageFormatter")
	consume("--topic", "lines", "--property", "value.deserializer=org.apache.kafka.common.serialization.LongDeserializer")
	tr.Run(t, "console-consumer", "--topic", "lines")
	clitest.CheckGolden(t, "console.golden", tr.String())
}

// The same tools against kfake.
func TestConsoleCommandsKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "lines"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	tr := clitest.Transcript{Weir: weir}
	tr.RunIn(t, "a:1\nb:2\n", "console-producer", "--bootstrap-server", bs, "--topic", "lines", "--property", "parse.key=true", "--property", "key.separator=:")
	tr.Run(t, "console-consumer", "--bootstrap-server", bs, "--topic", "lines", "--from-beginning", "--max-messages", "2",
		"--formatter-property", "print.key=true", "--formatter-property", "print.offset=true")
	tr.Run(t, "console-consumer", "--bootstrap-server", bs, "--topic", "lines", "--group", "g", "--from-beginning", "--max-messages", "2")
	clitest.CheckGolden(t, "console_kfake.golden", tr.String())
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewConsumerCommand, NewProducerCommand, topics.NewCommand, groups.NewCommand}
