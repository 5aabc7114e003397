package kafka

// DescribeTopicPartitions, version 0 (KIP-966).
//
// The topics asked for (every topic when none is named), by name order,
// with their partitions as Metadata gives them plus the eligible leader
// replicas and the last known ELR (empty lists when the feature is off, as
// Kafka answers). One response holds at most ResponsePartitionLimit
// partitions, capped at Kafka's max.request.partition.size.limit default
// (2000); NextCursor then names the first partition left out, and a
// request's Cursor resumes there. Unknown topics asked for by name are
// answered with UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an
// invalid name); with no names, topics are only those that exist. A cursor
// topic missing from the named topics, or a negative cursor partition, is
// INVALID_REQUEST for every topic. With an authorizer, topics the
// principal may not DESCRIBE are left out of a listing of every topic and
// TOPIC_AUTHORIZATION_FAILED when named, as in Kafka.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
	"weir/internal/log"
)

// maxResponsePartitions is Kafka's max.request.partition.size.limit
// default.
const maxResponsePartitions = 2000

func (s *Server) handleDescribeTopicPartitions(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := respFor(req).(*kmsg.DescribeTopicPartitionsResponse)
	img := s.deps.Metadata.Image()

	cursorTopic := ""
	if r.Cursor != nil {
		cursorTopic = r.Cursor.Topic
	}
	all := len(r.Topics) == 0
	seen := map[string]bool{}
	var names []string
	add := func(name string) {
		if name >= cursorTopic && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if all {
		for name := range img.Topics.All() {
			add(name)
		}
	} else {
		for _, t := range r.Topics {
			add(t.Topic)
		}
	}
	if r.Cursor != nil && ((!all && !seen[cursorTopic]) || r.Cursor.Partition < 0) {
		for _, t := range r.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			name := t.Topic
			rt.Topic, rt.ErrorCode = &name, kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, rt)
		}
		return done(resp)
	}
	sort.Strings(names)

	offline := s.offlineHere()
	remaining := int(max(min(r.ResponsePartitionLimit, maxResponsePartitions), 1))
	for _, name := range names {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.IsInternal = &name, internalTopics[name]
		t := img.Topics.Get(name)
		if !s.authorized(req, acl.OpDescribe, acl.ResourceTopic, name) {
			if !all {
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		if t == nil {
			if all {
				continue
			}
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if controller.ValidateTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID, rt.AuthorizedOperations = t.ID, s.authorizedOps(req, acl.ResourceTopic, name, topicAllOperations)
		start := int32(0)
		n := int32(len(t.Partitions))
		if name == cursorTopic {
			start = min(r.Cursor.Partition, n)
		}
		end := min(n, start+int32(remaining))
		for id := start; id < end; id++ {
			p := t.Partitions[id]
			if p == nil {
				continue
			}
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition, rp.LeaderID, rp.LeaderEpoch = p.ID, p.Leader, p.LeaderEpoch
			rp.Replicas, rp.ISR = p.Replicas, p.ISR
			// Never null: Kafka answers the image's (possibly empty) lists.
			rp.EligibleLeaderReplicas = append([]int32{}, p.ELR...)
			rp.LastKnownELR = append([]int32{}, p.LastKnownELR...)
			here := offline[log.TopicPartition{Topic: name, Partition: id}]
			for _, r := range p.Replicas {
				if b := img.Brokers[r]; b == nil || b.Fenced || r == s.cfg.Broker.NodeID && here {
					rp.OfflineReplicas = append(rp.OfflineReplicas, r)
				}
			}
			if here && p.Leader == s.cfg.Broker.NodeID {
				rp.LeaderID = -1 // as in Metadata (topicMetadata)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		if end < n {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: end}
			break
		}
		remaining -= int(end - start)
	}
	return done(resp)
}
