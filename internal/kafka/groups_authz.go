package kafka

// Authorization of the group APIs, as Kafka's KafkaApis: JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup and ConsumerGroupHeartbeat need READ
// on the group (whose subscribed topics also need DESCRIBE), OffsetFetch
// DESCRIBE on the group and on each topic (topics it may not see are left
// out when all are asked for), DescribeGroups and ConsumerGroupDescribe
// DESCRIBE on each group (and, for the latter, on the topics its members
// are assigned: else TOPIC_AUTHORIZATION_FAILED and no members),
// DeleteGroups DELETE on each group, OffsetDelete
// DELETE on the group and READ on each topic; ListGroups lists the groups
// the principal may DESCRIBE, or all of them with DESCRIBE on the
// cluster. A denied group gets GROUP_AUTHORIZATION_FAILED, a denied topic
// TOPIC_AUTHORIZATION_FAILED; what is allowed goes to the coordinator,
// and its answer is merged back in the request's order.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

// groupOps are a group's operations (READ, DELETE, DESCRIBE) as a bit set
// for AuthorizedOperations.
const groupOps = 1<<acl.OpRead | 1<<acl.OpDelete | 1<<acl.OpDescribe

func (s *Server) handleGroupRequest(req *Request) *Reply {
	body, finish := req.Body, func(r kmsg.Response) kmsg.Response { return r }
	if s.cfg.Authorizer != nil && req.Principal != "" {
		var answer kmsg.Response
		body, finish, answer = s.authorizeGroupRequest(req)
		if answer != nil {
			return done(answer)
		}
	}
	rep := newReply()
	s.deps.Groups.Handle(req.Ctx, req.ClientID, clientHost(req.RemoteAddr), body, func(r kmsg.Response) { rep.complete(finish(r)) })
	return rep
}

