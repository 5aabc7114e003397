package kafka

// UnregisterBroker, version 0 (kafka-cluster.sh unregister).
//
// Forwarded to the active controller, as Kafka's brokers do, which takes
// the broker out of every ISR and leadership and removes its registration
// (see controller/unregister.go); a broker that is not registered is
// BROKER_ID_NOT_REGISTERED. As in Kafka, the answer carries the error
// code only. It waits until this broker's metadata has the change.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unregisterTimeout bounds the wait for this broker's metadata to have a
// committed unregistration (the request carries no timeout).
const unregisterTimeout = 30 * time.Second

func (s *Server) handleUnregisterBroker(req *Request) *Reply {
	r := req.Body.(*kmsg.UnregisterBrokerRequest)
	resp := respFor(req).(*kmsg.UnregisterBrokerResponse)
	res, err := s.deps.Controller.UnregisterBroker(r.BrokerID)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		if resp.ErrorCode == kerr.UnknownServerError.Code {
			s.lg.Error("unregister broker", "broker", r.BrokerID, "err", err)
		}
		return done(resp)
	}
	if err := s.awaitMetadata(req.Ctx, res.Offset, unregisterTimeout); err != nil {
		resp.ErrorCode = kerr.RequestTimedOut.Code
	}
	return done(resp)
}
