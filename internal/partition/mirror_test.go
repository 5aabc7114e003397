package partition

import (
	"errors"
	"strings"
	"testing"

	"weir/internal/log"
	"weir/internal/record"
)

// A mirror leader takes no produce, keeps the source's epochs in its
// lineage, and exposes nothing past the source's high watermark.
func TestMirrorLeader(t *testing.T) {
	src := newPartition(t, topicConfig(t))
	lead(t, src, 7)
	appendOK(t, src, AcksLeader, batch(t, ms(0)))
	appendOK(t, src, AcksLeader, batch(t, ms(0), ms(0)))
	_, batches := read(t, src, 0)

	m := newPartition(t, topicConfig(t))
	mirror := MirrorState{Link: "dr", ReadOnly: true, Active: true}
	if err := m.Apply(State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}, Mirror: mirror}); err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	_, err := m.Append(batch(t, ms(0)), AcksAll, &scratch)
	if !errors.Is(err, ErrMirrorReadOnly) || !strings.Contains(err.Error(), `"dr"`) {
		t.Fatalf("produce to a mirror: %v", err)
	}
	pos, ok := m.MirrorPosition()
	if !ok || pos.FetchOffset != 0 || pos.LastFetchedEpoch != -1 {
		t.Fatalf("position %+v %v: the leader's own epoch must not enter the lineage", pos, ok)
	}
	var raw []byte
	for _, b := range batches {
		raw = append(raw, b...)
	}
	// The source has committed only the first batch.
	if _, err := m.AppendMirrored(pos, raw, 1, 0); err != nil {
		t.Fatal(err)
	}
	if m.Log().LogEndOffset() != 3 || m.HighWatermark() != 1 || m.Log().LatestEpoch() != 7 {
		t.Fatalf("log end %d, HW %d, epoch %d", m.Log().LogEndOffset(), m.HighWatermark(), m.Log().LatestEpoch())
	}
	if _, err := m.AppendMirrored(pos, raw, 3, 0); !errors.Is(err, ErrNotMirroring) {
		t.Fatalf("an answer for a moved position: %v", err)
	}
	pos, _ = m.MirrorPosition()
	if _, err := m.AppendMirrored(pos, nil, 3, 0); err != nil || m.HighWatermark() != 3 {
		t.Fatalf("HW %d after the source's moved: %v", m.HighWatermark(), err)
	}
	// Paused: still read-only, and no mirrored appends.
	mirror.Active = false
	if err := m.Apply(State{Leader: 1, LeaderEpoch: 2, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}, Mirror: mirror}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.MirrorPosition(); ok {
		t.Fatal("a paused mirror has a position")
	}
	if _, err := m.Append(batch(t, ms(0)), AcksAll, &scratch); !errors.Is(err, ErrMirrorReadOnly) {
		t.Fatalf("produce to a paused mirror: %v", err)
	}
	// Promoted, with a leader epoch above the source's: writable, in
	// its own epoch.
	if err := m.Apply(State{Leader: 1, LeaderEpoch: 8, PartitionEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	res := appendOK(t, m, AcksAll, batch(t, ms(0)))
	if res.BaseOffset != 3 || m.Log().LatestEpoch() != 8 {
		t.Fatalf("after promotion: offset %d epoch %d", res.BaseOffset, m.Log().LatestEpoch())
	}
}

// A mirror that stops with a transaction the source had not completed
// cuts its log at the last stable offset: no marker would ever come.
func TestMirrorStopsAtItsLastStableOffset(t *testing.T) {
	m := newPartition(t, topicConfig(t))
	mirror := MirrorState{Link: "dr", ReadOnly: true, Active: true}
	st := State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}, Mirror: mirror}
	if err := m.Apply(st); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for i, b := range []record.Batch{batch(t, ms(0)), txnBatch(t, 9, 0, 0, 2), batch(t, ms(0))} {
		b.SetBaseOffset([]int64{0, 1, 3}[i])
		b.SetLeaderEpoch(4)
		raw = append(raw, b...)
	}
	pos, _ := m.MirrorPosition()
	if _, err := m.AppendMirrored(pos, raw, 4, 0); err != nil {
		t.Fatal(err)
	}
	if m.HighWatermark() != 4 || m.Log().LastStableOffset() != 1 {
		t.Fatalf("HW %d LSO %d", m.HighWatermark(), m.Log().LastStableOffset())
	}
	st.Mirror, st.LeaderEpoch, st.PartitionEpoch = MirrorState{}, 5, 1
	if err := m.Apply(st); err != nil {
		t.Fatal(err)
	}
	if m.Log().LogEndOffset() != 1 || m.Log().LastStableOffset() != 1 || m.Log().LatestEpoch() != 5 {
		t.Fatalf("after the failover: log end %d, LSO %d, epoch %d", m.Log().LogEndOffset(), m.Log().LastStableOffset(), m.Log().LatestEpoch())
	}
	res := appendOK(t, m, AcksAll, batch(t, ms(0)))
	if res.BaseOffset != 1 {
		t.Fatalf("first write at %d", res.BaseOffset)
	}
}

