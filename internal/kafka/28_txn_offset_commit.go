package kafka

// TxnOffsetCommit, versions 0-4 (v3+ carry the member, KIP-447).
//
// A transactional producer's offsets for a consumer group, counted once its
// transaction commits. As in Kafka's handler, partitions of topics (or
// partitions) the metadata image does not hold answer
// UNKNOWN_TOPIC_OR_PARTITION and the others go to the group coordinator
// (package group, txn_offsets.go), which checks the group and member,
// writes them as a transactional batch of the producer to
// __consumer_offsets, and answers once that batch is committed. The
// COMMIT or ABORT marker that WriteTxnMarkers writes to the group's
// __consumer_offsets partition ends them (group.Service.TxnMarker).
//
// Not as in Kafka: there are no ACLs, and the write is not first verified
// with the transaction coordinator (KIP-890's check that the group's
// partition is in the transaction); a stale producer epoch is still fenced
// by the log.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleTxnOffsetCommit(req *Request) *Reply {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	img := s.deps.Metadata.Image()
	known := func(topic string, p int32) bool {
		t := img.Topics[topic]
		return t != nil && t.Partitions[p] != nil
	}
	fwd := *r
	fwd.Topics = nil
	for _, t := range r.Topics {
		ft := t
		ft.Partitions = nil
		for _, p := range t.Partitions {
			if known(t.Topic, p.Partition) {
				ft.Partitions = append(ft.Partitions, p)
			}
		}
		if len(ft.Partitions) > 0 {
			fwd.Topics = append(fwd.Topics, ft)
		}
	}
	// answer merges the coordinator's codes (nil: none asked) into a
	// response in the request's order.
	answer := func(got *kmsg.TxnOffsetCommitResponse) kmsg.Response {
		codes := make(map[string]map[int32]int16)
		if got != nil {
			for _, t := range got.Topics {
				if codes[t.Topic] == nil {
					codes[t.Topic] = make(map[int32]int16)
				}
				for _, p := range t.Partitions {
					codes[t.Topic][p.Partition] = p.ErrorCode
				}
			}
		}
		resp := respFor(req).(*kmsg.TxnOffsetCommitResponse)
		if got != nil {
			resp.ThrottleMillis = got.ThrottleMillis
		}
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				if known(t.Topic, p.Partition) {
					rp.ErrorCode = codes[t.Topic][p.Partition]
				} else {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if len(fwd.Topics) == 0 {
		return done(answer(nil))
	}
	rep := newReply()
	s.deps.Groups.Handle(req.Ctx, req.ClientID, clientHost(req.RemoteAddr), &fwd, func(resp kmsg.Response) {
		rep.complete(answer(resp.(*kmsg.TxnOffsetCommitResponse)))
	})
	return rep
}
