package controller

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/quorum"
	"weir/internal/testwait"
)

func partitionsOf(h *harness, topic string) []*metadata.Partition {
	return h.c.Image().Topics.Get(topic).SortedPartitions()
}

func TestFenceStaleBrokersMovesLeadershipAndShrinksISR(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{3, 1, 2}, []int32{1, 3, 2}, []int32{2, 1, 3}))
	// The controller starts counting sessions at the first check.
	if fenced, err := h.c.FenceStaleBrokers(testNow); err != nil || len(fenced) != 0 {
		t.Fatalf("first check fenced %v (%v)", fenced, err)
	}
	later := testNow.Add(h.c.sessionTimeout() - time.Millisecond)
	for _, id := range []int32{1, 2} {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, h.epochs[id], 1<<40
		if _, err := h.c.BrokerHeartbeat(hb, at(later)); err != nil {
			t.Fatal(err)
		}
	}
	fenced, err := h.c.FenceStaleBrokers(testNow.Add(h.c.sessionTimeout()))
	if err != nil || !slices.Equal(fenced, []int32{3}) {
		t.Fatalf("fenced %v (%v), want [3]", fenced, err)
	}
	if !h.c.Image().Brokers[3].Fenced {
		t.Fatal("broker 3 not fenced in the image")
	}
	for _, p := range partitionsOf(h, "t") {
		if slices.Contains(p.ISR, 3) {
			t.Errorf("partition %d keeps fenced broker 3 in its ISR %v", p.ID, p.ISR)
		}
		if p.Leader == 3 || p.Leader < 0 {
			t.Errorf("partition %d leader %d", p.ID, p.Leader)
		}
	}
	if p := partitionsOf(h, "t")[0]; p.Leader != 1 || p.LeaderEpoch != 1 {
		t.Errorf("partition 0 led by %d in epoch %d, want the first live ISR member 1 in epoch 1", p.Leader, p.LeaderEpoch)
	}
}

func TestFencedSoleReplicaGoesOfflineAndReturns(t *testing.T) {
	h := newCluster(t, 2, nil)
	h.mustCreate(manualReq("solo", []int32{2}))
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.WantFence = 2, h.epochs[2], true
	if resp, err := h.c.BrokerHeartbeat(hb, at(testNow)); err != nil || !resp.IsFenced {
		t.Fatalf("fencing heartbeat: %+v, %v", resp, err)
	}
	p := partitionsOf(h, "solo")[0]
	if p.Leader != -1 || !slices.Equal(p.ISR, []int32{2}) {
		t.Fatalf("after fencing the only replica: leader %d ISR %v, want offline with ISR [2]", p.Leader, p.ISR)
	}
	if resp := h.heartbeat(2, h.epochs[2], false); resp.IsFenced {
		t.Fatal("caught-up heartbeat left the broker fenced")
	}
	if p := partitionsOf(h, "solo")[0]; p.Leader != 2 {
		t.Fatalf("after the broker returned the partition is led by %d", p.Leader)
	}
}

func TestControlledShutdownMovesLeadersFirst(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("c", []int32{1, 2}, []int32{2, 1}, []int32{1, 3}))
	resp := h.heartbeat(1, h.epochs[1], true)
	if !resp.ShouldShutdown {
		t.Fatalf("broker 1 still told to run: %+v", resp)
	}
	img := h.c.Image()
	if !img.Brokers[1].InControlledShutdown || !img.Brokers[1].Fenced {
		t.Fatalf("broker 1 after shutdown: %+v", img.Brokers[1])
	}
	for _, p := range partitionsOf(h, "c") {
		if p.Leader == 1 || slices.Contains(p.ISR, 1) {
			t.Errorf("partition %d: leader %d ISR %v still has broker 1", p.ID, p.Leader, p.ISR)
		}
	}
	// New topics avoid the shutting-down broker.
	for _, r := range h.mustCreate(topicReq("after", 6, 2)) {
		_ = r
	}
	for _, p := range partitionsOf(h, "after") {
		if slices.Contains(p.Replicas, 1) {
			t.Errorf("new partition %d placed on shutting-down broker 1: %v", p.ID, p.Replicas)
		}
	}
}

