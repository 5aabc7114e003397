package partition

import (
	"errors"
	"strings"
	"testing"
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
