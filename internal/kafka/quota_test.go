package kafka_test

// Client quotas against a real node: the Describe/AlterClientQuotas round
// trip and Kafka's validation errors through kadm, quotas surviving a
// restart, and produce and fetch quotas slowing a client to its rate while
// another keeps its own.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaEntity(parts ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(parts); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: parts[i]}
		if parts[i+1] != "<default>" {
			n := parts[i+1]
			c.Name = &n
		}
		e = append(e, c)
	}
	return e
}

func alterQuota(t *testing.T, ctx context.Context, adm *kadm.Client, e kadm.ClientQuotaEntity, ops ...kadm.AlterClientQuotaOp) error {
	t.Helper()
	rs, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
	if err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}
	if len(rs) != 1 {
		t.Fatalf("AlterClientQuotas: %d results", len(rs))
	}
	if rs[0].Err != nil {
		return errors.New(rs[0].Err.Error() + ": " + rs[0].ErrMessage)
	}
	return nil
}

func TestClientQuotasAlterDescribe(t *testing.T) {
	ctx := cliCtx(t)
	n := cliNode(t, nil)
	adm := cliAdmin(t, n.Addr)
	set := func(k string, v float64) kadm.AlterClientQuotaOp { return kadm.AlterClientQuotaOp{Key: k, Value: v} }

	alice := quotaEntity("user", "alice")
	aliceApp := quotaEntity("user", "alice", "client-id", "app")
	defClient := quotaEntity("client-id", "<default>")
	for _, c := range []struct {
		e   kadm.ClientQuotaEntity
		ops []kadm.AlterClientQuotaOp
	}{
		{alice, []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1024), set("request_percentage", 12.5)}},
		{aliceApp, []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 2048)}},
		{defClient, []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 3000), set("controller_mutation_rate", 2.5)}},
		{quotaEntity("ip", "10.0.0.1"), []kadm.AlterClientQuotaOp{set("connection_creation_rate", 5)}},
	} {
		if err := alterQuota(t, ctx, adm, c.e, c.ops...); err != nil {
			t.Fatalf("altering %v: %v", c.e, err)
		}
	}
	// Kafka's validation errors, all INVALID_REQUEST.
	for _, c := range []struct {
		e    kadm.ClientQuotaEntity
		op   kadm.AlterClientQuotaOp
		want string
	}{
		{alice, set("producer_bytes_rate", 1), "Invalid configuration key producer_bytes_rate"},
		{alice, set("producer_byte_rate", -5), "Quota producer_byte_rate must be greater than 0"},
		{alice, set("producer_byte_rate", 1.5), "producer_byte_rate cannot be a fractional value."},
		{alice, set("connection_creation_rate", 1), "Invalid configuration key connection_creation_rate"},
		{quotaEntity("ip", "1.2.3.4", "user", "bob"), set("producer_byte_rate", 1), "IP entity should"},
		{quotaEntity("user", ""), set("producer_byte_rate", 1), "Empty user not supported"},
		{quotaEntity("group", "g"), set("producer_byte_rate", 1), "Unhandled client quota entity type: group"},
		{quotaEntity("ip", "not an ip"), set("connection_creation_rate", 1), "is not a valid IP"},
		{quotaEntity("ip", "10.0.0.1"), set("connection_creation_rate", 1.5), "connection_creation_rate cannot be a fractional value."},
	} {
		err := alterQuota(t, ctx, adm, c.e, c.op)
		if err == nil || !strings.Contains(err.Error(), "INVALID_REQUEST") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %s=%v: %v, want INVALID_REQUEST %q", c.e, c.op.Key, c.op.Value, err, c.want)
		}
	}
	// A filter combining ip with user fails the whole describe.
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{
		{Type: "ip", MatchType: 2}, {Type: "user", MatchType: 2}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("ip+user filter: %v, want INVALID_REQUEST", err)
	}

	describe := func(strict bool, cs ...kadm.DescribeClientQuotaComponent) map[string]map[string]float64 {
		t.Helper()
		qs, err := adm.DescribeClientQuotas(ctx, strict, cs)
		if err != nil {
			t.Fatalf("DescribeClientQuotas: %v", err)
		}
		out := map[string]map[string]float64{}
		for _, q := range qs {
			var parts []string
			for _, c := range q.Entity {
				n := "<default>"
				if c.Name != nil {
					n = *c.Name
				}
				parts = append(parts, c.Type+"="+n)
			}
			vals := map[string]float64{}
			for _, v := range q.Values {
				vals[v.Key] = v.Value
			}
			out[strings.Join(parts, ",")] = vals
		}
		return out
	}
	name := func(s string) *string { return &s }
	check := func(what string) {
		t.Helper()
		all := describe(false)
		if len(all) != 4 || all["ip=10.0.0.1"]["connection_creation_rate"] != 5 || all["user=alice"]["producer_byte_rate"] != 1024 || all["user=alice"]["request_percentage"] != 12.5 ||
			all["user=alice,client-id=app"]["consumer_byte_rate"] != 2048 || all["client-id=<default>"]["consumer_byte_rate"] != 3000 ||
			all["client-id=<default>"]["controller_mutation_rate"] != 2.5 {
			t.Fatalf("%s: all quotas %v", what, all)
		}
		// user=alice exactly, not strict: alice's and alice's app's.
		if got := describe(false, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: name("alice")}); len(got) != 2 {
			t.Fatalf("%s: user alice: %v", what, got)
		}
		// Strict: alice's alone.
		if got := describe(true, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: name("alice")}); len(got) != 1 || got["user=alice"] == nil {
			t.Fatalf("%s: user alice, strict: %v", what, got)
		}
		// The default client id.
		if got := describe(false, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 1}); len(got) != 1 || got["client-id=<default>"] == nil {
			t.Fatalf("%s: default client id: %v", what, got)
		}
		// Any client id.
		if got := describe(false, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 2}); len(got) != 2 {
			t.Fatalf("%s: any client id: %v", what, got)
		}
	}
	check("before restart")
	n.Restart()
	adm = cliAdmin(t, n.Addr)
	check("after restart")

	// Removing a key; removing every key drops the entity.
	if err := alterQuota(t, ctx, adm, alice, kadm.AlterClientQuotaOp{Key: "request_percentage", Remove: true}); err != nil {
		t.Fatal(err)
	}
	if err := alterQuota(t, ctx, adm, defClient, kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Remove: true},
		kadm.AlterClientQuotaOp{Key: "controller_mutation_rate", Remove: true}); err != nil {
		t.Fatal(err)
	}
	all := describe(false)
	if len(all) != 3 || len(all["user=alice"]) != 1 || all["client-id=<default>"] != nil {
		t.Fatalf("after removals: %v", all)
	}
}

