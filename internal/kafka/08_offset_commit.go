package kafka

// OffsetCommit, versions 2-9.
//
// As in Kafka's handler, partitions of topics (or partitions) the
// metadata image does not hold answer UNKNOWN_TOPIC_OR_PARTITION, and the
// others go to the group coordinator (package group, offsets.go), which
// checks the group and member and writes one record per partition. A
// partition named more than once is committed once, at its last offset
// in the request (Kafka keys the commit by partition), and every mention
// gets that commit's answer: so a request makes at most one record per
// partition of the cluster, however often it repeats one. With nothing
// left to commit the answer comes at once, without the coordinator.
//
// With an authorizer the group needs READ (else GROUP_AUTHORIZATION_FAILED
// for every partition) and each topic READ (else TOPIC_AUTHORIZATION_FAILED
// for its partitions), as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

func (s *Server) handleOffsetCommit(req *Request) *Reply {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	img := s.deps.Metadata.Image()
	known := func(topic string, p int32) bool {
		t := img.Topics.Get(topic)
		return t != nil && t.Partitions[p] != nil
	}
	// The last mention of each known partition, in order of first mention.
	type tp struct {
		topic string
		p     int32
	}
	last := map[tp]kmsg.OffsetCommitRequestTopicPartition{}
	var order []tp
	topics := map[string]kmsg.OffsetCommitRequestTopic{}
	groupDenied := !s.authorized(req, acl.OpRead, acl.ResourceGroup, r.Group)
	denied := map[string]bool{}
	for _, t := range r.Topics {
		if !groupDenied && !s.authorized(req, acl.OpRead, acl.ResourceTopic, t.Topic) {
			denied[t.Topic] = true
		}
		for _, p := range t.Partitions {
			if groupDenied || denied[t.Topic] || !known(t.Topic, p.Partition) {
				continue
			}
			k := tp{t.Topic, p.Partition}
			if _, seen := last[k]; !seen {
				order = append(order, k)
			}
			last[k] = p
			if _, ok := topics[t.Topic]; !ok {
				topics[t.Topic] = t
			}
		}
	}
	fwd := *r
	fwd.Topics = nil
	at := map[string]int{} // index of a topic in fwd.Topics
	for _, k := range order {
		i, ok := at[k.topic]
		if !ok {
			ft := topics[k.topic]
			ft.Partitions = nil
			i = len(fwd.Topics)
			at[k.topic] = i
			fwd.Topics = append(fwd.Topics, ft)
		}
		fwd.Topics[i].Partitions = append(fwd.Topics[i].Partitions, last[k])
	}
	// answer gives every mention in the request its code: the
	// coordinator's (got nil: none asked) or UNKNOWN_TOPIC_OR_PARTITION.
	answer := func(got *kmsg.OffsetCommitResponse) kmsg.Response {
		codes := map[tp]int16{}
		resp := respFor(req).(*kmsg.OffsetCommitResponse)
		if got != nil {
			resp.ThrottleMillis = got.ThrottleMillis
			for _, t := range got.Topics {
				for _, p := range t.Partitions {
					codes[tp{t.Topic, p.Partition}] = p.ErrorCode
				}
			}
		}
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				switch {
				case groupDenied:
					rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
				case denied[t.Topic]:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case known(t.Topic, p.Partition):
					rp.ErrorCode = codes[tp{t.Topic, p.Partition}]
				default:
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
	s.deps.Groups.Handle(req.Ctx, req.ClientID, clientHost(req.RemoteAddr), &fwd,
		func(resp kmsg.Response) { rep.complete(answer(resp.(*kmsg.OffsetCommitResponse))) })
	return rep
}