// idemBatch is an idempotent batch of producer pid with n records.
func idemBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) record.Batch {
	t.Helper()
	b := batch(t, make([]int64, n)...)
	h := record.HeaderOf(b)
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	out, err := record.BuildRaw(h, b.NumRecords(), b.Payload(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// After a promotion, a producer of this cluster that got the producer id
// a source producer had is a new producer here: its first batches are not
// checked against the source producer's sequences, nor taken for
// duplicates of its batches.
func TestPromotedMirrorTellsItsProducersFromTheSources(t *testing.T) {
	m := newPartition(t, topicConfig(t))
	st := State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}, Mirror: MirrorState{Link: "dr", ReadOnly: true, Active: true}}
	if err := m.Apply(st); err != nil {
		t.Fatal(err)
	}
	// The source's producer 9 wrote sequences 0 and 1-2.
	var raw []byte
	for i, b := range []record.Batch{idemBatch(t, 9, 0, 0, 1), idemBatch(t, 9, 0, 1, 2)} {
		b.SetBaseOffset([]int64{0, 1}[i])
		b.SetLeaderEpoch(4)
		raw = append(raw, b...)
	}
	pos, _ := m.MirrorPosition()
	if _, err := m.AppendMirrored(pos, raw, 3, 0); err != nil {
		t.Fatal(err)
	}
	st.Mirror, st.LeaderEpoch, st.PartitionEpoch = MirrorState{Stopped: true, StopEpoch: 5}, 5, 1
	if err := m.Apply(st); err != nil {
		t.Fatal(err)
	}
	// This cluster's producer 9, epoch 0: sequence 0 is its first batch
	// (not a duplicate of the source's at offset 0), and 1-2 its second.
	var scratch []byte
	for i, want := range []int64{3, 4} {
		res, err := m.AppendWith(idemBatch(t, 9, 0, int32(i), 1+i), AppendOptions{Acks: AcksLeader}, &scratch)
		if err != nil || res.Duplicate || res.BaseOffset != want {
			t.Fatalf("batch %d of this cluster's producer 9: offset %d duplicate %v: %v", i, res.BaseOffset, res.Duplicate, err)
		}
	}
	// Its retry is a duplicate of its own batch.
	res, err := m.AppendWith(idemBatch(t, 9, 0, 1, 2), AppendOptions{Acks: AcksLeader}, &scratch)
	if err != nil || !res.Duplicate || res.BaseOffset != 4 {
		t.Fatalf("retry: offset %d duplicate %v: %v", res.BaseOffset, res.Duplicate, err)
	}
}

// A follower of a promoted mirror drops a source producer's state when
// this cluster's producer of the same id first writes, as its leader did:
// the source coordinator's epoch must not fence this cluster's markers
// once the follower leads.
func TestPromotedMirrorFollowerForgetsTheSourcesProducers(t *testing.T) {
	rs := newReplicaSet(t, 2)
	st := State{Leader: 1, LeaderEpoch: 2, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2},
		Mirror: MirrorState{Link: "dr", ReadOnly: true, Active: true}}
	rs.publish(st)
	// The source's producer 9 committed a transaction with coordinator
	// epoch 7.
	data := txnBatch(t, 9, 0, 0, 1)
	data.SetLeaderEpoch(4)
	marker := log.MarkerBatch(9, 0, log.Marker{Commit: true, CoordinatorEpoch: 7}, ms(0))
	marker.SetBaseOffset(1)
	marker.SetLeaderEpoch(4)
	leader := rs.reps[1]
	pos, _ := leader.MirrorPosition()
	if _, err := leader.AppendMirrored(pos, append(append([]byte{}, data...), marker...), 2, 0); err != nil {
		t.Fatal(err)
	}
	rs.fetch(2)
	rs.fetch(2)
	st.Mirror, st.LeaderEpoch, st.PartitionEpoch = MirrorState{Stopped: true, StopEpoch: 5}, 5, 2
	rs.publish(st)
	// This cluster's producer 9 writes; the follower replicates it.
	var scratch []byte
	if _, err := leader.AppendWith(idemBatch(t, 9, 0, 0, 1), AppendOptions{Acks: AcksLeader}, &scratch); err != nil {
		t.Fatal(err)
	}
	rs.fetch(2)
	for id, p := range rs.reps {
		for _, pi := range p.Log().ActiveProducers() {
			if pi.ProducerID == 9 && (pi.CoordinatorEpoch != -1 || pi.LastSequence != 0) {
				t.Fatalf("replica %d keeps the source's producer 9: %+v", id, pi)
			}
		}
	}
}
