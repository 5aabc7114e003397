package kafka

// AllocateProducerIds, version 0, on controller listeners.
//
// A broker asks the active controller for a block of producer ids
// (ProducerIdsRecord), so ids are unique across brokers. A stale broker
// epoch is STALE_BROKER_EPOCH; a controller that is not active answers
// NOT_CONTROLLER.

import "github.com/twmb/franz-go/pkg/kmsg"

func (s *Server) handleAllocateProducerIDs(req *Request) *Reply {
	r := req.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := respFor(req).(*kmsg.AllocateProducerIDsResponse)
	block, err := s.deps.Controller.AllocateProducerIDs(r.BrokerID, r.BrokerEpoch)
	resp.ErrorCode, resp.ProducerIDStart, resp.ProducerIDLen = errorCode(err), block.First, block.Size
	return done(resp)
}
