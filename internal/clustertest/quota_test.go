package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller mutation quota is charged on the active controller: a
// client id that spends its burst through one broker is refused through
// another, with the throttle time, and another client id is not. The
// active controller's /metrics has the client id's mutation rate and
// throttle time.
func TestControllerMutationQuotaAcrossBrokers(t *testing.T) {
	c := New(t, Options{Nodes: 1, Brokers: 2, Overrides: map[string]string{
		"quota.window.num": "2", "quota.window.size.seconds": "1",
		"weir.metrics.listener": "http://127.0.0.1:0",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("spread")}}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity,
		Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 1}}}})
	if err == nil && len(res) == 1 {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("setting the quota: %v", err)
	}
	create := func(n *Node, clientID, topic string, partitions int32) *kmsg.CreateTopicsResponse {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.ClientID(clientID))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.TimeoutMillis = 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
		req.Topics = append(req.Topics, rt)
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatalf("CreateTopics %s through node %d: %v", topic, n.ID, err)
		}
		r := resp.(*kmsg.CreateTopicsResponse)
		if len(r.Topics) != 1 {
			t.Fatalf("CreateTopics %s through node %d: %d topics in the answer", topic, n.ID, len(r.Topics))
		}
		return r
	}
	// The burst is two partitions: twenty put the bucket far below zero,
	// wherever the next request goes.
	if r := create(c.Node(1), "spread", "first", 20); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("first topic: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	r := create(c.Node(2), "spread", "second", 1)
	if r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 {
		t.Fatalf("second topic through another broker: %v, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED and a throttle",
			kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	if r := create(c.Node(2), "other", "third", 1); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("another client id: %v, throttle %d ms", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil || !topics.Has("first") || topics.Has("second") || !topics.Has("third") {
		t.Fatalf("topics %v, %v: want first and third, not second", topics.Names(), err)
	}
	m, err := samples(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	const labels = `{clientId="spread",resource="ControllerMutation",user=""}`
	// The rate is over the last two seconds: only its presence is sure.
	_, rated := m["kafka_server_quota_mutation_rate"+labels]
	throttle := m["weir_server_quota_throttle_time_ms_total"+labels]
	if !rated || throttle < float64(r.ThrottleMillis) {
		t.Fatalf("the controller's mutation metrics: rate present %v, throttle %v ms; want at least %d ms", rated, throttle, r.ThrottleMillis)
	}
}
