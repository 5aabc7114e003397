package mirror

// syncStore keeps, per source partition, a spread of offset syncs and
// translates a group's upstream offset to the target as MM2 3.5+ does:
// slot 0 holds the latest sync and slot i one at most about 2^i upstream
// offsets older, so translation stays close to recent offsets with 64
// syncs per partition. A translation never points past replicated data:
// the sync's downstream offset when the group sits exactly on it, one past
// it otherwise.
type syncStore struct {
	parts map[topicPartition]*[64]OffsetSync
	// readToEnd is set once the syncs topic has been read to its end at
	// start: until then each sync replaces all the others (older ones may
	// have been compacted away), and nothing is translated.
	readToEnd bool
}

func newSyncStore() *syncStore { return &syncStore{parts: map[topicPartition]*[64]OffsetSync{}} }

// add applies one sync read from the offset-syncs topic.
func (s *syncStore) add(sync OffsetSync) {
	tp := topicPartition{sync.Topic, sync.Partition}
	syncs := s.parts[tp]
	if syncs == nil || !s.readToEnd || syncs[0].UpstreamOffset > sync.UpstreamOffset {
		// First sync, start-up, or the upstream partition went back: the
		// older syncs are no longer valid.
		syncs = new([64]OffsetSync)
		for i := range syncs {
			syncs[i] = sync
		}
		s.parts[tp] = syncs
		return
	}
	syncs[0] = sync
	for i := 1; i < len(syncs); i++ {
		mask := int64(uint64(1<<63-1) << i)
		// Slot i is replaced only when the sync it holds differs from the
		// new one in the offset bits above bit i.
		if (syncs[i].UpstreamOffset^sync.UpstreamOffset)&mask == 0 {
			break
		}
		syncs[i] = sync
	}
}

// translate returns the downstream offset for a group at upstream offset up
// of a source partition; ok is false when there is nothing to translate
// with (no sync yet, or the start-up read unfinished), and the offset is -1
// when the group is behind every sync kept (too old to translate).
func (s *syncStore) translate(topic string, partition int32, up int64) (down int64, ok bool) {
	syncs := s.parts[topicPartition{topic, partition}]
	if !s.readToEnd || syncs == nil {
		return 0, false
	}
	best := syncs[len(syncs)-1]
	for _, sync := range syncs {
		if sync.UpstreamOffset <= up {
			best = sync
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
