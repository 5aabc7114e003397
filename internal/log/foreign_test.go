package log

import (
	"errors"
	"testing"

	"weir/internal/record"
)

// A promoted mirror's log holds another cluster's producer 7 (epoch 5,
// its coordinator at epoch 9) before leader epoch 2 and its own producer
// 7 (epoch 0, coordinator epoch 0) from there. After a crash the log
// rebuilds its producer state from the batches; told where its own
// producers begin, it keeps the two apart as the appends did, so the own
// coordinator's marker for the transaction open at the crash is not
// fenced by the source coordinator's epoch. A log closed before it was told keeps no snapshot
// of a state that may mix them.
func TestRebuiltProducerStateKeepsAnotherClustersProducersApart(t *testing.T) {
	for _, closeFirst := range []bool{false, true} {
		e := newEnv(t)
		cfg := smallConfig()
		cfg.SegmentBytes = 1 << 20
		l := e.open(cfg)
		// The source's transaction, copied at the source's offsets in
		// its leader epoch 1.
		var copied []byte
		for i, b := range []record.Batch{txnBatch(t, 7, 5, 0, 2, 1000), MarkerBatch(7, 5, Marker{Commit: true, CoordinatorEpoch: 9}, 1000)} {
			h := record.HeaderOf(b)
			h.BaseOffset, h.LeaderEpoch = int64(2*i), 1
			b, err := record.BuildRaw(h, b.NumRecords(), b.Payload(), 0)
			if err != nil {
				t.Fatal(err)
			}
			copied = append(copied, b...)
		}
		if _, err := l.AppendAsFollower(copied); err != nil {
			t.Fatal(err)
		}
		// The topic's own producer 7 opens a transaction in epoch 2,
		// the first of its own writes; the log crashes before the
		// marker.
		own := LeaderAppend{LeaderEpoch: 2, ForeignBelow: l.EpochStartFrom(2)}
		if _, err := l.AppendWith(txnBatch(t, 7, 0, 0, 1, 2000), own); err != nil {
			t.Fatalf("the own producer's first batch: %v", err)
		}
		if err := l.Abandon(); err != nil {
			t.Fatal(err)
		}
		l = e.openWith(cfg, e.opts())
		if closeFirst {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = e.openWith(cfg, e.opts())
		}
		if err := l.SetOwnProducersFrom(2); err != nil {
			t.Fatal(err)
		}
		// The own coordinator (epoch 0) ends the transaction: not
		// fenced by the source coordinator's epoch 9.
		own = LeaderAppend{LeaderEpoch: 2, Origin: OriginCoordinator, ForeignBelow: l.EpochStartFrom(2)}
		if _, err := l.AppendWith(MarkerBatch(7, 0, Marker{Commit: true, CoordinatorEpoch: 0}, 2000), own); err != nil {
			t.Fatalf("closed before told where its producers begin: %v; the own coordinator's marker: %v", closeFirst, err)
		}
		// An older coordinator epoch than the own one is still fenced.
		if _, err := l.AppendWith(MarkerBatch(7, 0, Marker{Commit: true, CoordinatorEpoch: -1}, 3000), own); !errors.Is(err, ErrCoordinatorFenced) {
			t.Fatalf("a marker of an older coordinator epoch: %v", err)
		}
		l.Close()
	}
}
