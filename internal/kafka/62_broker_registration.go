package kafka

// BrokerRegistration, versions 0-4, on controller listeners.
//
// A broker registers with the active controller at start-up; see
// controller/brokers.go for the rules. A controller that is not active
// answers NOT_CONTROLLER and the broker looks for the active one.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleBrokerRegistration(req *Request) *Reply {
	r := req.Body.(*kmsg.BrokerRegistrationRequest)
	resp := respFor(req).(*kmsg.BrokerRegistrationResponse)
	var epoch int64
	var err error = kerr.ClusterAuthorizationFailed // CLUSTER_ACTION
	if s.authorizedCluster(req, acl.OpClusterAction) {
		epoch, err = s.deps.Controller.RegisterBroker(r, s.deps.Now())
	}
	resp.ErrorCode, resp.BrokerEpoch = errorCode(err), epoch
	if err != nil {
		resp.BrokerEpoch = -1
	}
	return done(resp)
}
