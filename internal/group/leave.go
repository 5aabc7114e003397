package group

// LeaveGroup, versions 0-5.
//
// v0-2 name one member; v3+ a batch, each answered on its own. Checks for the
// request: empty group id (INVALID_GROUP_ID) and coordinator. If the group
// does not exist every member gets UNKNOWN_MEMBER_ID. A member given by
// instance id only (empty member id, the admin client's removal of static
// members) is found through the instance id; otherwise the member and
// instance id are validated as for Heartbeat. A member id still pending
// after MEMBER_ID_REQUIRED is simply forgotten. Each removal rebalances the
// group. For v0-2 the first member error becomes the response's error. A
// consumer group (KIP-848) is handled as consumer_admin.go says.

import "github.com/twmb/franz-go/pkg/kmsg"

func (gm *groupManager) leaveGroup(req Request, r *kmsg.LeaveGroupRequest) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = r.Version
	if r.Group == "" {
		resp.ErrorCode = errInvalidGroupID
		gm.out.Respond(req.Token, resp)
		return
	}
	if _, code := gm.route(r.Group); code != 0 {
		resp.ErrorCode = code
		gm.out.Respond(req.Token, resp)
		return
	}
	leaving := r.Members
	if r.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: r.MemberID}}
	}
	g := gm.byID[r.Group]
	if g != nil && g.consumer != nil {
		gm.leaveConsumerGroup(req, g, resp, leaving, r.Version >= 3)
		return
	}
	defer gm.out.Respond(req.Token, resp)
	for _, l := range leaving {
		lm := kmsg.NewLeaveGroupResponseMember()
		lm.MemberID, lm.InstanceID = l.MemberID, l.InstanceID
		lm.ErrorCode = gm.leaveMember(g, l)
		resp.Members = append(resp.Members, lm)
	}
	if r.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
}

func (gm *groupManager) leaveMember(g *group, l kmsg.LeaveGroupRequestMember) int16 {
	if g == nil {
		return errUnknownMemberID
	}
	if l.MemberID == "" {
		if l.InstanceID == nil {
			return errUnknownMemberID
		}
		id, ok := g.static[*l.InstanceID]
		if !ok {
			return errUnknownMemberID
		}
		gm.removeMemberAndUpdateGroup(g, g.byID[id])
		return 0
	}
	if _, ok := g.pendingJoin[l.MemberID]; ok {
		delete(g.pendingJoin, l.MemberID)
		gm.maybeCompleteJoinPhase(g)
		return 0
	}
	if code := g.validateMember(l.MemberID, l.InstanceID); code != 0 {
		return code
	}
	gm.removeMemberAndUpdateGroup(g, g.byID[l.MemberID])
	return 0
}
