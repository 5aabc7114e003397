package partition

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A replica elected leader that was deposed before it appended anything
// has an epoch with no batch as its last. As a follower it must still catch
// up: the leader's divergence answer points at its log end, and cutting
// there drops the empty epoch instead of answering the same way forever.
func TestDeposedLeaderWithoutAppendsCatchesUp(t *testing.T) {
	rs := newReplicaSet(t, 3)
	rs.elect(1, 1, 2, 3)
	rs.produce(AcksLeader)
	rs.produce(AcksLeader)
	for range 2 {
		rs.fetch(2)
		rs.fetch(3)
	}
	rs.elect(2, 1, 2, 3) // broker 2 leads epoch 2 and appends nothing
	rs.elect(3, 1, 3)    // deposed in favour of broker 3
	rs.produce(AcksLeader)
	leader, f := rs.reps[3], rs.reps[2]
	if pos, _ := f.FetchPosition(); pos.LastFetchedEpoch != 2 {
		t.Fatalf("follower's last epoch %d, want the empty epoch 2", pos.LastFetchedEpoch)
	}
	for i := 0; i < 4 && f.Log().LogEndOffset() < leader.Log().LogEndOffset(); i++ {
		rs.fetch(2)
	}
	if got, want := f.Log().LogEndOffset(), leader.Log().LogEndOffset(); got != want {
		t.Fatalf("follower stuck at %d, leader at %d (follower epochs %v)", got, want, f.Log().Epochs())
	}
}

// When the controller refuses a retried ISR expansion with
// INVALID_UPDATE_VERSION or FENCED_LEADER_EPOCH, an earlier send of it may
// have been committed (its answer lost): the leader keeps counting the
// joining follower for the high watermark until the metadata arrives, so
// it never commits a record a replica in the controller's ISR lacks.
func TestRefusedExpansionKeepsCountingTheJoiningFollower(t *testing.T) {
	for _, refusal := range []error{kerr.InvalidUpdateVersion, kerr.FencedLeaderEpoch} {
		t.Run(refusal.(*kerr.Error).Message, func(t *testing.T) {
			rs := newReplicaSet(t, 3)
			rs.elect(1, 1, 2)
			rs.produce(AcksLeader)
			rs.fetch(2)
			rs.fetch(3)
			rs.fetch(3) // caught up: proposed
			if len(rs.proposed) != 1 {
				t.Fatalf("proposed %+v", rs.proposed)
			}
			c := rs.proposed[0]
			rs.proposed = nil
			leader := rs.reps[1]
			leader.IsrChangeDone(c, nil, refusal)
			// Follower 3 stops fetching and falls out of the lag time; the
			// leader may not commit past it.
			w := rs.produce(AcksAll).Wait
			rs.now = rs.now.Add(time.Minute)
			rs.fetch(2)
			rs.fetch(2)
			if hw, end3 := leader.HighWatermark(), rs.reps[3].Log().LogEndOffset(); hw > end3 {
				t.Fatalf("HW %d passed follower 3 (log end %d), which the controller may hold in the ISR", hw, end3)
			}
			if len(rs.proposed) != 0 {
				t.Fatalf("a new proposal %+v before the metadata came", rs.proposed)
			}
			// The metadata with the committed expansion ends the proposal.
			st := rs.state
			st.ISR, st.PartitionEpoch = c.ids(), st.PartitionEpoch+1
			rs.publish(st)
			rs.fetch(3)
			rs.fetch(3)
			if hw := leader.HighWatermark(); hw != leader.Log().LogEndOffset() {
				t.Fatalf("HW %d, log end %d", hw, leader.Log().LogEndOffset())
			}
			if err := waitResult(t, w); err != nil {
				t.Fatal(err)
			}
		})
	}
	// INELIGIBLE_REPLICA says the change was not applied: the proposal
	// ends at once.
	rs := newReplicaSet(t, 3)
	rs.elect(1, 1, 2)
	rs.produce(AcksLeader)
	rs.fetch(3)
	rs.fetch(3)
	c := rs.proposed[0]
	rs.proposed = nil
	rs.reps[1].IsrChangeDone(c, nil, kerr.IneligibleReplica)
	rs.fetch(3)
	if len(rs.proposed) != 1 {
		t.Fatalf("after INELIGIBLE_REPLICA the change was not proposed again: %+v", rs.proposed)
	}
}

// DeleteRecords may move the leader's log start inside a batch. A follower
// with a diverged tail whose last epoch the leader has deleted must not be
// cut back to that log start (a batch boundary in its own log but not in
// the leader's), and then refuse, on every fetch, the leader's batch from
// below it: the leader answers a divergence at its log start, and the
// follower restarts its log there.
func TestFollowerCatchesUpFromInsideTheLeadersFirstBatch(t *testing.T) {
	rs := newReplicaSet(t, 3)
	rs.elect(1, 1, 2, 3)
	rs.produce(AcksLeader) // offset 0
	for range 2 {
		rs.fetch(2)
		rs.fetch(3)
	}
	rs.elect(2, 2) // broker 2 alone writes 1 and 2, which nobody else gets
	rs.produce(AcksLeader)
	rs.produce(AcksLeader)
	rs.elect(3, 3, 1) // broker 3 writes one batch at 1-3
	ts := ms(time.Second)
	appendOK(t, rs.reps[3], AcksLeader, batch(t, ts, ts, ts))
	rs.fetch(1)
	rs.fetch(1)
	leader := rs.reps[3]
	if hw := leader.HighWatermark(); hw != 4 {
		t.Fatalf("HW %d", hw)
	}
	if start, err := leader.DeleteRecords(2); err != nil || start != 2 {
		t.Fatalf("DeleteRecords: %d, %v", start, err)
	}
	f := rs.reps[2]
	for i := 0; i < 4 && f.Log().LogEndOffset() < leader.Log().LogEndOffset(); i++ {
		rs.fetch(2)
	}
	if got, want := f.Log().LogEndOffset(), leader.Log().LogEndOffset(); got != want {
		t.Fatalf("follower at %d, leader at %d", got, want)
	}
	got, err := f.Log().ReadBytes(2, 1<<20, 4)
	if err != nil {
		t.Fatal(err)
	}
	want, err := leader.Log().ReadBytes(2, 1<<20, 4)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("follower's batch from 2 differs from the leader's (%v)", err)
	}
	if f.Log().LogStartOffset() != 2 {
		t.Fatalf("follower's log start %d", f.Log().LogStartOffset())
	}
}

// A compacted leader's log has gaps: whole batches the cleaner removed. A
// follower whose log ends in such a gap gets the next batch the leader
// kept, further on, and appends it there, as Kafka's followers do.
func TestFollowerAppendsAcrossACompactionGap(t *testing.T) {
	rs := newReplicaSet(t, 2)
	rs.elect(1, 1, 2)
	rs.produce(AcksLeader) // offset 0
	rs.fetch(2)
	// The leader's records 1-4 are gone (compacted); it kept 5.
	b := batch(t, ms(0))
	b.SetBaseOffset(5)
	b.SetLeaderEpoch(rs.state.LeaderEpoch)
	if _, err := rs.reps[1].Log().AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	rs.fetch(2)
	if got := rs.reps[2].Log().LogEndOffset(); got != 6 {
		t.Fatalf("follower's log end %d, want 6", got)
	}
}
