package kafka

// FindCoordinator, versions 0-6.
//
// Served so clients can discover coordinators (and because librdkafka only
// enables lz4 when FindCoordinator v0 is advertised). weir has no group or
// transaction coordinator yet, so every key gets COORDINATOR_NOT_AVAILABLE,
// the retriable error Kafka returns while a coordinator is loading; an
// unknown key type is INVALID_REQUEST.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleFindCoordinator(req *Request) *Reply {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := respFor(req).(*kmsg.FindCoordinatorResponse)
	code := kerr.CoordinatorNotAvailable
	if r.CoordinatorType != 0 && r.CoordinatorType != 1 {
		code = kerr.InvalidRequest
	}
	msg := code.Message
	if req.Version < 4 {
		resp.ErrorCode, resp.NodeID, resp.Port = code.Code, -1, -1
		resp.ErrorMessage = &msg
		return done(resp)
	}
	for _, key := range r.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port, c.ErrorCode, c.ErrorMessage = key, -1, -1, code.Code, &msg
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return done(resp)
}
