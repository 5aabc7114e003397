package kafka

// DescribeProducers, version 0.
//
// The producers a partition's replica here keeps state for, as any replica
// answers in Kafka: producer id and epoch, last sequence, last timestamp,
// the coordinator epoch of its last transaction marker, and the first
// offset of its open transaction (-1 if none). A partition the metadata
// image does not know answers UNKNOWN_TOPIC_OR_PARTITION, one not hosted
// here NOT_LEADER_OR_FOLLOWER.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
)

func (s *Server) handleDescribeProducers(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := respFor(req).(*kmsg.DescribeProducersResponse)
	img := s.deps.Metadata.Image()
	for _, rt := range r.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		denied := !s.authorized(req, acl.OpRead, acl.ResourceTopic, rt.Topic)
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = part
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			t := img.Topics.Get(rt.Topic)
			tp := log.TopicPartition{Topic: rt.Topic, Partition: part}
			p := s.deps.Partitions.Get(tp)
			switch {
			case t == nil || t.Partitions[part] == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p == nil && s.deps.Partitions.Offline(tp) != nil:
				sp.ErrorCode = kerr.KafkaStorageError.Code
			case p == nil:
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				for _, pi := range p.ActiveProducers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.Epoch), pi.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.LastTimestamp, pi.CoordinatorEpoch, pi.TxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
