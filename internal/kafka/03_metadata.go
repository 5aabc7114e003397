package kafka

// Metadata, versions 0-12.
//
// Brokers are the unfenced brokers with an endpoint on the listener the
// request arrived on. A null topic list (v1+, or an empty one at v0) means
// every topic. Unknown topics are created when auto.create.topics.enable
// and the request (v4+; always before) allow it; weir creates them before
// answering, so the client gets the new topic's metadata at once where
// Kafka would first answer LEADER_NOT_AVAILABLE. A topic named (or, by id,
// identified) more than once is answered once, as Kafka reads the list as
// a set: a small request must not make a huge answer. The controller id
// is this broker's id, as a KRaft broker reports a broker, not a
// controller. A requested topic with a topic id (v10+) is looked up by
// that id, whatever its name: the Java client sends the name "" with the id.
//
// With an authorizer, as Kafka: listing every topic leaves out those the
// principal may not DESCRIBE; a named topic it may not DESCRIBE (existing
// or not) is TOPIC_AUTHORIZATION_FAILED, and so is one to be auto-created
// without CREATE on the cluster or on the topic. Authorized operations,
// when asked for, are the operations the principal may perform.

import (
	"context"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/controller"
	"weir/internal/log"
	"weir/internal/metadata"
)

// The operations of topics (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
// DESCRIBE_CONFIGS, ALTER_CONFIGS) and of the cluster, as bit sets for
// AuthorizedOperations (see authorizedOps).
const (
	topicAllOperations   = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	clusterAllOperations = 1<<4 | 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
	operationsOmitted    = -2147483648
)

// internalTopics are Kafka's internal topics.
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true}

