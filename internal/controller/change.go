package controller

// Every change to a partition's leader, ISR or replicas is planned here, as
// Kafka's controller plans them (PartitionChangeBuilder): the caller states
// the ISR, replicas, adding/removing replicas and recovery state it wants
// and how a leader is to be chosen; record then
//
//  1. completes a reassignment the targets allow: once the ISR without the
//     removing replicas holds every replica that stays, the removing
//     replicas leave the replicas and the ISR, and adding/removing clear;
//  2. elects: a leader that is live and in the new ISR stays (for a
//     preferred election, the first replica takes over when it is);
//     otherwise the first replica, in replica order, that is live and in
//     the new ISR; with an unclean election, failing that, the first live
//     replica, which becomes the whole ISR and starts RECOVERING; failing
//     everything the partition goes offline (leader -1);
//  3. bumps the leader epoch (by restating the leader) when replicas leave;
//  4. never empties the ISR: its last member stays, even when not live.
//
// With eligible leader replicas (KIP-966, the eligible.leader.replicas.version
// feature), a partition whose ISR falls below min.insync.replicas keeps the
// members that left it in its ELR: the leader's high watermark cannot
// advance while the ISR is that small, so they hold every committed
// record. Then the ISR may become empty; a live ELR member is elected when
// the ISR is empty (and becomes the ISR alone); an ISR back at
// min.insync.replicas clears the ELR; an unclean election clears it; a
// replica whose broker shut down uncleanly (it may have lost its unflushed
// tail) leaves it and the last known ELR. The last known ELR keeps the
// other replicas that were in the ISR since it fell below
// min.insync.replicas.
//
// "Live" is a registered broker that is neither fenced nor in controlled
// shutdown. The change is computed against an image and is pure.

import (
	"slices"

	"weir/internal/metadata"
)

// Leader recovery states (KIP-704).
const (
	recovered  int8 = 0
	recovering int8 = 1 // elected uncleanly; the leader has not said it recovered
)

// election is how a partition change chooses its leader.
type election int8

const (
	// electOnline keeps an eligible leader, else takes the first eligible
	// replica (eligible: live and in the new ISR).
	electOnline election = iota
	// electPreferred takes the first replica when it is eligible, else
	// behaves as electOnline.
	electPreferred
	// electUnclean behaves as electOnline and, when no replica is
	// eligible, takes the first live replica out of the ISR.
	electUnclean
)

// change is one partition's planned change; set the targets, then call
// record.
type change struct {
	img   *metadata.Image
	topic metadata.Uuid
	p     *metadata.Partition

	isr, replicas, adding, removing []int32
	recovery                        int8
	election                        election

	// minISR is the topic's min.insync.replicas when eligible leader
	// replicas are enabled, else 0.
	minISR          int
	elr, lastKnown  []int32
	uncleanShutdown []int32 // replicas whose brokers shut down uncleanly
	// offline are replicas whose logs are offline on their brokers: they
	// may not lead, even uncleanly.
	offline []int32
}

// newChange plans a change of p (of topic) against img whose targets start
// as p's current state. minISR is the topic's min.insync.replicas when
// eligible leader replicas are enabled, else 0 (see Controller.elrMinISR).
func newChange(img *metadata.Image, topic metadata.Uuid, p *metadata.Partition, minISR int) *change {
	return &change{img: img, topic: topic, p: p,
		isr: p.ISR, replicas: p.Replicas, adding: p.Adding, removing: p.Removing,
		recovery: p.LeaderRecoveryState,
		minISR:   minISR, elr: p.ELR, lastKnown: p.LastKnownELR}
}

// record returns the PartitionChangeRecord that takes the partition to
// the targets (see the file comment), or nil when nothing changes.
func (ch *change) record() *metadata.PartitionChangeRecord {
	p := ch.p
	ch.completeReassignment()
	ch.populateELR()
	rec := metadata.NewPartitionChangeRecord()
	rec.SetVersion(0) // version 2 when the ELR fields are set
	rec.TopicId, rec.PartitionId = ch.topic, p.ID

	leader, unclean := ch.elect()
	if leader != p.Leader {
		rec.Leader = leader
		if leader >= 0 && !slices.Contains(ch.isr, leader) && slices.Contains(ch.elr, leader) {
			// Elected from the ELR: it alone is in sync.
			ch.isr, ch.elr = []int32{leader}, without(ch.elr, []int32{leader})
		}
		if unclean {
			ch.isr, ch.elr, ch.lastKnown = []int32{leader}, nil, nil
			// Restated even when already RECOVERING: the record shows
			// the unclean election (see commit).
			rec.LeaderRecoveryState = recovering
		}
	}
	if rec.Leader == -2 && !containsAll(ch.replicas, p.Replicas) {
		// Replicas leave: their fetches must be fenced by a new epoch.
		rec.Leader = p.Leader
	}
	// The ISR is never emptied, unless eligible leader replicas keep
	// track of who may lead.
	if (len(ch.isr) > 0 || ch.minISR > 0) && !slices.Equal(ch.isr, p.ISR) {
		rec.Isr = append([]int32{}, ch.isr...)
	}
	if !slices.Equal(ch.elr, p.ELR) {
		rec.EligibleLeaderReplicas = append([]int32{}, ch.elr...)
		rec.SetVersion(2)
	}
	if !slices.Equal(ch.lastKnown, p.LastKnownELR) {
		rec.LastKnownElr = append([]int32{}, ch.lastKnown...)
		rec.SetVersion(2)
	}
	if len(ch.replicas) > 0 && !slices.Equal(ch.replicas, p.Replicas) {
		rec.Replicas = slices.Clone(ch.replicas)
	}
	if !slices.Equal(ch.adding, p.Adding) {
		rec.AddingReplicas = append([]int32{}, ch.adding...)
	}
	if !slices.Equal(ch.removing, p.Removing) {
		rec.RemovingReplicas = append([]int32{}, ch.removing...)
	}
	if rec.LeaderRecoveryState == -1 && ch.recovery != p.LeaderRecoveryState {
		rec.LeaderRecoveryState = ch.recovery
	}
	if rec.Leader == -2 && rec.Isr == nil && rec.Replicas == nil && rec.AddingReplicas == nil &&
		rec.RemovingReplicas == nil && rec.LeaderRecoveryState == -1 &&
		rec.EligibleLeaderReplicas == nil && rec.LastKnownElr == nil {
		return nil
	}
	return rec
}

