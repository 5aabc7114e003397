package partition

// The leader's side of replication: followers fetch, the leader records
// how far each has come, moves the high watermark to the smallest log end
// offset in the ISR, and asks the controller to change the ISR when a
// follower falls behind for replica.lag.time.max.ms or catches up again.
//
// An ISR change is proposed (AlterPartition) and only takes effect when
// the controller commits it. While one is in flight no other is proposed,
// and the high watermark counts the "maximal" ISR: the committed one plus
// a member being added, so a commit never covers a replica that does not
// hold it, whichever way the proposal goes.

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
)

// Replication is what partitions need from their broker to replicate.
// One value is shared by every partition of a broker.
type Replication struct {
	// LagTimeMax is replica.lag.time.max.ms.
	LagTimeMax time.Duration
	// Eligible reports whether a broker may join an ISR: registered,
	// unfenced, not shutting down and, when brokerEpoch >= 0, of that
	// epoch. Nil: every broker is.
	Eligible func(id int32, brokerEpoch int64) bool
	// AlterISR sends an ISR change to the active controller and later
	// calls p.IsrChangeDone with the answer. It must not block. Nil: the
	// ISR never changes from here (a single-node broker).
	AlterISR func(p *Partition, c IsrChange)
	// IsrChanged, if set, counts committed ISR shrinks and expansions.
	IsrChanged func(shrunk bool)
	// StrictMinISR reports whether eligible leader replicas (KIP-966)
	// are enabled: then the high watermark does not advance while the
	// ISR has fewer than min.insync.replicas members, so the replicas
	// that left it hold every committed record. Nil: never.
	StrictMinISR func() bool
}

var defaultReplication = &Replication{LagTimeMax: 30 * time.Second}

// IsrMember is one replica of a proposed ISR.
type IsrMember struct {
	ID          int32
	BrokerEpoch int64 // -1: unknown
}

// IsrChange is a leader's proposal of a new ISR (AlterPartition).
type IsrChange struct {
	TopicPartition log.TopicPartition
	TopicID        [16]byte
	LeaderEpoch    int32
	PartitionEpoch int32 // the partition epoch the change is based on
	ISR            []IsrMember
}

func (c *IsrChange) ids() []int32 {
	out := make([]int32, len(c.ISR))
	for i, m := range c.ISR {
		out[i] = m.ID
	}
	return out
}

// follower is the leader's view of one follower replica.
type follower struct {
	leo         int64 // -1 until its first fetch in this leadership
	logStart    int64
	brokerEpoch int64
	// lastFetch and lastFetchLEO are when it last fetched and the
	// leader's log end offset then.
	lastFetch    time.Time
	lastFetchLEO int64
	// lastCaughtUp is the last time it was known to hold everything the
	// leader had.
	lastCaughtUp time.Time
}

// caughtUp reports whether the follower is in sync at now.
func (f *follower) caughtUp(leaderLEO int64, now time.Time, lagMax time.Duration) bool {
	return f.leo == leaderLEO || now.Sub(f.lastCaughtUp) <= lagMax
}

// FollowerFetch is one partition of a follower's fetch.
type FollowerFetch struct {
	ReplicaID          int32
	BrokerEpoch        int64 // -1: not sent (Fetch before v15)
	FetchOffset        int64
	LogStartOffset     int64
	LastFetchedEpoch   int32 // -1: not sent
	CurrentLeaderEpoch int32
	MaxBytes           int
	MinOne             bool
}

// FollowerRead is the leader's answer to one partition of a follower's
// fetch. When the follower's log diverged, DivergingEpoch is >= 0 and
// names the epoch and end offset it must truncate to; no data is read.
type FollowerRead struct {
	FetchResult
	DivergingEpoch     int32
	DivergingEndOffset int64
}

func (p *Partition) repl() *Replication {
	if r := p.replication.Load(); r != nil {
		return r
	}
	return defaultReplication
}