// A broker told to shut down stays fenced: a heartbeat that does not ask
// to shut down (one of its regular ones, sent while the shutdown was under
// way) must not unfence it and move every leadership back to it just
// before it stops (at 100,000 partitions a clean shutdown committed
// 100,000 leader changes twice more).
func TestShutDownBrokerIsNotUnfencedAgain(t *testing.T) {
	h := newCluster(t, 1, nil)
	h.mustCreate(manualReq("solo", []int32{1}, []int32{1}))
	if resp := h.heartbeat(1, h.epochs[1], true); !resp.ShouldShutdown || !resp.IsFenced {
		t.Fatalf("shutdown heartbeat: %+v", resp)
	}
	batches := len(h.q.batches)
	if resp := h.heartbeat(1, h.epochs[1], false); !resp.IsFenced {
		t.Fatalf("a regular heartbeat after the shutdown unfenced the broker: %+v", resp)
	}
	if recs := h.q.recordsSince(batches); len(recs) != 0 {
		t.Fatalf("a regular heartbeat after the shutdown committed %d records", len(recs))
	}
	for _, p := range partitionsOf(h, "solo") {
		if p.Leader != -1 {
			t.Errorf("partition %d led by %d after the shutdown", p.ID, p.Leader)
		}
	}
	// Registered again, it is unfenced as usual.
	h.addBroker(1, false)
	if b := h.c.Image().Brokers[1]; b.Fenced || b.InControlledShutdown {
		t.Fatalf("broker registered again: %+v", b)
	}
}

func TestSeveralBrokersFencedAtOnce(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("m", []int32{1, 2, 3}))
	h.c.FenceStaleBrokers(testNow)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 3, h.epochs[3], 1<<40
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow.Add(h.c.sessionTimeout()/2))); err != nil {
		t.Fatal(err)
	}
	fenced, err := h.c.FenceStaleBrokers(testNow.Add(h.c.sessionTimeout()))
	if err != nil || !slices.Equal(fenced, []int32{1, 2}) {
		t.Fatalf("fenced %v (%v)", fenced, err)
	}
	p := partitionsOf(h, "m")[0]
	if p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("leader %d ISR %v, want 3 and [3]", p.Leader, p.ISR)
	}
}

// A controller that is not the active one answers a broker's registration,
// heartbeat and producer id request with NOT_CONTROLLER, whatever its own
// image says: its image may lag (a former active controller restarted and
// still replaying the log), and a STALE_BROKER_EPOCH from it would make a
// healthy broker re-register, fenced, with its leaderships moved away.
func TestInactiveControllerAnswersBrokersNotController(t *testing.T) {
	h := newCluster(t, 2, nil)
	h.q.inactive = true
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 1, h.epochs[1], 1<<40
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow)); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("heartbeat with the current epoch: %v, want NOT_CONTROLLER", err)
	}
	// An epoch this controller has not applied yet.
	hb.BrokerEpoch = h.q.end + 10
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow)); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("heartbeat with an epoch beyond this image: %v, want NOT_CONTROLLER", err)
	}
	hb.BrokerID = 7
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow)); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("heartbeat of a broker this image lacks: %v, want NOT_CONTROLLER", err)
	}
	if _, err := h.c.AllocateProducerIDs(7, h.q.end+10); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("producer ids for a broker this image lacks: %v, want NOT_CONTROLLER", err)
	}
	// Another incarnation of a live broker: not this controller's call.
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = 1, testClusterID, [16]byte{9}
	if _, err := h.c.RegisterBroker(req, testNow); !errors.Is(err, quorum.ErrNotLeader) {
		t.Errorf("registration: %v, want NOT_CONTROLLER", err)
	}

	// Active again: the same requests are answered from the image.
	h.q.inactive = false
	hb.BrokerID, hb.BrokerEpoch = 1, h.epochs[1]
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow)); err != nil {
		t.Errorf("heartbeat at the active controller: %v", err)
	}
	hb.BrokerID = 7
	if _, err := h.c.BrokerHeartbeat(hb, at(testNow)); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Errorf("heartbeat of an unknown broker at the active controller: %v", err)
	}
}

