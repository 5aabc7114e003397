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
//
// With an authorizer, a topic needs CREATE on the cluster or on the topic
// (else TOPIC_AUTHORIZATION_FAILED; the controller never sees it), and
// its configs are returned only with DESCRIBE_CONFIGS on it (else the
// topic's config error is TOPIC_AUTHORIZATION_FAILED), as in Kafka.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/config"
	"weir/internal/controller"
)

func (s *Server) handleCreateTopics(req *Request) *Reply {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := respFor(req).(*kmsg.CreateTopicsResponse)
	out, err := s.createAuthorizedTopics(req, r)
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
		if !s.authorized(req, acl.OpDescribeConfigs, acl.ResourceTopic, t.Topic) {
			rt.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
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

// createAuthorizedTopics has the controller create the topics of r the
// principal may create (CREATE on the cluster, or on the topic); the
// others fail with TOPIC_AUTHORIZATION_FAILED. Results are by index in r.
func (s *Server) createAuthorizedTopics(req *Request, r *kmsg.CreateTopicsRequest) (controller.CreateTopicsResult, error) {
	if s.cfg.Authorizer == nil || req.Principal == "" || s.authorizedCluster(req, acl.OpCreate) {
		return s.deps.Controller.CreateTopics(r)
	}
	sub := *r
	sub.Topics = nil
	var allowed []int
	for i, t := range r.Topics {
		if s.authorized(req, acl.OpCreate, acl.ResourceTopic, t.Topic) {
			sub.Topics = append(sub.Topics, t)
			allowed = append(allowed, i)
		}
	}
	out := controller.CreateTopicsResult{Committed: controller.Committed{Offset: -1},
		Topics: make([]controller.CreatedTopic, len(r.Topics)), Errs: make([]error, len(r.Topics))}
	for i := range out.Errs {
		out.Errs[i] = &codedError{kerr.TopicAuthorizationFailed, "Authorization failed."}
	}
	if len(allowed) > 0 {
		got, err := s.deps.Controller.CreateTopics(&sub)
		if err != nil {
			return controller.CreateTopicsResult{}, err
		}
		for j, i := range allowed {
			out.Topics[i], out.Errs[i] = got.Topics[j], got.Errs[j]
		}
		out.Committed = got.Committed
	}
	return out, nil
}