// SetReplication installs the broker's replication hooks; call it before
// the partition is used.
func (p *Partition) SetReplication(r *Replication) { p.replication.Store(r) }

// ReadForFollower serves a follower's fetch: it checks the follower's
// epochs, reads from its offset up to the log end, and records its
// progress, which may move the high watermark and grow the ISR.
func (p *Partition) ReadForFollower(f FollowerFetch) (FollowerRead, error) {
	res := FollowerRead{DivergingEpoch: -1, DivergingEndOffset: -1}
	p.mu.Lock()
	if err := p.checkEpochLocked(f.CurrentLeaderEpoch); err != nil {
		p.mu.Unlock()
		return res, err
	}
	if !p.leader {
		p.mu.Unlock()
		return res, ErrNotLeader
	}
	if _, ok := p.followers[f.ReplicaID]; !ok {
		p.mu.Unlock()
		return res, ErrNotLeader // not a replica of this partition
	}
	epoch := p.state.LeaderEpoch
	p.mu.Unlock()

	leo := p.log.LogEndOffset()
	res.HighWatermark, res.LastStableOffset, res.LogStartOffset = p.log.HighWatermark(), p.log.LastStableOffset(), p.log.LogStartOffset()
	if f.LastFetchedEpoch >= 0 {
		// An epoch ending at or below the log start is one whose records,
		// and place in the lineage, this leader deleted: it cannot vouch
		// for what the follower holds there, which may be another
		// history, and answers a divergence, so the follower restarts its
		// log at the log start (found by internal/replsim).
		e, end := p.log.EndOffsetForEpoch(f.LastFetchedEpoch)
		if e >= 0 && (e < f.LastFetchedEpoch || end < f.FetchOffset || end <= res.LogStartOffset) {
			res.DivergingEpoch, res.DivergingEndOffset = e, end
			return res, nil
		}
	}
	sl, err := p.log.Read(f.FetchOffset, f.MaxBytes, leo, f.MinOne)
	if err != nil {
		if errors.Is(err, log.ErrOffsetOutOfRange) {
			return res, err
		}
		return res, storageErr(err)
	}
	res.Slice = sl

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader && p.state.LeaderEpoch == epoch {
		if fl := p.followers[f.ReplicaID]; fl != nil {
			p.followerFetchedLocked(f.ReplicaID, fl, f, leo)
		}
	}
	res.HighWatermark, res.LastStableOffset, res.LogStartOffset = p.log.HighWatermark(), p.log.LastStableOffset(), p.log.LogStartOffset()
	return res, nil
}

// followerFetchedLocked records a follower's fetch at offset f.FetchOffset,
// made when the leader's log ended at leaderLEO.
func (p *Partition) followerFetchedLocked(id int32, fl *follower, f FollowerFetch, leaderLEO int64) {
	now := p.now()
	switch {
	case f.FetchOffset >= leaderLEO:
		fl.lastCaughtUp = maxTime(fl.lastCaughtUp, now)
	case f.FetchOffset >= fl.lastFetchLEO && !fl.lastFetch.IsZero():
		// It now has what the leader had at its previous fetch.
		fl.lastCaughtUp = maxTime(fl.lastCaughtUp, fl.lastFetch)
	}
	fl.leo, fl.logStart, fl.lastFetch, fl.lastFetchLEO = f.FetchOffset, f.LogStartOffset, now, leaderLEO
	if f.BrokerEpoch >= 0 {
		fl.brokerEpoch = f.BrokerEpoch
	}
	p.maybeExpandISRLocked(id, fl)
	p.maybeAdvanceHWLocked()
}

// maybeExpandISRLocked proposes adding a follower that has caught up with
// the high watermark in this leader epoch.
func (p *Partition) maybeExpandISRLocked(id int32, fl *follower) {
	r := p.repl()
	if r.AlterISR == nil || p.pending != nil || slices.Contains(p.state.ISR, id) {
		return
	}
	if fl.leo < p.log.HighWatermark() || fl.leo < p.epochStart {
		return
	}
	if r.Eligible != nil && !r.Eligible(id, fl.brokerEpoch) {
		return
	}
	p.proposeISRLocked(append(slices.Clone(p.state.ISR), id))
}

