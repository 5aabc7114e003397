package mirror

import (
	"math/rand/v2"
	"testing"
)

func TestSyncStoreTranslate(t *testing.T) {
	s := newSyncStore()
	if _, ok := s.translate("t", 0, 5); ok {
		t.Fatal("translated before any sync")
	}
	// Start-up read: each sync replaces the others.
	s.add(OffsetSync{"t", 0, 0, 100})
	s.add(OffsetSync{"t", 0, 10, 110})
	if _, ok := s.translate("t", 0, 10); ok {
		t.Fatal("translated before the start-up read ended")
	}
	s.readToEnd = true
	// Upstream skipped offsets before 20 (its sync was written at once):
	// 11..14 were copied to 111..114, 15..19 compacted away.
	s.add(OffsetSync{"t", 0, 20, 115})
	s.add(OffsetSync{"t", 0, 40, 130}) // likewise: a gap before 40
	cases := []struct{ up, want, mm2 int64 }{
		{5, -1, -1},      // before the oldest kept sync (0 was replaced at start-up)
		{10, 110, 110},   // exactly on a sync
		{13, 113, 111},   // the records after a sync are contiguous up to the gap
		{15, 115, 111},   // in the gap: capped at the next sync
		{20, 115, 111},   // 40 evicted 20 from every slot, but 10 remembers it
		{39, 116, 111},   // past what 10 knows: one past 20
		{40, 130, 130},   // exactly on a sync
		{1000, 131, 131}, // past the latest sync: one past it
	}
	for _, c := range cases {
		if got, ok := s.translate("t", 0, c.up); !ok || got != c.want {
			t.Errorf("translate(%d) = %d %v, want %d", c.up, got, ok, c.want)
		}
		if got, _ := s.translateMM2("t", 0, c.up); got != c.mm2 {
			t.Errorf("MM2's translate(%d) = %d, want %d", c.up, got, c.mm2)
		}
	}
	// The upstream partition went back (recreated): older syncs are dropped.
	s.add(OffsetSync{"t", 0, 3, 200})
	if got, _ := s.translate("t", 0, 40); got != 201 {
		t.Errorf("after a rewind translate(40) = %d, want 201", got)
	}

	// Contiguous runs chain: 300 (from 3 at 200) to 1300, where the
	// record at 1300 was written at 1500 (downstream markers between).
	s.add(OffsetSync{"t", 0, 103, 300})
	s.add(OffsetSync{"t", 0, 1103, 1300})
	s.add(OffsetSync{"t", 0, 1203, 1500})
	for _, c := range []struct{ up, want int64 }{
		{50, 247},    // from 3: linear through 103 and 1103
		{600, 797},   // 3's slot is long gone: from 103, exact
		{1150, 1347}, // from 1103, capped at 1500
		{1203, 1500},
		{1204, 1501},
	} {
		if got, _ := s.translate("t", 0, c.up); got != c.want {
			t.Errorf("translate(%d) = %d, want %d", c.up, got, c.want)
		}
	}
	// A hole in the syncs topic: the next sync may not follow the last.
	s.hole()
	s.add(OffsetSync{"t", 0, 1303, 1600})
	if got, _ := s.translate("t", 0, 1250); got != 1501 {
		t.Errorf("after a hole translate(1250) = %d, want 1501 (one past 1203)", got)
	}
}

// Against a model holding every sync: a translation is -1 or comes from a
// real sync at or below the group's offset, and never passes the
// downstream offset of the first sync at or above it.
func TestSyncStoreModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		s := newSyncStore()
		s.readToEnd = true
		var all []OffsetSync
		up, down := int64(0), int64(0)
		for range 2000 {
			up += 1 + rng.Int64N(50)
			down += 1 + rng.Int64N(30)
			sync := OffsetSync{"t", 0, up, down}
			all = append(all, sync)
			s.add(sync)
		}
		for range 2000 {
			u := rng.Int64N(up + 10)
			got, ok := s.translate("t", 0, u)
			if !ok {
				t.Fatal("no translation")
			}
			if got == -1 {
				continue
			}
			var below, above *OffsetSync
			for i := range all {
				if all[i].UpstreamOffset <= u {
					below = &all[i]
				} else if above == nil {
					above = &all[i]
				}
			}
			if below == nil {
				t.Fatalf("seed %d: translate(%d) = %d with no sync below", seed, u, got)
			}
			if above != nil && got > above.DownstreamOffset {
				t.Fatalf("seed %d: translate(%d) = %d past the next sync %+v", seed, u, got, *above)
			}
			if below.UpstreamOffset == u && got > below.DownstreamOffset {
				t.Fatalf("seed %d: translate(%d) = %d past the exact sync %+v", seed, u, got, *below)
			}
		}
		// The latest offsets translate from the latest sync.
		if got, _ := s.translate("t", 0, up); got != down {
			t.Fatalf("seed %d: translate(latest) = %d, want %d", seed, got, down)
		}
	}
}

// translateMM2 is MM2's translation from the same syncs, for comparison
// (tests and the re-read measurement): the sync's downstream offset when
// exact, one past it otherwise.
func (s *syncStore) translateMM2(topic string, partition int32, up int64) (down int64, ok bool) {
	ps := s.parts[topicPartition{topic, partition}]
	if !s.readToEnd || ps == nil {
		return 0, false
	}
	best := ps.slots[len(ps.slots)-1]
	for _, k := range ps.slots {
		if k.UpstreamOffset <= up {
			best = k
			break
		}
	}
	switch {
	case best.UpstreamOffset > up:
		return -1, true
	case best.UpstreamOffset == up:
		return best.DownstreamOffset, true
	default:
		return best.DownstreamOffset + 1, true
	}
}
