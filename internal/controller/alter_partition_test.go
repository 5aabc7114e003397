package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/quorum"
)

func (h *harness) part(topic string, id int32) *metadata.Partition {
	h.t.Helper()
	t := h.c.Image().Topics.Get(topic)
	if t == nil || t.Partitions[id] == nil {
		h.t.Fatalf("no partition %s-%d", topic, id)
	}
	return t.Partitions[id]
}

// fence fences a broker with a heartbeat asking for it.
func (h *harness) fence(id int32) {
	h.t.Helper()
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.WantFence = id, h.epochs[id], true
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow)); err != nil {
		h.t.Fatal(err)
	}
}

// setTopicConfig replaces a topic's dynamic configs.
func (h *harness) setTopicConfig(topic string, kv ...string) {
	h.t.Helper()
	for _, err := range h.alter(false, configChange(metadata.ResourceTopic, topic, kv...)) {
		if err != nil {
			h.t.Fatal(err)
		}
	}
}

// isrEntry asks for partition id of topic, at its current epochs, to have
// isr (broker epochs as registered).
func (h *harness) isrEntry(topic string, id int32, isr ...int32) kmsg.AlterPartitionRequestTopicPartition {
	p := h.part(topic, id)
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = id, p.LeaderEpoch, p.PartitionEpoch
	rp.NewISR = isr
	for _, b := range isr {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = b, h.epochs[b]
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	return rp
}

// alterPartition sends one topic's entries from broker at version.
func (h *harness) alterPartition(version int16, broker int32, topic string, entries ...kmsg.AlterPartitionRequestTopicPartition) (*kmsg.AlterPartitionResponse, error) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(version)
	req.BrokerID, req.BrokerEpoch = broker, h.epochs[broker]
	rt := kmsg.NewAlterPartitionRequestTopic()
	if t := h.c.Image().Topics.Get(topic); t != nil {
		rt.TopicID = t.ID
	}
	rt.Partitions = entries
	req.Topics = append(req.Topics, rt)
	return h.c.AlterPartition(req)
}

// alterOne sends one entry from broker at v3 and returns its outcome.
func (h *harness) alterOne(broker int32, topic string, entry kmsg.AlterPartitionRequestTopicPartition) kmsg.AlterPartitionResponseTopicPartition {
	h.t.Helper()
	resp, err := h.alterPartition(3, broker, topic, entry)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		h.t.Fatalf("response %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// alterISR has the leader of topic-id set its ISR, and checks it worked.
func (h *harness) alterISR(topic string, id int32, isr ...int32) kmsg.AlterPartitionResponseTopicPartition {
	h.t.Helper()
	res := h.alterOne(h.part(topic, id).Leader, topic, h.isrEntry(topic, id, isr...))
	if res.ErrorCode != 0 {
		h.t.Fatalf("altering the ISR of %s-%d to %v: %v", topic, id, isr, kerr.ErrorForCode(res.ErrorCode))
	}
	return res
}

func wantPartitionCode(t *testing.T, what string, res kmsg.AlterPartitionResponseTopicPartition, want *kerr.Error) {
	t.Helper()
	var code int16
	if want != nil {
		code = want.Code
	}
	if res.ErrorCode != code {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(res.ErrorCode), want)
	}
}

func TestAlterPartitionShrinksAndExpandsTheISR(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}))
	before := h.part("t", 0)
	res := h.alterISR("t", 0, 1, 3)
	after := h.part("t", 0)
	if !slices.Equal(after.ISR, []int32{1, 3}) || after.Leader != 1 {
		t.Fatalf("after shrinking: leader %d ISR %v", after.Leader, after.ISR)
	}
	if after.PartitionEpoch != before.PartitionEpoch+1 || after.LeaderEpoch != before.LeaderEpoch {
		t.Errorf("epochs after an ISR change: leader %d partition %d, were %d %d", after.LeaderEpoch, after.PartitionEpoch, before.LeaderEpoch, before.PartitionEpoch)
	}
	if res.LeaderID != 1 || res.LeaderEpoch != after.LeaderEpoch || res.PartitionEpoch != after.PartitionEpoch ||
		!slices.Equal(res.ISR, []int32{1, 3}) || res.LeaderRecoveryState != 0 {
		t.Errorf("answer %+v does not describe %+v", res, after)
	}
	h.alterISR("t", 0, 1, 3, 2)
	if got := h.part("t", 0).ISR; !slices.Equal(got, []int32{1, 3, 2}) {
		t.Errorf("after expanding: ISR %v", got)
	}

	// The same ISR again changes nothing and answers the current state.
	batches := len(h.q.batches)
	res = h.alterISR("t", 0, 1, 3, 2)
	if len(h.q.batches) != batches {
		t.Error("a no-op AlterPartition committed records")
	}
	if cur := h.part("t", 0); res.PartitionEpoch != cur.PartitionEpoch || !slices.Equal(res.ISR, cur.ISR) {
		t.Errorf("no-op answer %+v, partition %+v", res, cur)
	}

	// Version 2 names the ISR without broker epochs.
	resp, err := h.alterPartition(2, 1, "t", h.isrEntry("t", 0, 1, 2))
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("v2: %+v, %v", resp, err)
	}
	if resp.Version != 2 || resp.Topics[0].TopidID != h.c.Image().Topics.Get("t").ID {
		t.Errorf("v2 answer version %d topic %v", resp.Version, resp.Topics[0].TopidID)
	}
	if got := h.part("t", 0).ISR; !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("after v2: ISR %v", got)
	}
}

