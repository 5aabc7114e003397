package kafka

// ListOffsets, versions 1-9.
//
// Timestamps -1 (latest: the high watermark, or the last stable offset for
// read_committed), -2 (earliest: the log start offset), -3 (the record with
// the largest timestamp, KIP-734), -4 (KIP-405: the same as -2, all data
// being local), -5 (KIP-405: offset -1, nothing being in remote storage,
// as Kafka answers with remote storage disabled); any other value finds
// the first record with a timestamp at or after it, or offset -1 when
// there is none. A partition listed twice gets INVALID_REQUEST. A
// follower (replica id >= 0) asking for the latest offset gets the
// leader's log end offset. An isolation level other than 0 and 1 (v2+) is
// INVALID_REQUEST for every partition, in the shape of Kafka's error
// response (where Kafka answers UNKNOWN_SERVER_ERROR, from an exception it
// does not map). With an authorizer, each topic needs DESCRIBE (else
// TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
	"weir/internal/partition"
)

func (s *Server) handleListOffsets(req *Request) *Reply {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := respFor(req).(*kmsg.ListOffsetsResponse)
	img := s.deps.Metadata.Image()
	seen := map[log.TopicPartition]int{}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			seen[log.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]++
		}
	}
	badIsolation := r.IsolationLevel != 0 && r.IsolationLevel != 1
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		denied := !s.authorized(req, acl.OpDescribe, acl.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.Timestamp, sp.Offset, sp.LeaderEpoch = rp.Partition, -1, -1, -1
			tp := log.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			p, err := s.leaderPartition(img, tp)
			switch {
			case badIsolation:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case seen[tp] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case err != nil:
				sp.ErrorCode = errorCode(err)
			case r.ReplicaID >= 0 && rp.Timestamp == partition.LatestTimestamp:
				// A follower past the leader's end asks where it ends.
				off, epoch, err := p.LogEndForReplica(rp.CurrentLeaderEpoch)
				sp.ErrorCode, sp.Offset, sp.LeaderEpoch = errorCode(err), off, epoch
			default:
				off, ts, epoch, found, err := p.ListOffset(rp.Timestamp, rp.CurrentLeaderEpoch, r.IsolationLevel)
				if err != nil {
					sp.ErrorCode = errorCode(err)
				} else if found {
					sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, ts, epoch
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
