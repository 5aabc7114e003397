package mirror

// Process-level tests: mirror processes (this test binary run again as a
// child, mirroring the properties in WEIR_MIRROR_CHILD) killed with SIGKILL
// while records flow.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testwait"
)

func TestMain(m *testing.M) {
	if props := os.Getenv("WEIR_MIRROR_CHILD"); props != "" {
		os.Exit(runChild(props))
	}
	os.Exit(m.Run())
}

// runChild mirrors until SIGTERM, as weir mirror does.
func runChild(js string) int {
	var props map[string]string
	if err := json.Unmarshal([]byte(js), &props); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg, _, err := Parse(props)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, nil))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child is a mirror process.
type child struct {
	cmd    *exec.Cmd
	stderr syncLog
	done   chan error
}

func startChild(t *testing.T, props map[string]string) *child {
	t.Helper()
	js, err := json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$"), done: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), "WEIR_MIRROR_CHILD="+string(js))
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("mirror process %d:\n%s", c.cmd.Process.Pid, c.stderr.String())
		}
	})
	return c
}

// kill sends SIGKILL and waits for the process to end.
func (c *child) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
	c.done <- nil // later calls return at once
}

// terminate sends SIGTERM and waits for a clean exit.
func (c *child) terminate(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-c.done; err != nil {
		t.Errorf("mirror process: %v\n%s", err, c.stderr.String())
	}
	c.done <- nil
}

// feeder produces records "orders-<p>-<i>" to every partition of a topic,
// one per partition per step, until stopped.
type feeder struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	n    int // records per partition acknowledged
	err  error
}

func (c *cluster) feed(t *testing.T, topic string, partitions int32) *feeder {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	f := &feeder{stop: make(chan struct{})}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer cl.Close()
		for i := 0; ; i += 20 {
			select {
			case <-f.stop:
				return
			default:
			}
			var recs []*kgo.Record
			for j := i; j < i+20; j++ {
				for p := range partitions {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s-%d-%d", topic, p, j))})
				}
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				f.mu.Lock()
				f.err = err
				f.mu.Unlock()
				return
			}
			f.mu.Lock()
			f.n = i + 20
			f.mu.Unlock()
			time.Sleep(20 * time.Millisecond) // a steady stream, not a flood
		}
	}()
	t.Cleanup(func() { f.halt() })
	return f
}

// halt stops producing and returns the records per partition written.
func (f *feeder) halt() int {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.wg.Wait()
	return f.n
}

// total is the number of records in topic on c.
func (c *cluster) total(t *testing.T, topic string) int64 {
	t.Helper()
	ends, err := c.adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// waitGrowth waits until topic on c holds more than n records.
func (c *cluster) waitGrowth(t *testing.T, topic string, n int64) {
	t.Helper()
	testwait.Until(t, 90*time.Second, fmt.Sprintf("%s on %s to grow past %d records", topic, c.node, n), func() bool { return c.total(t, topic) > n })
}

// checkNoLoss reads remote (read_committed) until it holds every record
// "orders-<p>-<i>", i < n, of every partition. Each partition's records
// must stay in their source partition.
func (c *cluster) checkNoLoss(t *testing.T, remote, source string, partitions int32, n int) {
	t.Helper()
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{remote: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	seen := map[string]bool{}
	want := int(partitions) * n
	for len(seen) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			var missing []string
			for p := range partitions {
				for i := range n {
					if v := fmt.Sprintf("%s-%d-%d", source, p, i); !seen[v] {
						missing = append(missing, v)
					}
				}
			}
			sort.Strings(missing)
			t.Fatalf("%d of %d records missing from %s, e.g. %v", len(missing), want, remote, missing[:min(len(missing), 5)])
		}
		fs.EachRecord(func(r *kgo.Record) {
			var p int32
			var i int
			if k, _ := fmt.Sscanf(string(r.Value), source+"-%d-%d", &p, &i); k != 2 || p != r.Partition {
				t.Errorf("%s in partition %d of %s", r.Value, r.Partition, remote)
			}
			seen[string(r.Value)] = true
		})
	}
}

// committed counts the committed records of topic.
func (c *cluster) committed(t *testing.T, topic string) int64 {
	t.Helper()
	n := int64(0)
	if _, err := readTopic(context.Background(), c.cl, c.adm, topic, nil, func(*kgo.Record) { n++ }); err != nil {
		t.Fatal(err)
	}
	return n
}

func processProps(a, b *cluster) map[string]string {
	p := mirrorProps(a, b, "A->B")
	p["session.timeout.ms"] = "6000"
	p["heartbeat.interval.ms"] = "1000"
	p["emit.heartbeats.enabled"] = "false"
	return p
}

// A mirror process SIGKILLed three times while records flow loses none:
// each replacement resumes from the stored positions; the records copied
// after the last stored position are copied again (counted).
func TestMirrorKilled(t *testing.T) { killThrice(t, false) }

// In exactly-once mode a mirror process SIGKILLed three times while records
// flow neither loses nor duplicates any (for read_committed consumers).
func TestMirrorKilledExactlyOnce(t *testing.T) { killThrice(t, true) }