// MaybeShrinkISR proposes removing the followers that have not caught up
// for replica.lag.time.max.ms. The broker calls it periodically.
func (p *Partition) MaybeShrinkISR() {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.repl()
	if !p.leader || r.AlterISR == nil || p.pending != nil {
		return
	}
	now, leo := p.now(), p.log.LogEndOffset()
	var keep []int32
	for _, id := range p.state.ISR {
		fl := p.followers[id]
		if id == p.self || fl == nil || fl.caughtUp(leo, now, r.LagTimeMax) {
			keep = append(keep, id)
			continue
		}
		p.lg.Info("follower out of sync; shrinking the ISR", "follower", id, "follower_leo", fl.leo, "leader_leo", leo,
			"since_caught_up", now.Sub(fl.lastCaughtUp).Round(time.Millisecond))
	}
	if len(keep) < len(p.state.ISR) {
		p.proposeISRLocked(keep)
	}
}

func (p *Partition) proposeISRLocked(isr []int32) {
	c := IsrChange{TopicPartition: p.tp, TopicID: p.topicID, LeaderEpoch: p.state.LeaderEpoch, PartitionEpoch: p.state.PartitionEpoch}
	for _, id := range isr {
		m := IsrMember{ID: id, BrokerEpoch: -1}
		if fl := p.followers[id]; fl != nil && fl.brokerEpoch > 0 {
			m.BrokerEpoch = fl.brokerEpoch
		}
		c.ISR = append(c.ISR, m)
	}
	p.pending = &c
	p.repl().AlterISR(p, c)
}

// IsrChangeDone takes the controller's answer to a proposed ISR change:
// the partition's committed state (nil with an error). A stale answer is
// ignored. An answer ends the proposal, and a failed one is proposed again
// when its reason still holds; except that FENCED_LEADER_EPOCH and
// INVALID_UPDATE_VERSION leave it pending until the metadata with the
// controller's newer epochs arrives (Apply ends it then): the change may
// have been applied by an earlier send whose answer was lost, so the high
// watermark must keep counting the members it adds (Kafka's
// Partition.handleAlterPartitionError does the same). Dropping it let a
// leader commit records that a replica in the controller's ISR lacked
// (found by internal/replsim).
func (p *Partition) IsrChangeDone(c IsrChange, st *State, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil || p.pending.LeaderEpoch != c.LeaderEpoch || p.pending.PartitionEpoch != c.PartitionEpoch {
		return
	}
	if errors.Is(err, kerr.FencedLeaderEpoch) || errors.Is(err, kerr.InvalidUpdateVersion) {
		p.lg.Info("ISR change refused; awaiting newer metadata", "isr", c.ids(), "err", err)
		return
	}
	p.pending = nil
	if err != nil {
		p.lg.Info("ISR change refused", "isr", c.ids(), "err", err)
		return
	}
	if st == nil || st.LeaderEpoch != p.state.LeaderEpoch || st.PartitionEpoch <= p.state.PartitionEpoch {
		return
	}
	p.state.Recovering = st.Recovering
	p.commitISRLocked(st.ISR, st.PartitionEpoch)
}

// commitISRLocked installs a committed ISR of this leader epoch.
func (p *Partition) commitISRLocked(isr []int32, partitionEpoch int32) {
	old := p.state.ISR
	p.state.ISR, p.state.PartitionEpoch = slices.Clone(isr), partitionEpoch
	if !slices.Equal(old, isr) {
		p.lg.Info("ISR changed", "from", old, "to", isr, "partition_epoch", partitionEpoch)
		p.countISRChangeLocked(old, isr)
	}
	p.maybeAdvanceHWLocked()
	// The ISR may have shrunk below min.insync.replicas under waiting
	// appends; they are answered as the HW reaches them.
	p.notifyLocked()
}