func (s *Server) handleMetadata(req *Request) *Reply {
	r := req.Body.(*kmsg.MetadataRequest)
	resp := respFor(req).(*kmsg.MetadataResponse)
	img := s.deps.Metadata.Image()
	allowCreate := s.cfg.Broker.AutoCreateTopics && (req.Version < 4 || r.AllowAutoTopicCreation)

	all := r.Topics == nil || (req.Version == 0 && len(r.Topics) == 0)
	topics := uniqueTopics(r.Topics)
	denied := map[string]bool{} // named topics the principal may not see, or create
	if !all {
		clusterCreate := -1
		for _, rt := range topics {
			switch {
			case byTopicID(rt):
			case !s.authorized(req, acl.OpDescribe, acl.ResourceTopic, *rt.Topic):
				denied[*rt.Topic] = true
			case allowCreate && img.Topics.Get(*rt.Topic) == nil:
				if clusterCreate < 0 {
					clusterCreate = 0
					if s.authorizedCluster(req, acl.OpCreate) {
						clusterCreate = 1
					}
				}
				if clusterCreate == 0 && !s.authorized(req, acl.OpCreate, acl.ResourceTopic, *rt.Topic) {
					denied[*rt.Topic] = true
				}
			}
		}
		if allowCreate {
			img = s.autoCreate(req.Ctx, img, topics, denied)
		}
	}
	resp.Brokers = s.brokers(img, req.Listener)
	cluster := s.cfg.ClusterID
	resp.ClusterID = &cluster
	resp.ControllerID = s.cfg.Broker.NodeID
	resp.AuthorizedOperations = operationsOmitted
	if r.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = s.authorizedOps(req, acl.ResourceCluster, acl.ClusterName, clusterAllOperations)
	}
	offline := s.offlineHere()
	if all {
		names := make([]string, 0, img.Topics.Len())
		for name := range img.Topics.All() {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if s.authorized(req, acl.OpDescribe, acl.ResourceTopic, name) {
				resp.Topics = append(resp.Topics, s.topicMetadata(req, img, img.Topics.Get(name), r.IncludeTopicAuthorizedOperations, offline))
			}
		}
		return done(resp)
	}
	for _, rt := range topics {
		var t *metadata.Topic
		byID := byTopicID(rt)
		if byID {
			t = img.TopicsByID.Get(rt.TopicID)
		} else {
			t = img.Topics.Get(*rt.Topic)
		}
		if !byID && denied[*rt.Topic] || byID && t != nil && !s.authorized(req, acl.OpDescribe, acl.ResourceTopic, t.Name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.ErrorCode, mt.AuthorizedOperations, mt.IsInternal = kerr.TopicAuthorizationFailed.Code, operationsOmitted, !byID && internalTopics[*rt.Topic]
			if !byID {
				mt.Topic = rt.Topic
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			if !byID {
				mt.Topic = rt.Topic
			}
			mt.AuthorizedOperations = operationsOmitted
			switch {
			case byID:
				mt.ErrorCode = kerr.UnknownTopicID.Code
			case controller.ValidateTopicName(*rt.Topic) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			default:
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.topicMetadata(req, img, t, r.IncludeTopicAuthorizedOperations, offline))
	}
	return done(resp)
}

// uniqueTopics drops the repeats of a topic name, or of an id for
// topics without a name, keeping the first of each.
func uniqueTopics(topics []kmsg.MetadataRequestTopic) []kmsg.MetadataRequestTopic {
	names, ids := map[string]bool{}, map[[16]byte]bool{}
	var out []kmsg.MetadataRequestTopic
	for _, rt := range topics {
		if byTopicID(rt) {
			if ids[rt.TopicID] {
				continue
			}
			ids[rt.TopicID] = true
		} else {
			if names[*rt.Topic] {
				continue
			}
			names[*rt.Topic] = true
		}
		out = append(out, rt)
	}
	return out
}

// byTopicID reports whether a requested topic is looked up by its id: it
// carries one (v10+), or no name.
func byTopicID(rt kmsg.MetadataRequestTopic) bool {
	return rt.TopicID != [16]byte{} || rt.Topic == nil
}

// autoCreate creates the requested topics that do not exist, but those
// denied, and returns an image that includes them.
func (s *Server) autoCreate(ctx context.Context, img *metadata.Image, topics []kmsg.MetadataRequestTopic, denied map[string]bool) *metadata.Image {
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, rt := range topics {
		if rt.Topic == nil || rt.TopicID != [16]byte{} || img.Topics.Get(*rt.Topic) != nil || internalTopics[*rt.Topic] || denied[*rt.Topic] ||
			*rt.Topic == metadata.LogTopic || controller.ValidateTopicName(*rt.Topic) != nil {
			continue
		}
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = *rt.Topic, -1, -1
		create.Topics = append(create.Topics, ct)
	}
	if len(create.Topics) == 0 {
		return img
	}
	errs, err := s.createTopics(ctx, create)
	if err != nil {
		s.lg.Warn("auto-creating topics failed", "err", err)
		return s.deps.Metadata.Image()
	}
	// One line for the request: it may name any number of topics.
	failed, first := 0, -1
	for i, e := range errs {
		if e != nil && errorCode(e) != kerr.TopicAlreadyExists.Code {
			if failed++; first < 0 {
				first = i
			}
		}
	}
	if failed > 0 {
		s.lg.Info("auto-creating topics failed", "failed", failed, "topic", create.Topics[first].Topic, "err", errs[first])
	}
	return s.deps.Metadata.Image()
}

// brokers lists the unfenced brokers' endpoints on listener.
func (s *Server) brokers(img *metadata.Image, listener string) []kmsg.MetadataResponseBroker {
	var out []kmsg.MetadataResponseBroker
	for _, b := range img.Brokers {
		if b.Fenced {
			continue
		}
		ep, ok := b.Endpoint(listener)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = b.ID, ep.Host, int32(ep.Port), b.Rack
		out = append(out, mb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out
}

// topicMetadata describes t. A replica offline here (see offlineHere) is
// listed in OfflineReplicas, and when it is the leader the partition has
// none (-1, LEADER_NOT_AVAILABLE), as Kafka answers for a leader whose
// log directory failed.
func (s *Server) topicMetadata(req *Request, img *metadata.Image, t *metadata.Topic, withOps bool, offline map[log.TopicPartition]bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic, mt.TopicID, mt.IsInternal = &name, t.ID, internalTopics[t.Name]
	mt.AuthorizedOperations = operationsOmitted
	if withOps {
		mt.AuthorizedOperations = s.authorizedOps(req, acl.ResourceTopic, t.Name, topicAllOperations)
	}
	for _, p := range t.SortedPartitions() {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = p.ID, p.Leader, p.LeaderEpoch
		mp.Replicas, mp.ISR = p.Replicas, p.ISR
		self := s.cfg.Broker.NodeID
		here := offline[log.TopicPartition{Topic: t.Name, Partition: p.ID}]
		for _, r := range p.Replicas {
			if b := img.Brokers[r]; b == nil || b.Fenced || r == self && here {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if here && p.Leader == self {
			mp.Leader = -1
		}
		if mp.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// offlineHere returns the partitions assigned to this broker whose logs
// could not be opened (nil when there are none).
func (s *Server) offlineHere() map[log.TopicPartition]bool {
	if s.deps.Partitions == nil {
		return nil
	}
	var out map[log.TopicPartition]bool
	for _, tp := range s.deps.Partitions.AllOffline() {
		if out == nil {
			out = map[log.TopicPartition]bool{}
		}
		out[tp] = true
	}
	return out
}

// authorizedOps returns the subset of ops (a bit set of operation ids)
// that req's principal may perform on a resource.
func (s *Server) authorizedOps(req *Request, rt int8, name string, ops int32) int32 {
	var out int32
	for op := int8(0); op < 31; op++ {
		if ops&(1<<op) != 0 && s.authorized(req, op, rt, name) {
			out |= 1 << op
		}
	}
	return out
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
