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
	// them after each batch, so none is replaced before it is written).
	pending []OffsetSync
}

type topicPartition struct {
	topic     string
	partition int32
}

type syncState struct {
	prevUpstream, prevDownstream, lastSyncDownstream int64
	// delayed is the latest pair, written at the next flush unless a
	// sync of the partition is due first.
	delayed    OffsetSync
	hasDelayed bool
}

func newSyncRule(lagMax int64) *syncRule {
	return &syncRule{lagMax: lagMax, parts: map[topicPartition]*syncState{}}
}

// record notes that upstream offset up of a source partition was written at
// downstream offset down.
func (r *syncRule) record(topic string, partition int32, up, down int64) {
	r.note(r.state(topic, partition), topic, partition, up, down)
}

// state is a partition's state, for note.
func (r *syncRule) state(topic string, partition int32) *syncState {
	tp := topicPartition{topic, partition}
	st := r.parts[tp]
	if st == nil {
		st = &syncState{prevUpstream: -1, prevDownstream: -1, lastSyncDownstream: -1}
		r.parts[tp] = st
	}
	return st
}

// note is record with the partition's state at hand.
func (r *syncRule) note(st *syncState, topic string, partition int32, up, down int64) {
	now := st.lastSyncDownstream == -1 ||
		down-(st.lastSyncDownstream+1) >= r.lagMax ||
		up-st.prevUpstream != 1 ||
		down < st.prevDownstream
	st.prevUpstream, st.prevDownstream = up, down
	s := OffsetSync{Topic: topic, Partition: partition, UpstreamOffset: up, DownstreamOffset: down}
	if now {
		st.lastSyncDownstream = down
		st.hasDelayed = false
		r.pending = append(r.pending, s)
		return
	}
	st.delayed, st.hasDelayed = s, true
}

// flush promotes the delayed syncs (the periodic commit).
func (r *syncRule) flush() {
	for _, st := range r.parts {
		if st.hasDelayed {
			r.pending = append(r.pending, st.delayed)
			st.hasDelayed = false
		}
	}
}

// take returns the syncs to write now and forgets them.
func (r *syncRule) take() []OffsetSync {
	out := r.pending
	r.pending = nil
	return out
}
