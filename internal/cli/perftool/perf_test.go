package perftool

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/clitest"
)

// runPerf runs `weir perf ARGS...` and returns stdout and stderr.
func runPerf(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Weir{NewCommand}.Execute(t, append([]string{"perf"}, args...)...)
}

func startKfake(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

var (
	produceTotalRE = regexp.MustCompile(`^(\d+) records sent, \d+\.\d{6} records/sec \(\d+\.\d{2} MB/sec\), \d+\.\d{2} ms avg latency, \d+\.\d{2} ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$`)
	kafkaTime      = `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}`
	// A rate over a run that took 0 ms is Infinity (or NaN), as Java
	// prints a double divided by zero.
	rate          = `(?:\d+\.\d{4}|Infinity|NaN)`
	consumeRowRE  = regexp.MustCompile(`^` + kafkaTime + `, ` + kafkaTime + `, (\d+\.\d{4}), ` + rate + `, (\d+), ` + rate + `, (\d+), \d+, ` + rate + `, ` + rate + `$`)
	detailedRowRE = regexp.MustCompile(`^` + kafkaTime + `, 0, \d+\.\d{4}, ` + rate + `, \d+, ` + rate + `, \d+, -?\d+, ` + rate + `, ` + rate + `$`)
)

func lines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

func TestPerfProduceThenConsume(t *testing.T) {
	addr := startKfake(t)
	out, errOut, err := runPerf(t, "produce", "--bootstrap-server", addr, "--topic", "bench", "--partitions", "3",
		"--num-records", "20000", "--record-size", "100", "--throughput", "-1",
		"--producer-props", "acks=1", "linger.ms=1", "compression.type=lz4")
	if err != nil {
		t.Fatalf("produce: %v\n%s%s", err, out, errOut)
	}
	ls := lines(out)
	m := produceTotalRE.FindStringSubmatch(ls[len(ls)-1])
	if m == nil || m[1] != "20000" {
		t.Fatalf("final line %q does not match Kafka's format", ls[len(ls)-1])
	}

	header := "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
	for _, mode := range [][]string{nil, {"--raw"}, {"--raw", "--raw-inflight", "3"}, {"--group", "g1"}} {
		args := append([]string{"consume", "--bootstrap-server", addr, "--topic", "bench", "--messages", "20000", "--timeout", "20000"}, mode...)
		out, errOut, err := runPerf(t, args...)
		if err != nil {
			t.Fatalf("consume %v: %v\n%s%s", mode, err, out, errOut)
		}
		ls := lines(out)
		if len(ls) != 2 || ls[0] != header {
			t.Fatalf("consume %v printed:\n%s", mode, out)
		}
		m := consumeRowRE.FindStringSubmatch(ls[1])
		if m == nil {
			t.Fatalf("consume %v row %q does not match Kafka's format", mode, ls[1])
		}
		if m[2] != "20000" {
			t.Fatalf("consume %v counted %s records, want 20000", mode, m[2])
		}
		if len(mode) > 0 && mode[0] == "--group" && m[3] == "0" {
			t.Logf("group join took under a millisecond: %s", ls[1])
		}
	}
}

func TestPerfConsumeDetailedTimeoutAndHeader(t *testing.T) {
	addr := startKfake(t)
	if out, errOut, err := runPerf(t, "produce", "--bootstrap-server", addr, "--topic", "few", "--partitions", "1",
		"--num-records", "10", "--payload-monotonic", "--throughput", "-1"); err != nil {
		t.Fatalf("produce: %v\n%s%s", err, out, errOut)
	}
	// Ask for more than exists: the run ends on --timeout with Kafka's
	// warning; detailed mode prints its own header and no summary row.
	for _, raw := range []bool{false, true} {
		args := []string{"consume", "--bootstrap-server", addr, "--topic", "few", "--messages", "11",
			"--timeout", "300", "--show-detailed-stats", "--reporting-interval", "1"}
		if raw {
			args = append(args, "--raw")
		}
		out, errOut, err := runPerf(t, args...)
		if err != nil {
			t.Fatalf("consume raw=%v: %v\n%s%s", raw, err, out, errOut)
		}
		ls := lines(out)
		if ls[0] != "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec" {
			t.Fatalf("raw=%v header %q", raw, ls[0])
		}
		last := ls[len(ls)-1]
		if !strings.HasPrefix(last, "WARNING: Exiting before consuming the expected number of messages: timeout (300 ms) exceeded.") {
			t.Fatalf("raw=%v last line %q", raw, last)
		}
		for _, l := range ls[1 : len(ls)-1] {
			if !detailedRowRE.MatchString(l) {
				t.Fatalf("raw=%v detailed row %q does not match", raw, l)
			}
		}
	}
	out, _, err := runPerf(t, "consume", "--bootstrap-server", addr, "--topic", "few", "--messages", "10", "--hide-header", "--raw")
	if err != nil {
		t.Fatal(err)
	}
	if ls := lines(out); len(ls) != 1 || !consumeRowRE.MatchString(ls[0]) {
		t.Fatalf("--hide-header printed:\n%s", out)
	}
}

func TestPerfProduceConfigFileAndPayloadFile(t *testing.T) {
	addr := startKfake(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "producer.properties")
	if err := os.WriteFile(cfg, []byte("# test\nbootstrap.servers="+addr+"\nacks=all\nno.such.prop=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	payload := filepath.Join(dir, "payloads.txt")
	if err := os.WriteFile(payload, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runPerf(t, "produce", "--topic", "cfg", "--num-records", "300", "--payload-file", payload,
		"--throughput", "100000", "--producer.config", cfg, "--print-metrics")
	if err != nil {
		t.Fatalf("produce: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "no.such.prop") {
		t.Errorf("unknown property not reported: %q", errOut)
	}
	if !strings.Contains(out, "Number of messages read: 3\n") {
		t.Errorf("payload count not printed:\n%s", out)
	}
	if !strings.Contains(out, "producer-metrics:record-send-total:{client-id=perf-producer-client}") {
		t.Errorf("metrics not printed:\n%s", out)
	}
	var total string
	for _, l := range lines(out) {
		if produceTotalRE.MatchString(l) {
			total = l
		}
	}
	if !strings.HasPrefix(total, "300 records sent") {
		t.Fatalf("no final line for 300 records:\n%s", out)
	}
}

// partitioner.class=RoundRobinPartitioner puts the records of a run on
// every partition in turn.
func TestPerfProduceRoundRobin(t *testing.T) {
	addr := startKfake(t)
	out, errOut, err := runPerf(t, "produce", "--bootstrap-server", addr, "--topic", "rr", "--partitions", "4",
		"--num-records", "400", "--record-size", "10", "--producer-props",
		"partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner")
	if err != nil {
		t.Fatalf("produce: %v\n%s%s", err, out, errOut)
	}
	if strings.Contains(errOut, "partitioner.class") {
		t.Errorf("partitioner.class reported as not honoured: %q", errOut)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "rr")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 100 {
			t.Errorf("partition %d: end offset %d (%v), want 100", o.Partition, o.Offset, o.Err)
		}
	})
	if n := len(ends["rr"]); n != 4 {
		t.Errorf("%d partitions listed, want 4", n)
	}
}

func TestPerfFlagErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no payload kind":       {"produce", "--bootstrap-server", "h:1", "--topic", "t", "--num-records", "1"},
		"two payload kinds":     {"produce", "--bootstrap-server", "h:1", "--topic", "t", "--num-records", "1", "--record-size", "1", "--payload-monotonic"},
		"no brokers":            {"produce", "--topic", "t", "--num-records", "1", "--record-size", "1"},
		"zero records":          {"produce", "--bootstrap-server", "h:1", "--topic", "t", "--num-records", "0", "--record-size", "1"},
		"stray argument":        {"produce", "--bootstrap-server", "h:1", "--topic", "t", "--num-records", "1", "--record-size", "1", "acks=1"},
		"idempotence conflict":  {"produce", "--bootstrap-server", "h:1", "--topic", "t", "--num-records", "1", "--record-size", "1", "--producer-props", "acks=1", "enable.idempotence=true"},
		"consume no messages":   {"consume", "--bootstrap-server", "h:1", "--topic", "t"},
		"consume raw and group": {"consume", "--bootstrap-server", "h:1", "--topic", "t", "--messages", "1", "--raw", "--group", "g"},
		"consume no brokers":    {"consume", "--topic", "t", "--messages", "1"},
	} {
		if _, _, err := runPerf(t, args...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPerfHelpTeaches(t *testing.T) {
	for _, sub := range []string{"produce", "consume"} {
		out, _, err := runPerf(t, sub, "--help")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "weir perf "+sub) {
			t.Errorf("%s --help lacks examples:\n%s", sub, out)
		}
	}
	out, _, _ := runPerf(t, "consume", "--help")
	if !strings.Contains(out, "--raw") || !strings.Contains(out, "batch") {
		t.Errorf("consume --help does not explain --raw")
	}
}
