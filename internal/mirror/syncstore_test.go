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
	s.add(OffsetSync{"t", 0, 20, 115}) // a gap upstream: 11..19 compacted away
	s.add(OffsetSync{"t", 0, 40, 130})
	cases := []struct{ up, want int64 }{
		{5, -1},   // before the oldest kept sync (0 was replaced at start-up)
		{10, 110}, // exactly on a sync
		{15, 111}, // one past the sync: never past replicated data
		// 40 evicted the sync at 20 from every slot (they differ above bit
		// 5, and slot 5 held 10): both translate from 10.
		{20, 111},
		{39, 111},
		{40, 130},
		{1000, 131},
	}
	for _, c := range cases {
		if got, ok := s.translate("t", 0, c.up); !ok || got != c.want {
			t.Errorf("translate(%d) = %d %v, want %d", c.up, got, ok, c.want)
		}
	}
	// The upstream partition went back (recreated): older syncs are dropped.
	s.add(OffsetSync{"t", 0, 3, 200})
	if got, _ := s.translate("t", 0, 40); got != 201 {
		t.Errorf("after a rewind translate(40) = %d, want 201", got)
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
