package kafka

// AlterPartition, versions 2-3, on controller listeners.
//
// A partition leader asks the active controller to change the ISR (and,
// after an unclean election, to mark the leader recovered); see
// controller/alter_partition.go for the checks and the answer. A failure
// of the whole request (STALE_BROKER_EPOCH, NOT_CONTROLLER from a
// controller that is not active) is the top-level error code.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleAlterPartition(req *Request) *Reply {
	var out *kmsg.AlterPartitionResponse
	var err error = kerr.ClusterAuthorizationFailed // CLUSTER_ACTION
	if s.authorizedCluster(req, acl.OpClusterAction) {
		out, err = s.deps.Controller.AlterPartition(req.Body.(*kmsg.AlterPartitionRequest))
	}
	if err != nil {
		resp := respFor(req).(*kmsg.AlterPartitionResponse)
		if resp.ErrorCode = errorCode(err); resp.ErrorCode == kerr.UnknownServerError.Code {
			s.lg.Error("alter partition", "err", err)
		}
		return done(resp)
	}
	out.SetVersion(req.Version)
	return done(out)
}
