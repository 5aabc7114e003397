package kafka

// AlterPartitionReassignments, version 0.
//
// Forwarded to the controller, which starts, replaces or (replicas null)
// cancels each partition's reassignment; see controller/reassignment.go.
// A failure of the whole request (NOT_CONTROLLER) is the top-level error.
// The answer waits until this broker's metadata has the change. Past 1 MiB
// of error messages, partitions get their codes only (maxMessageBytes).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
)

func (s *Server) handleAlterPartitionReassignments(req *Request) *Reply {
	r := req.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := respFor(req).(*kmsg.AlterPartitionAssignmentsResponse)
	var results []controller.TopicResult
	var last int64
	var err error = kerr.ClusterAuthorizationFailed // ALTER on the cluster
	if s.authorizedCluster(req, acl.OpAlter) {
		out, e := s.deps.Controller.AlterPartitionReassignments(r)
		results, last, err = out.Topics, out.Offset, e
	}
	if err != nil {
		if resp.ErrorCode = errorCode(err); resp.ErrorCode == kerr.UnknownServerError.Code {
			s.lg.Error("alter partition reassignments", "err", err)
		}
		resp.ErrorMessage = errorMessage(err)
		return done(resp)
	}
	if err := s.awaitMetadata(req.Ctx, last, time.Duration(r.TimeoutMillis)*time.Millisecond); err != nil {
		timedOut(results)
	}
	var msgs messageBudget
	for _, tr := range results {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = tr.Topic
		for _, pr := range tr.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = pr.Partition, errorCode(pr.Err), msgs.message(pr.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return done(resp)
}
