package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/servertest"
	"weir/internal/testport"
)

// A topic, its records and its dynamic config survive a clean restart.
func TestRestartKeepsTopicsRecordsAndConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("123456")}, "orders"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	n.Restart()
	cl, err = kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm = kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 50 {
		t.Fatalf("end offsets sum to %d after restart, want 50", total)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.MaybeValue() != "123456" || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
				t.Fatalf("retention.ms after restart = %q from %s", c.MaybeValue(), c.Source)
			}
		}
	}
	if !found {
		t.Fatal("retention.ms not described")
	}
}

// A compacted topic keeps the latest value of each key once the cleaner
// has run: the broker schedules it, no test hook involved.
func TestCompactedTopicKeepsLatestValuePerKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"log.cleaner.backoff.ms": "50"}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DefaultProduceTopic("latest"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.ms":                kadm.StringPtr("1"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, "latest"); err != nil {
		t.Fatal(err)
	}
	const keys, rounds = 10, 30
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			rec := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", k)), Value: []byte(fmt.Sprintf("v%d", r))}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Wait until a read from the start returns at most a few values per
	// key (the active segment is never cleaned), and check that every
	// key's last value is the latest written.
	for {
		latest, total := readAll(ctx, t, n.Addr, "latest")
		if len(latest) != keys {
			t.Fatalf("read %d keys, want %d", len(latest), keys)
		}
		for k, v := range latest {
			if v != fmt.Sprintf("v%d", rounds-1) {
				t.Fatalf("key %s reads %s, want v%d", k, v, rounds-1)
			}
		}
		if total < keys*rounds/3 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the cleaner did not compact the topic: still %d records", total)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readAll consumes a single-partition topic from the start to its end and
// returns the last value of each key and the number of records read.
func readAll(ctx context.Context, t *testing.T, addr, topic string) (map[string]string, int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	latest := map[string]string{}
	total := 0
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			latest[string(r.Key)] = string(r.Value)
			total++
			next = r.Offset + 1
		})
	}
	return latest, total
}

// A consumer group reads a topic, commits, and after a broker restart a
// new member of the group resumes from the committed offsets.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"group.initial.rebalance.delay.ms": "0"}})
	produceN := func(from, count int) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DefaultProduceTopic("orders"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := from; i < from+count; i++ {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r%d", i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	consume := func(want int) map[string]bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		seen := map[string]bool{}
		for len(seen) < want {
			fs := cl.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("poll after %d records: %v", len(seen), err)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		return seen
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	produceN(0, 300)
	if got := consume(300); len(got) != 300 {
		t.Fatalf("first member read %d records", len(got))
	}
	n.Restart()
	produceN(300, 50)
	got := consume(50)
	for v := range got {
		var i int
		fmt.Sscanf(v, "r%d", &i)
		if i < 300 {
			t.Fatalf("after the restart the group re-read %s: committed offsets were lost", v)
		}
	}
}

// A node restarted after a crash does not wait out the broker session its
// previous process left (here ten minutes, past the registration's
// timeout): the registration of a broker that crashed while unfenced
// refuses a new incarnation as a duplicate until its session ends. Its
// controller, active again, fences that registration at once: the old
// address refuses connections (a port of 0 is a new port now), or is one
// this process serves (a fixed port).
func TestCrashedNodeDoesNotWaitOutItsPreviousSession(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		t.Run(fmt.Sprintf("fixed port %v", fixed), func(t *testing.T) {
			overrides := map[string]string{"broker.session.timeout.ms": "600000"}
			if fixed {
				ports, err := testport.Free(2)
				if err != nil {
					t.Fatal(err)
				}
				overrides["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[0], ports[1])
				overrides["advertised.listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", ports[0])
				overrides["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", ports[1])
			}
			n := servertest.Start(t, servertest.Options{Overrides: overrides})
			before := n.Server.Image().Brokers[1]
			if before == nil || before.Fenced {
				t.Fatalf("broker before the crash: %+v", before)
			}
			n.Server.Kill()
			m := servertest.Start(t, servertest.Options{Dir: n.Dir, Overrides: overrides})
			after := m.Server.Image().Brokers[1]
			if after == nil || after.Fenced || after.Epoch <= before.Epoch || after.IncarnationID == before.IncarnationID {
				t.Fatalf("broker after the restart: %+v, before %+v", after, before)
			}
		})
	}
}
