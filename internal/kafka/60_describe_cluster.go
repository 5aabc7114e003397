package kafka

// DescribeCluster, versions 0-2.
//
// The cluster id, a controller id (this broker, as KRaft brokers answer),
// and the unfenced brokers' endpoints on the request's listener; from v2,
// with IncludeFencedBrokers, the fenced ones too, marked IsFenced
// (KIP-1073). Asking a
// broker listener for controller endpoints (v1, endpoint type 2) is
// UNSUPPORTED_ENDPOINT_TYPE, as in Kafka; a controller listener answers
// it with the voters of controller.quorum.voters and the quorum's leader
// as the controller id, as a KRaft controller does for an admin client
// bootstrapped with --bootstrap-controller. It needs no authorization; the
// cluster's authorized operations, when asked for, are the principal's.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleDescribeCluster(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := respFor(req).(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 && r.EndpointType == 2 && s.deps.Partitions == nil {
		return done(s.describeControllers(req, resp))
	}
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
	withFenced := req.Version >= 2 && r.IncludeFencedBrokers
	for _, b := range img.Brokers {
		ep, ok := b.Endpoint(req.Listener)
		if !ok || (b.Fenced && !withFenced) {
			continue
		}
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack, db.IsFenced = b.ID, ep.Host, int32(ep.Port), b.Rack, b.Fenced
		resp.Brokers = append(resp.Brokers, db)
	}
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	return done(resp)
}

// describeControllers answers DescribeCluster for controller endpoints on
// a controller listener: the voters, and the quorum leader as the
// controller id (-1 while there is none).
func (s *Server) describeControllers(req *Request, resp *kmsg.DescribeClusterResponse) *kmsg.DescribeClusterResponse {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp.EndpointType, resp.ClusterID, resp.ControllerID = 2, s.cfg.ClusterID, -1
	if s.deps.Quorum != nil {
		resp.ControllerID = s.deps.Quorum.Status().Leader
	}
	resp.ClusterAuthorizedOperations = operationsOmitted
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.authorizedOps(req, acl.ResourceCluster, acl.ClusterName, clusterAllOperations)
	}
	for _, v := range s.cfg.Broker.QuorumVoters {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port = v.ID, v.Host, int32(v.Port)
		resp.Brokers = append(resp.Brokers, db)
	}
	return resp
}
