package mirror

// syncStore keeps, per source partition, a spread of offset syncs and
// translates a group's upstream offset to the target. The spread is MM2
// 3.5+'s: slot 0 holds the latest sync and slot i one at most about 2^i
// upstream offsets older, so translation stays close to recent offsets
// with 64 syncs per partition. A translation never points past
// replicated data.
//
// MM2 translates to the sync's downstream offset when the group sits
// exactly on it and one past it otherwise, so a failed-over group re-reads
// every record between the sync and its position (up to offset.lag.max
// of them). weir also remembers what followed each sync kept, from the
// syncs read in order: both MM2 and weir write a sync at once for the
// first record after upstream offsets skip (compaction, transaction
// markers, aborted records), so between two consecutive syncs A and B the
// upstream records from A on are contiguous up to, at most, a gap right
// before B. Then, for a group at g in (A.up, B.up), the downstream offset
// A.down + (g - A.up), capped at B.down, is at or before the record the
// group reads next: exact when the records between were contiguous
// downstream too, early by the transaction markers between otherwise
// (an exactly-once mirror's), never past it. Consecutive syncs whose
// downstream offsets advance at least as far as their upstream ones (no
// upstream gap) extend that run, and the same bound holds along it, so a
// sync kept from long ago still translates exactly (or nearly, by the
// markers) up to where its run met an upstream gap.
// Two syncs are consecutive only when no record of the offset-syncs topic
// was missed between them (a hole there, from compaction, may hide a
// sync): the reader reports holes (hole), and a sync read after one
// starts afresh. The checkpoint records themselves carry nothing new.
type syncStore struct {
	parts map[topicPartition]*partSyncs
	// holes counts the holes seen in the offset-syncs topic.
	holes int
	// readToEnd is set once the syncs topic has been read to its end at
	// start: until then each sync replaces all the others (older ones may
	// have been compacted away), and nothing is translated.
	readToEnd bool
}

// partSyncs are one partition's kept syncs, and the hole count when the
// latest was read.
type partSyncs struct {
	slots [64]keptSync
	holes int
}

// keptSync is a sync and how far it translates linearly: for upstream
// offsets g in (up, limitUp] the translation is down + (g - up) capped at
// limitDown; past limitUp, limitDown + 1. open is set while the linear run
// reaches the latest sync (a next consecutive sync may extend it).
type keptSync struct {
	OffsetSync
	limitUp, limitDown int64
	open               bool
}

func newSyncStore() *syncStore { return &syncStore{parts: map[topicPartition]*partSyncs{}} }

// hole notes that the reader skipped records of the offset-syncs topic.
func (s *syncStore) hole() { s.holes++ }

// add applies one sync read from the offset-syncs topic.
func (s *syncStore) add(sync OffsetSync) {
	tp := topicPartition{sync.Topic, sync.Partition}
	ps := s.parts[tp]
	kept := keptSync{OffsetSync: sync, limitUp: sync.UpstreamOffset, limitDown: sync.DownstreamOffset, open: true}
	if ps == nil || !s.readToEnd || ps.slots[0].UpstreamOffset > sync.UpstreamOffset {
		// First sync, start-up, or the upstream partition went back: the
		// older syncs are no longer valid.
		ps = &partSyncs{}
		for i := range ps.slots {
			ps.slots[i] = kept
		}
		ps.holes = s.holes
		s.parts[tp] = ps
		return
	}
	latest := ps.slots[0]
	consecutive := ps.holes == s.holes
	// Downstream advanced at least as far as upstream: no gap upstream
	// before the sync (only downstream markers, or nothing).
	linear := sync.DownstreamOffset-latest.DownstreamOffset >= sync.UpstreamOffset-latest.UpstreamOffset
	for i := range ps.slots {
		k := &ps.slots[i]
		if !k.open || k.limitUp != latest.UpstreamOffset {
			continue
		}
		if consecutive {
			k.limitUp, k.limitDown = sync.UpstreamOffset, sync.DownstreamOffset
		}
		k.open = consecutive && linear
	}
	ps.holes = s.holes
	ps.slots[0] = kept
	for i := 1; i < len(ps.slots); i++ {
		mask := int64(uint64(1<<63-1) << i)
		// Slot i is replaced only when the sync it holds differs from the
		// new one in the offset bits above bit i.
		if (ps.slots[i].UpstreamOffset^sync.UpstreamOffset)&mask == 0 {
			break
		}
		ps.slots[i] = kept
	}
}

// translate returns the downstream offset for a group at upstream offset up
// of a source partition; ok is false when there is nothing to translate
// with (no sync yet, or the start-up read unfinished), and the offset is -1
// when the group is behind every sync kept (too old to translate).
func (s *syncStore) translate(topic string, partition int32, up int64) (down int64, ok bool) {
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
	case up == best.limitUp:
		return best.limitDown, true
	case up < best.limitUp:
		return min(best.DownstreamOffset+(up-best.UpstreamOffset), best.limitDown), true
	default:
		return best.limitDown + 1, true
	}
}
