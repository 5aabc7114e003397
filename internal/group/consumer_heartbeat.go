package group

// ConsumerGroupHeartbeat, versions 0-1 (KIP-848), and member expiry.
//
// Checks, in Kafka's order, before the group is looked at: an empty member
// id (from v1, or with an epoch above 0 or -1), group id, instance id or
// rack id is INVALID_REQUEST; a join (epoch 0) needs a rebalance timeout,
// an empty owned partition list and subscribed names or a regex; epoch -2
// needs an instance id; epochs below -2 are INVALID_REQUEST. A regex that
// does not compile is INVALID_REGULAR_EXPRESSION, an assignor outside
// group.consumer.assignors UNSUPPORTED_ASSIGNOR. Then the coordinator
// checks (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
//
// Epoch -1 leaves (-2: a static member leaves for now, keeping its
// assignment until it rejoins or its session expires). Epoch 0 joins,
// creating the group if needed; any other epoch needs the group
// (GROUP_ID_NOT_FOUND) and the member (UNKNOWN_MEMBER_ID) and must be the
// member's epoch, or its previous epoch with owned partitions it still has
// (else FENCED_MEMBER_EPOCH). A v0 join without member id gets one from the
// coordinator. A static member (instance id) joining takes over the
// instance's member only if that member left with epoch -2 (else
// UNRELEASED_INSTANCE_ID), keeping its assignment; other requests naming an
// instance must come from the member holding it (FENCED_INSTANCE_ID).
// group.consumer.max.size refuses new members (GROUP_MAX_SIZE_REACHED).
//
// Classic and consumer groups share ids. A join of an Empty classic group
// converts it (its offsets stay); a non-empty classic group answers
// GROUP_ID_NOT_FOUND, as Kafka does with group.consumer.migration.policy
// "disabled": there is no online upgrade (Kafka 4.0's default policy,
// bidirectional, would convert the group and keep its classic members).
//
// A heartbeat then updates the member (recording changed metadata), bumps
// the group epoch on a changed subscription or subscribed topic metadata,
// recomputes the target assignment when the group epoch is ahead of it, and
// reconciles the member (see consumer_reconcile.go). The response carries
// the member's epoch, group.consumer.heartbeat.interval.ms, and its assigned
// partitions when it joined, sent a full request or its assignment changed.
// It is sent once the group's records are durable. Every heartbeat restarts
// the member's session (group.consumer.session.timeout.ms); a member whose
// session runs out, or that does not revoke within its rebalance timeout, is
// removed and the group epoch bumped.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func cgHeartbeatError(version, code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version, resp.ErrorCode = version, code
	if msg == "" {
		msg = errorMessage(code)
	}
	resp.ErrorMessage = &msg
	return resp
}

// errorMessage is Kafka's default message for an error code.
func errorMessage(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Description
	}
	return ""
}

// validateConsumerHeartbeat is Kafka's check of the request itself.
func (gm *groupManager) validateConsumerHeartbeat(r *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	invalid := kerr.InvalidRequest.Code
	blank := func(s *string) bool { return s != nil && strings.TrimSpace(*s) == "" }
	if (r.Version >= 1 || r.MemberEpoch > 0 || r.MemberEpoch == leaveEpoch) && blank(&r.MemberID) {
		return invalid, "MemberId can't be empty."
	}
	switch {
	case blank(&r.Group):
		return invalid, "GroupId can't be empty."
	case blank(r.InstanceID):
		return invalid, "InstanceId can't be empty."
	case blank(r.RackID):
		return invalid, "RackId can't be empty."
	}
	switch {
	case r.MemberEpoch == 0 && r.RebalanceTimeoutMillis == -1:
		return invalid, "RebalanceTimeoutMs must be provided in first request."
	case r.MemberEpoch == 0 && (r.Topics == nil || len(r.Topics) > 0):
		return invalid, "TopicPartitions must be empty when (re-)joining."
	case r.MemberEpoch == 0 && r.SubscribedTopicNames == nil && r.SubscribedTopicRegex == nil:
		return invalid, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
	case r.MemberEpoch == staticLeaveEpoch && r.InstanceID == nil:
		return invalid, "InstanceId can't be null."
	case r.MemberEpoch < staticLeaveEpoch:
		return invalid, "MemberEpoch is invalid."
	}
	if re := r.SubscribedTopicRegex; re != nil {
		if _, err := compileRegex(*re); err != nil {
			return kerr.InvalidRegularExpression.Code,
				fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *re, err)
		}
	}
	if a := r.ServerAssignor; a != nil && !slices.Contains(gm.cfg.Consumer.Assignors, *a) {
		return kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.",
			*a, strings.Join(gm.cfg.Consumer.Assignors, ", "))
	}
	return 0, ""
}

