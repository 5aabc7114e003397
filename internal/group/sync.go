package group

// SyncGroup, versions 0-5.
//
// Checks: empty group id (INVALID_GROUP_ID), coordinator, unknown group
// (UNKNOWN_MEMBER_ID), member and instance id (UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID), generation (ILLEGAL_GENERATION), protocol type and
// name given at v5+ that differ from the group's (INCONSISTENT_GROUP_PROTOCOL).
// Then by state: Empty is UNKNOWN_MEMBER_ID, PreparingRebalance is
// REBALANCE_IN_PROGRESS, Stable returns the member's assignment.
//
// In CompletingRebalance every SyncGroup waits. The leader's carries the
// assignment (bytes passed through untouched; members it leaves out get
// empty bytes); the group is persisted with it, and only when the write is
// durable do all waiting members get their assignments and the group become
// Stable. A failed write answers everyone with the translated error and
// starts another rebalance.
//
// Members that have not sent SyncGroup within the rebalance timeout after the
// join phase are removed and the group rebalances.
//
// A consumer group (KIP-848) has no classic members: UNKNOWN_MEMBER_ID, or
// FENCED_INSTANCE_ID for an instance id another member holds. Heartbeat
// answers the same.

import "github.com/twmb/franz-go/pkg/kmsg"

func syncError(version, code int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	resp.MemberAssignment = []byte{}
	return resp
}

func (gm *groupManager) syncGroup(req Request, r *kmsg.SyncGroupRequest) {
	w := &waiter{token: req.Token, version: r.Version}
	fail := func(code int16) { gm.respond(w.token, syncError(r.Version, code)) }
	if r.Group == "" {
		fail(errInvalidGroupID)
		return
	}
	if _, code := gm.route(r.Group); code != 0 {
		fail(code)
		return
	}
	g := gm.byID[r.Group]
	if g == nil {
		fail(errUnknownMemberID)
		return
	}
	if g.consumer != nil {
		fail(g.consumer.classicMemberError(r.MemberID, r.InstanceID))
		return
	}
	if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
		fail(code)
		return
	}
	if r.Generation != g.generation {
		fail(errIllegalGeneration)
		return
	}
	if inconsistent(r.ProtocolType, g.protocolType) || inconsistent(r.Protocol, g.protocol) {
		fail(errInconsistentGroupProtocol)
		return
	}
	m := g.byID[r.MemberID]
	switch g.state {
	case Empty:
		fail(errUnknownMemberID)
	case PreparingRebalance:
		fail(errRebalanceInProgress)
	case Stable:
		delete(g.pendingSync, m.id)
		if len(g.pendingSync) == 0 {
			g.syncTimer = 0
		}
		gm.respond(w.token, g.syncResult(w, m))
	case CompletingRebalance:
		if old := m.sync; old != nil {
			// Kafka replaces the waiting request silently; answer it.
			gm.respond(old.token, syncError(old.version, errRebalanceInProgress))
		}
		m.sync = w
		delete(g.pendingSync, m.id)
		if len(g.pendingSync) == 0 {
			g.syncTimer = 0
		}
		if m.id == g.leader {
			gm.storeAssignment(g, r.GroupAssignment)
		}
	}
}

// inconsistent reports whether a protocol type or name sent at v5+ differs
// from the group's. Either side being unknown is not a conflict.
func inconsistent(sent *string, group string) bool {
	return sent != nil && group != "" && *sent != group
}

func (g *group) syncResult(w *waiter, m *member) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = w.version
	resp.ProtocolType = optString(g.protocolType)
	resp.Protocol = optString(g.protocol)
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

// storeAssignment persists the leader's assignment and, once durable,
// hands it out.
func (gm *groupManager) storeAssignment(g *group, given []kmsg.SyncGroupRequestGroupAssignment) {
	assignment := make(map[string][]byte, len(g.members))
	for _, a := range given {
		assignment[a.MemberID] = append([]byte{}, a.MemberAssignment...)
	}
	for _, m := range g.members {
		if _, ok := assignment[m.id]; !ok {
			assignment[m.id] = []byte{}
		}
	}
	generation := g.generation
	gm.storeGroup(g, assignment, func(code int16) {
		// Members may have joined or left while the write was under way;
		// then this generation is over and its answer no longer matters.
		if !gm.live(g) || g.state != CompletingRebalance || g.generation != generation {
			return
		}
		if code != 0 {
			gm.resetAndPropagateAssignmentError(g, groupErrorCode(code))
			gm.maybePrepareRebalanceOrCompleteJoin(g)
			return
		}
		for _, m := range g.members {
			m.assignment = assignment[m.id]
		}
		gm.propagateAssignment(g, 0)
		gm.transition(g, Stable)
		gm.cfg.Stats.count(classicRebalances, 1)
	})
}

// propagateAssignment answers every waiting SyncGroup, with the member's
// assignment or with code, and restarts those members' sessions: a session
// that ran out while waiting was ignored, so it must start again now.
func (gm *groupManager) propagateAssignment(g *group, code int16) {
	for _, m := range g.members {
		w := m.sync
		if w == nil {
			continue
		}
		m.sync = nil
		if code != 0 {
			gm.respond(w.token, syncError(w.version, code))
		} else {
			gm.respond(w.token, g.syncResult(w, m))
		}
		gm.scheduleSession(g, m, ms(int64(m.sessionTimeoutMs)))
	}
}

// resetAndPropagateAssignmentError clears all assignments and fails every
// waiting SyncGroup with code.
func (gm *groupManager) resetAndPropagateAssignmentError(g *group, code int16) {
	for _, m := range g.members {
		m.assignment = []byte{}
	}
	gm.propagateAssignment(g, code)
}

// onSyncExpired removes the members that did not send SyncGroup in time and
// rebalances.
func (gm *groupManager) onSyncExpired(g *group) {
	if g.state != CompletingRebalance && g.state != Stable || len(g.pendingSync) == 0 {
		return
	}
	for _, m := range append([]*member(nil), g.members...) {
		if g.pendingSync[m.id] {
			gm.dropMember(g, m, errUnknownMemberID)
		}
	}
	gm.prepareRebalance(g)
}
