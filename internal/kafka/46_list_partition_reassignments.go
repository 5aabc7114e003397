package kafka

// ListPartitionReassignments, version 0.
//
// Forwarded to the controller: the reassignments in progress, of every
// partition (topics null) or of the partitions named; unknown partitions
// and those not being reassigned are left out. A failure (NOT_CONTROLLER)
// is the top-level error.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
)

func (s *Server) handleListPartitionReassignments(req *Request) *Reply {
	r := req.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := respFor(req).(*kmsg.ListPartitionReassignmentsResponse)
	var list []controller.Reassignment
	var err error = kerr.ClusterAuthorizationFailed // DESCRIBE on the cluster
	if s.authorizedCluster(req, acl.OpDescribe) {
		list, err = s.deps.Controller.ListPartitionReassignments(r.Topics)
	}
	if err != nil {
		if resp.ErrorCode = errorCode(err); resp.ErrorCode == kerr.UnknownServerError.Code {
			s.lg.Error("list partition reassignments", "err", err)
		}
		resp.ErrorMessage = errorMessage(err)
		return done(resp)
	}
	for _, ra := range list {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != ra.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = ra.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = ra.Partition, ra.Replicas, ra.Adding, ra.Removing
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return done(resp)
}
