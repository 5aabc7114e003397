package fetcher

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"weir/internal/config"
	"weir/internal/log"
	"weir/internal/partition"
	"weir/internal/record"
	"weir/internal/vfs/vfstest"
)

var testNow = time.UnixMilli(1_700_000_000_000)

func replica(t *testing.T, id int32) *partition.Partition {
	t.Helper()
	static, _, err := config.LoadBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.ResolveTopic(nil, nil, nil, static)
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	tp := log.TopicPartition{Topic: "t", Partition: 0}
	now := func() time.Time { return testNow }
	l, err := log.Open("/data/t-0", tp, partition.LogConfig(cfg), log.Options{FS: vfstest.NewMem(), Now: now, Logger: lg,
		AfterDelay: func(_ time.Duration, fn func()) { fn() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return partition.New(tp, [16]byte{1}, id, l, cfg, lg, now)
}

// idem is a batch of n records of producer pid from sequence seq.
func idem(t *testing.T, pid int64, seq int32, n int) record.Batch {
	t.Helper()
	h := record.NewBatchHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, 0, seq
	h.BaseTimestamp, h.MaxTimestamp = testNow.UnixMilli(), testNow.UnixMilli()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte{byte(seq), byte(i)}}
	}
	b, err := record.Build(h, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appendAll(t *testing.T, p *partition.Partition, batches ...record.Batch) {
	t.Helper()
	var scratch []byte
	for _, b := range batches {
		if _, err := p.Append(b, partition.AcksLeader, &scratch); err != nil {
			t.Fatal(err)
		}
	}
}

func lastSeq(l *log.Log, pid int64) int32 {
	for _, pi := range l.ActiveProducers() {
		if pi.ProducerID == pid {
			return pi.LastSequence
		}
	}
	return -1
}

// A deposed leader's own history below the leader's log start: DeleteRecords
// took the leader's records there and the epochs describing them, so the
// leader cannot tell where the follower diverged and answers a divergence
// at its log start, whether the follower's log ends past it or right at
// it. The follower must not keep its records below it, nor the producer
// state they make (here, producer 7 at sequence 1 where the leader's
// history has it at 3): it restarts its log at the leader's log start.
func TestDivergedBelowTheLeadersLogStartRestartsTheLog(t *testing.T) {
	for _, zombieEnd := range []int64{5, 6} {
		t.Run(fmt.Sprintf("follower ends at %d", zombieEnd), func(t *testing.T) {
			zombie, leader := replica(t, 1), replica(t, 2)
			st := partition.State{Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1}}
			if err := zombie.Apply(st); err != nil {
				t.Fatal(err)
			}
			appendAll(t, zombie, idem(t, 7, 0, 2), idem(t, 9, 0, 1), idem(t, 9, 1, 1), idem(t, 9, 2, 1)) // 0-4 in epoch 0
			if zombieEnd == 6 {
				appendAll(t, zombie, idem(t, 9, 3, 1))
			}
			st = partition.State{Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2}}
			if err := leader.Apply(st); err != nil {
				t.Fatal(err)
			}
			appendAll(t, leader, idem(t, 7, 0, 2), idem(t, 7, 2, 1), idem(t, 7, 3, 1), idem(t, 9, 0, 2)) // 0-5 in epoch 1
			if _, err := leader.DeleteRecords(5); err != nil {
				t.Fatal(err)
			}
			if err := zombie.Apply(st); err != nil {
				t.Fatal(err)
			}
			pos, ok := zombie.FetchPosition()
			if !ok || pos.FetchOffset != zombieEnd {
				t.Fatalf("fetch position %+v", pos)
			}
			res, err := leader.ReadForFollower(partition.FollowerFetch{ReplicaID: 1, BrokerEpoch: -1, FetchOffset: pos.FetchOffset,
				LogStartOffset: pos.LogStartOffset, LastFetchedEpoch: pos.LastFetchedEpoch, CurrentLeaderEpoch: pos.LeaderEpoch,
				MaxBytes: 1 << 20, MinOne: true})
			if err != nil || res.DivergingEndOffset != 5 || res.LogStartOffset != 5 {
				t.Fatalf("leader's answer: diverging at %d/%d, log start %d, %v", res.DivergingEpoch, res.DivergingEndOffset, res.LogStartOffset, err)
			}
			a := Answer{DivergingEpoch: res.DivergingEpoch, DivergingEndOffset: res.DivergingEndOffset,
				HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset}
			if err := Apply(zombie, pos, a, nil); err != nil {
				t.Fatal(err)
			}
			l := zombie.Log()
			if l.LogStartOffset() != 5 || l.LogEndOffset() != 5 {
				t.Fatalf("follower's log [%d, %d), want it restarted at 5", l.LogStartOffset(), l.LogEndOffset())
			}
			if got := lastSeq(l, 7); got == 1 {
				t.Fatalf("producer 7's state from the deposed history survived (last sequence %d)", got)
			}
		})
	}
}
