package group

// Heartbeat, versions 0-4, and session expiry.
//
// Checks: empty group id (INVALID_GROUP_ID), coordinator (NOT_COORDINATOR;
// while the partition loads Kafka answers NONE, "blindly", so that members do
// not rejoin for nothing), unknown group (UNKNOWN_MEMBER_ID), member and
// instance id (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), generation
// (ILLEGAL_GENERATION). Then by state: Empty is UNKNOWN_MEMBER_ID;
// PreparingRebalance is REBALANCE_IN_PROGRESS, telling the member to rejoin;
// CompletingRebalance and Stable are NONE. A valid heartbeat restarts the
// member's session timer.
//
// A member whose session runs out is removed and the group rebalances,
// except while its JoinGroup or SyncGroup waits (the rebalance timeout
// covers those). A member that never finished a join phase is bounded by the
// new member join timeout instead, even while its JoinGroup waits. A member
// id handed out with MEMBER_ID_REQUIRED lapses after the session timeout of
// that JoinGroup.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (gm *groupManager) heartbeat(req Request, r *kmsg.HeartbeatRequest) {
	answer := func(code int16) {
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.Version = r.Version
		resp.ErrorCode = code
		gm.out.Respond(req.Token, resp)
	}
	if r.Group == "" {
		answer(errInvalidGroupID)
		return
	}
	if _, code := gm.route(r.Group); code != 0 {
		if code == errLoadInProgress {
			code = 0
		}
		answer(code)
		return
	}
	g := gm.byID[r.Group]
	if g == nil {
		answer(errUnknownMemberID)
		return
	}
	if g.consumer != nil {
		answer(g.consumer.classicMemberError(r.MemberID, r.InstanceID))
		return
	}
	if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
		answer(code)
		return
	}
	if r.Generation != g.generation {
		answer(errIllegalGeneration)
		return
	}
	m := g.byID[r.MemberID]
	switch g.state {
	case Empty:
		answer(errUnknownMemberID)
	case PreparingRebalance:
		gm.scheduleSession(g, m, ms(int64(m.sessionTimeoutMs)))
		answer(errRebalanceInProgress)
	default:
		gm.scheduleSession(g, m, ms(int64(m.sessionTimeoutMs)))
		answer(0)
	}
}

// scheduleSession (re)starts m's session timer.
func (gm *groupManager) scheduleSession(g *group, m *member, d time.Duration) {
	m.sessionTimer = gm.schedule(timerSession, d, g.id, m.id)
}

// onSessionExpired handles the session timer of a member or pending member.
func (gm *groupManager) onSessionExpired(g *group, memberID string) {
	if _, ok := g.pendingJoin[memberID]; ok {
		delete(g.pendingJoin, memberID)
		gm.maybeCompleteJoinPhase(g)
		return
	}
	m := g.byID[memberID]
	m.sessionTimer = 0
	if !m.isNew && (m.join != nil || m.sync != nil) {
		return
	}
	gm.removeMemberAndUpdateGroup(g, m)
}
