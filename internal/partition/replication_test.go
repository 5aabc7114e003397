package partition

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"weir/internal/log"
	"weir/internal/vfs/vfstest"
)

// replicaSet is one partition's replicas on brokers 1..n, each over its
// own in-memory log, with one clock and a record of proposed ISR changes.
type replicaSet struct {
	t        *testing.T
	now      time.Time
	reps     map[int32]*Partition
	proposed []IsrChange
	shrinks  int
	expands  int
	state    State
}

func newReplicaSet(t *testing.T, n int, kv ...string) *replicaSet {
	t.Helper()
	rs := &replicaSet{t: t, now: testNow, reps: map[int32]*Partition{}}
	cfg := topicConfig(t, kv...)
	repl := &Replication{
		LagTimeMax: 30 * time.Second,
		AlterISR:   func(_ *Partition, c IsrChange) { rs.proposed = append(rs.proposed, c) },
		IsrChanged: func(shrunk bool) {
			if shrunk {
				rs.shrinks++
			} else {
				rs.expands++
			}
		},
	}
	tp := log.TopicPartition{Topic: "t", Partition: 0}
	for id := int32(1); id <= int32(n); id++ {
		l, err := log.Open(filepath.Join("/data", tp.String()), tp, LogConfig(cfg),
			log.Options{FS: vfstest.NewMem(), Now: rs.clock, Logger: quiet(), AfterDelay: runNow})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := New(tp, [16]byte{1}, id, l, cfg, quiet(), rs.clock)
		p.SetReplication(repl)
		rs.reps[id] = p
		rs.state.Replicas = append(rs.state.Replicas, id)
	}
	return rs
}

func (rs *replicaSet) clock() time.Time { return rs.now }

// publish applies a partition state to every replica, as the metadata
// image would.
func (rs *replicaSet) publish(st State) {
	rs.t.Helper()
	rs.state = st
	for _, p := range rs.reps {
		if err := p.Apply(st); err != nil {
			rs.t.Fatal(err)
		}
	}
}

// elect makes leader lead in a new epoch with isr.
func (rs *replicaSet) elect(leader int32, isr ...int32) {
	st := rs.state
	st.Leader, st.LeaderEpoch, st.PartitionEpoch, st.ISR = leader, st.LeaderEpoch+1, st.PartitionEpoch+1, isr
	rs.publish(st)
}

// commitProposal answers the last proposal as the controller would,
// committing it, and publishes the new state.
func (rs *replicaSet) commitProposal() {
	rs.t.Helper()
	if len(rs.proposed) == 0 {
		rs.t.Fatal("no ISR change was proposed")
	}
	c := rs.proposed[len(rs.proposed)-1]
	rs.proposed = nil
	st := rs.state
	st.ISR, st.PartitionEpoch = c.ids(), st.PartitionEpoch+1
	rs.reps[st.Leader].IsrChangeDone(c, &st, nil)
	rs.publish(st)
}

// fetch runs one fetch of follower id from the current leader and hands
// the answer back, as the fetcher does.
func (rs *replicaSet) fetch(id int32) FollowerRead {
	rs.t.Helper()
	f := rs.reps[id]
	pos, ok := f.FetchPosition()
	if !ok {
		rs.t.Fatalf("replica %d does not follow", id)
	}
	res, err := rs.reps[pos.Leader].ReadForFollower(FollowerFetch{ReplicaID: id, BrokerEpoch: -1, FetchOffset: pos.FetchOffset,
		LogStartOffset: pos.LogStartOffset, LastFetchedEpoch: pos.LastFetchedEpoch, CurrentLeaderEpoch: pos.LeaderEpoch,
		MaxBytes: 1 << 20, MinOne: true})
	switch {
	case errors.Is(err, log.ErrOffsetOutOfRange) && pos.FetchOffset < res.LogStartOffset:
		if err := f.RestartAt(pos, res.LogStartOffset); err != nil {
			rs.t.Fatal(err)
		}
		return res
	case err != nil:
		rs.t.Fatalf("fetch by %d: %v", id, err)
	case res.DivergingEndOffset >= 0 && res.DivergingEndOffset <= res.LogStartOffset:
		if err := f.RestartDiverged(pos, res.LogStartOffset); err != nil {
			rs.t.Fatal(err)
		}
		return res
	case res.DivergingEpoch >= 0:
		if _, err := f.TruncateDiverged(pos, res.DivergingEpoch, res.DivergingEndOffset); err != nil {
			rs.t.Fatal(err)
		}
		return res
	}
	if _, err := f.AppendFetched(pos, sliceBytes(rs.t, res.Slice), res.HighWatermark, res.LogStartOffset); err != nil {
		rs.t.Fatalf("append by %d: %v", id, err)
	}
	return res
}