// meter counts bytes while a measurement runs.
type meter struct {
	counting atomic.Bool
	bytes    atomic.Int64
}

func (m *meter) add(n int) {
	if m.counting.Load() {
		m.bytes.Add(int64(n))
	}
}

// measure waits warmUp, counts over span and returns the rate counted.
func measure(ctx context.Context, meters []*meter, warmUp, span time.Duration) ([]float64, error) {
	select {
	case <-time.After(warmUp):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	start := time.Now()
	for _, m := range meters {
		m.counting.Store(true)
	}
	select {
	case <-time.After(span):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	elapsed := time.Since(start).Seconds()
	out := make([]float64, len(meters))
	for i, m := range meters {
		m.counting.Store(false)
		out[i] = float64(m.bytes.Load()) / elapsed
	}
	return out, nil
}

// quotaNode runs a node whose client quotas are measured over a few
// one-second windows, so a client settles at its rate within seconds.
func quotaNode(t *testing.T, samples int) (addr string, adm *kadm.Client) {
	n := cliNode(t, map[string]string{"quota.window.num": fmt.Sprint(samples), "quota.window.size.seconds": "1"})
	return n.Addr, cliAdmin(t, n.Addr)
}

func inBand(t *testing.T, what string, got, want float64) {
	t.Helper()
	inBandWithin(t, what, got, want, 0.1)
}

func inBandWithin(t *testing.T, what string, got, want, within float64) {
	t.Helper()
	t.Logf("%s: %.0f B/s (quota %.0f B/s, %.1f%%)", what, got, want, 100*got/want)
	if got < (1-within)*want || got > (1+within)*want {
		t.Errorf("%s: %.0f B/s, want within %.0f%% of %.0f B/s", what, got, 100*within, want)
	}
}

func TestProduceQuotaSlowsClientToItsRate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	quotaAddr, adm := quotaNode(t, 3)
	cliCreateTopic(t, ctx, adm, "quota-produce", 2, nil)
	const slowRate, fastRate = 512 << 10, 1 << 20
	if err := alterQuota(t, ctx, adm, quotaEntity("client-id", "slow"), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: slowRate}); err != nil {
		t.Fatal(err)
	}
	if err := alterQuota(t, ctx, adm, quotaEntity("client-id", "<default>"), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: fastRate}); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 4<<10)
	// Each client sends about eight requests a second: each throttled
	// round trip costs a little of the rate.
	run := func(clientID string, batch int32, m *meter, stop <-chan struct{}, wg *sync.WaitGroup) {
		defer wg.Done()
		cl := cliFranz(t, quotaAddr, kgo.ClientID(clientID), kgo.ProducerBatchMaxBytes(batch), kgo.MaxBufferedRecords(128),
			kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("quota-produce"))
		for {
			select {
			case <-stop:
				return
			default:
			}
			cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err == nil {
					m.add(len(r.Value))
				}
			})
		}
	}
	slow, other := &meter{}, &meter{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go run("slow", 64<<10, slow, stop, &wg)
	go run("other", 128<<10, other, stop, &wg)
	rates, err := measure(ctx, []*meter{slow, other}, 4*time.Second, 10*time.Second)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	inBand(t, "client slow", rates[0], slowRate)
	inBand(t, "client other", rates[1], fastRate)
}

