package group

// ConsumerGroupDescribe (versions 0-1), and what the classic APIs and the
// offset APIs do with consumer groups.
//
// ConsumerGroupDescribe: per group, an empty id is INVALID_GROUP_ID, then
// the coordinator error; an unknown group or a classic one is
// GROUP_ID_NOT_FOUND with Kafka's message. A consumer group is described
// with its state, group epoch, assignment epoch, the assignor its members
// prefer (else the default) and its members (in id order) with their
// current and target assignments; topics unknown to the last SetTopics are
// left out, as Kafka leaves out topics missing from its metadata image. A
// group named again is described once.
// v1 gives every member type 1 (consumer protocol). The state shown is the
// in-memory state, which may include changes still being written (Kafka
// describes the last committed state).
//
// Classic APIs: DescribeGroups describes a consumer group as Dead
// (GROUP_ID_NOT_FOUND from v6, "Group %s is not a classic group."). A
// JoinGroup of a new member converts an empty consumer group into a classic
// group; to a non-empty one it is INCONSISTENT_GROUP_PROTOCOL, since no
// classic member may join a consumer group here (Kafka 4.0 with the
// "disabled" migration policy). SyncGroup and Heartbeat answer
// UNKNOWN_MEMBER_ID (FENCED_INSTANCE_ID for an instance held by another
// member id). LeaveGroup can remove a static member by instance id alone,
// as the admin client does; members named by member id do not use the
// classic protocol and get UNKNOWN_MEMBER_ID.
//
// Offsets: an OffsetCommit to a consumer group with generation -1 needs the
// group empty; otherwise the member must exist (UNKNOWN_MEMBER_ID), use
// OffsetCommit v9+ (UNSUPPORTED_VERSION) and send its member epoch as the
// generation (STALE_MEMBER_EPOCH). OffsetFetch v9 with a member id or epoch
// is checked the same way. Offsets of topics the group subscribes to never
// expire and cannot be deleted (GROUP_SUBSCRIBED_TO_TOPIC); the others
// expire offsets.retention.minutes after their commit, and an empty group
// left without offsets is deleted.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (gm *groupManager) consumerGroupDescribe(req Request, r *kmsg.ConsumerGroupDescribeRequest) {
	resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Version = r.Version
	for _, id := range distinct(r.Groups) {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = id
		fail := func(code int16, msg string) {
			if msg == "" {
				msg = errorMessage(code)
			}
			dg.ErrorCode, dg.ErrorMessage = code, &msg
		}
		g := gm.byID[id]
		if _, code := gm.route(id); id == "" {
			fail(errInvalidGroupID, "")
		} else if code != 0 {
			fail(code, "")
		} else if g == nil {
			fail(errGroupIDNotFound, fmt.Sprintf("Group %s not found.", id))
		} else if g.consumer == nil {
			fail(errGroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", id))
		} else {
			gm.describeConsumerGroup(&dg, g, r.Version)
			if r.IncludeAuthorizedOperations {
				dg.AuthorizedOperations = groupOperations
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	gm.out.Respond(req.Token, resp)
}

func (gm *groupManager) describeConsumerGroup(dg *kmsg.ConsumerGroupDescribeResponseGroup, g *group, version int16) {
	cg := g.consumer
	dg.State = cg.state()
	dg.Epoch, dg.AssignmentEpoch = cg.epoch, cg.assignmentEpoch
	dg.AssignorName = cg.preferredAssignor(gm.cfg.Consumer.Assignors, gm.cfg.Consumer.Assignors[0])
	for _, id := range sortedIDs(cg.members) {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch = m.id, m.epoch
		dm.InstanceID, dm.RackID = cloneString(m.instanceID), cloneString(m.rackID)
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopics = slices.Clone(m.topics)
		regex := m.regex
		dm.SubscribedTopicRegex = &regex
		dm.Assignment = gm.describeAssignment(m.assigned)
		dm.TargetAssignment = gm.describeAssignment(cg.target[id])
		if version >= 1 {
			dm.MemberType = 1
		}
		dg.Members = append(dg.Members, dm)
	}
}

func (gm *groupManager) describeAssignment(a assignment) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range a.topicIDs() {
		name, ok := gm.topics.byID[id]
		if !ok {
			continue
		}
		out.TopicPartitions = append(out.TopicPartitions,
			kmsg.AssignmentTopicPartition{TopicID: id, Topic: name, Partitions: slices.Clone(a[id])})
	}
	return out
}

// listing returns a group's type, protocol type and state as ListGroups
// shows them.
func (g *group) listing() (groupType, protocolType, state string) {
	if g.consumer != nil {
		return "consumer", consumerProtocolType, g.consumer.state()
	}
	return "classic", g.protocolType, g.state.String()
}

// tombstones are the records that delete an empty group's metadata.
func (g *group) tombstones() []Record {
	if g.consumer != nil {
		return consumerGroupTombstones(g.id, g.consumer)
	}
	return []Record{groupTombstone(g.id)}
}

// classicMemberError is the answer of SyncGroup and Heartbeat for a
// consumer group: none of its members uses the classic protocol.
func (cg *consumerGroup) classicMemberError(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		if sm := cg.staticMember(*instanceID); sm != nil && sm.id != memberID {
			return errFencedInstanceID
		}
	}
	return errUnknownMemberID
}

// leaveConsumerGroup is a LeaveGroup (v3+ form) for a consumer group: the
// static members named by instance id only are removed together, with one
// group epoch bump; the answer waits for the records.
func (gm *groupManager) leaveConsumerGroup(req Request, g *group, resp *kmsg.LeaveGroupResponse, leaving []kmsg.LeaveGroupRequestMember, v3 bool) {
	cg := g.consumer
	var gone []*cMember
	for _, l := range leaving {
		lm := kmsg.NewLeaveGroupResponseMember()
		lm.MemberID, lm.InstanceID = l.MemberID, l.InstanceID
		var sm *cMember
		if l.InstanceID != nil {
			sm = cg.staticMember(*l.InstanceID)
		}
		switch {
		case sm == nil:
			lm.ErrorCode = errUnknownMemberID
		case l.MemberID != "" && sm.id != l.MemberID:
			lm.ErrorCode = errFencedInstanceID
		case l.MemberID != "":
			lm.ErrorCode = errUnknownMemberID // a consumer protocol member
		case !slices.Contains(gone, sm):
			gone = append(gone, sm)
		}
		resp.Members = append(resp.Members, lm)
	}
	if !v3 {
		resp.ErrorCode, resp.Members = resp.Members[0].ErrorCode, nil
	}
	tx := &cgTxn{g: g}
	gm.cgFence(tx, gone)
	gm.cgCommit(tx, func(code int16) {
		if code != 0 {
			resp.ErrorCode, resp.Members = groupErrorCode(code), nil
		}
		gm.out.Respond(req.Token, resp)
	})
}

// validateOffsetCommit is Kafka's ConsumerGroup.validateOffsetCommit for a
// (non-transactional) OffsetCommit.
func (cg *consumerGroup) validateOffsetCommit(r *kmsg.OffsetCommitRequest) int16 {
	if r.Generation < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[r.MemberID]
	switch {
	case m == nil:
		return errUnknownMemberID
	case r.Version < 9:
		return kerr.UnsupportedVersion.Code
	case r.Generation != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// offsetFetchMemberError is Kafka's ConsumerGroup.validateOffsetFetch for
// an OffsetFetch v9 group naming a member id or epoch; 0 for other groups.
func (gm *groupManager) offsetFetchMemberError(groupID string, memberID *string, epoch int32) int16 {
	g := gm.byID[groupID]
	if _, code := gm.route(groupID); code != 0 || g == nil || g.consumer == nil || memberID == nil && epoch < 0 {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.consumer.members[id]
	switch {
	case m == nil:
		return errUnknownMemberID
	case m.epoch != epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// replayConsumerRecord applies a consumer group record during a load. It
// returns the group id and whether that id is now a consumer group (which
// replaces any classic metadata of the same id).
func replayConsumerRecord(consumers map[string]*consumerGroup, rec Record) (string, bool, error) {
	r, err := decodeCGRecord(rec)
	if err != nil {
		return "", false, err
	}
	cg := consumers[r.group]
	switch {
	case r.value == nil && cg == nil:
		return r.group, false, nil
	case r.value == nil && r.kind == cgMetadataKey:
		delete(consumers, r.group)
		return r.group, false, nil
	case cg == nil:
		cg = newConsumerGroup()
		consumers[r.group] = cg
	}
	cg.apply(r)
	return r.group, true, nil
}

// loadedConsumerGroup wraps a replayed consumer group. Its first heartbeat
// refreshes the subscription metadata, as after a load in Kafka.
func loadedConsumerGroup(id string, p int32, cg *consumerGroup, nowMs int64) *group {
	g := newGroup(id, p, nowMs)
	g.consumer = cg
	g.protocolType = consumerProtocolType
	cg.refresh = true
	return g
}