// populateELR sets the target ELR and last known ELR for the target ISR
// (see the file comment). Both are sorted.
func (ch *change) populateELR() {
	if ch.minISR <= 0 || len(ch.isr) >= ch.minISR {
		ch.elr, ch.lastKnown = nil, nil
		return
	}
	candidates := union(ch.elr, ch.p.ISR)
	var elr []int32
	for _, r := range candidates {
		if !slices.Contains(ch.isr, r) && !slices.Contains(ch.uncleanShutdown, r) {
			elr = append(elr, r)
		}
	}
	var lastKnown []int32
	for _, r := range union(candidates, ch.lastKnown) {
		if !slices.Contains(ch.isr, r) && !slices.Contains(elr, r) && !slices.Contains(ch.uncleanShutdown, r) {
			lastKnown = append(lastKnown, r)
		}
	}
	ch.elr, ch.lastKnown = elr, lastKnown
}

// union returns the members of a and b, sorted, without repeats.
func union(a, b []int32) []int32 {
	u := append(slices.Clone(a), b...)
	slices.Sort(u)
	return slices.Compact(u)
}

// completeReassignment finishes a reassignment in the targets once the
// ISR, without the removing replicas, holds all the replicas that stay.
func (ch *change) completeReassignment() {
	if len(ch.adding) == 0 && len(ch.removing) == 0 {
		return
	}
	isr, replicas := without(ch.isr, ch.removing), without(ch.replicas, ch.removing)
	if len(isr) == 0 || len(replicas) == 0 || !containsAll(isr, replicas) {
		return
	}
	ch.isr, ch.replicas, ch.adding, ch.removing = isr, replicas, nil, nil
}

// elect returns the leader the targets call for (-1: none) and whether it
// was elected from outside the ISR.
func (ch *change) elect() (leader int32, unclean bool) {
	// In the ISR, or in the ELR when the ISR is empty.
	eligible := func(r int32) bool {
		return (slices.Contains(ch.isr, r) || len(ch.isr) == 0 && slices.Contains(ch.elr, r)) && live(ch.img, r) &&
			!slices.Contains(ch.offline, r)
	}
	if ch.election == electPreferred && len(ch.replicas) > 0 && eligible(ch.replicas[0]) {
		return ch.replicas[0], false
	}
	if ch.p.Leader >= 0 && eligible(ch.p.Leader) {
		return ch.p.Leader, false
	}
	for _, r := range ch.replicas {
		if eligible(r) {
			return r, false
		}
	}
	if ch.election == electUnclean {
		for _, r := range ch.replicas {
			if live(ch.img, r) && !slices.Contains(ch.offline, r) {
				return r, true
			}
		}
	}
	return -1, false
}

// live reports whether a broker may lead or join an ISR: registered,
// unfenced, not shutting down.
func live(img *metadata.Image, id int32) bool {
	b := img.Brokers[id]
	return b != nil && !b.Fenced && !b.InControlledShutdown
}

// without returns s less the members of drop, in order (s itself when
// nothing is dropped).
func without(s, drop []int32) []int32 {
	if !slices.ContainsFunc(s, func(r int32) bool { return slices.Contains(drop, r) }) {
		return s
	}
	return slices.DeleteFunc(slices.Clone(s), func(r int32) bool { return slices.Contains(drop, r) })
}

// containsAll reports whether s holds every member of sub.
func containsAll(s, sub []int32) bool {
	for _, r := range sub {
		if !slices.Contains(s, r) {
			return false
		}
	}
	return true
}

// inReassignment reports whether p has a reassignment in progress.
func inReassignment(p *metadata.Partition) bool { return len(p.Adding) > 0 || len(p.Removing) > 0 }
