package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/servertest"
	"weir/internal/testwait"
)

// alterGroupConfigs sends one IncrementalAlterConfigs SET of a GROUP
// resource and returns its error name and message.
func (w *wire) alterGroupConfigs(group string, kv ...string) string {
	w.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = kv[i], &kv[i+1], kmsg.IncrementalAlterConfigOpSet
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp := w.do(req).(*kmsg.IncrementalAlterConfigsResponse)
	return errName(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage)
}

// groupHeartbeat sends a ConsumerGroupHeartbeat (a join when epoch is 0)
// until the coordinator serves it, and returns the answer.
func (w *wire) groupHeartbeat(group, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
	w.t.Helper()
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	testwait.For(w.t, 20*time.Second, "the group coordinator", func() error {
		// FindCoordinator makes __consumer_offsets on first use.
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = group
		w.do(fc)
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.SetVersion(1)
		req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 10000
			req.SubscribedTopicNames = []string{"gc"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp = w.do(req).(*kmsg.ConsumerGroupHeartbeatResponse)
		if resp.ErrorCode != 0 {
			return fmt.Errorf("%s", errName(resp.ErrorCode, resp.ErrorMessage))
		}
		return nil
	})
	return resp
}

// A group's consumer.heartbeat.interval.ms (GROUP config, KIP-848) is
// what its members' heartbeats are answered, from the next heartbeat on,
// and what a franz-go consumer of the group heartbeats at; DescribeConfigs
// shows it as GROUP_CONFIG and the rest as DEFAULT_CONFIG with the
// broker's values; values outside the broker's bounds and the share and
// streams groups' keys are refused.
func TestGroupConfigsConsumerHeartbeatInterval(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"auto.create.topics.enable": "false", "group.consumer.min.heartbeat.interval.ms": "100"}})
	w := dial(t, n.Addr)
	w.createTopic("gc", 2, nil)

	if got := w.alterGroupConfigs("g", "consumer.heartbeat.interval.ms", "99"); got != "INVALID_CONFIG consumer.heartbeat.interval.ms must be in the range 100 to 15000 inclusive." {
		t.Errorf("below the minimum: %s", got)
	}
	if got := w.alterGroupConfigs("g", "consumer.session.timeout.ms", "60001"); got != "INVALID_CONFIG consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive." {
		t.Errorf("above the maximum: %s", got)
	}
	if got := w.alterGroupConfigs("g", "share.heartbeat.interval.ms", "1000"); got != "INVALID_CONFIG Group config share.heartbeat.interval.ms is not supported: weir does not have share groups (KIP-932) yet." {
		t.Errorf("share key: %s", got)
	}
	if got := w.alterGroupConfigs("g", "consumer.heartbeat.interval.ms", "200"); got != "NONE" {
		t.Fatalf("set: %s", got)
	}
	got := w.describeConfigs(kmsg.ConfigResourceTypeGroupConfig, "g")
	want := map[string]string{
		"consumer.heartbeat.interval.ms": "200 from GROUP_CONFIG",
		"consumer.session.timeout.ms":    "45000 from DEFAULT_CONFIG",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("described %v, want %v", got, want)
	}

	// A raw member of g is answered the group's interval, one of another
	// group the broker's; a change applies to the next heartbeat.
	m := w.groupHeartbeat("g", "member-1", 0)
	if m.HeartbeatIntervalMillis != 200 {
		t.Errorf("g's interval %d, want 200", m.HeartbeatIntervalMillis)
	}
	if o := w.groupHeartbeat("other", "member-2", 0); o.HeartbeatIntervalMillis != 5000 {
		t.Errorf("other group's interval %d, want the broker's 5000", o.HeartbeatIntervalMillis)
	}
	if got := w.alterGroupConfigs("g", "consumer.heartbeat.interval.ms", "100"); got != "NONE" {
		t.Fatalf("set: %s", got)
	}
	if r := w.groupHeartbeat("g", "member-1", m.MemberEpoch); r.HeartbeatIntervalMillis != 100 {
		t.Errorf("g's interval after the change %d, want 100", r.HeartbeatIntervalMillis)
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.SetVersion(1)
	leave.Group, leave.MemberID, leave.MemberEpoch = "g", "member-1", -1
	w.do(leave)

	// A KIP-848 franz-go consumer of g heartbeats every 100 ms (the
	// broker's 5 s would take far longer than the wait).
	var beats atomic.Int32
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("gc"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer(), kgo.DisableAutoCommit(),
		kgo.WithHooks(heartbeatCounter{&beats}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	testwait.Until(t, 20*time.Second, "20 heartbeats of the franz-go consumer", func() bool { return beats.Load() >= 20 })
}

// heartbeatCounter counts the ConsumerGroupHeartbeat requests a client
// writes.
type heartbeatCounter struct{ n *atomic.Int32 }

func (h heartbeatCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 68 && err == nil {
		h.n.Add(1)
	}
}
