package configs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"weir/internal/cli/clitest"
	"weir/internal/cli/topics"
	"weir/internal/clustertest"
)

// The configs tool against a three-node weir cluster: topic and broker
// configs described and altered, the entity types weir does not serve
// failing with the broker's error, and Kafka's messages for bad input,
// compared with testdata/configs.golden.
func TestConfigsCommand(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	clitest.Settled(t, c)
	tr := clitest.Transcript{Weir: weir}
	run := func(args ...string) clitest.Result {
		t.Helper()
		r := tr.Run(t, append([]string{"configs", "--bootstrap-server", bs}, args...)...)
		clitest.Settled(t, c)
		return r
	}
	tr.Sub(bs, "<bootstrap>")
	dir := t.TempDir()
	tr.Sub(dir, "<dir>")
	file := filepath.Join(dir, "orders.properties")
	os.WriteFile(file, []byte("# from a file\nmax.message.bytes=2000000\nsegment.ms = 3600000\n"), 0o644)

	run("--entity-type", "topics", "--entity-name", "orders", "--describe")
	run("--entity-type", "topics", "--entity-name", "orders", "--alter", "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]")
	run("--entity-type", "topics", "--entity-name", "orders", "--describe")
	run("--topic", "orders", "--alter", "--add-config-file", file)
	run("--topic", "orders", "--alter", "--delete-config", "retention.ms,segment.ms")
	run("--entity-type", "topics", "--describe")
	run("--topic", "nope", "--describe")
	if r := weir.Run(t, "configs", "--bootstrap-server", bs, "--topic", "orders", "--describe", "--all"); r.Code != 0 ||
		!strings.HasPrefix(r.Out, "All configs for topic orders are:\n") ||
		!strings.Contains(r.Out, "\n  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n") ||
		!strings.Contains(r.Out, "\n  retention.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}\n") {
		t.Errorf("describe --all: %+v", r)
	}

	run("--entity-type", "brokers", "--entity-name", "2", "--alter", "--add-config", "log.retention.ms=7200000")
	run("--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.retention.ms=3600000,message.max.bytes=2000000")
	run("--entity-type", "brokers", "--entity-name", "2", "--describe")
	run("--broker-defaults", "--describe")
	run("--entity-type", "brokers", "--describe")
	run("--broker", "9", "--describe")
	run("--entity-type", "brokers", "--entity-name", "2", "--alter", "--delete-config", "log.retention.ms")
	run("--broker", "2", "--describe")

	// Client quotas of users, client ids and both, with defaults.
	run("--entity-type", "users", "--entity-name", "alice", "--describe")
	run("--entity-type", "users", "--entity-name", "alice", "--alter", "--add-config", "producer_byte_rate=1024,request_percentage=25.5")
	run("--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config", "consumer_byte_rate=2048")
	run("--entity-type", "clients", "--entity-default", "--alter", "--add-config", "producer_byte_rate=500")
	run("--entity-type", "users", "--entity-name", "alice", "--describe")
	run("--entity-type", "clients", "--entity-default", "--describe")
	run("--entity-type", "users", "--describe")
	run("--entity-type", "clients", "--describe")
	run("--entity-type", "users", "--entity-name", "alice", "--alter", "--add-config", "producer_byte_rate=-1")
	run("--entity-type", "users", "--entity-name", "alice", "--alter", "--delete-config", "request_percentage")
	run("--entity-type", "users", "--entity-name", "alice", "--describe")

	// Bad values and keys: the broker's answer.
	run("--topic", "orders", "--alter", "--add-config", "retention.ms=soon")
	run("--topic", "orders", "--alter", "--add-config", "no.such.config=1")
	run("--topic", "nope", "--alter", "--add-config", "retention.ms=1")

	// Broker loggers: each broker's own, changed at run time.
	run("--entity-type", "broker-loggers", "--entity-name", "2", "--describe")
	run("--entity-type", "broker-loggers", "--entity-name", "2", "--alter", "--add-config", "network=DEBUG,group-coordinator=TRACE")
	run("--broker-logger", "2", "--describe")
	run("--broker-logger", "1", "--describe")
	run("--broker-logger", "2", "--alter", "--delete-config", "network", "--add-config", "root=WARN")
	run("--broker-logger", "2", "--describe")
	run("--broker-logger", "2", "--alter", "--add-config", "root=INFO", "--delete-config", "group-coordinator")
	run("--broker-logger", "2", "--alter", "--add-config", "nope=DEBUG,network=DEBUG")
	run("--broker-logger", "2", "--alter", "--add-config", "network=debug")
	run("--broker-logger", "2", "--alter", "--delete-config", "root")
	run("--broker-logger", "9", "--describe")

	// Group configs (KIP-848): set, described with their source, and the
	// refusals of an out-of-bounds value and a share group's key.
	run("--entity-type", "groups", "--entity-name", "g1", "--alter", "--add-config", "consumer.heartbeat.interval.ms=6000")
	run("--entity-type", "groups", "--entity-name", "g1", "--describe")
	run("--group", "g1", "--describe", "--all")
	run("--group", "g1", "--alter", "--add-config", "consumer.session.timeout.ms=1000")
	run("--group", "g1", "--alter", "--add-config", "share.record.lock.duration.ms=30000")
	run("--group", "g1", "--alter", "--delete-config", "consumer.heartbeat.interval.ms")
	run("--group", "g1", "--describe")

	// Entity types weir does not serve fail at once with the error a
	// Kafka broker without them gives.
	run("--entity-type", "client-metrics", "--describe")

	// Usage errors, as kafka-configs.sh.
	run("--entity-type", "topics", "--entity-name", "orders")
	run("--entity-type", "topics", "--entity-name", "orders", "--describe", "--add-config", "a=b")
	run("--entity-type", "things", "--describe")
	run("--entity-type", "topics", "--entity-type", "topics", "--describe")
	run("--entity-type", "topics", "--entity-type", "brokers", "--describe")
	run("--describe")
	run("--entity-type", "topics", "--topic", "orders", "--describe")
	run("--entity-type", "brokers", "--entity-name", "one", "--describe")
	run("--entity-type", "topics", "--entity-default", "--describe")
	run("--entity-type", "broker-loggers", "--describe")
	run("--entity-type", "topics", "--alter", "--add-config", "a=b")
	run("--topic", "orders", "--alter")
	run("--topic", "orders", "--alter", "--add-config", "a=b", "--add-config-file", file)
	run("--topic", "orders", "--alter", "--add-config", "a=b=c")
	run("--topic", "orders", "--alter", "--add-config", "a/b=c")
	run("--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--alter", "--add-config", "producer_byte_rate=1")
	run("--user", "alice", "--alter", "--add-config", "retention.ms=1")
	run("--client", "app", "--alter", "--add-config", "SCRAM-SHA-256=[password=x]")
	tr.Run(t, "configs", "--topic", "orders", "--describe")
	clitest.CheckGolden(t, "configs.golden", tr.String())
}

