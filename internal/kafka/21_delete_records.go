package kafka

// DeleteRecords, versions 0-2.
//
// Raises each partition's log start offset (its low watermark) to the
// requested offset; -1 means the high watermark. An offset above the high
// watermark is OFFSET_OUT_OF_RANGE. Segments wholly below the new start
// are deleted at once. With an authorizer each topic needs DELETE (else
// TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
)

func (s *Server) handleDeleteRecords(req *Request) *Reply {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := respFor(req).(*kmsg.DeleteRecordsResponse)
	img := s.deps.Metadata.Image()
	for _, rt := range r.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		denied := !s.authorized(req, acl.OpDelete, acl.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := s.leaderPartition(img, log.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			if err == nil {
				sp.LowWatermark, err = p.DeleteRecords(rp.Offset)
			}
			sp.ErrorCode = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
