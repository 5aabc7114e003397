package group

import "sync/atomic"

// Stats are the coordinator's metrics, as Kafka's GroupCoordinatorMetrics
// has them: counts of events, bumped as the shard produces them, and
// gauges of the groups and offsets it serves, brought up to date at the
// end of every input for the groups that input changed (never by a sweep
// of all groups). The shard writes them from the runtime's goroutine; any
// goroutine may read them. A nil *Stats counts nothing.
type Stats struct {
	// classic are the classic groups (simple ones, which only commit
	// offsets, too) by State; consumer the consumer groups by
	// consumerStates.
	classic  [len(stateNames)]atomic.Int64
	consumer [len(consumerStates)]atomic.Int64
	offsets  atomic.Int64

	counts [numCounts]atomic.Uint64
}

// The events Stats counts (see StatsSnapshot).
const (
	offsetCommits = iota
	offsetExpirations
	offsetDeletions
	classicRebalances
	consumerRebalances
	numCounts
)

// consumerStates are the states of a consumer group, Kafka's names.
var consumerStates = [...]string{cgEmpty, cgAssigning, cgReconciling, cgStable}

// StatsSnapshot is one read of Stats.
type StatsSnapshot struct {
	// Classic and Consumer count the groups by state name (Kafka's:
	// "Empty", "PreparingRebalance", ... and "Empty", "Assigning",
	// "Reconciling", "Stable"); every state is present.
	Classic, Consumer map[string]int64
	// Offsets are the committed offsets held (Kafka's NumOffsets).
	Offsets int64
	// OffsetCommits counts the offsets committed (each partition of an
	// OffsetCommit or TxnOffsetCommit written), OffsetExpirations those
	// retention removed, OffsetDeletions those OffsetDelete removed.
	OffsetCommits, OffsetExpirations, OffsetDeletions uint64
	// ClassicRebalances counts the rebalances of classic groups that
	// completed (the group became Stable), ConsumerRebalances the group
	// epoch bumps of consumer groups.
	ClassicRebalances, ConsumerRebalances uint64
}

// Snapshot reads the stats; zero, with the states present, for a nil
// *Stats (a node without the broker role).
func (s *Stats) Snapshot() StatsSnapshot {
	out := StatsSnapshot{Classic: map[string]int64{}, Consumer: map[string]int64{}}
	for i, name := range stateNames {
		if State(i) != Dead { // a Dead group is forgotten at once
			out.Classic[name] = 0
			if s != nil {
				out.Classic[name] = s.classic[i].Load()
			}
		}
	}
	for i, name := range consumerStates {
		out.Consumer[name] = 0
		if s != nil {
			out.Consumer[name] = s.consumer[i].Load()
		}
	}
	if s == nil {
		return out
	}
	out.Offsets = s.offsets.Load()
	out.OffsetCommits = s.counts[offsetCommits].Load()
	out.OffsetExpirations = s.counts[offsetExpirations].Load()
	out.OffsetDeletions = s.counts[offsetDeletions].Load()
	out.ClassicRebalances = s.counts[classicRebalances].Load()
	out.ConsumerRebalances = s.counts[consumerRebalances].Load()
	return out
}

// count adds n events of a kind.
func (s *Stats) count(kind, n int) {
	if s != nil && n > 0 {
		s.counts[kind].Add(uint64(n))
	}
}

// groupCount is what a group adds to the gauges: its protocol and state
// (kind: a State for a classic group, len(stateNames) + the index in
// consumerStates for a consumer group) and its committed offsets.
type groupCount struct {
	kind    int
	offsets int
}

// touch notes that an input may have changed group id's state, existence
// or committed offsets; end brings the gauges up to date for it.
func (b *base) touch(id string) {
	if b.cfg.Stats != nil {
		b.dirty[id] = struct{}{}
	}
}

// recount brings the gauges up to date for the groups touched since the
// last recount.
func (c *Coordinator) recount() {
	s := c.cfg.Stats
	for id := range c.dirty {
		delete(c.dirty, id)
		old, had := c.counted[id]
		now, has := c.countOf(id)
		if had == has && old == now {
			continue
		}
		if had {
			s.add(old, -1)
			delete(c.counted, id)
		}
		if has {
			s.add(now, 1)
			c.counted[id] = now
		}
	}
}

// countOf is what group id adds to the gauges now; false if it is not
// served.
func (c *Coordinator) countOf(id string) (groupCount, bool) {
	g := c.groups.byID[id]
	if g == nil {
		return groupCount{}, false
	}
	n := groupCount{kind: int(g.state)}
	if g.consumer != nil {
		n.kind = len(stateNames)
		for i, st := range consumerStates {
			if st == g.consumer.state() {
				n.kind += i
			}
		}
	}
	if o := c.offsets.byGroup[id]; o != nil {
		n.offsets = len(o.committed)
	}
	return n, true
}

func (s *Stats) add(n groupCount, sign int64) {
	if n.kind < len(stateNames) {
		s.classic[n.kind].Add(sign)
	} else {
		s.consumer[n.kind-len(stateNames)].Add(sign)
	}
	s.offsets.Add(sign * int64(n.offsets))
}
