package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/clitest"
	"weir/internal/cli/configs"
	"weir/internal/cli/election"
	"weir/internal/cli/groups"
	"weir/internal/cli/reassign"
	"weir/internal/cli/topics"
	"weir/internal/cli/txns"
	"weir/internal/clustertest"
	"weir/internal/testwait"
	"weir/internal/txntest"
)

// runDoctor runs weir doctor with --output json and returns its findings
// and exit code.
func runDoctor(t *testing.T, bs string, args ...string) ([]finding, clitest.Result) {
	t.Helper()
	r := weir.Run(t, append([]string{"doctor", "--bootstrap-server", bs, "--output", "json"}, args...)...)
	var out struct{ Findings []finding }
	if err := json.Unmarshal([]byte(r.Out), &out); err != nil {
		t.Fatalf("doctor printed no JSON (%v): %+v", err, r)
	}
	if (r.Code == 1) != (len(out.Findings) > 0) || r.Code > 1 {
		t.Fatalf("doctor exited %d with %d findings: %+v", r.Code, len(out.Findings), r)
	}
	return out.Findings, r
}

func findingOf(fs []finding, check, subject string) (finding, bool) {
	for _, f := range fs {
		if f.Check == check && f.Subject == subject {
			return f, true
		}
	}
	return finding{}, false
}

// runFix runs a finding's fix when it is one weir command.
func runFix(t *testing.T, f finding) {
	t.Helper()
	args := strings.Fields(f.Fix)
	if args[0] != "weir" || strings.ContainsAny(f.Fix, "&|>(") {
		t.Fatalf("fix of %s is not one command: %s", f.Check, f.Fix)
	}
	if r := weir.Run(t, args[1:]...); r.Code != 0 {
		t.Fatalf("fix %q: %+v", f.Fix, r)
	}
}

