package mirror

import "testing"

func TestCopiedRunsTranslate(t *testing.T) {
	c := newCopiedRuns()
	tp := topicPartition{"t", 0}
	copyRecs := func(pairs ...int64) {
		c.note(tp, len(pairs)/2, func(i int) (int64, int64) { return pairs[2*i], pairs[2*i+1] })
	}
	if _, ok := c.translate(tp, 0); ok {
		t.Fatal("translated before anything was copied")
	}
	// 10..12 to 100..102; 13..14 compacted away; 15..16 to 103..104; a
	// commit marker downstream at 105; 17 to 106.
	copyRecs(10, 100, 11, 101, 12, 102, 15, 103, 16, 104)
	copyRecs(17, 106)
	if n := len(c.parts[tp]); n != 3 {
		t.Fatalf("%d runs, want 3: %+v", n, c.parts[tp])
	}
	for _, w := range []struct {
		g, down int64
		ok      bool
	}{
		{9, 0, false}, // before the runs: unknown
		{10, 100, true},
		{12, 102, true},
		{13, 103, true}, // compacted: the next record copied
		{14, 103, true},
		{15, 103, true},
		{16, 104, true},
		{17, 106, true}, // past the marker
		{18, 107, true}, // past the end: where the next copy goes
		{500, 107, true},
	} {
		if got, ok := c.translate(tp, w.g); ok != w.ok || ok && got != w.down {
			t.Errorf("translate(%d) = %d %v, want %d %v", w.g, got, ok, w.down, w.ok)
		}
	}
	// The source went back (recreated): the runs start afresh.
	copyRecs(0, 200, 1, 201)
	if got, _ := c.translate(tp, 12); got != 202 {
		t.Errorf("after a rewind translate(12) = %d, want 202", got)
	}
	// Taken again: nothing known.
	c.reset(tp)
	if _, ok := c.translate(tp, 1); ok {
		t.Error("translated after a reset")
	}
	// At most maxRuns runs: the oldest quarter goes.
	for i := range int64(maxRuns + 1) {
		copyRecs(2*i, i) // every other offset compacted: one run each
	}
	if n := len(c.parts[tp]); n != maxRuns-maxRuns/4+1 {
		t.Fatalf("%d runs kept", n)
	}
	if _, ok := c.translate(tp, 0); ok {
		t.Error("translated from a dropped run")
	}
	if got, _ := c.translate(tp, 2*maxRuns-1); got != maxRuns {
		t.Errorf("translate(%d) = %d, want %d", 2*maxRuns-1, got, maxRuns)
	}
}

// The checkpoints take the larger of MM2's translation and the runs'.
func TestTranslateOffset(t *testing.T) {
	s, c := newSyncStore(), newCopiedRuns()
	tp := topicPartition{"t", 0}
	s.readToEnd = true
	s.add(OffsetSync{"t", 0, 100, 100})
	s.add(OffsetSync{"t", 0, 200, 200})
	if got, _ := translateOffset(s, c, tp, 150); got != 101 {
		t.Fatalf("without runs translate(150) = %d, want MM2's 101", got)
	}
	c.note(tp, 1, func(int) (int64, int64) { return 120, 120 })
	c.note(tp, 100, func(i int) (int64, int64) { return 121 + int64(i), 121 + int64(i) })
	if got, _ := translateOffset(s, c, tp, 150); got != 150 {
		t.Fatalf("translate(150) = %d, want 150", got)
	}
	if got, _ := translateOffset(s, c, tp, 110); got != 101 {
		t.Fatalf("before the runs translate(110) = %d, want MM2's 101", got)
	}
	if got, _ := translateOffset(s, c, tp, 50); got != -1 {
		t.Fatalf("too old: translate(50) = %d, want -1", got)
	}
}
