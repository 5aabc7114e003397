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
)

func (s *Server) handleAllocateProducerIDs(req *Request) *Reply {
	r := req.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := respFor(req).(*kmsg.AllocateProducerIDsResponse)
	var start int64
	var n int32
	var err error = kerr.ClusterAuthorizationFailed // CLUSTER_ACTION
	if s.authorizedCluster(req, acl.OpClusterAction) {
		start, n, err = s.deps.Controller.AllocateProducerIDs(r.BrokerID, r.BrokerEpoch)
	}
	resp.ErrorCode, resp.ProducerIDStart, resp.ProducerIDLen = errorCode(err), start, n
	return done(resp)
}
