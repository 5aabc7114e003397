package kafka

// AssignReplicasToDirs, version 0, on controller listeners.
//
// A broker whose log of a partition cannot be opened or created assigns
// the replica to the LOST directory; the controller takes it out of the
// ISR and the leadership (controller/offline_replicas.go). A failure of
// the whole request (STALE_BROKER_EPOCH, NOT_CONTROLLER from a controller
// that is not active) is the top-level error code.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleAssignReplicasToDirs(req *Request) *Reply {
	if !s.authorizedCluster(req, acl.OpClusterAction) {
		resp := respFor(req).(*kmsg.AssignReplicasToDirsResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	out, err := s.deps.Controller.AssignReplicasToDirs(req.Body.(*kmsg.AssignReplicasToDirsRequest))
	if err != nil {
		resp := respFor(req).(*kmsg.AssignReplicasToDirsResponse)
		if resp.ErrorCode = errorCode(err); resp.ErrorCode == kerr.UnknownServerError.Code {
			s.lg.Error("assign replicas to dirs", "err", err)
		}
		return done(resp)
	}
	out.SetVersion(req.Version)
	return done(out)
}
