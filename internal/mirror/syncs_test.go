package mirror

import (
	"slices"
	"testing"
)

func TestSyncRule(t *testing.T) {
	type step struct {
		up, down int64
		flush    bool
		want     []OffsetSync // written after this step
	}
	s := func(up, down int64) OffsetSync {
		return OffsetSync{Topic: "t", Partition: 0, UpstreamOffset: up, DownstreamOffset: down}
	}
	steps := []step{
		{up: 0, down: 0, want: []OffsetSync{s(0, 0)}}, // first record of the partition
		{up: 1, down: 1}, // contiguous, within the lag: delayed
		{up: 2, down: 2},
		{flush: true, want: []OffsetSync{s(2, 2)}}, // the latest delayed at the flush
		{up: 3, down: 3},
		{up: 7, down: 4, want: []OffsetSync{s(7, 4)}}, // upstream skipped 4..6
		{up: 8, down: 5},
		{up: 9, down: 7, want: nil},                     // downstream gaps are fine
		{up: 10, down: 2, want: []OffsetSync{s(10, 2)}}, // downstream went backwards
		{up: 11, down: 6, want: []OffsetSync{s(11, 6)}}, // 6-(2+1) >= lag 3
		{up: 12, down: 7},
		{up: 13, down: 8},
		{up: 14, down: 9},
		{up: 15, down: 10, want: []OffsetSync{s(15, 10)}}, // 10-(6+1) >= 3
		{flush: true, want: nil},                          // nothing delayed since
	}
	r := newSyncRule(3)
	for i, st := range steps {
		if st.flush {
			r.flush()
		} else {
			r.record("t", 0, st.up, st.down)
		}
		if got := r.take(); !slices.Equal(got, st.want) {
			t.Fatalf("step %d (%+v): wrote %+v, want %+v", i, st, got, st.want)
		}
	}
}

// Syncs due within one batch are all written, none replaced by a later one.
func TestSyncRuleKeepsEveryDueSync(t *testing.T) {
	r := newSyncRule(100)
	r.record("t", 0, 0, 0)
	r.record("t", 0, 5, 1) // upstream gap
	r.record("t", 1, 0, 0)
	want := []OffsetSync{{"t", 0, 0, 0}, {"t", 0, 5, 1}, {"t", 1, 0, 0}}
	if got := r.take(); !slices.Equal(got, want) {
		t.Fatalf("wrote %+v, want %+v", got, want)
	}
}