func killThrice(t *testing.T, exactlyOnce bool) {
	a, b := startCluster(t), startCluster(t)
	a.create(t, "orders", 4)
	props := processProps(a, b)
	if exactlyOnce {
		props["exactly.once.support"] = "required"
		props["tasks.max"] = "2"
	}
	feed := a.feed(t, "orders", 4)
	for kill := range 3 {
		before := b.total(t, "A.orders")
		c := startChild(t, props)
		b.waitGrowth(t, "A.orders", before+400)
		c.kill()
		t.Logf("kill %d after %d offsets written", kill+1, b.total(t, "A.orders"))
	}
	c := startChild(t, props)
	b.waitGrowth(t, "A.orders", b.total(t, "A.orders")+400)
	n := feed.halt()
	if feed.err != nil {
		t.Fatal(feed.err)
	}
	b.checkNoLoss(t, "A.orders", "orders", 4, n)
	c.terminate(t)
	dups := b.committed(t, "A.orders") - int64(4*n)
	t.Logf("%d records per partition, none lost, %d duplicates after 3 SIGKILLs (exactly once: %v)", n, dups, exactlyOnce)
	if exactlyOnce && dups != 0 {
		t.Errorf("%d duplicates in exactly-once mode", dups)
	}
}

// groupTasks returns the tasks each member of the flow's group holds, by
// member id.
func (c *cluster) groupTasks(t *testing.T, cfg *FlowConfig) map[string][]int32 {
	t.Helper()
	gs, err := c.adm.DescribeGroups(context.Background(), cfg.GroupID())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int32{}
	for _, m := range gs[cfg.GroupID()].Members {
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				if tp.Topic == cfg.TasksTopic() {
					out[m.MemberID] = append(out[m.MemberID], tp.Partitions...)
				}
			}
		}
	}
	return out
}

// waitTasks waits until the group has members processes, each holding some
// of the tasks and all tasks held.
func (c *cluster) waitTasks(t *testing.T, cfg *FlowConfig, members int) map[string][]int32 {
	t.Helper()
	var got map[string][]int32
	testwait.For(t, 90*time.Second, fmt.Sprintf("group %s: %d members sharing %d tasks", cfg.GroupID(), members, cfg.Tasks), func() error {
		got = c.groupTasks(t, cfg)
		held := 0
		for _, ts := range got {
			if len(ts) == 0 {
				return fmt.Errorf("a member without tasks: %v", got)
			}
			held += len(ts)
		}
		if len(got) != members || held != cfg.Tasks {
			return fmt.Errorf("tasks %v", got)
		}
		return nil
	})
	return got
}

// Two processes share the flow's tasks; a topic created meanwhile moves no
// task; one process dies and the other takes its tasks over, losing
// nothing.
func TestMirrorSharedFailover(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	a.create(t, "orders", 4)
	props := processProps(a, b)
	props["tasks.max"] = "4"
	cfg, _, err := Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	feed := a.feed(t, "orders", 4)
	p1 := startChild(t, props)
	p2 := startChild(t, props)
	shared := b.waitTasks(t, cfg.Flows[0], 2)
	b.waitGrowth(t, "A.orders", 400)

	a.create(t, "late", 2)
	a.produce(t, "late", 2, 0, 10)
	b.readAll(t, "A.late", 2, 10)
	if now := b.groupTasks(t, cfg.Flows[0]); fmt.Sprint(now) != fmt.Sprint(shared) {
		t.Errorf("a new topic moved tasks: %v, then %v", shared, now)
	}

	// weir mirror status: the two processes, sharing both topics.
	var out strings.Builder
	if err := Status(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	status := out.String()
	t.Logf("weir mirror status:\n%s", status)
	for _, re := range []string{
		`(?m)^FLOW +TOPIC +REMOTE +PARTITIONS +LAG +LAST-CHECKPOINT +PROCESSES$`,
		`(?m)^A->B +orders +A\.orders +4 +\d+ +- +1,2$`,
		`(?m)^A->B +late +A\.late +2 +0 +- +[12](,[12])?$`,
		`(?m)^PROCESS +FLOW +MEMBER +HOST +TASKS$`,
		`(?m)^1 +A->B +weir-mirror-A-B-\S+ +\S+ +\d(,\d)*$`,
		`(?m)^2 +A->B +weir-mirror-A-B-\S+ +\S+ +\d(,\d)*$`,
	} {
		if !regexp.MustCompile(re).MatchString(status) {
			t.Errorf("status lacks %s:\n%s", re, status)
		}
	}

	p1.kill()
	start := time.Now()
	alone := b.waitTasks(t, cfg.Flows[0], 1)
	t.Logf("tasks %v taken over %v after the SIGKILL (session.timeout.ms=6000)", alone, time.Since(start).Round(100*time.Millisecond))
	b.waitGrowth(t, "A.orders", b.total(t, "A.orders")+400)
	n := feed.halt()
	if feed.err != nil {
		t.Fatal(feed.err)
	}
	b.checkNoLoss(t, "A.orders", "orders", 4, n)
	p2.terminate(t)
	dups := b.committed(t, "A.orders") - int64(4*n)
	t.Logf("%d records per partition, none lost, %d duplicates after one of two processes died", n, dups)
}
