package partition

import (
	"errors"
	"strings"
	"testing"

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
