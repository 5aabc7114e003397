package group

// JoinGroup, versions 0-9, and the join phase of a rebalance.
//
// Checks, in Kafka's order: empty group id (INVALID_GROUP_ID), session
// timeout outside group.min/max.session.timeout.ms (INVALID_SESSION_TIMEOUT),
// coordinator (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), a known member
// id for a group that does not exist (UNKNOWN_MEMBER_ID), group.max.size
// (GROUP_MAX_SIZE_REACHED, and a known member over the limit is removed), a
// protocol type or protocol set the group cannot use
// (INCONSISTENT_GROUP_PROTOCOL).
//
// A dynamic member's first JoinGroup at v4+ gets MEMBER_ID_REQUIRED with
// its id, "clientId-uuid" (KIP-394); the id is pending until used or until
// its session timeout passes. A static member (group.instance.id, KIP-345)
// gets "instanceId-uuid" at once. A static member that rejoins with an
// unknown member id takes over the old member: the old id's waiting requests
// get FENCED_INSTANCE_ID, and in Stable, when the selected protocol would not
// change, the group is persisted and the member answered without a rebalance
// (v9+: the leader is told to skip assignment; before v9 the response names
// the old leader id so that no new leader runs an assignment).
//
// A JoinGroup v0 has no rebalance timeout; the session timeout serves.
//
// A consumer group (KIP-848) takes no classic member: a JoinGroup to one
// with members is INCONSISTENT_GROUP_PROTOCOL; a new member's JoinGroup
// turns an empty one into a classic group, keeping its offsets.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func joinError(version, code int16, memberID string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	resp.MemberID = memberID
	return resp
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// joinResult is a successful JoinGroup response for m. leader is the
// leader id to report; withMembers gives the member list (for a leader).
func (g *group) joinResult(w *waiter, memberID, leader string, withMembers, skipAssignment bool) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = w.version
	resp.Generation = g.generation
	resp.ProtocolType = optString(g.protocolType)
	resp.Protocol = optString(g.protocol)
	resp.LeaderID = leader
	resp.MemberID = memberID
	resp.SkipAssignment = skipAssignment
	if withMembers {
		for _, m := range g.members {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = m.id
			jm.InstanceID = m.instanceID
			jm.ProtocolMetadata = m.metadata(g.protocol)
			resp.Members = append(resp.Members, jm)
		}
	}
	return resp
}

func (gm *groupManager) joinGroup(req Request, r *kmsg.JoinGroupRequest) {
	w := &waiter{token: req.Token, version: r.Version}
	fail := func(code int16, memberID string) { gm.respond(w.token, joinError(r.Version, code, memberID)) }

	if r.Group == "" {
		fail(errInvalidGroupID, r.MemberID)
		return
	}
	session := ms(int64(r.SessionTimeoutMillis))
	if session < gm.cfg.MinSessionTimeout || session > gm.cfg.MaxSessionTimeout {
		fail(errInvalidSessionTimeout, r.MemberID)
		return
	}
	p, code := gm.route(r.Group)
	if code != 0 {
		fail(code, r.MemberID)
		return
	}
	if r.Version == 0 {
		v0 := *r // the caller's request stays untouched
		v0.RebalanceTimeoutMillis = v0.SessionTimeoutMillis
		r = &v0
	}
	g := gm.byID[r.Group]
	if g != nil && g.consumer != nil {
		// No classic member joins a consumer group here; a new member
		// takes over an empty one, as Kafka converts it.
		if !g.isEmpty() {
			fail(errInconsistentGroupProtocol, r.MemberID)
			return
		}
		if r.MemberID != "" {
			fail(errUnknownMemberID, r.MemberID)
			return
		}
		gm.convertToClassicGroup(g)
	}
	if g == nil {
		if r.MemberID != "" {
			fail(errUnknownMemberID, r.MemberID)
			return
		}
		g = newGroup(r.Group, p, gm.nowMs())
		gm.byID[g.id] = g
		gm.touch(g.id)
	}
	if !gm.acceptJoiningMember(g, r.MemberID) {
		if m := g.byID[r.MemberID]; m != nil {
			gm.dropMember(g, m, errGroupMaxSizeReached)
		}
		fail(errGroupMaxSizeReached, "")
		return
	}
	if r.MemberID == "" {
		gm.joinNewMember(req, r, g, w)
	} else {
		gm.joinExistingMember(req, r, g, w)
	}
}

