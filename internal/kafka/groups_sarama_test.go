package kafka_test

// Consumer groups with sarama's ConsumerGroup (range and roundrobin, at a
// current and an old protocol version): two members share a topic, every
// message is read once, and the committed offsets survive a broker
// restart, after which a new pair of members reads only what is new.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaGroupHandler records every message of its claims in a ledger and
// marks it; sarama commits marked offsets every 100 ms and when a session
// ends.
type saramaGroupHandler struct {
	name string
	led  *grpLedger
}

func (h *saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaGroupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.led.add(grpConsumed{member: h.name, topic: msg.Topic, partition: msg.Partition, offset: msg.Offset, value: string(msg.Value)})
			sess.MarkMessage(msg, "")
		case <-sess.Context().Done():
			return nil
		}
	}
}

// saramaMember is one ConsumerGroup consuming on its own goroutine.
type saramaMember struct {
	cg     sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	errs   []error
}

func saramaGroupConfig(v sarama.KafkaVersion, strategy sarama.BalanceStrategy, name string) *sarama.Config {
	cfg := saramaConfig(v)
	cfg.ClientID = name
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 50 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Offsets.Retry.Max = 3
	return cfg
}

func saramaJoin(t *testing.T, addr, group, topic string, cfg *sarama.Config, led *grpLedger) *saramaMember {
	t.Helper()
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("consumer group (version %s): %v", cfg.Version, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{cg: cg, cancel: cancel, done: make(chan struct{})}
	h := &saramaGroupHandler{name: cfg.ClientID, led: led}
	go func() {
		for err := range cg.Errors() {
			m.mu.Lock()
			m.errs = append(m.errs, err)
			m.mu.Unlock()
		}
	}()
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				m.mu.Lock()
				m.errs = append(m.errs, err)
				m.mu.Unlock()
				return
			}
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *saramaMember) close() {
	if m.cg == nil {
		return
	}
	m.cancel()
	<-m.done
	m.cg.Close()
	m.cg = nil
}

func (m *saramaMember) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.errs) > 0 {
		t.Fatalf("sarama consumer group errors: %v", m.errs)
	}
}

func TestGroupSarama(t *testing.T) {
	n := grpNode(t, nil)
	for _, tc := range []struct {
		name     string
		version  sarama.KafkaVersion
		strategy sarama.BalanceStrategy
		protocol string
	}{
		// 3.6: JoinGroup v8, OffsetCommit v8, OffsetFetch v8.
		{"range", sarama.V3_6_0_0, sarama.NewBalanceStrategyRange(), "range"},
		// 0.11, the oldest Version whose Fetch weir serves: JoinGroup v2
		// (no MEMBER_ID_REQUIRED), OffsetCommit v3, OffsetFetch v3.
		{"roundrobin", sarama.V0_11_0_0, sarama.NewBalanceStrategyRoundRobin(), "roundrobin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := cliCtx(t)
			adm := cliAdmin(t, n.Addr)
			topic, group := "grp-sarama-"+tc.name, "g-sarama-"+tc.name
			cliCreateTopic(t, ctx, adm, topic, 4, nil)
			prod := grpProducer(t, n.Addr)
			produced := grpTopics{}
			grpProduce(t, ctx, prod, produced, topic, 4, 25, "first")

			led := &grpLedger{}
			join := func(name string) *saramaMember {
				return saramaJoin(t, n.Addr, group, topic, saramaGroupConfig(tc.version, tc.strategy, name), led)
			}
			m0 := join("sa0")
			m1 := join("sa1")
			grpWait(t, ctx, "100 messages consumed", func() (bool, string) {
				m0.check(t)
				m1.check(t)
				return led.len() >= produced.total(), fmt.Sprint(led.byMember())
			})
			grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "sa0", "sa1")
			d, _ := grpDescribe(t, ctx, adm, group)
			if d.Protocol != tc.protocol {
				t.Fatalf("group protocol %q, want %q", d.Protocol, tc.protocol)
			}
			grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
			led.check(t, produced)
			m0.check(t)
			m1.check(t)
			m0.close()
			m1.close()

			n.Restart()
			adm = cliAdmin(t, n.Addr)
			grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
			prod = grpProducer(t, n.Addr)
			grpProduce(t, ctx, prod, produced, topic, 4, 25, "second")
			m2 := join("sa2")
			m3 := join("sa3")
			grpWait(t, ctx, "200 messages consumed", func() (bool, string) {
				m2.check(t)
				m3.check(t)
				return led.len() >= produced.total(), fmt.Sprint(led.byMember())
			})
			grpStable(t, ctx, adm, group, map[string]int32{topic: 4}, "sa2", "sa3")
			grpCommitted(t, ctx, adm, group, topic, grpEnds(produced, topic))
			led.check(t, produced)
			m2.check(t)
			m3.check(t)
		})
	}
}
