package reassign

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/clitest"
	"weir/internal/cli/tool"
	"weir/internal/cli/topics"
	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// Kafka's assignment algorithm gives what Kafka's own tests expect of it,
// with its random start fixed at 0.
func TestAssignReplicasAsKafka(t *testing.T) {
	defer func(f func(int) int) { reassignRandom = f }(reassignRandom)
	reassignRandom = func(int) int { return 0 }
	var unaware []brokerRack
	for i := int32(0); i < 5; i++ {
		unaware = append(unaware, brokerRack{id: i})
	}
	got, err := assignReplicas(unaware, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]int32{0: {0, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 4}, 3: {3, 4, 0}, 4: {4, 0, 1}, 5: {0, 2, 3}, 6: {1, 3, 4}, 7: {2, 4, 0}, 8: {3, 0, 1}, 9: {4, 1, 2}}
	if reassignmentJSON(toParts(got)) != reassignmentJSON(toParts(want)) {
		t.Errorf("rack unaware: %v, want %v", got, want)
	}
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	if got := rackAlternated(racks); tool.JoinInts(got) != "0,3,1,5,4,2" {
		t.Errorf("rack alternated list %v", got)
	}
	var aware []brokerRack
	for id, r := range racks {
		aware = append(aware, brokerRack{id, r})
	}
	got, err = assignReplicas(aware, 7, 3)
	if err != nil {
		t.Fatal(err)
	}
	want = map[int][]int32{0: {0, 3, 1}, 1: {3, 1, 5}, 2: {1, 5, 4}, 3: {5, 4, 2}, 4: {4, 2, 0}, 5: {2, 0, 3}, 6: {0, 4, 2}}
	if reassignmentJSON(toParts(got)) != reassignmentJSON(toParts(want)) {
		t.Errorf("rack aware: %v, want %v", got, want)
	}
	if _, err := assignReplicas(unaware[:2], 1, 3); err == nil || err.Error() != "Replication factor: 3 larger than available brokers: 2." {
		t.Errorf("rf above brokers: %v", err)
	}
}

func toParts(m map[int][]int32) map[topicPart][]int32 {
	out := map[topicPart][]int32{}
	for p, r := range m {
		out[topicPart{"t", int32(p)}] = r
	}
	return out
}