func TestAlterPartitionRequestErrors(t *testing.T) {
	h := newCluster(t, 4, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}, []int32{1, 2, 4}))

	// The requester's registration.
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = 1, h.epochs[1]+1
	if _, err := h.c.AlterPartition(req); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Errorf("wrong broker epoch: %v", err)
	}
	req.BrokerID, req.BrokerEpoch = 9, 0
	if _, err := h.c.AlterPartition(req); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Errorf("unregistered broker: %v", err)
	}

	// A controller that is not the active one.
	h.q.inactive = true
	if _, err := h.alterPartition(3, 1, "t", h.isrEntry("t", 0, 1, 2)); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("inactive controller: %v", err)
	}
	h.q.inactive = false

	// An unknown topic id answers for every partition named.
	req = kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = 1, h.epochs[1]
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = [16]byte{9}
	rt.Partitions = []kmsg.AlterPartitionRequestTopicPartition{h.isrEntry("t", 0, 1), h.isrEntry("t", 1, 1)}
	req.Topics = append(req.Topics, rt)
	resp, err := h.c.AlterPartition(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Topics[0].Partitions {
		wantPartitionCode(t, "unknown topic id", p, kerr.UnknownTopicID)
	}

	before := h.part("t", 0)
	entry := func(mod func(*kmsg.AlterPartitionRequestTopicPartition)) kmsg.AlterPartitionRequestTopicPartition {
		e := h.isrEntry("t", 0, 1, 2)
		mod(&e)
		return e
	}
	cases := []struct {
		name   string
		broker int32
		entry  kmsg.AlterPartitionRequestTopicPartition
		want   *kerr.Error
	}{
		{"unknown partition", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) { e.Partition = 7 }), kerr.UnknownTopicOrPartition},
		{"newer leader epoch", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) { e.LeaderEpoch++ }), kerr.NotController},
		{"newer partition epoch", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) { e.PartitionEpoch++ }), kerr.NotController},
		{"older leader epoch", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) { e.LeaderEpoch-- }), kerr.FencedLeaderEpoch},
		{"not the leader", 2, h.isrEntry("t", 0, 1, 2), kerr.InvalidRequest},
		{"older partition epoch", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) { e.PartitionEpoch-- }), kerr.InvalidUpdateVersion},
		{"not a replica", 1, h.isrEntry("t", 0, 1, 4), kerr.InvalidRequest},
		{"repeated member", 1, h.isrEntry("t", 0, 1, 2, 2), kerr.InvalidRequest},
		{"without the leader", 1, h.isrEntry("t", 0, 2, 3), kerr.InvalidRequest},
		{"unknown recovery state", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) { e.LeaderRecoveryState = 5 }), kerr.InvalidRequest},
		{"recovering with two members", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) { e.LeaderRecoveryState = recovering }), kerr.InvalidRequest},
		{"recovered to recovering", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) {
			*e = h.isrEntry("t", 0, 1)
			e.LeaderRecoveryState = recovering
		}), kerr.InvalidRequest},
		{"member of another broker epoch", 1, entry(func(e *kmsg.AlterPartitionRequestTopicPartition) { e.NewEpochISR[1].BrokerEpoch++ }), kerr.IneligibleReplica},
	}
	for _, tc := range cases {
		wantPartitionCode(t, tc.name, h.alterOne(tc.broker, "t", tc.entry), tc.want)
	}
	if got := h.part("t", 0); got != before {
		t.Fatalf("refused requests changed the partition: %+v", got)
	}

	// v3 broker epoch -1 is not checked.
	e := h.isrEntry("t", 0, 1, 2)
	e.NewEpochISR[1].BrokerEpoch = -1
	wantPartitionCode(t, "broker epoch -1", h.alterOne(1, "t", e), nil)

	// Members that may not join: fenced, shutting down, unregistered.
	h.fence(3)
	wantPartitionCode(t, "fenced member", h.alterOne(1, "t", h.isrEntry("t", 0, 1, 2, 3)), kerr.IneligibleReplica)
	h.heartbeat(3, h.epochs[3], false)
	h.heartbeat(3, h.epochs[3], true)
	wantPartitionCode(t, "member in controlled shutdown", h.alterOne(1, "t", h.isrEntry("t", 0, 1, 2, 3)), kerr.IneligibleReplica)
	if _, err := h.q.Append([]metadata.Record{&metadata.UnregisterBrokerRecord{BrokerId: 4, BrokerEpoch: h.epochs[4]}}); err != nil {
		t.Fatal(err)
	}
	p1 := h.part("t", 1)
	if p1.Leader != 1 {
		t.Fatalf("partition 1 led by %d", p1.Leader)
	}
	wantPartitionCode(t, "unregistered member", h.alterOne(1, "t", h.isrEntry("t", 1, 1, 4)), kerr.IneligibleReplica)
}

func TestAlterPartitionMarksTheLeaderRecovered(t *testing.T) {
	h := newCluster(t, 2, nil)
	h.mustCreate(manualReq("u", []int32{1, 2}))
	h.setTopicConfig("u", "unclean.leader.election.enable", "true")
	h.alterISR("u", 0, 1)
	h.fence(1)
	p := h.part("u", 0)
	if p.Leader != 2 || p.LeaderRecoveryState != recovering {
		t.Fatalf("after an unclean election: leader %d recovery %d", p.Leader, p.LeaderRecoveryState)
	}
	// Still recovering with itself alone is allowed, and changes nothing.
	e := h.isrEntry("u", 0, 2)
	e.LeaderRecoveryState = recovering
	if res := h.alterOne(2, "u", e); res.ErrorCode != 0 || res.LeaderRecoveryState != recovering {
		t.Fatalf("staying recovering: %+v", res)
	}
	h.heartbeat(1, h.epochs[1], false)
	res := h.alterISR("u", 0, 2, 1)
	if res.LeaderRecoveryState != recovered || h.part("u", 0).LeaderRecoveryState != recovered {
		t.Fatalf("after the recovered leader expanded its ISR: %+v, %+v", res, h.part("u", 0))
	}
}