// The same tool against kfake, which also serves client quotas, SCRAM
// credentials and group configs.
func TestConfigsCommandKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]
	tr := clitest.Transcript{Weir: weir}
	tr.Sub(bs, "<bootstrap>")
	run := func(args ...string) clitest.Result {
		t.Helper()
		return tr.Run(t, append([]string{"configs", "--bootstrap-server", bs}, args...)...)
	}
	run("--topic", "orders", "--alter", "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]")
	run("--topic", "orders", "--describe")
	run("--topic", "orders", "--alter", "--delete-config", "cleanup.policy")
	run("--topic", "orders", "--describe")
	run("--topic", "nope", "--describe")
	run("--user", "alice", "--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=20000000")
	run("--user", "alice", "--client", "app", "--alter", "--add-config", "request_percentage=12.5")
	run("--user-defaults", "--alter", "--add-config", "producer_byte_rate=500")
	run("--entity-type", "users", "--entity-name", "alice", "--describe")
	run("--entity-type", "users", "--describe")
	run("--user", "alice", "--alter", "--delete-config", "consumer_byte_rate")
	run("--user", "alice", "--alter", "--delete-config", "consumer_byte_rate")
	run("--user", "alice", "--alter", "--add-config", "producer_byte_rate=fast")
	run("--user", "bob", "--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=secret]")
	run("--user", "bob", "--describe")
	run("--user", "bob", "--alter", "--add-config", "SCRAM-SHA-256=[iterations=100,password=secret]")
	run("--ip", "10.0.0.1", "--alter", "--add-config", "connection_creation_rate=10")
	run("--ip", "10.0.0.1", "--describe")
	clitest.CheckGolden(t, "configs_kfake.golden", tr.String())
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand, topics.NewCommand}