// A cluster set up with every misconfiguration doctor knows: each is
// found, with its fix; the fixes that are one command are run, and their
// findings go. Then a node stops, and its offline, under-replicated and
// at-min-ISR partitions are found.
func TestDoctorFindsEachMisconfiguration(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{
		"offsets.topic.replication.factor":          "3",
		"offsets.topic.num.partitions":              "3",
		"transaction.state.log.replication.factor":  "3",
		"transaction.state.log.num.partitions":      "3",
		"transaction.state.log.min.isr":             "2",
		"min.insync.replicas":                       "2",
		"auto.leader.rebalance.enable":              "false",
		"transaction.partition.verification.enable": "false",
	}, NodeOverrides: map[int32]map[string]string{
		1: {"broker.rack": "r1"}, 2: {"broker.rack": "r1"}, 3: {"broker.rack": "r2"},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	create := func(topic string, args ...string) {
		t.Helper()
		if r := weir.Run(t, append([]string{"topics", "--bootstrap-server", bs, "--create", "--topic", topic}, args...)...); r.Code != 0 {
			t.Fatalf("create %s: %+v", topic, r)
		}
	}
	create("weak", "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=1")
	create("unclean", "--replica-assignment", "1:3", "--config", "unclean.leader.election.enable=true")
	create("big", "--replica-assignment", "1", "--config", "max.message.bytes=5242880")
	create("onerack", "--replica-assignment", "1:2")
	create("pref", "--replica-assignment", "1:3")
	skewed := strings.TrimSuffix(strings.Repeat("1,", 30), ",")
	create("skewed", "--replica-assignment", skewed)
	create("heavy", "--replica-assignment", "2", "--config", "min.insync.replicas=1")
	create("events", "--replica-assignment", "1:2:3")
	create("hang", "--replica-assignment", "1:2:3")
	create("urp", "--replica-assignment", "1:2:3")
	create("offline", "--replica-assignment", "3")
	clitest.Settled(t, c)

	// pref: the same replicas in another order, so that 3 is preferred
	// while 1 keeps leading.
	plan := t.TempDir() + "/plan.json"
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"pref","partition":0,"replicas":[3,1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := weir.Run(t, "reassign-partitions", "--bootstrap-server", bs, "--execute", "--reassignment-json-file", plan); r.Code != 0 {
		t.Fatalf("reassign pref: %+v", r)
	}
	testwait.For(t, 30*time.Second, "pref reordered", func() error {
		md, err := adm.Metadata(ctx, "pref")
		if err != nil {
			return err
		}
		p := md.Topics["pref"].Partitions[0]
		if len(p.Replicas) != 2 || p.Replicas[0] != 3 || p.Leader != 1 {
			return fmt.Errorf("pref-0: replicas %v leader %d", p.Replicas, p.Leader)
		}
		return nil
	})

	// heavy: 3 MB on broker 2 (random, so that compression keeps it so).
	value := make([]byte, 100<<10)
	rand.NewChaCha8([32]byte{1}).Read(value)
	for i := 0; i < 30; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "heavy", Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txntest.OpenHanging(t, ctx, cl, cl.Broker(1), "h", "hang")

	// stuck: a group whose committed offset stays while events grow;
	// nocommit: a group with a member that commits nothing.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("e")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "events", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "stuck", offs); err != nil {
		t.Fatal(err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumerGroup("nocommit"), kgo.ConsumeTopics("events"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Add(2)
	go func() {
		defer wg.Done()
		for bg.Err() == nil {
			consumer.PollFetches(bg)
		}
	}()
	go func() { // events keep coming
		defer wg.Done()
		for bg.Err() == nil {
			cl.ProduceSync(bg, &kgo.Record{Topic: "events", Value: []byte("e")})
			select {
			case <-bg.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	testwait.For(t, 30*time.Second, "nocommit stable", func() error {
		ds, err := adm.DescribeGroups(ctx, "nocommit")
		if err != nil {
			return err
		}
		if d := ds["nocommit"]; d.State != "Stable" || len(d.Members) != 1 {
			return fmt.Errorf("nocommit: %s with %d members", d.State, len(d.Members))
		}
		return nil
	})

	args := []string{"--lag-interval", "1s", "--max-transaction-timeout", "0", "--imbalance-min-bytes", "1048576"}
	expected := []struct {
		check, subject, fix string // fix: "" when not one command
	}{
		{"min-insync-replicas", "topic weak", "weir configs --bootstrap-server " + bs + " --entity-type topics --entity-name weak --alter --add-config min.insync.replicas=2"},
		{"unclean-leader-election", "topic unclean", "weir configs --bootstrap-server " + bs + " --entity-type topics --entity-name unclean --alter --add-config unclean.leader.election.enable=false"},
		{"max-message-bytes", "topic big", "weir configs --bootstrap-server " + bs + " --entity-type topics --entity-name big --alter --add-config max.message.bytes=1048588"},
		{"single-rack", "partition onerack-0", ""},
		{"preferred-leader", "partition pref-0", "weir leader-election --bootstrap-server " + bs + " --election-type PREFERRED --topic pref --partition 0"},
		{"leader-imbalance", "broker 1", ""},
		{"bytes-imbalance", "broker 2", ""},
		{"group-lag-growing", "group stuck", ""},
		{"group-no-commits", "group nocommit", ""},
		{"hanging-transaction", "", ""},
	}
	// The lag sampled in one second must grow: on a loaded machine the
	// producer may stall that long, so look again until every finding is
	// there.
	var findings []finding
	testwait.For(t, 60*time.Second, "every misconfiguration found", func() error {
		findings, _ = runDoctor(t, bs, args...)
		for _, e := range expected {
			if _, ok := findingOf(findings, e.check, e.subject); !ok && e.subject != "" {
				return fmt.Errorf("no %s finding for %q in %+v", e.check, e.subject, findings)
			}
		}
		return nil
	})
	for _, e := range expected {
		f, ok := findingOf(findings, e.check, e.subject)
		if e.check == "hanging-transaction" {
			for _, x := range findings {
				if x.Check == e.check && strings.HasPrefix(x.Subject, "partition hang-0, producer ") {
					f, ok = x, true
					e.fix = x.Fix
				}
			}
		}
		switch {
		case !ok:
			t.Errorf("no %s finding for %q in %+v", e.check, e.subject, findings)
		case e.fix != "" && f.Fix != e.fix:
			t.Errorf("%s fix:\n%s\nwant\n%s", e.check, f.Fix, e.fix)
		case e.fix != "":
			runFix(t, f)
		}
	}
	if t.Failed() {
		return
	}
	clitest.Settled(t, c)
	testwait.For(t, 30*time.Second, "fixed findings gone", func() error {
		findings, _ := runDoctor(t, bs, "--lag-interval", "0", "--max-transaction-timeout", "0", "--imbalance-min-bytes", "1048576")
		for _, e := range expected {
			if _, ok := findingOf(findings, e.check, e.subject); ok && e.fix != "" || e.check == "hanging-transaction" && hasCheck(findings, e.check) {
				return fmt.Errorf("%s %s still found", e.check, e.subject)
			}
		}
		return nil
	})
	stop()
	wg.Wait()

	// Node 3 stops: offline is offline, urp at its minimum ISR.
	c.Stop(2)
	testwait.For(t, 30*time.Second, "a stopped node's partitions found", func() error {
		findings, _ := runDoctor(t, bs, "--lag-interval", "0")
		for _, e := range [][2]string{{"offline-partition", "partition offline-0"}, {"under-replicated", "partition urp-0"}, {"at-min-isr", "partition urp-0"}} {
			f, ok := findingOf(findings, e[0], e[1])
			if !ok {
				return fmt.Errorf("no %s for %s in %+v", e[0], e[1], findings)
			}
			if !strings.HasPrefix(f.Fix, "start broker 3 again") {
				return fmt.Errorf("%s fix: %s", e[0], f.Fix)
			}
		}
		return nil
	})
}

func hasCheck(fs []finding, check string) bool {
	for _, f := range fs {
		if f.Check == check {
			return true
		}
	}
	return false
}

// A well-configured cluster in use has no findings: exit 0, and the text
// output says so. Bad flags and a cluster that does not answer exit 2.
func TestDoctorCleanCluster(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{
		"offsets.topic.replication.factor": "3",
		"offsets.topic.num.partitions":     "3",
		"min.insync.replicas":              "2",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	cl := c.Client(t)
	if r := weir.Run(t, "topics", "--bootstrap-server", bs, "--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2"); r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	clitest.Settled(t, c)
	clitest.ProduceKeyed(t, ctx, cl, "orders", 30) // where the default partitioner puts them
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	ends.Each(func(o kadm.ListedOffset) {
		offs.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	})
	if _, err := adm.CommitOffsets(ctx, "billing", offs); err != nil {
		t.Fatal(err)
	}
	clitest.Settled(t, c)
	findings, _ := runDoctor(t, bs, "--lag-interval", "500ms")
	if len(findings) > 0 {
		t.Fatalf("findings on a clean cluster: %+v", findings)
	}
	if r := weir.Run(t, "doctor", "--bootstrap-server", bs, "--lag-interval", "0"); r.Code != 0 || r.Out != "No findings.\n" {
		t.Fatalf("text output on a clean cluster: %+v", r)
	}
	// Bad input.
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"doctor"}, `Missing required argument "[bootstrap-server]"`},
		{[]string{"doctor", "--bootstrap-server", bs, "--output", "yaml"}, `--output must be text or json, not "yaml"`},
		{[]string{"doctor", "--bootstrap-server", bs, "--imbalance-ratio", "1"}, "--imbalance-ratio must be above 1"},
		{[]string{"doctor", "--bootstrap-server", "127.0.0.1:1", "--command-config", "/nonexistent.properties"}, "Error: open /nonexistent.properties: no such file or directory"},
	} {
		if r := weir.Run(t, tc.args...); r.Code != 2 || !strings.HasPrefix(r.Err, tc.err+"\n") {
			t.Errorf("%v: %+v, want exit 2 and %q", tc.args, r, tc.err)
		}
	}
}

// doctor against kfake, a plain Kafka implementation: its replicated topic
// with min.insync.replicas=1 is found, the fix applied, and then nothing.
func TestDoctorKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	tr := clitest.Transcript{Weir: weir}
	tr.Sub(bs, "<bootstrap>")
	tr.Run(t, "doctor", "--bootstrap-server", bs, "--lag-interval", "0")
	tr.Run(t, "configs", "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "min.insync.replicas=2")
	tr.Run(t, "doctor", "--bootstrap-server", bs, "--lag-interval", "0")
	tr.Run(t, "doctor", "--bootstrap-server", bs, "--lag-interval", "0", "--output", "json")
	clitest.CheckGolden(t, "doctor_kfake.golden", tr.String())
}

// A cluster seeded with each risk of the seeds' incidents (and records
// that must not be taken for one) has exactly those findings, each with its
// cause: a topic's own setting is a finding of the topic, a broker default
// one finding of the broker setting for every topic that takes it; a topic
// grown from 3 to 6 partitions under keyed writes is found from its
// records. The broker settings' fixes are run, and their findings go.
func TestDoctorSeededRisks(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Overrides: map[string]string{
		// A raised broker default: above replica.fetch.max.bytes (1 MiB).
		"message.max.bytes":            "4194304",
		"offsets.topic.num.partitions": "3",
		// __consumer_offsets keeps clustertest's replication factor of 1.
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bs := c.Node(0).Addr
	create := func(topic string, args ...string) {
		t.Helper()
		if r := weir.Run(t, append([]string{"topics", "--bootstrap-server", bs, "--create", "--topic", topic}, args...)...); r.Code != 0 {
			t.Fatalf("create %s: %+v", topic, r)
		}
	}
	own := "max.message.bytes=1048588"
	create("orders", "--partitions", "3", "--replication-factor", "3")
	create("stable", "--partitions", "3", "--replication-factor", "3")
	create("payments", "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=1")
	create("ledger", "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2", "--config", "unclean.leader.election.enable=true")
	create("blobs", "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2", "--config", "max.message.bytes=8388608")
	create("scratch", "--partitions", "1", "--replication-factor", "1")
	create("manual", "--partitions", "4", "--replication-factor", "3", "--config", "min.insync.replicas=2", "--config", own)
	clitest.Settled(t, c)

	// orders: keyed writes over 3 partitions, 3 more partitions, keyed
	// writes over 6 (a client that sees the 6).
	cl := c.Client(t)
	clitest.ProduceKeyed(t, ctx, cl, "orders", 60)
	clitest.ProduceKeyed(t, ctx, cl, "stable", 60)
	if r := weir.Run(t, "topics", "--bootstrap-server", bs, "--alter", "--topic", "orders", "--partitions", "6", "--force"); r.Code != 0 {
		t.Fatalf("alter orders: %+v", r)
	}
	clitest.Settled(t, c)
	after := c.Client(t)
	clitest.ProduceKeyed(t, ctx, after, "orders", 60)
	// manual: keyed records each to the next partition, as a producer with
	// its own partitioner would: no smaller count explains them.
	manual := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 40; i++ {
		r := &kgo.Record{Topic: "manual", Partition: int32(i % 4), Key: []byte(fmt.Sprintf("m%d", i)), Value: []byte("v")}
		if err := manual.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// __consumer_offsets is created with one replica per partition.
	adm := kadm.NewClient(cl)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "billing", offs); err != nil {
		t.Fatal(err)
	}
	clitest.Settled(t, c)

	type want struct {
		check, subject string
		has            []string // in the problem
	}
	configs := "weir configs --bootstrap-server " + bs + " "
	expected := []want{
		{"min-insync-replicas", "topic payments", nil},
		{"unclean-leader-election", "topic ledger", nil},
		{"max-message-bytes", "topic blobs", []string{"max.message.bytes=8388608"}},
		{"min-insync-replicas", "broker setting min.insync.replicas",
			[]string{"min.insync.replicas=1 (the default: no broker sets it)", "replicated topics orders, stable take it"}},
		{"max-message-bytes", "broker setting message.max.bytes",
			[]string{"message.max.bytes=4194304 (set in the brokers' server.properties) is above the brokers' replica.fetch.max.bytes=1048576 and the producers' max.request.size=1048576",
				"topics __consumer_offsets, ledger, orders, payments, scratch, stable take it"}},
		{"single-replica", "topic scratch", []string{"default.replication.factor=1"}},
		{"single-replica", "topic __consumer_offsets", []string{"offsets.topic.replication.factor=1"}},
		{"partitions-grown", "topic orders", []string{"partitions 0,1,2 were partitioned over 3 partitions", "the topic now has 6"}},
	}
	var findings []finding
	testwait.For(t, 30*time.Second, "exactly the seeded findings", func() error {
		findings, _ = runDoctor(t, bs, "--lag-interval", "0")
		if len(findings) != len(expected) {
			return fmt.Errorf("%d findings, want %d: %+v", len(findings), len(expected), findings)
		}
		for _, e := range expected {
			f, ok := findingOf(findings, e.check, e.subject)
			if !ok {
				return fmt.Errorf("no %s finding for %q in %+v", e.check, e.subject, findings)
			}
			for _, s := range e.has {
				if !strings.Contains(f.Problem, s) {
					return fmt.Errorf("%s %s: %q not in %q", e.check, e.subject, s, f.Problem)
				}
			}
		}
		return nil
	})
	fixes := map[string]string{
		"topic payments":                     configs + "--entity-type topics --entity-name payments --alter --add-config min.insync.replicas=2",
		"topic ledger":                       configs + "--entity-type topics --entity-name ledger --alter --add-config unclean.leader.election.enable=false",
		"topic blobs":                        configs + "--entity-type topics --entity-name blobs --alter --add-config max.message.bytes=1048588",
		"broker setting min.insync.replicas": configs + "--entity-type brokers --entity-default --alter --add-config min.insync.replicas=2",
		"broker setting message.max.bytes":   configs + "--entity-type brokers --entity-default --alter --add-config message.max.bytes=1048588",
	}
	for _, f := range findings {
		if want, ok := fixes[f.Subject]; ok && f.Fix != want {
			t.Errorf("%s %s fix:\n%s\nwant\n%s", f.Check, f.Subject, f.Fix, want)
		}
	}
	if f, _ := findingOf(findings, "single-replica", "topic scratch"); !strings.HasSuffix(f.Fix, `"replicas":[`+scratchReplicas(t, ctx, adm)+`]}]}' > replicas.json && weir reassign-partitions --bootstrap-server `+bs+` --execute --reassignment-json-file replicas.json`) {
		t.Errorf("single-replica fix of scratch: %s", f.Fix)
	}
	if t.Failed() {
		return
	}
	// The broker settings' fixes: their findings go, and no topic's
	// appears in their place.
	for _, s := range []string{"broker setting min.insync.replicas", "broker setting message.max.bytes"} {
		for _, f := range findings {
			if f.Subject == s {
				runFix(t, f)
			}
		}
	}
	clitest.Settled(t, c)
	testwait.For(t, 30*time.Second, "the broker settings' findings gone", func() error {
		findings, _ := runDoctor(t, bs, "--lag-interval", "0")
		if len(findings) != len(expected)-2 {
			return fmt.Errorf("%d findings, want %d: %+v", len(findings), len(expected)-2, findings)
		}
		for _, e := range expected {
			if _, ok := findingOf(findings, e.check, e.subject); ok == strings.HasPrefix(e.subject, "broker setting") {
				return fmt.Errorf("%s %s: found %v", e.check, e.subject, ok)
			}
		}
		return nil
	})
}

// scratchReplicas is what single-replica's fix gives scratch-0: its
// replica, then the two brokers after it.
func scratchReplicas(t *testing.T, ctx context.Context, adm *kadm.Client) string {
	t.Helper()
	md, err := adm.Metadata(ctx, "scratch")
	if err != nil {
		t.Fatal(err)
	}
	r := md.Topics["scratch"].Partitions[0].Replicas[0]
	rs := []string{fmt.Sprint(r)}
	for i := int32(1); i < 3; i++ {
		rs = append(rs, fmt.Sprint((r-1+i)%3+1))
	}
	return strings.Join(rs, ",")
}

// earlierCounts finds the counts that explain keys placed by murmur2 over
// fewer partitions, and none for keys another partitioner placed or too few
// misplaced keys.
func TestDoctorEarlierCounts(t *testing.T) {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("")
	placed := func(n int, keys ...int) []keyedRecord {
		var out []keyedRecord
		for _, k := range keys {
			key := fmt.Sprintf("key-%d", k)
			out = append(out, keyedRecord{key, int32(part.Partition(&kgo.Record{Key: []byte(key)}, n))})
		}
		return out
	}
	span := func(from, to int) []int {
		var ks []int
		for k := from; k < to; k++ {
			ks = append(ks, k)
		}
		return ks
	}
	grown := append(placed(3, span(0, 50)...), placed(6, span(0, 50)...)...)
	twice := append(append(placed(3, span(0, 50)...), placed(6, span(50, 100)...)...), placed(12, span(100, 150)...)...)
	var roundRobin []keyedRecord
	for i := range 50 {
		roundRobin = append(roundRobin, keyedRecord{fmt.Sprintf("key-%d", i), int32(i % 6)})
	}
	for _, tc := range []struct {
		name    string
		n       int
		records []keyedRecord
		want    []int
	}{
		{"grown 3 to 6", 6, grown, []int{3}},
		{"grown 3 to 6 to 12", 12, twice, []int{3, 6}},
		{"never grown", 6, placed(6, span(0, 50)...), nil},
		{"another partitioner", 6, roundRobin, nil},
		{"too few keys", 6, placed(3, 0, 1, 2, 3, 4, 5), nil},
	} {
		got, _ := earlierCounts(tc.n, tc.records)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: counts %v, want %v", tc.name, got, tc.want)
		}
	}
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand, topics.NewCommand, configs.NewCommand, reassign.NewCommand, election.NewCommand, groups.NewCommand, txns.NewCommand}
