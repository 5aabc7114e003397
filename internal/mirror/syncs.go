package mirror

// syncRule decides, record by record, when a partition's offset sync is
// written, as MM2's source task does: at once on the partition's first
// record, when the downstream offset is offset.lag.max or more past one
// after the last sync, when upstream offsets skip (compaction, transaction
// markers), or when the downstream offset went backwards; otherwise the
// latest pair waits for the next flush.
type syncRule struct {
	lagMax int64
	parts  map[topicPartition]*syncState
	// pending are the syncs to write now, in order (the mirror writes
	// them after each batch, so none is replaced before it is written);
	// delayed is each partition's latest pair, written at the next flush
	// unless a sync of the partition is due first.
	pending []OffsetSync
	delayed map[topicPartition]OffsetSync
}

type topicPartition struct {
	topic     string
	partition int32
}

type syncState struct {
	prevUpstream, prevDownstream, lastSyncDownstream int64
}

func newSyncRule(lagMax int64) *syncRule {
	return &syncRule{
		lagMax:  lagMax,
		parts:   map[topicPartition]*syncState{},
		delayed: map[topicPartition]OffsetSync{},
	}
}

// record notes that upstream offset up of a source partition was written at
// downstream offset down.
func (r *syncRule) record(topic string, partition int32, up, down int64) {
	tp := topicPartition{topic, partition}
	st := r.parts[tp]
	if st == nil {
		st = &syncState{prevUpstream: -1, prevDownstream: -1, lastSyncDownstream: -1}
		r.parts[tp] = st
	}
	now := st.lastSyncDownstream == -1 ||
		down-(st.lastSyncDownstream+1) >= r.lagMax ||
		up-st.prevUpstream != 1 ||
		down < st.prevDownstream
	st.prevUpstream, st.prevDownstream = up, down
	s := OffsetSync{Topic: topic, Partition: partition, UpstreamOffset: up, DownstreamOffset: down}
	if now {
		st.lastSyncDownstream = down
		delete(r.delayed, tp)
		r.pending = append(r.pending, s)
		return
	}
	r.delayed[tp] = s
}

// flush promotes the delayed syncs (the periodic commit).
func (r *syncRule) flush() {
	for _, s := range r.delayed {
		r.pending = append(r.pending, s)
	}
	clear(r.delayed)
}

// take returns the syncs to write now and forgets them.
func (r *syncRule) take() []OffsetSync {
	out := r.pending
	r.pending = nil
	return out
}
