package kafka

// FindCoordinator, versions 0-6.
//
// A group's coordinator is the leader of its __consumer_offsets partition
// (hash of the group id, as Kafka computes it). The topic is created on
// the first lookup, with offsets.topic.num.partitions partitions,
// offsets.topic.replication.factor replicas, compaction, and
// offsets.topic.segment.bytes; Kafka answers COORDINATOR_NOT_AVAILABLE
// while it creates the topic in the background, weir creates it before
// answering. A partition without a leader, or a leader without this
// request's listener, is COORDINATOR_NOT_AVAILABLE. A transactional id's
// coordinator (key type 1) is the leader of its __transaction_state
// partition, created the same way on first lookup with
// transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas, min.insync.replicas
// transaction.state.log.min.isr, compaction, no compression, no unclean
// election and transaction.state.log.segment.bytes, as Kafka creates it.
// An unknown key type is INVALID_REQUEST. v4+ looks up many keys at once.
// With an authorizer a group key needs DESCRIBE on the group (else
// GROUP_AUTHORIZATION_FAILED), a transactional id DESCRIBE on it (else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as in Kafka.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/metadata"
)

// OffsetsTopic is the internal topic holding group state and offsets.
const OffsetsTopic = "__consumer_offsets"

// coordinator is one key's answer.
type coordinator struct {
	node int32
	host string
	port int32
	code *kerr.Error
	msg  string
}

func (s *Server) handleFindCoordinator(req *Request) *Reply {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := respFor(req).(*kmsg.FindCoordinatorResponse)
	keys := r.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	var answers []coordinator
	for _, key := range keys {
		answers = append(answers, s.findCoordinator(req, r.CoordinatorType, key))
	}
	if req.Version < 4 {
		a := answers[0]
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = errCode(a.code), a.node, a.host, a.port
		if a.code != nil {
			resp.ErrorMessage = &answers[0].msg
		}
		return done(resp)
	}
	for i, key := range keys {
		a := answers[i]
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Host, c.Port, c.ErrorCode = key, a.node, a.host, a.port, errCode(a.code)
		if a.code != nil {
			c.ErrorMessage = &answers[i].msg
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return done(resp)
}

func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

func (s *Server) findCoordinator(req *Request, keyType int8, key string) coordinator {
	fail := func(code *kerr.Error, format string, args ...any) coordinator {
		return coordinator{node: -1, port: -1, code: code, msg: fmt.Sprintf(format, args...)}
	}
	var t *metadata.Topic
	var err error
	var partition int32
	switch keyType {
	case 0:
		if !s.authorized(req, acl.OpDescribe, acl.ResourceGroup, key) {
			return fail(kerr.GroupAuthorizationFailed, "%s", kerr.GroupAuthorizationFailed.Message)
		}
		t, err = s.offsetsTopic(req.Ctx)
		partition = s.deps.Groups.PartitionFor(key)
	case 1:
		if !s.authorized(req, acl.OpDescribe, acl.ResourceTransactionalID, key) {
			return fail(kerr.TransactionalIDAuthorizationFailed, "%s", kerr.TransactionalIDAuthorizationFailed.Message)
		}
		if s.deps.Txns == nil {
			return fail(kerr.CoordinatorNotAvailable, "The transaction coordinator is not available.")
		}
		t, err = s.transactionStateTopic(req.Ctx)
		partition = s.deps.Txns.PartitionFor(key)
	default:
		return fail(kerr.InvalidRequest, "Unknown coordinator key type %d.", keyType)
	}
	if err != nil {
		s.lg.Warn("creating an internal topic failed", "err", err)
		return fail(kerr.CoordinatorNotAvailable, "The coordinator is not available: %v", err)
	}
	p := t.Partitions[partition]
	if p == nil || p.Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	b := s.deps.Metadata.Image().Brokers[p.Leader]
	if b == nil || b.Fenced {
		return fail(kerr.CoordinatorNotAvailable, "The coordinator is not available.")
	}
	ep, ok := b.Endpoint(req.Listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "The coordinator has no %s listener.", req.Listener)
	}
	return coordinator{node: b.ID, host: ep.Host, port: int32(ep.Port)}
}

// offsetsTopic returns __consumer_offsets, creating it if needed. Either
// way it returns once this broker has applied the image that holds the
// topic, so that the coordinator it names has been elected: a client
// racing the creation must not be sent to a coordinator that answers
// NOT_COORDINATOR (clients that join right away give up after a few).
func (s *Server) offsetsTopic(ctx context.Context) (*metadata.Topic, error) {
	b := s.cfg.Broker
	return s.internalTopic(ctx, OffsetsTopic, b.OffsetsTopicNumPartitions, b.OffsetsTopicReplicationFactor, map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.Itoa(int(b.OffsetsTopicSegmentBytes)),
	})
}

// TransactionStateTopic is the internal topic holding the transaction
// coordinators' state.
const TransactionStateTopic = "__transaction_state"

// transactionStateTopic returns __transaction_state, creating it if
// needed, as offsetsTopic does.
func (s *Server) transactionStateTopic(ctx context.Context) (*metadata.Topic, error) {
	b := s.cfg.Broker
	return s.internalTopic(ctx, TransactionStateTopic, b.TransactionStateLogNumPartitions, b.TransactionStateLogReplication, map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"min.insync.replicas":            strconv.Itoa(int(b.TransactionStateLogMinISR)),
		"segment.bytes":                  strconv.Itoa(int(b.TransactionStateLogSegmentBytes)),
		"unclean.leader.election.enable": "false",
	})
}

// internalTopic returns the internal topic name, creating it with these
// settings if needed (see offsetsTopic).
func (s *Server) internalTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) (*metadata.Topic, error) {
	if img := s.deps.Metadata.Image(); img.Topics.Get(name) != nil {
		if err := s.awaitMetadata(ctx, img.Offset, 10*time.Second); err != nil {
			return nil, err
		}
		return img.Topics.Get(name), nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	errs, err := s.createTopics(ctx, req)
	if err != nil {
		return nil, err
	}
	if errs[0] != nil && errorCode(errs[0]) != kerr.TopicAlreadyExists.Code {
		return nil, errs[0]
	}
	// Created by a concurrent request (TOPIC_ALREADY_EXISTS) the topic may
	// be in the image before this broker's replicas have caught up with it.
	if img := s.deps.Metadata.Image(); img.Topics.Get(name) != nil {
		if err := s.awaitMetadata(ctx, img.Offset, 10*time.Second); err != nil {
			return nil, err
		}
		return img.Topics.Get(name), nil
	}
	return nil, fmt.Errorf("%s was created but is not in the metadata", name)
}