func sliceBytes(t *testing.T, sl log.Slice) []byte {
	t.Helper()
	if sl.Size == 0 {
		return nil
	}
	buf := make([]byte, sl.Size)
	if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return buf
}

func (rs *replicaSet) produce(acks int16) AppendResult {
	rs.t.Helper()
	return appendOK(rs.t, rs.reps[rs.state.Leader], acks, batch(rs.t, ms(time.Second)))
}

// The high watermark is the smallest log end offset in the ISR: an
// acks=all append completes when every ISR follower has fetched past it,
// and a follower's high watermark follows the leader's.
func TestHighWatermarkFollowsTheISR(t *testing.T) {
	rs := newReplicaSet(t, 3)
	rs.elect(1, 1, 2, 3)
	w := rs.produce(AcksAll).Wait
	rs.produce(AcksLeader)
	leader := rs.reps[1]
	if w == nil || leader.HighWatermark() != 0 {
		t.Fatalf("HW %d before any fetch", leader.HighWatermark())
	}
	rs.fetch(2) // fetches offsets 0-1
	if leader.HighWatermark() != 0 || !pending(w) {
		t.Fatal("HW moved before follower 3 fetched")
	}
	rs.fetch(3)
	if leader.HighWatermark() != 0 {
		t.Fatal("HW moved before the followers reported their new log ends")
	}
	rs.fetch(2) // reports log end 2
	rs.fetch(3)
	if leader.HighWatermark() != 2 {
		t.Fatalf("HW = %d, want 2", leader.HighWatermark())
	}
	if err := waitResult(t, w); err != nil {
		t.Fatal(err)
	}
	// Follower 2 learned HW 0 with its last fetch; the next brings 2.
	rs.fetch(2)
	if got := rs.reps[2].HighWatermark(); got != 2 {
		t.Fatalf("follower HW %d, want 2", got)
	}
	if rs.reps[2].Log().LogEndOffset() != 2 || rs.reps[3].Log().LogEndOffset() != 2 {
		t.Fatal("followers did not replicate both batches")
	}
}

// A follower out of the ISR that catches up with the high watermark is
// proposed for the ISR; once committed, it counts for the high watermark.
// Only one proposal is in flight at a time.
func TestISRExpandsWhenAFollowerCatchesUp(t *testing.T) {
	rs := newReplicaSet(t, 3)
	rs.elect(1, 1, 2)
	for range 3 {
		rs.produce(AcksLeader)
	}
	rs.fetch(2)
	rs.fetch(2)
	if hw := rs.reps[1].HighWatermark(); hw != 3 {
		t.Fatalf("HW %d", hw)
	}
	if len(rs.proposed) != 0 {
		t.Fatalf("proposed %v before follower 3 fetched", rs.proposed)
	}
	rs.fetch(3) // at 0: behind the HW
	if len(rs.proposed) != 0 {
		t.Fatal("a follower behind the HW was proposed")
	}
	rs.fetch(3) // at 3: caught up
	if len(rs.proposed) != 1 || !slices.Equal(rs.proposed[0].ids(), []int32{1, 2, 3}) {
		t.Fatalf("proposed %+v", rs.proposed)
	}
	rs.fetch(3)
	if len(rs.proposed) != 1 {
		t.Fatal("a second proposal while one is in flight")
	}
	// While it is in flight, follower 3 already counts for the HW.
	rs.produce(AcksLeader)
	rs.fetch(2)
	rs.fetch(2)
	if hw := rs.reps[1].HighWatermark(); hw != 3 {
		t.Fatalf("HW %d moved past follower 3 (log end 3) while it joins", hw)
	}
	rs.commitProposal()
	if st := rs.reps[1].State(); !slices.Equal(st.ISR, []int32{1, 2, 3}) || rs.expands != 1 {
		t.Fatalf("ISR %v, expands %d", st.ISR, rs.expands)
	}
	rs.fetch(3)
	rs.fetch(3)
	if hw := rs.reps[1].HighWatermark(); hw != 4 {
		t.Fatalf("HW %d, want 4", hw)
	}
}