// authorizeGroupRequest returns the part of req the principal may make and
// a function completing the coordinator's answer, or the whole answer when
// nothing is left to ask.
func (s *Server) authorizeGroupRequest(req *Request) (kmsg.Request, func(kmsg.Response) kmsg.Response, kmsg.Response) {
	same := func(r kmsg.Response) kmsg.Response { return r }
	group := func(op int8, g string) bool { return s.authorized(req, op, acl.ResourceGroup, g) }
	topic := func(op int8, t string) bool { return s.authorized(req, op, acl.ResourceTopic, t) }
	denied := kerr.GroupAuthorizationFailed.Code
	switch r := req.Body.(type) {
	case *kmsg.JoinGroupRequest:
		if !group(acl.OpRead, r.Group) {
			resp := respFor(req).(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation = denied, -1
			return nil, nil, resp
		}
	case *kmsg.SyncGroupRequest:
		if !group(acl.OpRead, r.Group) {
			resp := respFor(req).(*kmsg.SyncGroupResponse)
			resp.ErrorCode = denied
			return nil, nil, resp
		}
	case *kmsg.HeartbeatRequest:
		if !group(acl.OpRead, r.Group) {
			resp := respFor(req).(*kmsg.HeartbeatResponse)
			resp.ErrorCode = denied
			return nil, nil, resp
		}
	case *kmsg.LeaveGroupRequest:
		if !group(acl.OpRead, r.Group) {
			resp := respFor(req).(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = denied
			return nil, nil, resp
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		resp := respFor(req).(*kmsg.ConsumerGroupHeartbeatResponse)
		if !group(acl.OpRead, r.Group) {
			resp.ErrorCode = denied
			return nil, nil, resp
		}
		var hidden []string
		for _, t := range r.SubscribedTopicNames {
			if !topic(acl.OpDescribe, t) {
				hidden = append(hidden, t)
			}
		}
		if len(hidden) > 0 {
			slices.Sort(hidden)
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("The group has subscribed topics which are not authorized: [" + strings.Join(hidden, ", ") + "]")
			return nil, nil, resp
		}
	case *kmsg.OffsetFetchRequest:
		return s.authorizeOffsetFetch(req, r)
	case *kmsg.DescribeGroupsRequest:
		allowed := *r
		allowed.Groups = slices.DeleteFunc(slices.Clone(r.Groups), func(g string) bool { return !group(acl.OpDescribe, g) })
		finish := func(got kmsg.Response) kmsg.Response {
			byID := map[string]kmsg.DescribeGroupsResponseGroup{}
			g := got.(*kmsg.DescribeGroupsResponse)
			for _, d := range g.Groups {
				if r.IncludeAuthorizedOperations {
					d.AuthorizedOperations = s.authorizedOps(req, acl.ResourceGroup, d.Group, groupOps)
				}
				byID[d.Group] = d
			}
			g.Groups = nil
			for _, id := range r.Groups {
				d, ok := byID[id]
				if !ok {
					d = kmsg.NewDescribeGroupsResponseGroup()
					d.Group, d.ErrorCode = id, denied
				}
				g.Groups = append(g.Groups, d)
			}
			return g
		}
		if len(allowed.Groups) == 0 {
			return nil, nil, finish(respFor(req))
		}
		return &allowed, finish, nil
	case *kmsg.ConsumerGroupDescribeRequest:
		describable := func(a kmsg.Assignment) bool {
			return !slices.ContainsFunc(a.TopicPartitions, func(tp kmsg.AssignmentTopicPartition) bool { return !topic(acl.OpDescribe, tp.Topic) })
		}
		allowed := *r
		allowed.Groups = slices.DeleteFunc(slices.Clone(r.Groups), func(g string) bool { return !group(acl.OpDescribe, g) })
		finish := func(got kmsg.Response) kmsg.Response {
			byID := map[string]kmsg.ConsumerGroupDescribeResponseGroup{}
			g := got.(*kmsg.ConsumerGroupDescribeResponse)
			for _, d := range g.Groups {
				if r.IncludeAuthorizedOperations {
					d.AuthorizedOperations = s.authorizedOps(req, acl.ResourceGroup, d.Group, groupOps)
				}
				if hidden := slices.ContainsFunc(d.Members, func(m kmsg.ConsumerGroupDescribeResponseGroupMember) bool {
					return !describable(m.Assignment) || !describable(m.TargetAssignment)
				}); hidden {
					d.ErrorCode, d.Members = kerr.TopicAuthorizationFailed.Code, nil
					d.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
				}
				byID[d.Group] = d
			}
			g.Groups = nil
			for _, id := range r.Groups {
				d, ok := byID[id]
				if !ok {
					d = kmsg.NewConsumerGroupDescribeResponseGroup()
					d.Group, d.ErrorCode = id, denied
				}
				g.Groups = append(g.Groups, d)
			}
			return g
		}
		if len(allowed.Groups) == 0 {
			return nil, nil, finish(respFor(req))
		}
		return &allowed, finish, nil
	case *kmsg.ListGroupsRequest:
		if s.authorizedCluster(req, acl.OpDescribe) {
			break
		}
		return req.Body, func(got kmsg.Response) kmsg.Response {
			g := got.(*kmsg.ListGroupsResponse)
			g.Groups = slices.DeleteFunc(g.Groups, func(l kmsg.ListGroupsResponseGroup) bool { return !group(acl.OpDescribe, l.Group) })
			return g
		}, nil
	case *kmsg.DeleteGroupsRequest:
		allowed := *r
		allowed.Groups = slices.DeleteFunc(slices.Clone(r.Groups), func(g string) bool { return !group(acl.OpDelete, g) })
		finish := func(got kmsg.Response) kmsg.Response {
			g := got.(*kmsg.DeleteGroupsResponse)
			for _, id := range r.Groups {
				if !group(acl.OpDelete, id) {
					d := kmsg.NewDeleteGroupsResponseGroup()
					d.Group, d.ErrorCode = id, denied
					g.Groups = append(g.Groups, d)
				}
			}
			return g
		}
		if len(allowed.Groups) == 0 {
			return nil, nil, finish(respFor(req))
		}
		return &allowed, finish, nil
	case *kmsg.OffsetDeleteRequest:
		if !group(acl.OpDelete, r.Group) {
			resp := respFor(req).(*kmsg.OffsetDeleteResponse)
			resp.ErrorCode = denied
			return nil, nil, resp
		}
		allowed := *r
		allowed.Topics = slices.DeleteFunc(slices.Clone(r.Topics), func(t kmsg.OffsetDeleteRequestTopic) bool { return !topic(acl.OpRead, t.Topic) })
		finish := func(got kmsg.Response) kmsg.Response {
			g := got.(*kmsg.OffsetDeleteResponse)
			for _, t := range r.Topics {
				if topic(acl.OpRead, t.Topic) {
					continue
				}
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
			return g
		}
		return &allowed, finish, nil
	}
	return req.Body, same, nil
}

// authorizeOffsetFetch: DESCRIBE on each group (v8+ names several; before,
// one, whose denial is the top-level error) and on each topic.
func (s *Server) authorizeOffsetFetch(req *Request, r *kmsg.OffsetFetchRequest) (kmsg.Request, func(kmsg.Response) kmsg.Response, kmsg.Response) {
	group := func(g string) bool { return s.authorized(req, acl.OpDescribe, acl.ResourceGroup, g) }
	topic := func(t string) bool { return s.authorized(req, acl.OpDescribe, acl.ResourceTopic, t) }
	denied := kerr.GroupAuthorizationFailed.Code
	if req.Version < 8 {
		if !group(r.Group) {
			resp := respFor(req).(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = denied
			return nil, nil, resp
		}
		allowed := *r
		if r.Topics != nil {
			allowed.Topics = slices.DeleteFunc(slices.Clone(r.Topics), func(t kmsg.OffsetFetchRequestTopic) bool { return !topic(t.Topic) })
		}
		return &allowed, func(got kmsg.Response) kmsg.Response {
			g := got.(*kmsg.OffsetFetchResponse)
			g.Topics = slices.DeleteFunc(g.Topics, func(t kmsg.OffsetFetchResponseTopic) bool {
				return !topic(t.Topic) || r.Topics != nil && !slices.ContainsFunc(allowed.Topics, func(a kmsg.OffsetFetchRequestTopic) bool { return a.Topic == t.Topic })
			})
			for _, t := range r.Topics {
				if topic(t.Topic) {
					continue
				}
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
			return g
		}, nil
	}
	allowed := *r
	allowed.Groups = nil
	for _, g := range r.Groups {
		if !group(g.Group) {
			continue
		}
		if g.Topics != nil {
			g.Topics = slices.DeleteFunc(slices.Clone(g.Topics), func(t kmsg.OffsetFetchRequestGroupTopic) bool { return !topic(t.Topic) })
		}
		allowed.Groups = append(allowed.Groups, g)
	}
	finish := func(got kmsg.Response) kmsg.Response {
		g := got.(*kmsg.OffsetFetchResponse)
		byID := map[string]kmsg.OffsetFetchResponseGroup{}
		asked := map[string][]kmsg.OffsetFetchRequestGroupTopic{} // nil: every topic
		for _, ag := range allowed.Groups {
			asked[ag.Group] = ag.Topics
		}
		for _, rg := range g.Groups {
			want := asked[rg.Group]
			rg.Topics = slices.DeleteFunc(rg.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
				return !topic(t.Topic) || want != nil && !slices.ContainsFunc(want, func(a kmsg.OffsetFetchRequestGroupTopic) bool { return a.Topic == t.Topic })
			})
			byID[rg.Group] = rg
		}
		g.Groups = nil
		for _, want := range r.Groups {
			rg, ok := byID[want.Group]
			if !ok || !group(want.Group) {
				rg = kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = want.Group, denied
				g.Groups = append(g.Groups, rg)
				continue
			}
			for _, t := range want.Topics {
				if topic(t.Topic) {
					continue
				}
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			g.Groups = append(g.Groups, rg)
		}
		return g
	}
	if len(allowed.Groups) == 0 {
		return nil, nil, finish(respFor(req))
	}
	return &allowed, finish, nil
}
