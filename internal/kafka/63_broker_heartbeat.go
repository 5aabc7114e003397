package kafka

// BrokerHeartbeat, versions 0-2, on controller listeners.
//
// Every broker.heartbeat.interval.ms a broker reports its metadata offset;
// the answer says whether it caught up, is fenced, or should shut down
// (controller/brokers.go). A stale broker epoch is STALE_BROKER_EPOCH; a
// controller that is not active answers NOT_CONTROLLER. A connection on
// which a heartbeat was accepted is the broker's: if the broker closes or
// resets it, Deps.BrokerConnLost hears of it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleBrokerHeartbeat(req *Request) *Reply {
	r := req.Body.(*kmsg.BrokerHeartbeatRequest)
	var out *kmsg.BrokerHeartbeatResponse
	var err error = kerr.ClusterAuthorizationFailed // CLUSTER_ACTION
	if s.authorizedCluster(req, acl.OpClusterAction) {
		out, err = s.deps.Controller.BrokerHeartbeat(r, s.deps.Now)
	}
	if err != nil {
		resp := respFor(req).(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode, resp.IsFenced = errorCode(err), true
		return done(resp)
	}
	if s.deps.BrokerConnLost != nil && req.conn != nil {
		req.conn.heartbeats.Store(&brokerPeer{id: r.BrokerID, epoch: r.BrokerEpoch})
	}
	out.SetVersion(req.Version)
	return done(out)
}