// acceptJoiningMember applies group.max.size: during the join phase only
// members that rejoined count; otherwise all members.
func (gm *groupManager) acceptJoiningMember(g *group, memberID string) bool {
	m := g.byID[memberID]
	switch g.state {
	case PreparingRebalance:
		return (m != nil && m.join != nil) || g.awaitingJoin < gm.cfg.MaxSize
	case CompletingRebalance, Stable:
		return m != nil || len(g.members) < gm.cfg.MaxSize
	}
	return true
}

func (gm *groupManager) joinNewMember(req Request, r *kmsg.JoinGroupRequest, g *group, w *waiter) {
	if !g.supportsProtocols(r.ProtocolType, r.Protocols) {
		gm.respond(w.token, joinError(r.Version, errInconsistentGroupProtocol, ""))
		return
	}
	prefix := req.ClientID
	if r.InstanceID != nil {
		prefix = *r.InstanceID
	}
	newID := prefix + "-" + gm.cfg.NewUUID()
	switch {
	case r.InstanceID != nil:
		if oldID, ok := g.static[*r.InstanceID]; ok {
			gm.replaceStaticMember(r, g, w, *r.InstanceID, oldID, newID)
			return
		}
		gm.addMemberAndRebalance(req, r, g, w, newID)
	case r.Version >= 4:
		g.pendingJoin[newID] = gm.schedule(timerSession, ms(int64(r.SessionTimeoutMillis)), g.id, newID)
		gm.respond(w.token, joinError(r.Version, errMemberIDRequired, newID))
	default:
		gm.addMemberAndRebalance(req, r, g, w, newID)
	}
}

func (gm *groupManager) joinExistingMember(req Request, r *kmsg.JoinGroupRequest, g *group, w *waiter) {
	fail := func(code int16) { gm.respond(w.token, joinError(r.Version, code, r.MemberID)) }
	if !g.supportsProtocols(r.ProtocolType, r.Protocols) {
		fail(errInconsistentGroupProtocol)
		return
	}
	if _, pending := g.pendingJoin[r.MemberID]; pending && r.InstanceID == nil {
		gm.addMemberAndRebalance(req, r, g, w, r.MemberID)
		return
	}
	if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
		fail(code)
		return
	}
	m := g.byID[r.MemberID]
	switch g.state {
	case PreparingRebalance:
		gm.updateMemberAndRebalance(g, m, r, w)
	case CompletingRebalance:
		if m.matches(r.Protocols) {
			// A retry of a JoinGroup whose response was lost: answer
			// with the current generation.
			gm.respond(w.token, g.joinResult(w, m.id, g.leader, m.id == g.leader, false))
			return
		}
		gm.updateMemberAndRebalance(g, m, r, w)
	case Stable:
		// The leader rejoining forces a rebalance: that is how it
		// reacts to metadata changes its members' subscriptions do not
		// show.
		if m.id == g.leader || !m.matches(r.Protocols) {
			gm.updateMemberAndRebalance(g, m, r, w)
			return
		}
		gm.respond(w.token, g.joinResult(w, m.id, g.leader, false, false))
	default:
		fail(errUnknownMemberID)
	}
}

func (gm *groupManager) addMemberAndRebalance(req Request, r *kmsg.JoinGroupRequest, g *group, w *waiter, id string) {
	m := &member{
		id:                 id,
		instanceID:         cloneString(r.InstanceID),
		clientID:           req.ClientID,
		clientHost:         req.ClientHost,
		rebalanceTimeoutMs: r.RebalanceTimeoutMillis,
		sessionTimeoutMs:   r.SessionTimeoutMillis,
		protocolType:       r.ProtocolType,
		protocols:          copyProtocols(r.Protocols),
		isNew:              true,
	}
	if g.state == PreparingRebalance && g.prevState == Empty {
		g.newMemberAdded = true
	}
	g.add(m, w)
	// A new member cannot heartbeat while its JoinGroup waits, so its
	// session timeout does not apply; the new member join timeout stops
	// abandoned JoinGroups from piling up defunct members.
	gm.scheduleSession(g, m, gm.cfg.NewMemberJoinTimeout)
	gm.maybePrepareRebalanceOrCompleteJoin(g)
}

func (gm *groupManager) updateMemberAndRebalance(g *group, m *member, r *kmsg.JoinGroupRequest, w *waiter) {
	gm.supersedeJoin(m)
	g.updateMember(m, copyProtocols(r.Protocols), r.RebalanceTimeoutMillis, r.SessionTimeoutMillis, w)
	gm.maybePrepareRebalanceOrCompleteJoin(g)
}