func (gm *groupManager) consumerGroupHeartbeat(req Request, r *kmsg.ConsumerGroupHeartbeatRequest) {
	fail := func(code int16, msg string) { gm.out.Respond(req.Token, cgHeartbeatError(r.Version, code, msg)) }
	if code, msg := gm.validateConsumerHeartbeat(r); code != 0 {
		fail(code, msg)
		return
	}
	p, code := gm.route(r.Group)
	if code != 0 {
		fail(code, "")
		return
	}
	if r.MemberEpoch == leaveEpoch || r.MemberEpoch == staticLeaveEpoch {
		gm.consumerGroupLeave(req, r)
		return
	}
	join := r.MemberEpoch == 0
	tx := &cgTxn{}
	g := gm.byID[r.Group]
	switch {
	case g == nil && !join:
		fail(errGroupIDNotFound, fmt.Sprintf("Consumer group %s not found.", r.Group))
		return
	case g == nil:
		g = gm.createConsumerGroup(tx, r.Group, p)
	case g.consumer != nil:
		tx.g = g
	case !join:
		fail(errGroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", r.Group))
		return
	case !g.isEmpty():
		fail(errGroupIDNotFound, fmt.Sprintf("Cannot upgrade classic group %s to consumer group because online upgrade is disabled.", r.Group))
		return
	default:
		gm.convertToConsumerGroup(tx, g)
	}
	cg := g.consumer
	if limit := gm.cfg.Consumer.MaxSize; len(cg.members) >= limit && (r.MemberID == "" || cg.members[r.MemberID] == nil) {
		tx.abort()
		fail(errGroupMaxSizeReached, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", limit))
		return
	}
	memberID := r.MemberID
	if memberID == "" {
		memberID = gm.cfg.Consumer.NewMemberID()
	}
	old, code, msg := gm.cgResolveMember(tx, memberID, r)
	if code != 0 {
		tx.abort()
		fail(code, msg)
		return
	}

	// 1. The member and the group epoch.
	upd := old.clone()
	if r.InstanceID != nil {
		upd.instanceID = cloneString(r.InstanceID)
	}
	if r.RackID != nil {
		upd.rackID = cloneString(r.RackID)
	}
	if r.RebalanceTimeoutMillis != -1 {
		upd.rebalanceTimeoutMs = r.RebalanceTimeoutMillis
	}
	if r.ServerAssignor != nil {
		upd.serverAssignor = cloneString(r.ServerAssignor)
	}
	if r.SubscribedTopicNames != nil {
		upd.topics = normalizeTopics(r.SubscribedTopicNames)
	}
	if r.SubscribedTopicRegex != nil {
		upd.regex = *r.SubscribedTopicRegex
	}
	upd.clientID, upd.clientHost = req.ClientID, req.ClientHost
	if cg.members[memberID] == nil || !upd.memberMeta.equal(old.memberMeta) {
		tx.emit(cgRecord{kind: cgMemberMetadataKey, member: memberID, value: upd.memberMeta})
	}
	regexChanged := upd.regex != old.regex
	if regexChanged {
		gm.cgUpdateRegexes(tx, old.regex, upd.regex)
	}
	gm.cgMaybeBump(tx, cg.epoch == 0 || !slices.Equal(upd.topics, old.topics) || regexChanged)

	// 2. The target assignment, 3. the member's step towards it.
	if cg.epoch > cg.assignmentEpoch {
		gm.cgUpdateTarget(tx)
	}
	m, code, msg := gm.cgReconcile(tx, memberID, r.Topics)
	if code != 0 {
		tx.abort()
		fail(code, msg)
		return
	}
	gm.cgScheduleSession(g, memberID)

	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = r.Version
	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	_, interval := gm.consumerTimeouts(g.id)
	resp.HeartbeatIntervalMillis = int32(interval.Milliseconds())
	full := r.RebalanceTimeoutMillis != -1 && (r.SubscribedTopicNames != nil || r.SubscribedTopicRegex != nil) && r.Topics != nil
	if join || full || !m.assigned.equal(old.assigned) {
		resp.Assignment = heartbeatAssignment(m.assigned)
	}
	gm.cgCommit(tx, func(code int16) {
		if code != 0 {
			fail(groupErrorCode(code), "")
			return
		}
		gm.out.Respond(req.Token, resp)
	})
}

// cgResolveMember finds the member a heartbeat is from, or a new one when it
// joins; a static member joining replaces the instance's previous member.
// It returns the member as it was before this heartbeat.
func (gm *groupManager) cgResolveMember(tx *cgTxn, memberID string, r *kmsg.ConsumerGroupHeartbeatRequest) (*cMember, int16, string) {
	cg := tx.g.consumer
	join := r.MemberEpoch == 0
	if r.InstanceID == nil {
		m := cg.members[memberID]
		if m == nil {
			if !join {
				return nil, errUnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", memberID, tx.g.id)
			}
			return newCMember(memberID), 0, ""
		}
		code, msg := checkMemberEpoch(m, r.MemberEpoch, r.Topics)
		return m, code, msg
	}
	instance := *r.InstanceID
	sm := cg.staticMember(instance)
	switch {
	case !join && sm == nil:
		return nil, errUnknownMemberID, fmt.Sprintf("Instance id %s is unknown.", instance)
	case !join && sm.id != memberID:
		return nil, errFencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.",
			memberID, instance, sm.id)
	case !join:
		code, msg := checkMemberEpoch(sm, r.MemberEpoch, r.Topics)
		return sm, code, msg
	case sm == nil:
		if m := cg.members[memberID]; m != nil {
			return m, 0, ""
		}
		return newCMember(memberID), 0, ""
	case sm.epoch != staticLeaveEpoch:
		return nil, kerr.UnreleasedInstanceID.Code, fmt.Sprintf("Static member %s with instance id %s cannot join the group"+
			" because the instance id is owned by %s member.", memberID, instance, sm.id)
	}
	// The instance comes back: its new member takes over the old one's
	// subscription and assignments, from epoch 0.
	nm := sm.clone()
	nm.id = memberID
	nm.epoch, nm.prevEpoch = 0, 0
	target := cg.target[sm.id]
	if target == nil {
		target = assignment{}
	}
	gm.cgRemoveRecords(tx, sm.id)
	tx.emit(cgRecord{kind: cgMemberMetadataKey, member: memberID, value: nm.memberMeta})
	tx.emit(cgRecord{kind: cgTargetMemberKey, member: memberID, value: target.clone()})
	tx.emit(cgRecord{kind: cgCurrentMemberKey, member: memberID, value: nm.memberAssignment})
	return cg.members[memberID], 0, ""
}

// heartbeatAssignment is a member's assigned partitions as the response
// carries them.
func heartbeatAssignment(a assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, id := range a.topicIDs() {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = id, slices.Clone(a[id])
		out.Topics = append(out.Topics, t)
	}
	return &out
}

// consumerGroupLeave handles epochs -1 and -2.
func (gm *groupManager) consumerGroupLeave(req Request, r *kmsg.ConsumerGroupHeartbeatRequest) {
	fail := func(code int16, msg string) { gm.out.Respond(req.Token, cgHeartbeatError(r.Version, code, msg)) }
	g := gm.byID[r.Group]
	switch {
	case g == nil:
		fail(errGroupIDNotFound, fmt.Sprintf("Group %s not found.", r.Group))
		return
	case g.consumer == nil:
		fail(errGroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", r.Group))
		return
	}
	cg := g.consumer
	tx := &cgTxn{g: g}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version, resp.MemberEpoch = r.Version, r.MemberEpoch
	memberID := r.MemberID
	resp.MemberID = &memberID
	if r.InstanceID == nil {
		m := cg.members[r.MemberID]
		if m == nil {
			fail(errUnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", r.MemberID, g.id))
			return
		}
		gm.cgFence(tx, []*cMember{m})
	} else {
		m := cg.staticMember(*r.InstanceID)
		switch {
		case m == nil:
			fail(errUnknownMemberID, fmt.Sprintf("Instance id %s is unknown.", *r.InstanceID))
			return
		case m.id != r.MemberID:
			fail(errFencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.",
				r.MemberID, *r.InstanceID, m.id))
			return
		case r.MemberEpoch == staticLeaveEpoch:
			// The member stays, with its assignment, until it comes back
			// or its session ends; what it was revoking is released.
			next := m.memberAssignment
			next.epoch, next.assigned, next.pending = staticLeaveEpoch, m.assigned.clone(), assignment{}
			tx.emit(cgRecord{kind: cgCurrentMemberKey, member: m.id, value: next})
		default:
			gm.cgFence(tx, []*cMember{m})
		}
	}
	gm.cgCommit(tx, func(code int16) {
		if code != 0 {
			fail(groupErrorCode(code), "")
			return
		}
		gm.out.Respond(req.Token, resp)
	})
}

// cgRemoveRecords records that a member is gone, in Kafka's order.
func (gm *groupManager) cgRemoveRecords(tx *cgTxn, id string) {
	tx.emit(cgRecord{kind: cgCurrentMemberKey, member: id})
	tx.emit(cgRecord{kind: cgTargetMemberKey, member: id})
	tx.emit(cgRecord{kind: cgMemberMetadataKey, member: id})
}

// cgFence removes members, drops the regexes only they used, records the
// subscription metadata without them and bumps the group epoch once. The
// new target assignment is computed by the next heartbeat.
func (gm *groupManager) cgFence(tx *cgTxn, members []*cMember) {
	if len(members) == 0 {
		return
	}
	cg := tx.g.consumer
	for _, m := range members {
		gm.cgRemoveRecords(tx, m.id)
		gm.cgCancelTimers(tx.g, m.id)
	}
	for _, m := range members {
		if _, ok := cg.regexes[m.regex]; ok && m.regex != "" && cg.regexSubs[m.regex] == 0 {
			tx.emit(cgRecord{kind: cgRegexKey, member: m.regex})
		}
	}
	if meta := gm.subscriptionMetadata(cg); !equalTopicMeta(meta, cg.subMeta) {
		tx.emit(cgRecord{kind: cgPartitionMetadataKey, value: meta})
	}
	tx.emit(cgRecord{kind: cgMetadataKey, value: cg.epoch + 1})
	gm.cfg.Stats.count(consumerRebalances, 1)
}

// cgTimers returns a member's timer identities.
func (gm *groupManager) cgTimers(g *group, id string) *cTimers {
	t := g.consumer.timers[id]
	if t == nil {
		t = &cTimers{}
		g.consumer.timers[id] = t
	}
	return t
}

func (gm *groupManager) cgScheduleSession(g *group, id string) {
	session, _ := gm.consumerTimeouts(g.id)
	gm.cgTimers(g, id).session = gm.schedule(timerConsumerSession, session, g.id, id)
}

// cgScheduleRebalance gives a member that must revoke partitions its
// rebalance timeout to leave epoch.
func (gm *groupManager) cgScheduleRebalance(g *group, id string, epoch, timeoutMs int32) {
	t := gm.cgTimers(g, id)
	t.rebalance = gm.schedule(timerConsumerRebalance, ms(int64(max(timeoutMs, 0))), g.id, id)
	t.rebalanceEpoch = epoch
}

func (gm *groupManager) cgCancelRebalance(g *group, id string) {
	if t := g.consumer.timers[id]; t != nil {
		t.rebalance = 0
	}
}

func (gm *groupManager) cgCancelTimers(g *group, id string) { delete(g.consumer.timers, id) }

// cgRestoreTimers gives every member a session, and every member revoking
// partitions a rebalance timeout, if it has none: after a load, or after
// an undo brought members back.
func (gm *groupManager) cgRestoreTimers(g *group) {
	cg := g.consumer
	for id := range cg.timers {
		if cg.members[id] == nil {
			delete(cg.timers, id)
		}
	}
	for _, id := range sortedIDs(cg.members) {
		m := cg.members[id]
		if t := cg.timers[id]; t == nil || t.session == 0 {
			gm.cgScheduleSession(g, id)
		}
		if t := cg.timers[id]; m.state == memberUnrevoked && t.rebalance == 0 {
			gm.cgScheduleRebalance(g, id, m.epoch, m.rebalanceTimeoutMs)
		}
	}
}

// consumerTimerLive reports whether a consumer member's timer is current.
func (gm *groupManager) consumerTimerLive(g *group, t *timer) bool {
	if g.consumer == nil || g.consumer.members[t.member] == nil {
		return false
	}
	tm := g.consumer.timers[t.member]
	switch {
	case tm == nil:
		return false
	case t.kind == timerConsumerSession:
		return tm.session == t.seq
	}
	return tm.rebalance == t.seq
}

// onConsumerTimer removes a member whose session ran out, or that is still
// at the epoch it had to leave within its rebalance timeout.
func (gm *groupManager) onConsumerTimer(g *group, t *timer) {
	cg := g.consumer
	m := cg.members[t.member]
	if t.kind == timerConsumerRebalance {
		cg.timers[t.member].rebalance = 0
		if m.epoch != cg.timers[t.member].rebalanceEpoch {
			return
		}
	}
	tx := &cgTxn{g: g}
	gm.cgFence(tx, []*cMember{m})
	gm.cgCommit(tx, nil)
}
