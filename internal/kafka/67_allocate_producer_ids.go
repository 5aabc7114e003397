package kafka

// AllocateProducerIds, version 0, on controller listeners.
//
// A broker asks the active controller for a block of producer ids
// (ProducerIdsRecord), so ids are unique across brokers. A stale broker
// epoch is STALE_BROKER_EPOCH; a controller that is not active answers
// NOT_CONTROLLER.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
)

func (s *Server) handleAllocateProducerIDs(req *Request) *Reply {
	r := req.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := respFor(req).(*kmsg.AllocateProducerIDsResponse)
	var blk controller.ProducerIDBlock
	var err error = kerr.ClusterAuthorizationFailed // CLUSTER_ACTION
	if s.authorizedCluster(req, acl.OpClusterAction) {
		blk, err = s.deps.Controller.AllocateProducerIDs(r.BrokerID, r.BrokerEpoch)
	}
	resp.ErrorCode, resp.ProducerIDStart, resp.ProducerIDLen = errorCode(err), blk.First, blk.Size
	return done(resp)
}