// supersedeJoin answers a member's waiting JoinGroup that a newer JoinGroup
// of the same member replaces. Kafka drops such a request unanswered; it is
// answered REBALANCE_IN_PROGRESS here so that its connection is never stuck
// behind it, and a client still waiting simply rejoins.
func (gm *groupManager) supersedeJoin(m *member) {
	if m.join != nil {
		gm.respond(m.join.token, joinError(m.join.version, errRebalanceInProgress, m.id))
	}
}

// replaceStaticMember gives a static member's place to the new member id of
// the same instance.
func (gm *groupManager) replaceStaticMember(r *kmsg.JoinGroupRequest, g *group, w *waiter, instanceID, oldID, newID string) {
	currentLeader := g.leader
	m := g.byID[oldID]
	oldProtocols, oldRebalance, oldSession := m.protocols, m.rebalanceTimeoutMs, m.sessionTimeoutMs

	gm.renameStaticMember(g, m, instanceID, newID)
	gm.scheduleSession(g, m, ms(int64(m.sessionTimeoutMs)))
	g.updateMember(m, copyProtocols(r.Protocols), r.RebalanceTimeoutMillis, r.SessionTimeoutMillis, w)

	switch g.state {
	case Stable:
		if g.selectProtocol() != g.protocol {
			gm.maybePrepareRebalanceOrCompleteJoin(g)
			return
		}
		generation := g.generation
		gm.storeGroup(g, g.assignments(), func(code int16) {
			if m.join != w {
				return // answered meanwhile: fenced again, or unloaded
			}
			unchanged := gm.live(g) && g.state == Stable && g.generation == generation
			if gm.live(g) && !unchanged {
				return // a rebalance began; its end answers the member
			}
			g.updateMember(m, m.protocols, m.rebalanceTimeoutMs, m.sessionTimeoutMs, nil)
			if code != 0 || !unchanged {
				// The log still names the old member id: undo the
				// takeover.
				if unchanged {
					g.updateMember(m, oldProtocols, oldRebalance, oldSession, nil)
					gm.renameStaticMember(g, m, instanceID, oldID)
					gm.scheduleSession(g, m, ms(int64(m.sessionTimeoutMs)))
				}
				if code == 0 {
					code = errNotCoordinator
				}
				resp := g.joinResult(w, "", currentLeader, false, false)
				resp.ErrorCode = groupErrorCode(code)
				gm.respond(w.token, resp)
				return
			}
			if w.version >= 9 {
				isLeader := g.leader == m.id
				gm.respond(w.token, g.joinResult(w, m.id, g.leader, isLeader, isLeader))
				return
			}
			gm.respond(w.token, g.joinResult(w, m.id, currentLeader, false, false))
		})
	case CompletingRebalance:
		// The leader may already be assigning to the old member id.
		gm.prepareRebalance(g)
	case PreparingRebalance:
		gm.maybeCompleteJoinPhase(g)
	}
}

// renameStaticMember moves member m to a new id. Requests waiting under
// the old id are fenced.
func (gm *groupManager) renameStaticMember(g *group, m *member, instanceID, newID string) {
	if m.join != nil {
		gm.respond(m.join.token, joinError(m.join.version, errFencedInstanceID, m.id))
		m.join = nil
		g.awaitingJoin--
	}
	if m.sync != nil {
		gm.respond(m.sync.token, syncError(m.sync.version, errFencedInstanceID))
		m.sync = nil
	}
	delete(g.byID, m.id)
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = newID
	}
	m.id = newID
	g.byID[newID] = m
	g.static[instanceID] = newID
}

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}

func (gm *groupManager) maybePrepareRebalanceOrCompleteJoin(g *group) {
	if g.canRebalance() {
		gm.prepareRebalance(g)
		return
	}
	gm.maybeCompleteJoinPhase(g)
}

// maybeCompleteJoinPhase ends the join phase once every member has
// rejoined, except during the initial delay, which always runs its course.
func (gm *groupManager) maybeCompleteJoinPhase(g *group) {
	if g.state == PreparingRebalance && g.hasAllMembersJoined() && g.prevState != Empty {
		gm.completeJoin(g)
	}
}

