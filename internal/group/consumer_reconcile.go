package group

// The target assignment of a consumer group and the reconciliation of each
// member towards it, as Kafka 4.0's TargetAssignmentBuilder and
// CurrentAssignmentBuilder define them.
//
// The group epoch moves when the membership, a subscription or the
// subscribed topics change. A heartbeat that finds the group epoch ahead
// of the assignment epoch runs the assignor over every member and records
// the members whose target changed, then the new assignment epoch.
//
// A member moves towards its target only through these steps, each taken
// on one of its heartbeats and recorded:
//
//	Stable (epoch e) and a target of epoch t > e:
//	  partitions it owns that the target drops are to be revoked. If the member
//	  still reports owning any of them it stays at epoch e in UnrevokedPartitions
//	  with only the kept partitions assigned (the rebalance timeout starts).
//	  Otherwise it moves to epoch t with the kept partitions plus the target's
//	  partitions nobody else owns; if some are still owned by others (they have
//	  not revoked them yet) it is UnreleasedPartitions, else Stable.
//	UnrevokedPartitions: once its heartbeat no longer reports any partition
//	  pending revocation, the step above is taken again.
//	UnreleasedPartitions: the step above is taken again on every heartbeat,
//	  picking up partitions as their previous owners release them.
//
// A partition is therefore never assigned to a member while another member
// owns it or has yet to revoke it.

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgMaybeBump records new subscription metadata if the subscribed topics
// changed (or a refresh is due) and bumps the group epoch when bump is set
// or the metadata changed.
func (gm *groupManager) cgMaybeBump(tx *cgTxn, bump bool) {
	cg := tx.g.consumer
	if !bump && !cg.refresh {
		return
	}
	if cg.refresh {
		bump = gm.cgRefreshRegexes(tx) || bump
		cg.refresh = false
		tx.undo = append(tx.undo, func() { cg.refresh = true })
	}
	if meta := gm.subscriptionMetadata(cg); !equalTopicMeta(meta, cg.subMeta) {
		tx.emit(cgRecord{kind: cgPartitionMetadataKey, value: meta})
		bump = true
	}
	if bump {
		tx.emit(cgRecord{kind: cgMetadataKey, value: cg.epoch + 1})
		gm.cfg.Stats.count(consumerRebalances, 1)
	}
}

// cgUpdateTarget runs the group's assignor and records the new target
// assignment at the group epoch.
func (gm *groupManager) cgUpdateTarget(tx *cgTxn) {
	cg := tx.g.consumer
	spec := assignSpec{topics: make(map[[16]byte]int32, len(cg.subMeta))}
	for _, t := range cg.subMeta {
		spec.topics[t.id] = t.partitions
	}
	ids := sortedIDs(cg.members)
	for _, id := range ids {
		m := cg.members[id]
		var topics [][16]byte
		for _, name := range cg.memberTopics(m) {
			if t, ok := cg.subMeta[name]; ok {
				topics = append(topics, t.id)
			}
		}
		slices.SortFunc(topics, compareIDs)
		spec.members = append(spec.members, assignMember{id: id, topics: topics, prev: cg.target[id]})
	}
	name := cg.preferredAssignor(gm.cfg.Consumer.Assignors, gm.cfg.Consumer.Assignors[0])
	result := assignorFunc(name)(spec)
	for _, id := range ids {
		a := result[id]
		if a == nil {
			a = assignment{}
		}
		if prev, ok := cg.target[id]; !ok || !prev.equal(a) {
			tx.emit(cgRecord{kind: cgTargetMemberKey, member: id, value: a})
		}
	}
	for _, id := range sortedIDs(cg.target) {
		if cg.members[id] == nil {
			tx.emit(cgRecord{kind: cgTargetMemberKey, member: id})
		}
	}
	tx.emit(cgRecord{kind: cgTargetMetadataKey, value: cg.epoch})
}

// cgReconcile moves member id one step towards its target, given the
// partitions its heartbeat says it owns (nil: not reported), and returns
// the member as it is now.
func (gm *groupManager) cgReconcile(tx *cgTxn, id string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) (*cMember, int16, string) {
	cg := tx.g.consumer
	m := cg.members[id]
	if m.reconciledTo(cg.assignmentEpoch) {
		return m, 0, ""
	}
	next, code, msg := cg.nextAssignment(m, cg.assignmentEpoch, cg.target[id], owned)
	if code != 0 {
		return nil, code, msg
	}
	if next.equal(m.memberAssignment) {
		return m, 0, ""
	}
	tx.emit(cgRecord{kind: cgCurrentMemberKey, member: id, value: next})
	if next.state == memberUnrevoked {
		gm.cgScheduleRebalance(tx.g, id, next.epoch, m.rebalanceTimeoutMs)
	} else {
		gm.cgCancelRebalance(tx.g, id)
	}
	return cg.members[id], 0, ""
}

