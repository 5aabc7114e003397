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
}

// newChange plans a change of p (of topic) against img whose targets start
// as p's current state.
func newChange(img *metadata.Image, topic metadata.Uuid, p *metadata.Partition) *change {
	return &change{img: img, topic: topic, p: p,
		isr: p.ISR, replicas: p.Replicas, adding: p.Adding, removing: p.Removing,
		recovery: p.LeaderRecoveryState}
}

// record returns the PartitionChangeRecord that takes the partition to
// the targets (see the file comment), or nil when nothing changes.
func (ch *change) record() *metadata.PartitionChangeRecord {
	p := ch.p
	ch.completeReassignment()
	rec := metadata.NewPartitionChangeRecord()
	rec.SetVersion(0) // directories and ELR are not used yet
	rec.TopicId, rec.PartitionId = ch.topic, p.ID

	leader, unclean := ch.elect()
	if leader != p.Leader {
		rec.Leader = leader
		if unclean {
			ch.isr = []int32{leader}
			// Restated even when already RECOVERING: the record shows
			// the unclean election (see commit).
			rec.LeaderRecoveryState = recovering
		}
	}
	if rec.Leader == -2 && !containsAll(ch.replicas, p.Replicas) {
		// Replicas leave: their fetches must be fenced by a new epoch.
		rec.Leader = p.Leader
	}
	if len(ch.isr) > 0 && !slices.Equal(ch.isr, p.ISR) {
		rec.Isr = slices.Clone(ch.isr)
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
		rec.RemovingReplicas == nil && rec.LeaderRecoveryState == -1 {
		return nil
	}
	return rec
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
	eligible := func(r int32) bool { return slices.Contains(ch.isr, r) && live(ch.img, r) }
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
			if live(ch.img, r) {
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