// prepareRebalance starts a rebalance: waiting SyncGroups get
// REBALANCE_IN_PROGRESS, and the join phase begins. From Empty the join
// phase lasts group.initial.rebalance.delay.ms, extended by the same delay
// while new members keep arriving, up to the rebalance timeout; otherwise it
// ends when all members have rejoined or at the rebalance timeout.
func (gm *groupManager) prepareRebalance(g *group) {
	if g.state == CompletingRebalance {
		gm.resetAndPropagateAssignmentError(g, errRebalanceInProgress)
	}
	g.syncTimer = 0
	initial := g.state == Empty
	if initial {
		delay := gm.cfg.InitialRebalanceDelay.Milliseconds()
		g.initialJoin = true
		g.initialDelayMs = delay
		g.initialRemaining = max(g.rebalanceTimeoutMs()-delay, 0)
		g.joinTimer = gm.schedule(timerJoin, ms(delay), g.id, "")
	}
	gm.transition(g, PreparingRebalance)
	if !initial {
		if g.hasAllMembersJoined() {
			gm.completeJoin(g)
			return
		}
		g.initialJoin = false
		g.joinTimer = gm.schedule(timerJoin, ms(g.rebalanceTimeoutMs()), g.id, "")
	}
}

func (gm *groupManager) onJoinTimer(g *group) {
	if g.state != PreparingRebalance {
		return
	}
	if g.initialJoin && g.newMemberAdded && g.initialRemaining != 0 {
		g.newMemberAdded = false
		delay := min(gm.cfg.InitialRebalanceDelay.Milliseconds(), g.initialRemaining)
		g.initialRemaining = max(g.initialRemaining-g.initialDelayMs, 0)
		g.initialDelayMs = delay
		g.joinTimer = gm.schedule(timerJoin, ms(delay), g.id, "")
		return
	}
	gm.completeJoin(g)
}

// completeJoin ends the join phase: dynamic members that did not rejoin are
// removed (static ones stay), the next generation begins, and every waiting
// JoinGroup is answered, the leader's with all members' metadata.
func (gm *groupManager) completeJoin(g *group) {
	g.joinTimer = 0
	for _, m := range append([]*member(nil), g.members...) {
		if m.join == nil && !m.static() {
			gm.dropMember(g, m, errUnknownMemberID)
		}
	}
	if !gm.electJoinedLeader(g) && len(g.members) > 0 {
		// Only static members that did not rejoin are left: wait for them
		// to rejoin or for their sessions to expire.
		g.initialJoin = false
		g.joinTimer = gm.schedule(timerJoin, ms(g.rebalanceTimeoutMs()), g.id, "")
		return
	}
	g.generation++
	g.pendingSync = make(map[string]bool)
	if len(g.members) == 0 {
		g.protocol = ""
		g.computeSubscribed()
		gm.transition(g, Empty)
		// Kafka only warns if this write fails: an empty generation has no
		// member that could act on the old one.
		gm.storeGroup(g, nil, nil)
		return
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	gm.transition(g, CompletingRebalance)
	for _, m := range g.members {
		if w := m.join; w != nil {
			m.join = nil
			g.awaitingJoin--
			gm.respond(w.token, g.joinResult(w, m.id, g.leader, m.id == g.leader, false))
		}
		gm.scheduleSession(g, m, ms(int64(m.sessionTimeoutMs)))
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	g.syncTimer = gm.schedule(timerSync, ms(g.rebalanceTimeoutMs()), g.id, "")
}

// electJoinedLeader keeps the leader if it rejoined, else makes the first
// rejoined member leader. It reports whether the group has a rejoined
// leader.
func (gm *groupManager) electJoinedLeader(g *group) bool {
	l := g.byID[g.leader]
	if l == nil {
		return false
	}
	if l.join != nil {
		return true
	}
	for _, m := range g.members {
		if m.join != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

// dropMember removes m, answering its waiting requests with code, and
// cancels its timers. It does not react to the removal; see
// removeMemberAndUpdateGroup.
func (gm *groupManager) dropMember(g *group, m *member, code int16) {
	if w := m.join; w != nil {
		gm.respond(w.token, joinError(w.version, code, ""))
	}
	if w := m.sync; w != nil {
		gm.respond(w.token, syncError(w.version, code))
		m.sync = nil
	}
	g.remove(m)
}

// removeMemberAndUpdateGroup removes a member that left or failed and
// rebalances the rest. A waiting JoinGroup gets UNKNOWN_MEMBER_ID so that a
// client still there joins afresh.
func (gm *groupManager) removeMemberAndUpdateGroup(g *group, m *member) {
	gm.dropMember(g, m, errUnknownMemberID)
	switch g.state {
	case Stable, CompletingRebalance:
		gm.maybePrepareRebalanceOrCompleteJoin(g)
	case PreparingRebalance:
		gm.maybeCompleteJoinPhase(g)
	}
}
