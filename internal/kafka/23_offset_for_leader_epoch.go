package kafka

// OffsetForLeaderEpoch, versions 0-4.
//
// For each partition, the largest leader epoch at or below the requested
// one and the offset where the next epoch starts (the log end offset for
// the current epoch): how a follower or a KIP-320 consumer finds where its
// log diverged. Unknown epochs answer epoch -1, offset -1. A stale or
// future current leader epoch gets FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
)

func (s *Server) handleOffsetForLeaderEpoch(req *Request) *Reply {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := respFor(req).(*kmsg.OffsetForLeaderEpochResponse)
	img := s.deps.Metadata.Image()
	clusterAction := s.authorizedCluster(req, acl.OpClusterAction)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		denied := !clusterAction && !s.authorized(req, acl.OpDescribe, acl.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := s.leaderPartition(img, log.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			if err == nil {
				sp.LeaderEpoch, sp.EndOffset, err = p.EndOffsetForEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
			}
			sp.ErrorCode = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
