package group

// DescribeGroups (versions 0-6), ListGroups (0-5) and DeleteGroups (0-3).
//
// DescribeGroups: a group this broker does not serve gets the coordinator
// error. An unknown group, or a consumer group (KIP-848), is state "Dead"
// with no error, or, from v6 (KIP-1043), GROUP_ID_NOT_FOUND. Members are
// listed in join order with their client id, host, instance id and
// assignment; their metadata, and the protocol name, only when the group is
// Stable, as Kafka does. With
// include_authorized_operations the bit set of the operations allowed on a
// group with no authorizer (READ, DELETE, DESCRIBE) is returned. A group
// named again is described once (clients key the answer by group): its
// members' ids, hosts and metadata could otherwise be asked for once per
// few bytes of request.
//
// ListGroups: the groups of every partition led here, sorted by id, filtered
// by state (v4+) and type (v5+), both case-insensitive; groups are of type
// "classic" or "consumer" (KIP-848, with protocol type "consumer" and the
// states Empty, Assigning, Reconciling, Stable). While any partition loads,
// the answer is COORDINATOR_LOAD_IN_PROGRESS with no groups, as Kafka 4
// answers.
//
// DeleteGroups: per group, the coordinator error, GROUP_ID_NOT_FOUND, or
// NON_EMPTY_GROUP unless the group is Empty (a consumer group: has no
// members). A deleted group's offsets and metadata are tombstoned and the
// answer waits until that persists. The empty group id is a valid id here,
// as in Kafka.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOperations is READ (3), DELETE (6) and DESCRIBE (8): what Kafka
// reports for a group when no authorizer is configured.
const groupOperations = 1<<3 | 1<<6 | 1<<8

// distinct is ids in order of first mention, each once: a describe
// answers a group named twice once.
func distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func (gm *groupManager) describeGroups(req Request, r *kmsg.DescribeGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Version = r.Version
	for _, id := range distinct(r.Groups) {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		if r.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = groupOperations
		}
		if _, code := gm.route(id); code != 0 {
			dg.ErrorCode = code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		g := gm.byID[id]
		if g == nil || g.consumer != nil {
			dg.State = Dead.String()
			if r.Version >= 6 {
				dg.ErrorCode = errGroupIDNotFound
				msg := fmt.Sprintf("Group %s not found.", id)
				if g != nil {
					msg = fmt.Sprintf("Group %s is not a classic group.", id)
				}
				dg.ErrorMessage = &msg
			}
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg.State = g.state.String()
		dg.ProtocolType = g.protocolType
		stable := g.state == Stable
		if stable {
			dg.Protocol = g.protocol
		}
		for _, m := range g.members {
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID, dm.InstanceID = m.id, m.instanceID
			dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
			dm.MemberAssignment = nonNil(m.assignment)
			dm.ProtocolMetadata = []byte{}
			if stable {
				dm.ProtocolMetadata = nonNil(m.metadata(g.protocol))
			}
			dg.Members = append(dg.Members, dm)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	gm.out.Respond(req.Token, resp)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (gm *groupManager) listGroups(req Request, r *kmsg.ListGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Version = r.Version
	defer gm.out.Respond(req.Token, resp)
	for _, ps := range gm.parts {
		if ps.loading {
			resp.ErrorCode = errLoadInProgress
			return
		}
	}
	states := lowerSet(r.StatesFilter)
	types := lowerSet(r.TypesFilter)
	for _, g := range gm.sortedGroups(nil) {
		groupType, protocolType, state := g.listing()
		if len(states) > 0 && !states[strings.ToLower(state)] || len(types) > 0 && !types[groupType] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType = g.id, protocolType
		lg.GroupState, lg.GroupType = state, groupType
		resp.Groups = append(resp.Groups, lg)
	}
}

func lowerSet(ss []string) map[string]bool {
	set := make(map[string]bool, len(ss))
	for _, s := range ss {
		set[strings.ToLower(s)] = true
	}
	return set
}

func (c *Coordinator) deleteGroups(req Request, r *kmsg.DeleteGroupsRequest) {
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Version = r.Version
	for _, id := range r.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		resp.Groups = append(resp.Groups, dg)
	}
	byPartition := make(map[int32][]Record)
	members := make(map[int32][]int) // partition -> indexes in resp.Groups
	var parts []int32
	for i, id := range r.Groups {
		p, code := c.route(id)
		if code == 0 {
			switch g := c.groups.byID[id]; {
			case g == nil:
				code = errGroupIDNotFound
			case !g.isEmpty():
				code = errNonEmptyGroup
			default:
				if members[p] == nil {
					parts = append(parts, p)
				}
				byPartition[p] = append(byPartition[p], c.deleteGroup(g)...)
				members[p] = append(members[p], i)
			}
		}
		resp.Groups[i].ErrorCode = code
	}
	if len(parts) == 0 {
		c.out.Respond(req.Token, resp)
		return
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	waiting := len(parts)
	for _, p := range parts {
		idx := members[p]
		c.write(p, byPartition[p], func(code int16) {
			for _, i := range idx {
				resp.Groups[i].ErrorCode = groupErrorCode(code)
			}
			if waiting--; waiting == 0 {
				c.out.Respond(req.Token, resp)
			}
		})
	}
}