func TestFetchQuotaSlowsConsumerToItsRate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	quotaAddr, adm := quotaNode(t, 2)
	cliCreateTopic(t, ctx, adm, "quota-fetch", 1, nil)
	// 16 MB to read: more than a throttled consumer reads in the test.
	// One record a batch; the consumer asks for one batch a fetch
	// (partition max bytes 1: the first batch comes whole), so what it is
	// charged is what it gets, no partial batch at the end of a fetch.
	p := cliFranz(t, quotaAddr, kgo.DefaultProduceTopic("quota-fetch"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(16<<10))
	value := make([]byte, 8<<10)
	for i := 0; i < 1024; i++ {
		p.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const readRate = 128 << 10
	if err := alterQuota(t, ctx, adm, quotaEntity("user", "<default>", "client-id", "reader"), kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: readRate}); err != nil {
		t.Fatal(err)
	}
	var throttled atomic.Int64
	m := &meter{}
	cl := cliFranz(t, quotaAddr, kgo.ClientID("reader"), kgo.ConsumeTopics("quota-fetch"), kgo.FetchMaxPartitionBytes(1),
		kgo.WithHooks(throttleHook{&throttled}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { m.add(len(r.Value)) })
		}
	}()
	// An unthrottled consumer of the same data reads it all meanwhile.
	free := cliFranz(t, quotaAddr, kgo.ClientID("free"), kgo.ConsumeTopics("quota-fetch"))
	var freeBytes int
	for freeBytes < 1024*len(value) {
		fs := free.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("unthrottled consumer read %d bytes: %v", freeBytes, err)
		}
		fs.EachRecord(func(r *kgo.Record) { freeBytes += len(r.Value) })
	}
	rates, err := measure(ctx, []*meter{m}, 3*time.Second, 15*time.Second)
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	// A fetch over the quota is answered empty and its bytes taken back.
	// The windowed rate lets a window's worth through at once whenever
	// the oldest sample goes, so the band is wider than the producer's.
	inBandWithin(t, "consumer reader", rates[0], readRate, 0.15)
	if throttled.Load() == 0 {
		t.Error("the throttled consumer saw no throttle time")
	}
}

type throttleHook struct{ n *atomic.Int64 }

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// The controller mutation quota (KIP-599) over a burst of two partitions
// (a rate of 1 over two one-second windows): strict requests are refused
// once the bucket is below zero, older versions only throttled.
func TestControllerMutationQuota(t *testing.T) {
	ctx := cliCtx(t)
	n := cliNode(t, map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"})
	adm := cliAdmin(t, n.Addr)
	if err := alterQuota(t, ctx, adm, quotaEntity("user", "<default>"), kadm.AlterClientQuotaOp{Key: "controller_mutation_rate", Value: 1}); err != nil {
		t.Fatal(err)
	}
	createReq := func(version int16, topics map[string]int32, order ...string) *kmsg.CreateTopicsRequest {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(version)
		req.TimeoutMillis = 30000
		for _, name := range order {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, topics[name], 1
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	codes := func(resp *kmsg.CreateTopicsResponse) map[string]int16 {
		out := map[string]int16{}
		for _, t := range resp.Topics {
			out[t.Topic] = t.ErrorCode
		}
		return out
	}
	// a takes the two tokens, b takes three more (the bucket was not
	// below zero yet), c is refused.
	resp := dial(t, n.Addr).do(createReq(7, map[string]int32{"a": 2, "b": 3, "c": 1}, "a", "b", "c")).(*kmsg.CreateTopicsResponse)
	got := codes(resp)
	if len(got) != 3 || got["a"] != 0 || got["b"] != 0 || got["c"] != kerr.ThrottlingQuotaExceeded.Code || resp.ThrottleMillis <= 0 {
		t.Fatalf("strict CreateTopics: codes %v, throttle %d ms", got, resp.ThrottleMillis)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil || !topics.Has("a") || !topics.Has("b") || topics.Has("c") {
		t.Fatalf("topics %v, %v: want a and b, not c", topics.Names(), err)
	}
	// Deleting and adding partitions are refused too while the bucket is
	// below zero.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TopicNames, del.TimeoutMillis = []string{"a"}, 30000
	dresp := dial(t, n.Addr).do(del).(*kmsg.DeleteTopicsResponse)
	if len(dresp.Topics) != 1 || dresp.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || dresp.ThrottleMillis <= 0 {
		t.Fatalf("strict DeleteTopics: %+v", dresp)
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.SetVersion(3)
	cp.TimeoutMillis = 30000
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "b", 5
	cp.Topics = append(cp.Topics, cpt)
	cpresp := dial(t, n.Addr).do(cp).(*kmsg.CreatePartitionsResponse)
	if len(cpresp.Topics) != 1 || cpresp.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("strict CreatePartitions: %+v", cpresp)
	}
	// CreateTopics v5 is permissive: created, and throttled.
	resp = dial(t, n.Addr).do(createReq(5, map[string]int32{"d": 1}, "d")).(*kmsg.CreateTopicsResponse)
	if got := codes(resp); got["d"] != 0 || resp.ThrottleMillis <= 0 {
		t.Fatalf("permissive CreateTopics: codes %v, throttle %d ms", got, resp.ThrottleMillis)
	}
}