// A controller that loses the leadership and wins it back in a later term
// gives every broker a full session from then: the sessions it kept in
// its earlier term ran out while another controller heard the brokers'
// heartbeats. Issue 20's state came from fencing on them: the brokers
// whose registrations were unchanged since that term were fenced at the
// takeover and left the ISR; a leader that had registered again meanwhile
// (its old session ignored) kept the partition with an ISR of itself;
// when it was dead, its session ran out and the partition went offline
// with that ISR, its two live replicas unable to lead.
func TestSessionsOfAnEarlierTermAreForgotten(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}))
	if fenced, err := h.c.FenceStaleBrokers(testNow); err != nil || len(fenced) != 0 {
		t.Fatalf("first check fenced %v (%v)", fenced, err)
	}
	// Another controller is active for a while; broker 1 restarts and
	// registers again under it, and leads the partition again.
	h.q.inactive, h.q.term = true, h.q.term+1
	if _, err := h.c.FenceStaleBrokers(testNow.Add(time.Minute)); !errors.Is(err, quorum.ErrNotLeader) {
		t.Fatalf("an inactive controller's fencing check: %v, want NOT_CONTROLLER", err)
	}
	reg := metadata.NewRegisterBrokerRecord()
	reg.BrokerId, reg.IncarnationId, reg.BrokerEpoch = 1, [16]byte{1, 2}, h.q.end
	h.q.inactive = false
	if _, err := h.q.Append([]metadata.Record{reg, &metadata.UnfenceBrokerRecord{Id: 1, Epoch: reg.BrokerEpoch}}); err != nil {
		t.Fatal(err)
	}
	// This one is active again, long after its sessions' deadlines, and
	// broker 1 has just died: brokers 2 and 3 heartbeat, 1 does not.
	h.q.term++
	back := testNow.Add(time.Hour)
	if fenced, err := h.c.FenceStaleBrokers(back); err != nil || len(fenced) != 0 {
		t.Fatalf("fenced %v (%v) on sessions of an earlier term", fenced, err)
	}
	if p := partitionsOf(h, "t")[0]; p.Leader != 1 || len(p.ISR) != 3 {
		t.Fatalf("leader %d ISR %v, want 1 and all three", p.Leader, p.ISR)
	}
	for _, id := range []int32{2, 3} {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, h.epochs[id], 1<<40
		if _, err := h.c.BrokerHeartbeat(hb, at(back.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	// A full session from the takeover: the silent broker is fenced once
	// it runs out, and a live ISR member leads.
	if fenced, err := h.c.FenceStaleBrokers(back.Add(h.c.sessionTimeout() - time.Millisecond)); err != nil || len(fenced) != 0 {
		t.Fatalf("fenced %v (%v) before the session ran out", fenced, err)
	}
	if fenced, err := h.c.FenceStaleBrokers(back.Add(h.c.sessionTimeout())); err != nil || !slices.Equal(fenced, []int32{1}) {
		t.Fatalf("fenced %v (%v), want [1]", fenced, err)
	}
	if p := partitionsOf(h, "t")[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) {
		t.Fatalf("leader %d ISR %v, want 2 and [2 3]", p.Leader, p.ISR)
	}
}

// A heartbeat renews the broker's session when it arrives, not when the
// controller gets to it: heartbeats queued behind a slow commit do not let
// the sessions run out.
func TestHeartbeatsQueuedBehindTheControllerKeepTheirSessions(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{1, 2, 3}))
	if fenced, err := h.c.FenceStaleBrokers(testNow); err != nil || len(fenced) != 0 {
		t.Fatalf("first check fenced %v (%v)", fenced, err)
	}
	arrived := testNow.Add(h.c.sessionTimeout() - time.Millisecond)
	h.c.mu.Lock() // a commit in progress
	errs := make(chan error, 3)
	for _, id := range []int32{1, 2, 3} {
		go func() {
			hb := kmsg.NewPtrBrokerHeartbeatRequest()
			hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, h.epochs[id], 1<<40
			_, err := h.c.BrokerHeartbeat(hb, at(arrived))
			errs <- err
		}()
	}
	for _, id := range []int32{1, 2, 3} {
		for wait := time.Now().Add(10 * time.Second); ; {
			if s, ok := h.c.session(id); ok && s.deadline.Equal(arrived.Add(h.c.sessionTimeout())) {
				break
			}
			if time.Now().After(wait) {
				h.c.mu.Unlock()
				t.Fatalf("broker %d's heartbeat did not renew its session while the controller was busy", id)
			}
			time.Sleep(time.Millisecond)
		}
	}
	h.c.mu.Unlock()
	// The fencing check runs before or between the queued heartbeats.
	if fenced, err := h.c.FenceStaleBrokers(testNow.Add(h.c.sessionTimeout())); err != nil || len(fenced) != 0 {
		t.Fatalf("fenced %v (%v) while their heartbeats waited", fenced, err)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if next := h.c.NextSessionDeadline(); !next.Equal(arrived.Add(h.c.sessionTimeout())) {
		t.Fatalf("next session deadline %v, want %v", next, arrived.Add(h.c.sessionTimeout()))
	}
}

// Unfencing a broker that leads many partitions commits a leader change
// for each; a commit that outlasts the session must not let the broker's
// session run out under it: the broker could send no heartbeat while this
// one waited for its answer, so its session counts from the answer (at a
// 100,000-partition restart the broker was fenced again just after it was
// unfenced).
func TestUnfencingCommitLongerThanTheSessionKeepsTheBroker(t *testing.T) {
	h := newCluster(t, 1, nil)
	h.mustCreate(manualReq("solo", []int32{1}, []int32{1}))
	fence := kmsg.NewPtrBrokerHeartbeatRequest()
	fence.BrokerID, fence.BrokerEpoch, fence.WantFence = 1, h.epochs[1], true
	if resp, err := h.c.BrokerHeartbeat(fence, at(testNow)); err != nil || !resp.IsFenced {
		t.Fatalf("fencing heartbeat: %+v, %v", resp, err)
	}
	var clock atomic.Pointer[time.Time]
	clock.Store(&testNow)
	now := func() time.Time { return *clock.Load() }
	entered, release := make(chan struct{}), make(chan struct{})
	publish := h.q.publish
	h.q.publish = func(b quorum.Committed) error {
		close(entered)
		<-release
		h.q.publish = publish
		return publish(b)
	}
	type answer struct {
		resp *kmsg.BrokerHeartbeatResponse
		err  error
	}
	answers := make(chan answer, 1)
	go func() {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 1, h.epochs[1], 1<<40
		resp, err := h.c.BrokerHeartbeat(hb, now)
		answers <- answer{resp, err}
	}()
	<-entered
	answered := testNow.Add(h.c.sessionTimeout() + time.Second)
	clock.Store(&answered)
	close(release)
	a := <-answers
	if a.err != nil || a.resp.IsFenced {
		t.Fatalf("unfencing heartbeat: %+v, %v", a.resp, a.err)
	}
	if p := partitionsOf(h, "solo")[0]; p.Leader != 1 {
		t.Fatalf("partition led by %d after the unfencing, want 1", p.Leader)
	}
	if fenced, err := h.c.FenceStaleBrokers(answered); err != nil || len(fenced) != 0 {
		t.Fatalf("fenced %v (%v) just after unfencing", fenced, err)
	}
	if next := h.c.NextSessionDeadline(); !next.Equal(answered.Add(h.c.sessionTimeout())) {
		t.Fatalf("next session deadline %v, want a session from the answer, %v", next, answered.Add(h.c.sessionTimeout()))
	}
	if fenced, err := h.c.FenceStaleBrokers(answered.Add(h.c.sessionTimeout())); err != nil || !slices.Equal(fenced, []int32{1}) {
		t.Fatalf("fenced %v (%v) a session after the answer, want [1]", fenced, err)
	}
}

// A broker whose heartbeat waits for the controller is not stale, however
// long ago it arrived: the fencing check leaves it to the answer.
func TestWaitingHeartbeatIsNotStale(t *testing.T) {
	h := newCluster(t, 2, nil)
	if fenced, err := h.c.FenceStaleBrokers(testNow); err != nil || len(fenced) != 0 {
		t.Fatalf("first check fenced %v (%v)", fenced, err)
	}
	h.c.mu.Lock() // another operation's commit in progress
	done := make(chan error, 1)
	go func() {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 1, h.epochs[1], 1<<40
		_, err := h.c.BrokerHeartbeat(hb, at(testNow))
		done <- err
	}()
	testwait.Until(t, 30*time.Second, "broker 1's heartbeat waiting", func() bool {
		h.c.smu.Lock()
		defer h.c.smu.Unlock()
		return h.c.waiting[brokerEpoch{1, h.epochs[1]}] == 1
	})
	late := testNow.Add(2 * h.c.sessionTimeout())
	stale := h.c.staleBrokers(h.c.Image(), late)
	next := h.c.NextSessionDeadline()
	h.c.mu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stale, []int32{2}) {
		t.Fatalf("stale %v while broker 1's heartbeat waited, want [2]", stale)
	}
	if want := testNow.Add(h.c.sessionTimeout()); !next.Equal(want) {
		t.Fatalf("next session deadline %v, want broker 2's %v (broker 1's waits for its answer)", next, want)
	}
}

