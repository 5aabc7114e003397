package partition

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"weir/internal/log"
	"weir/internal/record"
)

// txnBatch is a transactional batch of producer pid.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) record.Batch {
	t.Helper()
	b := batch(t, make([]int64, n)...)
	h := record.HeaderOf(b)
	ts := ms(time.Second)
	h.BaseTimestamp, h.MaxTimestamp = ts, ts
	h.Attributes |= record.TransactionalAttributes
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	out, err := record.BuildRaw(h, b.NumRecords(), b.Payload(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A transaction replicated to a follower: read_committed stops at the last
// stable offset until the marker is below the HW, then reads the aborted
// data with its aborted-transaction entry; the follower keeps the same
// producer state and, once leader, fences late markers the same way.
func TestTransactionAcrossReplicas(t *testing.T) {
	rs := newReplicaSet(t, 2)
	rs.elect(1, 1, 2)
	leader, follower := rs.reps[1], rs.reps[2]
	var scratch []byte
	if _, err := follower.StartTxnVerification(7, 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("verification on a follower: %v", err)
	}
	verify := AppendOptions{Acks: AcksLeader, VerifyTxn: true}
	if _, err := leader.AppendWith(txnBatch(t, 7, 0, 0, 2), verify, &scratch); !errors.Is(err, log.ErrInvalidTxnState) {
		t.Fatalf("unverified transactional batch: %v", err)
	}
	g, err := leader.StartTxnVerification(7, 0)
	if err != nil || g == log.NoGuard {
		t.Fatalf("guard %d %v", g, err)
	}
	verify.Guard = g
	if _, err := leader.AppendWith(txnBatch(t, 7, 0, 0, 2), verify, &scratch); err != nil { // 0-1
		t.Fatal(err)
	}
	appendOK(t, leader, AcksLeader, batch(t, ms(time.Second))) // 2
	rs.fetch(2)
	rs.fetch(2)
	if leader.HighWatermark() != 3 || leader.LastStableOffset() != 0 {
		t.Fatalf("HW %d LSO %d", leader.HighWatermark(), leader.LastStableOffset())
	}
	committed := FetchParams{Offset: 0, MaxBytes: 1 << 20, LeaderEpoch: -1, Isolation: ReadCommitted, MinOne: true}
	res, err := leader.Read(committed)
	if err != nil || res.Slice.Size != 0 || res.LastStableOffset != 0 || res.AbortedTxns == nil {
		t.Fatalf("read_committed with the transaction open: %+v %v", res, err)
	}
	uncommitted := committed
	uncommitted.Isolation = ReadUncommitted
	if res, _ := leader.Read(uncommitted); len(readBatches(t, res.Slice)) != 2 || res.LastStableOffset != 0 || res.AbortedTxns != nil {
		t.Fatalf("read_uncommitted: %+v", res)
	}
	if off, _, _, _, _ := leader.ListOffset(LatestTimestamp, -1, ReadCommitted); off != 0 {
		t.Fatalf("latest read_committed offset %d", off)
	}
	// The abort waits for the follower (acks=all), and so does the LSO.
	ab, err := leader.AppendMarker(7, 0, log.Marker{CoordinatorEpoch: 3}) // 3
	if err != nil || ab.Wait == nil || ab.BaseOffset != 3 {
		t.Fatalf("marker: %+v %v", ab, err)
	}
	if leader.LastStableOffset() != 0 {
		t.Fatal("LSO moved before the marker was replicated")
	}
	rs.fetch(2)
	rs.fetch(2)
	if err := waitResult(t, ab.Wait); err != nil {
		t.Fatal(err)
	}
	if leader.LastStableOffset() != 4 {
		t.Fatalf("LSO %d after the abort, want 4", leader.LastStableOffset())
	}
	res, _ = leader.Read(committed)
	if n := len(readBatches(t, res.Slice)); n != 3 ||
		fmt.Sprint(res.AbortedTxns) != fmt.Sprint([]log.AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4}}) {
		t.Fatalf("read_committed after the abort: %d batches, aborted %v", n, res.AbortedTxns)
	}
	if off, _, _, _, _ := leader.ListOffset(LatestTimestamp, -1, ReadCommitted); off != 4 {
		t.Fatalf("latest read_committed offset %d", off)
	}
	rs.fetch(2) // the follower learns the HW
	if fmt.Sprint(follower.ActiveProducers()) != fmt.Sprint(leader.ActiveProducers()) || follower.LastStableOffset() != 4 {
		t.Fatalf("follower producers %v LSO %d; leader %v", follower.ActiveProducers(), follower.LastStableOffset(), leader.ActiveProducers())
	}
	// The follower takes over: a late marker of the old coordinator epoch
	// cannot end the producer's next transaction there.
	rs.elect(2, 1, 2)
	if _, err := follower.AppendWith(txnBatch(t, 7, 0, 2, 1), AppendOptions{Acks: AcksLeader}, &scratch); err != nil {
		t.Fatal(err)
	}
	if _, err := follower.AppendMarker(7, 0, log.Marker{Commit: true, CoordinatorEpoch: 2}); !errors.Is(err, log.ErrCoordinatorFenced) {
		t.Fatalf("late marker: %v", err)
	}
	if got := follower.ActiveProducers()[0]; got.TxnStartOffset != 4 || got.CoordinatorEpoch != 3 {
		t.Fatalf("after the fenced marker: %+v", got)
	}
}
