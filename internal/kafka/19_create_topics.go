package kafka

// CreateTopics, versions 0-7.
//
// Forwarded to the controller, which validates each topic independently
// (name, partitions, replication factor or manual assignment, configs)
// and commits the records. The answer waits, up to the request timeout,
// until this broker's metadata includes the new topics. From v5 each
// created topic is described: partitions, replication factor and its
// configs; validate_only answers the same without creating anything.
// More than 10000 partitions over the request is POLICY_VIOLATION for
// every topic, and so is a request whose records would exceed 10000
// (controller/limits.go), validating only or not. The metadata log's
// topic, __cluster_metadata, is INVALID_REQUEST ("Creation of internal
// topic __cluster_metadata is prohibited."), however it is asked for
// (forwarded, auto-created); and no partition may take the Raft log's
// directory (log.Manager refuses it).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
)

func (s *Server) handleCreateTopics(req *Request) *Reply {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := respFor(req).(*kmsg.CreateTopicsResponse)
	out, err := s.deps.Controller.CreateTopics(r)
	if err != nil {
		s.logUnexpected("create topics", err)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, errorCode(err), errorMessage(err)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, rt)
		}
		return done(resp)
	}
	errs := out.Errs
	if err := s.awaitMetadata(req.Ctx, out.Offset, time.Duration(r.TimeoutMillis)*time.Millisecond); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = kerr.RequestTimedOut
			}
		}
	}
	img := s.deps.Metadata.Image()
	for i, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		if e := errs[i]; e != nil {
			rt.ErrorCode, rt.ErrorMessage = errorCode(e), errorMessage(e)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		res := out.Topics[i]
		rt.TopicID, rt.NumPartitions, rt.ReplicationFactor = res.ID, res.NumPartitions, res.ReplicationFactor
		entries := config.DescribeTopic(res.Configs, img.BrokerConfig(itoa(s.cfg.Broker.NodeID)), img.BrokerConfig(""), s.cfg.Broker)
		for _, e := range entries {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.IsSensitive
			rt.Configs = append(rt.Configs, c)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return done(resp)
}