// FenceUnreachable fences a broker the server found dead as an expired
// session would (its leaderships and ISR memberships move), but only
// while it is registered at the epoch the evidence is about, unfenced,
// silent since the evidence, and not fenced this way at that epoch
// before; a broker fenced in error unfences with its next heartbeat.
func TestFenceUnreachable(t *testing.T) {
	h := newCluster(t, 3, nil)
	h.mustCreate(manualReq("t", []int32{3, 1, 2}))
	heartbeat := func(id int32, when time.Time) *kmsg.BrokerHeartbeatResponse {
		t.Helper()
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, h.epochs[id], 1<<40
		resp, err := h.c.BrokerHeartbeat(hb, at(when))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	lost := testNow
	heartbeat(3, lost.Add(-time.Second))
	for _, tc := range []struct {
		what   string
		broker int32
		epoch  int64
		since  time.Time
	}{
		{"another epoch", 3, h.epochs[3] + 1, lost},
		{"heard since", 3, h.epochs[3], lost.Add(-2 * time.Second)},
		{"unregistered", 7, 1, lost},
	} {
		if fenced, err := h.c.FenceUnreachable(tc.broker, tc.epoch, tc.since); err != nil || fenced {
			t.Fatalf("%s: fenced %v (%v)", tc.what, fenced, err)
		}
	}
	if fenced, err := h.c.FenceUnreachable(3, h.epochs[3], lost); err != nil || !fenced {
		t.Fatalf("fenced %v (%v), want true", fenced, err)
	}
	if p := partitionsOf(h, "t")[0]; !h.c.Image().Brokers[3].Fenced || p.Leader != 1 || slices.Contains(p.ISR, 3) {
		t.Fatalf("broker 3 fenced %v; leader %d ISR %v, want 1 without 3", h.c.Image().Brokers[3].Fenced, p.Leader, p.ISR)
	}
	if fenced, err := h.c.FenceUnreachable(3, h.epochs[3], lost); err != nil || fenced {
		t.Fatalf("fencing a fenced broker: %v (%v)", fenced, err)
	}
	// It was alive after all: its next heartbeat unfences it, and the
	// same evidence at the same epoch no longer counts.
	if resp := heartbeat(3, lost.Add(time.Second)); resp.IsFenced {
		t.Fatal("a heartbeat did not unfence broker 3")
	}
	if fenced, err := h.c.FenceUnreachable(3, h.epochs[3], lost.Add(2*time.Second)); err != nil || fenced {
		t.Fatalf("fenced again at the same epoch: %v (%v)", fenced, err)
	}
	h.q.inactive = true
	if _, err := h.c.FenceUnreachable(1, h.epochs[1], lost); !errors.Is(err, quorum.ErrNotLeader) {
		t.Fatalf("an inactive controller: %v, want NOT_CONTROLLER", err)
	}
}
