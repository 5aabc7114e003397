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

func TestUnregisterBroker(t *testing.T) {
	h := newCluster(t, 4, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}, []int32{2, 1, 3}, []int32{3, 2, 4}), manualReq("s", []int32{1}))

	n := len(h.q.batches)
	if _, err := h.c.UnregisterBroker(9); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregistering unknown broker 9: %v, want BROKER_ID_NOT_REGISTERED", err)
	}
	if len(h.q.batches) != n {
		t.Fatal("a refused unregistration wrote records")
	}

	epoch := h.epochs[1]
	res, err := h.c.UnregisterBroker(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.q.batches) != n+1 || res.Offset != h.q.end-1 {
		t.Fatalf("unregistration committed %d batches (last %d, end %d), want one", len(h.q.batches)-n, res.Offset, h.q.end)
	}
	recs := h.q.recordsSince(n)
	// s-0, t-0 and t-1 change (in that order), t-2 does not hold broker
	// 1; the registration goes last.
	if len(recs) != 4 {
		t.Fatalf("records %+v, want three partition changes and the unregistration", recs)
	}
	un, ok := recs[3].(*metadata.UnregisterBrokerRecord)
	if !ok || un.BrokerId != 1 || un.BrokerEpoch != epoch {
		t.Fatalf("last record %+v, want UnregisterBrokerRecord{1, %d}", recs[3], epoch)
	}
	want := []struct {
		partition, leader int32
		isr               []int32
	}{
		{0, -1, nil},           // s-0, the only replica: offline, its ISR kept
		{0, 2, []int32{2, 3}},  // t-0, led by 1: the next ISR member leads
		{1, -2, []int32{2, 3}}, // t-1, a follower: only the ISR shrinks
	}
	for i, w := range want {
		pc, ok := recs[i].(*metadata.PartitionChangeRecord)
		if !ok || pc.PartitionId != w.partition || pc.Leader != w.leader || !slices.Equal(pc.Isr, w.isr) {
			t.Errorf("record %d = %+v, want partition %d leader %d ISR %v", i, recs[i], w.partition, w.leader, w.isr)
		}
	}
	img := h.c.Image()
	if img.Brokers[1] != nil {
		t.Fatal("broker 1 still registered")
	}
	ps, solo := partitionsOf(h, "t"), partitionsOf(h, "s")[0]
	if ps[0].Leader != 2 || ps[1].Leader != 2 || ps[2].Leader != 3 || solo.Leader != -1 || !slices.Equal(solo.ISR, []int32{1}) {
		t.Fatalf("partitions after: %+v %+v %+v %+v", ps[0], ps[1], ps[2], solo)
	}
	if !slices.Equal(ps[0].Replicas, []int32{1, 2, 3}) {
		t.Fatalf("replicas changed: %v", ps[0].Replicas)
	}

	// Gone: a second unregistration is refused, the old incarnation's
	// heartbeat is stale.
	if _, err := h.c.UnregisterBroker(1); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregistering broker 1 twice: %v", err)
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = 1, epoch
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow)); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("heartbeat of the unregistered broker: %v, want STALE_BROKER_EPOCH", err)
	}

	// It may register again, and then leads its only replica again.
	h.addBroker(1, false)
	if h.epochs[1] == epoch || h.c.Image().Brokers[1] == nil {
		t.Fatal("broker 1 did not register again")
	}
	if p := partitionsOf(h, "s")[0]; p.Leader != 1 {
		t.Fatalf("s-0 led by %d after broker 1 returned", p.Leader)
	}
}

func TestUnregisterBrokerNotActive(t *testing.T) {
	h := newCluster(t, 1, nil)
	h.q.inactive = true
	if _, err := h.c.UnregisterBroker(1); !errors.Is(err, quorum.ErrNotLeader) {
		t.Fatalf("unregister on an inactive controller: %v", err)
	}
}
