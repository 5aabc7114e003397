package kafka

// DescribeQuorum, versions 0-2.
//
// The state of the metadata quorum, the Raft log __cluster_metadata
// partition 0, as its leader sees it: the leader's id, its epoch (the Raft
// term), the high watermark, and each voter's replication state (log end
// offset; from v1 the last fetch and last caught-up times in ms, -1 when
// unknown, the leader's own being now), and the observers: brokers that
// are not voters, as the leader saw them fetch the log. v2 adds each voter's directory id (all zero: the
// voters are static, from controller.quorum.voters, which names no
// directory) and Nodes, each voter's endpoint on the first of
// controller.listener.names, taken from controller.quorum.voters.
//
// As in Kafka, a request that does not name exactly __cluster_metadata
// partition 0 gets UNKNOWN_TOPIC_OR_PARTITION for each partition it names,
// and a node that is not the leader answers NOT_LEADER_OR_FOLLOWER for
// __cluster_metadata-0. Kafka leaves the leader id and epoch of that answer
// at zero; weir fills in the leader it knows (-1 when none) and the term.
//
// The API is served only where the server has a quorum (Deps.Quorum).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/metadata"
	"weir/internal/quorum"
)

func (s *Server) handleDescribeQuorum(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeQuorumRequest)
	resp := respFor(req).(*kmsg.DescribeQuorumResponse)
	if !s.authorizedCluster(req, acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	if len(r.Topics) != 1 || r.Topics[0].Topic != metadata.LogTopic ||
		len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != 0 {
		for _, rt := range r.Topics {
			t := kmsg.NewDescribeQuorumResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewDescribeQuorumResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, kerr.UnknownTopicOrPartition.Code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return done(resp)
	}

	if s.deps.Quorum == nil {
		// A broker-only node, whose forwarding to the leader failed.
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return done(resp)
	}
	st := s.deps.Quorum.Status()
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch = st.Leader, int32(st.Term)
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = metadata.LogTopic
	if st.Leader != s.cfg.Broker.NodeID {
		p.ErrorCode = kerr.NotLeaderForPartition.Code
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return done(resp)
	}
	p.HighWatermark = st.HighWatermark
	p.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	p.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	now := s.deps.Now().UnixMilli()
	for _, v := range st.Voters {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset = v.NodeID, v.LogEndOffset
		rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = unixMilliOr(v.LastFetch), unixMilliOr(v.LastCaughtUp)
		if v.NodeID == st.Leader {
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = now, now
		}
		p.CurrentVoters = append(p.CurrentVoters, rs)
	}
	for _, o := range st.Observers {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset = o.NodeID, o.LogEndOffset
		rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = unixMilliOr(o.LastFetch), unixMilliOr(o.LastCaughtUp)
		p.Observers = append(p.Observers, rs)
	}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	if req.Version >= 2 {
		resp.Nodes = s.quorumNodes(st.Voters)
	}
	return done(resp)
}

// quorumNodes lists each voter's endpoint from controller.quorum.voters,
// named for the first controller listener.
func (s *Server) quorumNodes(voters []quorum.VoterStatus) []kmsg.DescribeQuorumResponseNode {
	nodes := []kmsg.DescribeQuorumResponseNode{}
	for _, v := range voters {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.NodeID
		n.Listeners = []kmsg.DescribeQuorumResponseNodeListener{}
		for _, cv := range s.cfg.Broker.QuorumVoters {
			if cv.ID == v.NodeID && len(s.cfg.Broker.ControllerListenerNames) > 0 {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = s.cfg.Broker.ControllerListenerNames[0], cv.Host, uint16(cv.Port)
				n.Listeners = append(n.Listeners, l)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// unixMilliOr is t in ms since the epoch, or -1 for the zero time (unknown).
func unixMilliOr(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}
