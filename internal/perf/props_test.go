package perf

import (
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParsePropsArgs(t *testing.T) {
	p := Props{}
	if err := ParsePropsArgs(p, []string{"bootstrap.servers=a:1,b:2", "sasl.jaas.config=x=y", " acks = 1 "}); err != nil {
		t.Fatal(err)
	}
	want := Props{"bootstrap.servers": "a:1,b:2", "sasl.jaas.config": "x=y", "acks": "1"}
	if !maps.Equal(p, want) {
		t.Fatalf("got %v", p)
	}
	for _, bad := range []string{"novalue", "=1"} {
		if err := ParsePropsArgs(Props{}, []string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestReadProps(t *testing.T) {
	in := `# a comment
! another
bootstrap.servers=127.0.0.1:9092,\
    127.0.0.1:9093
acks : all
linger.ms 5
  client.id=perf\tclient
key\=with\:seps=v
empty=
path=C:\\dir
unicode=\u00e9
trailing=x\`
	p := Props{}
	if err := ReadProps(p, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	want := Props{
		"bootstrap.servers": "127.0.0.1:9092,127.0.0.1:9093",
		"acks":              "all",
		"linger.ms":         "5",
		"client.id":         "perf\tclient",
		"key=with:seps":     "v",
		"empty":             "",
		"path":              `C:\dir`,
		"unicode":           "é",
		"trailing":          "x",
	}
	if !maps.Equal(p, want) {
		t.Fatalf("got  %q\nwant %q", p, want)
	}
}

func newClient(t *testing.T, opts []kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...)
	if err != nil {
		t.Fatalf("kgo rejects the mapped options: %v", err)
	}
	cl.Close()
}

func TestProducerOptions(t *testing.T) {
	ok := []Props{
		{},
		{"acks": "1"},
		{"acks": "0", "max.in.flight.requests.per.connection": "10"},
		{"acks": "all", "enable.idempotence": "false", "max.in.flight.requests.per.connection": "20"},
		{"acks": "-1", "enable.idempotence": "true", "max.in.flight.requests.per.connection": "5"},
		{"linger.ms": "5", "batch.size": "65536", "buffer.memory": "33554432", "compression.type": "lz4",
			"compression.lz4.level": "9", "max.request.size": "2097152", "request.timeout.ms": "30000",
			"delivery.timeout.ms": "120000", "retries": "10", "retry.backoff.ms": "100", "client.id": "x",
			"metadata.max.age.ms": "300000", "key.serializer": "whatever"},
		{"compression.type": "zstd", "compression.zstd.level": "3"},
		{"compression.type": "gzip"},
		{"compression.type": "snappy"},
		{"partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"},
		{"partitioner.class": "org.apache.kafka.clients.producer.UniformStickyPartitioner"},
		{"partitioner.class": "org.apache.kafka.clients.producer.internals.DefaultPartitioner"},
	}
	for _, p := range ok {
		cc, err := ProducerOptions(p)
		if err != nil {
			t.Errorf("%v: %v", p, err)
			continue
		}
		if len(cc.Warnings) != 0 {
			t.Errorf("%v: unexpected warnings %v", p, cc.Warnings)
		}
		newClient(t, cc.Opts)
	}
	bad := map[string]Props{
		"idempotence needs all acks": {"acks": "1", "enable.idempotence": "true"},
		"idempotent inflight > 5":    {"max.in.flight.requests.per.connection": "6"},
		"unknown acks":               {"acks": "2"},
		"bad compression":            {"compression.type": "brotli"},
		"bad number":                 {"linger.ms": "soon"},
		"bad bool":                   {"enable.idempotence": "yes"},
		"transactions":               {"transactional.id": "t"},
		"custom partitioner":         {"partitioner.class": "com.example.MyPartitioner"},
		"SASL without a login":       {"security.protocol": "SASL_SSL"},
		"GSSAPI":                     {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI", "sasl.jaas.config": "x"},
		"ssl key without TLS":        {"ssl.truststore.location": "/ca.pem"},
	}
	for name, p := range bad {
		if _, err := ProducerOptions(p); err == nil {
			t.Errorf("%s: %v accepted", name, p)
		}
	}
}

func TestProducerOptionsWarnsOnUnknown(t *testing.T) {
	cc, err := ProducerOptions(Props{"bootstrap.servers": "h:1", "no.such.thing": "1", "max.block.ms": "10"})
	if err != nil {
		t.Fatal(err)
	}
	if !cc.Seeds {
		t.Error("Seeds not set")
	}
	joined := strings.Join(cc.Warnings, "\n")
	if !strings.Contains(joined, "no.such.thing") || !strings.Contains(joined, "max.block.ms") || len(cc.Warnings) != 2 {
		t.Errorf("warnings = %q", cc.Warnings)
	}
}

func TestConsumerOptions(t *testing.T) {
	cc, err := ConsumerOptions(Props{})
	if err != nil {
		t.Fatal(err)
	}
	if cc.MaxBytes != 50<<20 || cc.PartitionMaxBytes != 1<<20 || cc.MinBytes != 1 || cc.MaxWait.Milliseconds() != 500 {
		t.Fatalf("defaults = %+v", cc)
	}
	cc, err = ConsumerOptions(Props{
		"bootstrap.servers": "h:1", "fetch.max.bytes": "1000", "fetch.min.bytes": "10",
		"fetch.max.wait.ms": "100", "max.partition.fetch.bytes": "2000", "isolation.level": "read_committed",
		"group.id": "g", "session.timeout.ms": "10000", "enable.auto.commit": "false", "check.crcs": "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cc.MaxBytes != 1000 || cc.MinBytes != 10 || cc.MaxWait.Milliseconds() != 100 || cc.PartitionMaxBytes != 2000 ||
		!cc.ReadCommitted || cc.Group != "g" || !cc.Seeds || len(cc.Warnings) != 0 {
		t.Fatalf("mapped = %+v", cc)
	}
	if len(cc.GroupOpts) != 2 {
		t.Fatalf("group options = %d, want 2", len(cc.GroupOpts))
	}
	newClient(t, cc.Opts)
	newClient(t, append(append(cc.Opts, cc.GroupOpts...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t")))
	if _, err := ConsumerOptions(Props{"isolation.level": "dirty"}); err == nil {
		t.Fatal("bad isolation level accepted")
	}
}