// The reassign-partitions tool against a three-node weir cluster: a
// generated plan, executed under a throttle, verified (removing the
// throttle), listed and cancelled, and Kafka's messages for bad input,
// compared with testdata/reassign_partitions.golden.
func TestReassignPartitionsCommand(t *testing.T) {
	defer func(f func(int) int) { reassignRandom = f }(reassignRandom)
	reassignRandom = func(int) int { return 0 }
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	tr := clitest.Transcript{Weir: weir}
	dir := t.TempDir()
	tr.Sub(dir, "<dir>")
	run := func(args ...string) clitest.Result {
		t.Helper()
		r := tr.Run(t, append([]string{"reassign-partitions", "--bootstrap-server", bs}, args...)...)
		clitest.Settled(t, c)
		return r
	}
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", bs, "--create", "--topic", "orders", "--replica-assignment", "1:2,2:3"); r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	clitest.Settled(t, c)
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("record")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	run("--generate", "--topics-to-move-json-file", file("topics.json", `{"version":1,"topics":[{"topic":"orders"}]}`), "--broker-list", "1,2,3")
	plan := file("plan.json", `{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3],"log_dirs":["any","any"]},{"topic":"orders","partition":1,"replicas":[3,1]}]}`)
	run("--list")
	run("--execute", "--reassignment-json-file", plan, "--throttle", "100000000")
	testwait.For(t, 30*time.Second, "reassignments done", func() error {
		if r := weir.Run(t, "reassign-partitions", "--bootstrap-server", bs, "--list"); r.Out != "No partition reassignments found.\n" {
			return &cliError{msg: r.Out}
		}
		return nil
	})
	clitest.Settled(t, c)
	throttles := func() string {
		t.Helper()
		rc, err := adm.DescribeTopicConfigs(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		var set []string
		for _, cfg := range rc[0].Configs {
			if strings.Contains(cfg.Key, "throttled") && cfg.Value != nil && *cfg.Value != "" {
				set = append(set, cfg.Key+"="+*cfg.Value)
			}
		}
		slices.Sort(set)
		return strings.Join(set, " ")
	}
	if got := throttles(); got != "follower.replication.throttled.replicas=0:3,1:1 leader.replication.throttled.replicas=0:1,0:2,1:2,1:3" {
		t.Errorf("throttles while moving: %q", got)
	}
	run("--verify", "--reassignment-json-file", plan)
	if got := throttles(); got != "" {
		t.Errorf("throttles after --verify: %q", got)
	}
	run("--verify", "--reassignment-json-file", file("other.json", `{"partitions":[{"topic":"orders","partition":0,"replicas":[1,2]}]}`), "--preserve-throttles")
	run("--cancel", "--reassignment-json-file", plan)
	run("--execute", "--reassignment-json-file", plan)

	// Bad input.
	run("--execute", "--reassignment-json-file", file("empty.json", `{"version":1,"partitions":[]}`))
	run("--execute", "--reassignment-json-file", file("dup.json", `{"partitions":[{"topic":"orders","partition":0,"replicas":[1,1]}]}`))
	run("--execute", "--reassignment-json-file", file("dupparts.json", `{"partitions":[{"topic":"orders","partition":0,"replicas":[1]},{"topic":"orders","partition":0,"replicas":[2]}]}`))
	run("--execute", "--reassignment-json-file", file("broker.json", `{"partitions":[{"topic":"orders","partition":0,"replicas":[1,9]}]}`))
	run("--execute", "--reassignment-json-file", file("nopart.json", `{"partitions":[{"topic":"orders","partition":7,"replicas":[1,2]}]}`))
	run("--execute", "--reassignment-json-file", file("notopic.json", `{"partitions":[{"topic":"nope","partition":0,"replicas":[1,2]}]}`))
	run("--execute", "--reassignment-json-file", file("logdir.json", `{"partitions":[{"topic":"orders","partition":0,"replicas":[1,2],"log_dirs":["/data","any"]}]}`))
	run("--execute", "--reassignment-json-file", file("bad.json", `{"partitions":`))
	run("--execute", "--reassignment-json-file", filepath.Join(dir, "missing.json"))
	run("--generate", "--topics-to-move-json-file", file("nope.json", `{"topics":[{"topic":"nope"}]}`), "--broker-list", "1,2")
	run("--generate", "--topics-to-move-json-file", file("topics.json", `{"version":1,"topics":[{"topic":"orders"}]}`), "--broker-list", "1,1")
	run("--generate", "--topics-to-move-json-file", file("badtopics.json", `nope`), "--broker-list", "1")
	run("--generate", "--topics-to-move-json-file", file("topics.json", `{"version":1,"topics":[{"topic":"orders"}]}`), "--broker-list", "1")
	run("--generate", "--broker-list", "1")
	run("--verify", "--reassignment-json-file", plan, "--throttle", "5")
	run("--list", "--execute")
	run("--verify")
	tr.Run(t, "reassign-partitions", "--list")
	clitest.CheckGolden(t, "reassign_partitions.golden", tr.String())
}

// The same tool against kfake.
func TestReassignPartitionsCommandKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	tr := clitest.Transcript{Weir: weir}
	dir := t.TempDir()
	tr.Sub(dir, "<dir>")
	plan := filepath.Join(dir, "plan.json")
	os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[0]}]}`), 0o644)
	tr.Run(t, "reassign-partitions", "--bootstrap-server", bs, "--list")
	tr.Run(t, "reassign-partitions", "--bootstrap-server", bs, "--execute", "--reassignment-json-file", plan)
	clitest.CheckGolden(t, "reassign_partitions_kfake.golden", tr.String())
}

// --execute --wait on a partition holding 200 MiB, moved under a throttle
// of 50 MB/s: progress lines until done, then --verify removes the
// throttle.
func TestReassignPartitionsWait(t *testing.T) {
	defer func(w struct{ terminal, plain time.Duration }) { waitIntervals = w }(waitIntervals)
	waitIntervals.plain = 200 * time.Millisecond
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	if r := weir.Run(t, "topics", "--bootstrap-server", bs, "--create", "--topic", "big", "--replica-assignment", "1"); r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	clitest.Settled(t, c)
	cl := c.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20))
	value := make([]byte, 256<<10)
	recs := make([]*kgo.Record, 800) // 200 MiB
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "big", Value: value}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"big","partition":0,"replicas":[2]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := weir.Run(t, "reassign-partitions", "--bootstrap-server", bs, "--execute", "--reassignment-json-file", plan, "--throttle", "50000000", "--wait")
	if r.Code != 0 {
		t.Fatalf("--execute --wait: %+v", r)
	}
	t.Logf("--execute --wait printed:\n%s", r.Out)
	// Progress lines of the one moving replica, between the start and the
	// end.
	line := regexp.MustCompile(`^big-0: broker 2 has [0-9.]+ [KMG]?i?B of 200\.0 MiB \(\d+%\)$`)
	before, after, ok := strings.Cut(r.Out, "Successfully started partition reassignment for big-0\n")
	progress, done, ok2 := strings.Cut(after, "Reassignment of 1 partition completed.\nRun --verify to remove the throttle.\n")
	if !ok || !ok2 || done != "" || progress == "" || !strings.Contains(before, "The inter-broker throttle limit was set to 50000000 B/s") {
		t.Fatalf("--execute --wait printed:\n%s", r.Out)
	}
	for _, l := range strings.Split(strings.TrimSuffix(progress, "\n"), "\n") {
		if !line.MatchString(l) {
			t.Errorf("progress line %q", l)
		}
	}
	adm := kadm.NewClient(cl)
	throttle := func() string {
		rc, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range rc[0].Configs {
			if cfg.Key == "follower.replication.throttled.rate" && cfg.Value != nil && cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig {
				return *cfg.Value
			}
		}
		return ""
	}
	if got := throttle(); got != "50000000" {
		t.Fatalf("throttle after --wait: %q", got)
	}
	r = weir.Run(t, "reassign-partitions", "--bootstrap-server", bs, "--verify", "--reassignment-json-file", plan)
	if r.Code != 0 || !strings.HasPrefix(r.Out, "Status of partition reassignment:\nReassignment of partition big-0 is completed.\n") {
		t.Fatalf("--verify: %+v", r)
	}
	if got := throttle(); got != "" {
		t.Errorf("throttle after --verify: %q", got)
	}
	md, err := adm.ListEndOffsets(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := md.Lookup("big", 0); o.Offset != 800 {
		t.Errorf("end offset after the move: %d, want 800", o.Offset)
	}
}

// On a terminal, --wait draws a bar per moving replica over its last
// drawing.
func TestReassignProgressBars(t *testing.T) {
	var b strings.Builder
	p := []replicaProgress{{Topic: "big", Partition: 0, Broker: 2, Have: 50 << 20, Want: 200 << 20}, {Topic: "big", Partition: 1, Broker: 3}}
	if n := drawBars(&b, p, 0); n != 2 {
		t.Fatalf("drew %d lines", n)
	}
	drawBars(&b, p[:1], 2)
	want := "\x1b[2Kbig-0 -> broker 2 [=======>                      ]  25% 50.0 MiB / 200.0 MiB\n" +
		"\x1b[2Kbig-1 -> broker 3 [==============================] 100% 0 B / 0 B\n" +
		"\x1b[2A\x1b[2Kbig-0 -> broker 2 [=======>                      ]  25% 50.0 MiB / 200.0 MiB\n\x1b[J"
	if b.String() != want {
		t.Errorf("bars:\n%q\nwant\n%q", b.String(), want)
	}
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand, topics.NewCommand}