// An ISR change is counted once, when it reaches the leader by the
// metadata image before the controller's answer as when it comes after.
func TestISRChangeCountedOnceWhicheverWayItArrives(t *testing.T) {
	rs := newReplicaSet(t, 3)
	rs.elect(1, 1, 2)
	rs.produce(AcksLeader)
	rs.fetch(3)
	rs.fetch(3)
	if len(rs.proposed) != 1 {
		t.Fatalf("proposed %+v", rs.proposed)
	}
	c := rs.proposed[0]
	rs.proposed = nil
	st := rs.state
	st.ISR, st.PartitionEpoch = c.ids(), st.PartitionEpoch+1
	rs.publish(st) // the image first
	rs.reps[1].IsrChangeDone(c, &st, nil)
	if rs.expands != 1 || rs.shrinks != 0 {
		t.Fatalf("expands %d, shrinks %d, want 1 and 0", rs.expands, rs.shrinks)
	}
	// A new leadership is not a change of the ISR.
	rs.elect(2, 2, 3)
	if rs.expands != 1 || rs.shrinks != 0 {
		t.Fatalf("after an election: expands %d, shrinks %d", rs.expands, rs.shrinks)
	}
}

// A follower that has not caught up for replica.lag.time.max.ms is
// proposed out of the ISR; one that keeps fetching what the leader had
// at its previous fetch stays in, however busy the leader is.
func TestISRShrinksAfterTheLagTime(t *testing.T) {
	rs := newReplicaSet(t, 3)
	rs.elect(1, 1, 2, 3)
	for i := 0; i < 40; i++ {
		rs.produce(AcksLeader)
		rs.fetch(2) // always one batch behind the leader's end
		rs.now = rs.now.Add(time.Second)
		rs.reps[1].MaybeShrinkISR()
	}
	if len(rs.proposed) != 1 || !slices.Equal(rs.proposed[0].ids(), []int32{1, 2}) {
		t.Fatalf("proposed %+v, want follower 3 out", rs.proposed)
	}
	rs.commitProposal()
	if rs.shrinks != 1 {
		t.Fatalf("shrinks %d", rs.shrinks)
	}
	// With follower 3 gone the HW is follower 2's log end, once it
	// reports it.
	rs.fetch(2)
	if hw, leo := rs.reps[1].HighWatermark(), rs.reps[2].Log().LogEndOffset(); hw != leo {
		t.Fatalf("HW %d, follower 2 log end %d", hw, leo)
	}
	// An idle follower holding everything stays in; once the leader has
	// more, a minute without fetching puts it out.
	rs.now = rs.now.Add(time.Minute)
	rs.reps[1].MaybeShrinkISR()
	if len(rs.proposed) != 0 {
		t.Fatalf("proposed %+v for a follower holding everything", rs.proposed)
	}
	rs.produce(AcksLeader)
	rs.reps[1].MaybeShrinkISR()
	if len(rs.proposed) != 1 || !slices.Equal(rs.proposed[0].ids(), []int32{1}) {
		t.Fatalf("proposed %+v, want follower 2 out after a minute without fetching", rs.proposed)
	}
}

