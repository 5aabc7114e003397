//go:build cgo

package interop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/servertest"
)

// node starts a single weir node and creates topic with partitions.
func node(t *testing.T, topic string, partitions int32) *servertest.Node {
	t.Helper()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"group.initial.rebalance.delay.ms": "0"}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return n
}

// produceTxn produces n records "tag-i" to topic (spread over partitions)
// in one transaction of p, then commits or aborts it.
func produceTxn(t *testing.T, ctx context.Context, p *kafka.Producer, topic string, partitions int32, tag string, n int, commit bool) {
	t.Helper()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		part := int32(i) % partitions
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part}, Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
		if err := p.Produce(msg, nil); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if commit {
		err = p.CommitTransaction(ctx)
	} else {
		// Written first, so the aborted records are in the log (an
		// abort purges what is still queued).
		if left := p.Flush(10_000); left > 0 {
			t.Fatalf("%d records not delivered before the abort", left)
		}
		err = p.AbortTransaction(ctx)
	}
	if err != nil {
		t.Fatalf("ending transaction %s (commit %v): %v", tag, commit, err)
	}
}

// drainEvents logs librdkafka's delivery reports and errors until the
// producer closes.
func drainEvents(t *testing.T, p *kafka.Producer) {
	go func() {
		for e := range p.Events() {
			switch ev := e.(type) {
			case *kafka.Message:
				if ev.TopicPartition.Error != nil {
					t.Logf("delivery: %v", ev.TopicPartition.Error)
				}
			case kafka.Error:
				t.Logf("librdkafka: %v", ev)
			}
		}
	}()
}

// consumeAll reads topic from the start with isolation until it has want
// records or no more arrive, and returns the values.
func consumeAll(t *testing.T, addr, topic, isolation string, want int) []string {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  addr,
		"group.id":           "interop-" + isolation + "-" + topic,
		"auto.offset.reset":  "earliest",
		"isolation.level":    isolation,
		"enable.auto.commit": false,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	quiet := time.Time{}
	for time.Now().Before(deadline) {
		msg, err := c.ReadMessage(200 * time.Millisecond)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
				if len(got) >= want {
					if quiet.IsZero() {
						quiet = time.Now()
					} else if time.Since(quiet) > time.Second {
						return got // nothing more for a second
					}
				}
				continue
			}
			t.Fatalf("consuming: %v", err)
		}
		quiet = time.Time{}
		got = append(got, string(msg.Value))
	}
	t.Fatalf("consumed %d of %d records in 30s", len(got), want)
	return nil
}

func tags(values []string) map[string]int {
	out := map[string]int{}
	for _, v := range values {
		tag, _, _ := strings.Cut(v, "-")
		out[tag]++
	}
	return out
}

// librdkafka's transactional producer (InitTransactions, AddPartitionsToTxn,
// EndTxn) commits and aborts; a read_committed librdkafka consumer sees
// the committed records only, a read_uncommitted one every record.
func TestLibrdkafkaTransactionalProducer(t *testing.T) {
	const topic, partitions = "rdkafka-txn", 3
	n := node(t, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": n.Addr,
		"transactional.id":  "rdkafka-txn",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	drainEvents(t, p)
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	produceTxn(t, ctx, p, topic, partitions, "c1", 300, true)
	produceTxn(t, ctx, p, topic, partitions, "a1", 300, false)
	produceTxn(t, ctx, p, topic, partitions, "c2", 300, true)

	if got := tags(consumeAll(t, n.Addr, topic, "read_committed", 600)); got["c1"] != 300 || got["c2"] != 300 || got["a1"] != 0 {
		t.Fatalf("read_committed consumed %v, want 300 of c1 and c2 and none of a1", got)
	}
	if got := tags(consumeAll(t, n.Addr, topic, "read_uncommitted", 900)); got["c1"] != 300 || got["c2"] != 300 || got["a1"] != 300 {
		t.Fatalf("read_uncommitted consumed %v, want 300 of each", got)
	}
}

// A second producer with the same transactional.id fences the first: its
// commit fails as fenced, and the transaction it left open is aborted.
func TestLibrdkafkaZombieFenced(t *testing.T) {
	const topic = "rdkafka-fence"
	n := node(t, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newProducer := func() *kafka.Producer {
		p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": n.Addr, "transactional.id": "rdkafka-fence"})
		if err != nil {
			t.Fatal(err)
		}
		drainEvents(t, p)
		if err := p.InitTransactions(ctx); err != nil {
			t.Fatalf("InitTransactions: %v", err)
		}
		return p
	}
	zombie := newProducer()
	defer zombie.Close()
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	tp := topic
	if err := zombie.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &tp, Partition: 0}, Value: []byte("zombie-0")}, nil); err != nil {
		t.Fatal(err)
	}
	zombie.Flush(10_000)

	fresh := newProducer()
	defer fresh.Close()
	produceTxn(t, ctx, fresh, topic, 1, "fresh", 10, true)

	err := zombie.CommitTransaction(ctx)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if ke, ok := err.(kafka.Error); !ok || !ke.IsFatal() && ke.Code() != kafka.ErrFenced && ke.Code() != kafka.ErrProducerFenced {
		t.Fatalf("the fenced producer's commit: %v, want it fenced", err)
	}
	if got := tags(consumeAll(t, n.Addr, topic, "read_committed", 10)); got["fresh"] != 10 || got["zombie"] != 0 {
		t.Fatalf("read_committed consumed %v, want the fresh producer's 10 only", got)
	}
}
