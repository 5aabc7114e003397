package kafka_test

// Consumer groups with segmentio/kafka-go: two Readers with a GroupID
// share a topic and commit every message with CommitMessages; when one
// closes, the other takes its partitions and goes on from the committed
// offsets. kafka.Client's OffsetCommit and OffsetFetch work on a group
// with no members, and a Reader joining that group starts where they say.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// kafkagoMember is a group Reader consuming on its own goroutine and
// committing each message after recording it.
type kafkagoMember struct {
	r      *kafkago.Reader
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	errs   []error
}

func kafkagoJoin(t *testing.T, addr, group, topic, name string, led *grpLedger) *kafkagoMember {
	t.Helper()
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           group,
		Topic:             topic,
		Dialer:            &kafkago.Dialer{ClientID: name, Timeout: 10 * time.Second},
		MinBytes:          1,
		MaxBytes:          1 << 20,
		MaxWait:           100 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		StartOffset:       kafkago.FirstOffset,
		CommitInterval:    0, // CommitMessages commits synchronously
	})
	ctx, cancel := context.WithCancel(context.Background())
	m := &kafkagoMember{r: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			msg, err := r.FetchMessage(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				m.fail(err)
				return
			}
			led.add(grpConsumed{member: name, topic: msg.Topic, partition: int32(msg.Partition), offset: msg.Offset, value: string(msg.Value)})
			if err := r.CommitMessages(ctx, msg); err != nil && ctx.Err() == nil {
				m.fail(fmt.Errorf("committing %s-%d@%d: %w", msg.Topic, msg.Partition, msg.Offset, err))
			}
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *kafkagoMember) fail(err error) {
	m.mu.Lock()
	m.errs = append(m.errs, err)
	m.mu.Unlock()
}

func (m *kafkagoMember) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.errs) > 0 {
		t.Fatalf("kafka-go reader: %v", errors.Join(m.errs...))
	}
}

// close stops reading and closes the Reader, which leaves the group.
func (m *kafkagoMember) close() {
	if m.r == nil {
		return
	}
	m.cancel()
	<-m.done
	m.r.Close()
	m.r = nil
}

func TestGroupKafkaGo(t *testing.T) {
	n := grpNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic, group := "grp-kafkago", "g-kafkago"
	cliCreateTopic(t, ctx, adm, topic, 4, nil)
	prod := grpProducer(t, n.Addr)
	produced := grpTopics{}

	// Both readers are in before anything is produced: a rebalance while
	// a message is fetched but not yet committed would hand it to the
	// other reader too (kafka-go reads at least once).
	led := &grpLedger{}
	k0 := kafkagoJoin(t, n.Addr, group, topic, "kg0", led)
	k1 := kafkagoJoin(t, n.Addr, group, topic, "kg1", led)
	as := grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "kg0", "kg1")
	d, _ := grpDescribe(t, ctx, adm, group)
	if d.Protocol != "range" {
		t.Fatalf("group protocol %q, want range (kafka-go's first choice)", d.Protocol)
	}
	grpProduce(t, ctx, prod, produced, topic, 4, 25, "first")
	grpWait(t, ctx, "100 messages read", func() (bool, string) {
		k0.check(t)
		k1.check(t)
		return led.len() >= produced.total(), fmt.Sprint(led.byMember())
	})
	led.check(t, produced)
	for _, c := range led.snapshot() {
		owned := false
		for _, p := range as[c.member][topic] {
			owned = owned || p == c.partition
		}
		if !owned {
			t.Fatalf("%s read %s-%d, which is assigned to the other reader (%v)", c.member, c.topic, c.partition, as)
		}
	}
	grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))

	// kg1 leaves; kg0 owns everything and reads only the new messages.
	k1.close()
	grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "kg0")
	grpProduce(t, ctx, prod, produced, topic, 4, 25, "second")
	grpWait(t, ctx, "200 messages read", func() (bool, string) {
		k0.check(t)
		return led.len() >= produced.total(), fmt.Sprint(led.byMember())
	})
	led.check(t, produced)
	k0.check(t)
	k0.close()

	// kafka.Client: OffsetFetch of the group's offsets, then simple
	// commits to a group without members.
	cl := &kafkago.Client{Addr: kafkago.TCP(n.Addr), Timeout: 10 * time.Second}
	fetched, err := cl.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2, 3}}})
	if err != nil || fetched.Error != nil {
		t.Fatalf("OffsetFetch: %v %v", err, fetched.Error)
	}
	for _, p := range fetched.Topics[topic] {
		if p.Error != nil || p.CommittedOffset != 50 {
			t.Fatalf("OffsetFetch %s-%d: offset %d err %v, want 50", topic, p.Partition, p.CommittedOffset, p.Error)
		}
	}
	simple := "g-kafkago-simple"
	var commits []kafkago.OffsetCommit
	for p := range 4 {
		commits = append(commits, kafkago.OffsetCommit{Partition: p, Offset: int64(40 + p), Metadata: fmt.Sprintf("m%d", p)})
	}
	committed, err := cl.OffsetCommit(ctx, &kafkago.OffsetCommitRequest{GroupID: simple, GenerationID: -1, Topics: map[string][]kafkago.OffsetCommit{topic: commits}})
	if err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	}
	if len(committed.Topics[topic]) != 4 {
		t.Fatalf("OffsetCommit answered %+v", committed.Topics)
	}
	for _, p := range committed.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("OffsetCommit %s-%d: %v", topic, p.Partition, p.Error)
		}
	}
	// No topics: all of the group's offsets.
	fetched, err = cl.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: simple})
	if err != nil || fetched.Error != nil {
		t.Fatalf("OffsetFetch: %v %v", err, fetched.Error)
	}
	if len(fetched.Topics[topic]) != 4 {
		t.Fatalf("OffsetFetch of every topic: %+v", fetched.Topics)
	}
	for _, p := range fetched.Topics[topic] {
		if p.Error != nil || p.CommittedOffset != int64(40+p.Partition) || p.Metadata != fmt.Sprintf("m%d", p.Partition) {
			t.Fatalf("OffsetFetch %s-%d: %+v, want offset %d metadata m%d", topic, p.Partition, p, 40+p.Partition, p.Partition)
		}
	}
	led2 := &grpLedger{}
	k2 := kafkagoJoin(t, n.Addr, simple, topic, "kg2", led2)
	want := 4*50 - (40 + 41 + 42 + 43)
	grpWait(t, ctx, fmt.Sprintf("%d messages read from the committed offsets", want), func() (bool, string) {
		k2.check(t)
		return led2.len() >= want, fmt.Sprint(led2.len())
	})
	for _, c := range led2.snapshot() {
		if c.offset < int64(40+c.partition) {
			t.Fatalf("reader of %s read %s-%d@%d, before the committed offset %d", simple, c.topic, c.partition, c.offset, 40+c.partition)
		}
	}
	if got := led2.len(); got != want {
		t.Fatalf("reader of %s read %d messages, want %d", simple, got, want)
	}
}