// An ISR below min.insync.replicas refuses acks=all appends before they
// are written; one that shrinks below it while an append waits answers
// NOT_ENOUGH_REPLICAS_AFTER_APPEND once the HW covers it.
func TestMinInsyncReplicas(t *testing.T) {
	rs := newReplicaSet(t, 3, "min.insync.replicas", "2")
	rs.elect(1, 1, 2)
	w := rs.produce(AcksAll).Wait
	rs.now = rs.now.Add(31 * time.Second)
	rs.reps[1].MaybeShrinkISR()
	rs.commitProposal()
	if err := waitResult(t, w); !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("waiting append: %v", err)
	}
	var scratch []byte
	if _, err := rs.reps[1].Append(batch(t, ms(time.Second)), AcksAll, &scratch); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("append with ISR [1]: %v", err)
	}
	if end := rs.reps[1].Log().LogEndOffset(); end != 1 {
		t.Fatalf("the refused append was written: log end %d", end)
	}
	if _, err := rs.reps[1].Append(batch(t, ms(time.Second)), AcksLeader, &scratch); err != nil {
		t.Fatalf("acks=1 with ISR [1]: %v", err)
	}
}

// With eligible leader replicas on, the HW stands still while the ISR is
// below min.insync.replicas, also for acks=1 records, so the replicas that
// left the ISR hold everything committed; it moves once the ISR is back.
func TestStrictMinISRHoldsTheHighWatermark(t *testing.T) {
	rs := newReplicaSet(t, 2, "min.insync.replicas", "2")
	strict := true
	for _, p := range rs.reps {
		r := *p.repl()
		r.StrictMinISR = func() bool { return strict }
		p.SetReplication(&r)
	}
	rs.elect(1, 1)
	rs.produce(AcksLeader)
	if hw := rs.reps[1].HighWatermark(); hw != 0 {
		t.Fatalf("HW %d with ISR [1] below min.insync.replicas 2", hw)
	}
	rs.fetch(2)
	rs.fetch(2) // caught up: proposed into the ISR
	if hw := rs.reps[1].HighWatermark(); hw != 0 {
		t.Fatalf("HW %d before the ISR change committed", hw)
	}
	rs.commitProposal()
	if hw := rs.reps[1].HighWatermark(); hw != 1 {
		t.Fatalf("HW %d with ISR [1 2], want 1", hw)
	}
	// Without the rule, a lone leader's HW follows its log end.
	strict = false
	rs.elect(1, 1)
	rs.produce(AcksLeader)
	if hw, leo := rs.reps[1].HighWatermark(), rs.reps[1].Log().LogEndOffset(); hw != leo {
		t.Fatalf("HW %d, log end %d", hw, leo)
	}
}

// A follower whose log diverged from the new leader's (it holds records
// of an old epoch the new leader never got) truncates to where they
// agree, then replicates the new leader's records.
func TestFollowerTruncatesADivergedLog(t *testing.T) {
	rs := newReplicaSet(t, 2)
	rs.elect(1, 1, 2)
	rs.produce(AcksLeader)
	rs.fetch(2)
	rs.fetch(2) // both hold offset 0, HW 1
	rs.produce(AcksLeader)
	rs.produce(AcksLeader) // only on 1: offsets 1-2 of epoch 1
	rs.elect(2, 2)         // unclean for offsets 1-2: 2 leads epoch 2
	rs.produce(AcksLeader) // offset 1 of epoch 2
	rs.state.ISR = []int32{2}
	if res := rs.fetch(1); res.DivergingEpoch != 1 || res.DivergingEndOffset != 1 {
		t.Fatalf("diverging epoch %d end %d, want 1 and 1", res.DivergingEpoch, res.DivergingEndOffset)
	}
	if end := rs.reps[1].Log().LogEndOffset(); end != 1 {
		t.Fatalf("follower truncated to %d, want 1", end)
	}
	rs.fetch(1)
	a, b := rs.reps[1].Log(), rs.reps[2].Log()
	if a.LogEndOffset() != 2 || !slices.Equal(a.Epochs(), b.Epochs()) {
		t.Fatalf("after catching up: end %d, epochs %v vs %v", a.LogEndOffset(), a.Epochs(), b.Epochs())
	}
	ab, _ := a.ReadBytes(0, 1<<20, 2)
	bb, _ := b.ReadBytes(0, 1<<20, 2)
	if !slices.Equal(ab, bb) {
		t.Fatal("the replicas' logs differ")
	}
}

