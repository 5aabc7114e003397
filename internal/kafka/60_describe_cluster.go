package kafka

// DescribeCluster, versions 0-1.
//
// The cluster id, a controller id (this broker, as KRaft brokers answer),
// and the unfenced brokers' endpoints on the request's listener. Asking a
// broker listener for controller endpoints (v1, endpoint type 2) is
// UNSUPPORTED_ENDPOINT_TYPE, as in Kafka. It needs no authorization; the
// cluster's authorized operations, when asked for, are the principal's.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleDescribeCluster(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := respFor(req).(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 && r.EndpointType != 1 {
		resp.EndpointType = r.EndpointType
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return done(resp)
	}
	img := s.deps.Metadata.Image()
	resp.ClusterID, resp.ControllerID = s.cfg.ClusterID, s.cfg.Broker.NodeID
	resp.ClusterAuthorizedOperations = operationsOmitted
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.authorizedOps(req, acl.ResourceCluster, acl.ClusterName, clusterAllOperations)
	}
	for _, b := range s.brokers(img, req.Listener) {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack = b.NodeID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, db)
	}
	return done(resp)
}