// nextAssignment is Kafka's CurrentAssignmentBuilder.build.
func (cg *consumerGroup) nextAssignment(m *cMember, targetEpoch int32, target assignment, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) (memberAssignment, int16, string) {
	switch m.state {
	case memberStable:
		if m.epoch == targetEpoch {
			return m.memberAssignment, 0, ""
		}
		return cg.computeNext(m, m.epoch, targetEpoch, target, owned), 0, ""
	case memberUnrevoked:
		if ownsAny(owned, m.pending) {
			return m.memberAssignment, 0, ""
		}
		return cg.computeNext(m, m.epoch, targetEpoch, target, owned), 0, ""
	case memberUnreleased:
		return cg.computeNext(m, m.epoch, targetEpoch, target, owned), 0, ""
	}
	// A state written by a newer version: start the member over.
	if owned == nil || len(owned) > 0 {
		return memberAssignment{}, kerr.FencedMemberEpoch.Code,
			"The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin."
	}
	return cg.computeNext(m, targetEpoch, targetEpoch, target, owned), 0, ""
}

// computeNext is one reconciliation step from the member's assigned
// partitions (see the file comment); epoch is the epoch the member stays at
// if it must revoke first.
func (cg *consumerGroup) computeNext(m *cMember, epoch, targetEpoch int32, target assignment, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) memberAssignment {
	keep, revoke, add := assignment{}, assignment{}, assignment{}
	unreleased := false
	m.assigned.each(func(t [16]byte, p int32) {
		if target.has(t, p) {
			keep.add(t, p)
		} else {
			revoke.add(t, p)
		}
	})
	target.each(func(t [16]byte, p int32) {
		if m.assigned.has(t, p) {
			return
		}
		// Free unless another member owns it or has yet to revoke it.
		if owner, ok := cg.owners[tpid{t, p}]; ok && owner != m.id {
			unreleased = true
			return
		}
		add.add(t, p)
	})
	next := memberAssignment{epoch: targetEpoch, prevEpoch: m.epoch, state: memberStable,
		assigned: keep, pending: assignment{}}
	switch {
	case len(revoke) > 0 && ownsAny(owned, revoke):
		next.epoch, next.state, next.pending = epoch, memberUnrevoked, revoke
	case len(add) > 0:
		add.each(keep.add)
		if unreleased {
			next.state = memberUnreleased
		}
	case unreleased:
		next.state = memberUnreleased
	}
	return next
}

// ownsAny reports whether the owned partitions a heartbeat reports include
// any of a; not reporting them (nil) counts as owning everything.
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if a.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

// ownedSubset reports whether every reported owned partition is in a.
func ownedSubset(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !a.has(t.TopicID, p) {
				return false
			}
		}
	}
	return true
}

// checkMemberEpoch is Kafka's member epoch validation of a heartbeat. The
// previous epoch is accepted with owned partitions the member still has:
// the response that bumped its epoch may have been lost. A join (epoch 0)
// of a known member is accepted, as KIP-848 specifies for a fenced member
// that rejoins (KAFKA-19233; Kafka 4.0 itself fenced it again).
func checkMemberEpoch(m *cMember, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) (int16, string) {
	switch {
	case epoch == 0:
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a greater member epoch (%d)"+
			" than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	case epoch < m.epoch && (epoch != m.prevEpoch || !ownedSubset(owned, m.assigned)):
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a smaller member epoch (%d)"+
			" than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	}
	return 0, ""
}

// compileRegex compiles a SubscribedTopicRegex to match whole topic names,
// as RE2/J's matches() does.
func compileRegex(re string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(re); err != nil {
		return nil, err
	}
	return regexp.Compile("^(?:" + re + ")$")
}

// resolveRegex lists the topics a regular expression matches now.
func (gm *groupManager) resolveRegex(re string) resolvedRegex {
	x := resolvedRegex{topics: []string{}, version: gm.topics.version, timestamp: gm.nowMs()}
	if rx, err := compileRegex(re); err == nil {
		for _, name := range gm.topics.sortedNames() {
			if rx.MatchString(name) {
				x.topics = append(x.topics, name)
			}
		}
	}
	return x
}

// cgUpdateRegexes records the resolution of a regex a member starts using
// and drops the one no member uses any more. Kafka resolves regexes off the
// request path and bumps the epoch when the result arrives; here they are
// resolved at once against the topics of the last SetTopics.
func (gm *groupManager) cgUpdateRegexes(tx *cgTxn, oldRe, newRe string) {
	cg := tx.g.consumer
	if _, ok := cg.regexes[oldRe]; ok && oldRe != "" && cg.regexSubs[oldRe] == 0 {
		tx.emit(cgRecord{kind: cgRegexKey, member: oldRe})
	}
	if _, ok := cg.regexes[newRe]; !ok && newRe != "" {
		tx.emit(cgRecord{kind: cgRegexKey, member: newRe, value: gm.resolveRegex(newRe)})
	}
}

// cgRefreshRegexes resolves the group's regexes again after the topics
// changed and reports whether any now matches other topics.
func (gm *groupManager) cgRefreshRegexes(tx *cgTxn) bool {
	cg := tx.g.consumer
	changed := false
	if gm.topics.version == 0 {
		return false // no topics known yet
	}
	for _, re := range sortedIDs(cg.regexSubs) {
		x := gm.resolveRegex(re)
		if old, ok := cg.regexes[re]; !ok || !slices.Equal(old.topics, x.topics) {
			tx.emit(cgRecord{kind: cgRegexKey, member: re, value: x})
			changed = true
		}
	}
	return changed
}