// countISRChangeLocked reports a committed change of this leader's ISR to
// the IsrChanged counter. A change is committed once, whichever way it
// reaches the leader first (the controller's answer or the metadata
// image), so it is counted once.
func (p *Partition) countISRChangeLocked(old, isr []int32) {
	r := p.repl()
	switch {
	case r.IsrChanged == nil:
	case len(isr) < len(old):
		r.IsrChanged(true)
	case len(isr) > len(old):
		r.IsrChanged(false)
	}
}

// maximalISRLocked is the ISR the high watermark must respect: the
// committed one plus any member a pending proposal adds.
func (p *Partition) maximalISRLocked() []int32 {
	if p.pending == nil {
		return p.state.ISR
	}
	isr := slices.Clone(p.state.ISR)
	for _, m := range p.pending.ISR {
		if !slices.Contains(isr, m.ID) {
			isr = append(isr, m.ID)
		}
	}
	return isr
}

// maybeAdvanceHWLocked moves the high watermark to the smallest log end
// offset in the maximal ISR, also waiting for a caught-up follower about to
// join it, if that is higher than the current one, and completes what
// waited for it.
func (p *Partition) maybeAdvanceHWLocked() {
	if !p.leader {
		return
	}
	r := p.repl()
	if r.StrictMinISR != nil && len(p.state.ISR) < p.cfg.Load().minISR && r.StrictMinISR() {
		return
	}
	leo := p.log.LogEndOffset()
	hw := leo
	if p.state.Mirror.ReadOnly {
		hw = min(hw, p.sourceHW)
	}
	isr := p.maximalISRLocked()
	now := p.now()
	for id, fl := range p.followers {
		joining := r.AlterISR != nil && fl.leo >= 0 && fl.caughtUp(leo, now, r.LagTimeMax) &&
			(r.Eligible == nil || r.Eligible(id, fl.brokerEpoch))
		if !slices.Contains(isr, id) && !joining {
			continue
		}
		if fl.leo < 0 {
			return // an ISR member not heard from in this leadership
		}
		hw = min(hw, fl.leo)
	}
	if hw <= p.log.HighWatermark() {
		return
	}
	p.log.SetHighWatermark(hw)
	p.completeWaitersLocked(p.log.HighWatermark())
	p.notifyDataLocked()
}

// becomeLeaderLocked resets the followers' state for a new leadership, or
// adds and drops followers as the replica set changes within one.
func (p *Partition) resetFollowersLocked(newLeadership bool) {
	now, leo := p.now(), p.log.LogEndOffset()
	if newLeadership {
		p.followers = map[int32]*follower{}
		p.epochStart = leo
		p.pending = nil
	}
	for _, id := range p.state.Replicas {
		if id == p.self || p.followers[id] != nil {
			continue
		}
		fl := &follower{leo: -1, logStart: -1, brokerEpoch: -1, lastFetchLEO: leo}
		if slices.Contains(p.state.ISR, id) {
			// An ISR member gets a full lag period to fetch.
			fl.lastCaughtUp = now
		}
		p.followers[id] = fl
	}
	for id := range p.followers {
		if !slices.Contains(p.state.Replicas, id) {
			delete(p.followers, id)
		}
	}
}

// FollowerStatus is the leader's view of a follower, for metrics and
// DescribeQuorum-style reporting.
type FollowerStatus struct {
	ID           int32
	LogEndOffset int64 // -1: not fetched in this leadership
	LastCaughtUp time.Time
}

// Followers returns the leader's view of its followers (none when not
// leader).
func (p *Partition) Followers() []FollowerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader {
		return nil
	}
	out := make([]FollowerStatus, 0, len(p.followers))
	for id, fl := range p.followers {
		out = append(out, FollowerStatus{ID: id, LogEndOffset: fl.leo, LastCaughtUp: fl.lastCaughtUp})
	}
	slices.SortFunc(out, func(a, b FollowerStatus) int { return int(a.ID - b.ID) })
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