// A follower behind the leader's log start restarts its log there.
func TestFollowerBehindTheLogStartRestarts(t *testing.T) {
	rs := newReplicaSet(t, 2)
	rs.elect(1, 1)
	for range 5 {
		rs.produce(AcksLeader)
	}
	if _, err := rs.reps[1].DeleteRecords(3); err != nil {
		t.Fatal(err)
	}
	rs.fetch(2)
	if st, end := rs.reps[2].Log().LogStartOffset(), rs.reps[2].Log().LogEndOffset(); st != 3 || end != 3 {
		t.Fatalf("follower log [%d, %d), want [3, 3)", st, end)
	}
	rs.fetch(2)
	if end := rs.reps[2].Log().LogEndOffset(); end != 5 {
		t.Fatalf("follower log end %d, want 5", end)
	}

	// A log start inside a batch: the follower starts its log at the
	// batch and keeps the leader's log start.
	rs = newReplicaSet(t, 2)
	rs.elect(1, 1)
	for range 3 {
		appendOK(t, rs.reps[1], AcksLeader, batch(t, ms(time.Second), ms(time.Second), ms(time.Second)))
	}
	if _, err := rs.reps[1].DeleteRecords(4); err != nil {
		t.Fatal(err)
	}
	rs.fetch(2) // restarts at 4
	rs.fetch(2) // gets the batch 3-5 and the next
	l := rs.reps[2].Log()
	if l.LogStartOffset() != 4 || l.LogEndOffset() != 9 {
		t.Fatalf("follower log [%d, %d), want [4, 9)", l.LogStartOffset(), l.LogEndOffset())
	}
}

// Answers meant for another leader or epoch are dropped; a stale answer
// to an ISR proposal and an older image are ignored.
func TestStaleAnswersAreIgnored(t *testing.T) {
	rs := newReplicaSet(t, 3)
	rs.elect(1, 1, 2)
	rs.produce(AcksLeader)
	pos, _ := rs.reps[2].FetchPosition()
	rs.elect(3, 3, 1, 2)
	if _, err := rs.reps[2].AppendFetched(pos, nil, 1, 0); !errors.Is(err, ErrNotFollowing) {
		t.Fatalf("append for an old epoch: %v", err)
	}
	if _, err := rs.reps[2].TruncateDiverged(pos, 0, 0); !errors.Is(err, ErrNotFollowing) {
		t.Fatalf("truncate for an old epoch: %v", err)
	}
	// A proposal answered after the image moved on changes nothing.
	rs.fetch(1)
	rs.fetch(2)
	rs.now = rs.now.Add(time.Minute)
	rs.reps[3].MaybeShrinkISR()
	if len(rs.proposed) != 1 {
		t.Fatalf("proposed %+v", rs.proposed)
	}
	c := rs.proposed[0]
	st := rs.state
	st.PartitionEpoch += 5
	rs.publish(st)
	old := st
	old.ISR, old.PartitionEpoch = c.ids(), c.PartitionEpoch+1
	rs.reps[3].IsrChangeDone(c, &old, nil)
	if got := rs.reps[3].State(); !slices.Equal(got.ISR, st.ISR) || got.PartitionEpoch != st.PartitionEpoch {
		t.Fatalf("a stale answer changed the state to %+v", got)
	}
	// An answer ahead of the image holds until the image passes it.
	rs.proposed = nil
	rs.reps[3].MaybeShrinkISR()
	c = rs.proposed[0]
	ahead := st
	ahead.ISR, ahead.PartitionEpoch = c.ids(), st.PartitionEpoch+1
	rs.reps[3].IsrChangeDone(c, &ahead, nil)
	if err := rs.reps[3].Apply(st); err != nil {
		t.Fatal(err)
	}
	if got := rs.reps[3].State(); !slices.Equal(got.ISR, ahead.ISR) {
		t.Fatalf("an older image undid a committed ISR change: %+v", got)
	}
}
