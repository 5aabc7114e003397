package link

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clientsec"
	"weir/internal/metadata"
)

// fetchMaxWait is how long the source holds a fetch with nothing new.
const fetchMaxWait = 500 * time.Millisecond

// clientSource is a Source over a franz-go client of the source cluster:
// Metadata for the partitions' leaders, leader epochs and the topic's id,
// Fetch and OffsetForLeaderEpoch sent to the partition's leader as a
// consumer would send them (replica id -1), at the versions the source
// supports.
type clientSource struct {
	cl *kgo.Client

	mu     sync.Mutex
	topics map[string]*sourceTopic
}

type sourceTopic struct {
	id      [16]byte
	leaders map[int32]leaderEpoch
}

type leaderEpoch struct{ leader, epoch int32 }

// newClientSource connects to the source cluster of l: its
// bootstrap.servers (comma-separated host:port), with the TLS and SASL
// client properties among its configs (clientsec). clientID is used
// unless the link sets client.id.
func newClientSource(l *metadata.Link, clientID string) (*clientSource, error) {
	var seeds []string
	for _, s := range strings.Split(l.Configs["bootstrap.servers"], ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if id := l.Configs["client.id"]; id != "" {
		clientID = id
	}
	sec, err := clientsec.Opts(l.Configs)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID(clientID), kgo.RequestRetries(0)}, sec...)...)
	if err != nil {
		return nil, err
	}
	return &clientSource{cl: cl, topics: map[string]*sourceTopic{}}, nil
}

func (s *clientSource) Close() { s.cl.Close() }

// forget drops what is known of topic's leaders, so that the next
// LeaderEpoch asks the source again: a request to a leader that failed
// without an answer (the broker is down or unreachable) would otherwise
// go on to the same broker, as no error code in an answer says to look
// elsewhere.
func (s *clientSource) forget(topic string) {
	s.mu.Lock()
	delete(s.topics, topic)
	s.mu.Unlock()
}

func (s *clientSource) leader(topic string, part int32) (leaderEpoch, [16]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.topics[topic]
	if t == nil {
		return leaderEpoch{}, [16]byte{}, false
	}
	le, ok := t.leaders[part]
	return le, t.id, ok
}

func (s *clientSource) LeaderEpoch(ctx context.Context, topic string, part int32, refresh bool) (int32, error) {
	if le, _, ok := s.leader(topic, part); ok && !refresh {
		return le.epoch, nil
	}
	if err := s.refresh(ctx, topic); err != nil {
		return 0, err
	}
	le, _, ok := s.leader(topic, part)
	if !ok {
		return 0, fmt.Errorf("source topic %s has no partition %d: %w", topic, part, kerr.UnknownTopicOrPartition)
	}
	if le.leader < 0 {
		return 0, fmt.Errorf("source partition %s-%d has no leader: %w", topic, part, kerr.LeaderNotAvailable)
	}
	return le.epoch, nil
}

// refresh asks the source for topic's metadata.
func (s *clientSource) refresh(ctx context.Context, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return errors.New("malformed Metadata answer from the source")
	}
	mt := resp.Topics[0]
	if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
		return fmt.Errorf("source topic %s: %w", topic, err)
	}
	t := &sourceTopic{id: mt.TopicID, leaders: map[int32]leaderEpoch{}}
	for _, p := range mt.Partitions {
		t.leaders[p.Partition] = leaderEpoch{leader: p.Leader, epoch: p.LeaderEpoch}
	}
	s.mu.Lock()
	s.topics[topic] = t
	s.mu.Unlock()
	return nil
}

// Partitions returns the source topic's partition count.
func (s *clientSource) Partitions(ctx context.Context, topic string) (int32, error) {
	if err := s.refresh(ctx, topic); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return int32(len(s.topics[topic].leaders)), nil
}

func (s *clientSource) Fetch(ctx context.Context, topic string, part, epoch int32, offset int64, maxBytes int32) (Fetched, error) {
	le, id, ok := s.leader(topic, part)
	if !ok {
		return Fetched{}, kerr.UnknownTopicOrPartition
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, int32(fetchMaxWait.Milliseconds()), 1, maxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.LogStartOffset = part, epoch, offset, -1
	rp.LastFetchedEpoch, rp.PartitionMaxBytes = -1, maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := s.cl.Broker(int(le.leader)).Request(ctx, req)
	if err != nil {
		s.forget(topic)
		return Fetched{}, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		return Fetched{}, err
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return Fetched{}, errors.New("malformed Fetch answer from the source")
	}
	sp := &fr.Topics[0].Partitions[0]
	return Fetched{Err: kerr.ErrorForCode(sp.ErrorCode), Records: sp.RecordBatches, HighWatermark: sp.HighWatermark,
		LogStartOffset: sp.LogStartOffset}, nil
}

func (s *clientSource) EpochEnd(ctx context.Context, topic string, part, epoch, leaderEpoch int32) (int32, int64, error) {
	le, _, ok := s.leader(topic, part)
	if !ok {
		return 0, 0, kerr.UnknownTopicOrPartition
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = part, leaderEpoch, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := s.cl.Broker(int(le.leader)).Request(ctx, req)
	if err != nil {
		s.forget(topic)
		return 0, 0, err
	}
	or := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(or.Topics) != 1 || len(or.Topics[0].Partitions) != 1 {
		return 0, 0, errors.New("malformed OffsetForLeaderEpoch answer from the source")
	}
	op := or.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(op.ErrorCode); err != nil {
		return 0, 0, err
	}
	return op.LeaderEpoch, op.EndOffset, nil
}

func (s *clientSource) LogStart(ctx context.Context, topic string, part, epoch int32) (int64, error) {
	le, _, ok := s.leader(topic, part)
	if !ok {
		return 0, kerr.UnknownTopicOrPartition
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = part, epoch, -2 // earliest
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := s.cl.Broker(int(le.leader)).Request(ctx, req)
	if err != nil {
		s.forget(topic)
		return 0, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return 0, errors.New("malformed ListOffsets answer from the source")
	}
	lp := lr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(lp.ErrorCode); err != nil {
		return 0, err
	}
	return lp.Offset, nil
}

// SourceTopic asks the source cluster of l for topic's partition count
// and the configs among metadata.MirrorSyncedConfigs set on it.
func SourceTopic(ctx context.Context, l *metadata.Link, topic string) (int32, map[string]string, error) {
	src, err := newClientSource(l, "weir-cluster-link-admin-"+l.Name)
	if err != nil {
		return 0, nil, err
	}
	defer src.Close()
	info, err := src.describe(ctx, []string{topic})
	if err != nil {
		return 0, nil, err
	}
	if err := info[topic].err; err != nil {
		return 0, nil, err
	}
	return info[topic].partitions, info[topic].configs, nil
}

// topicInfo is what a mirror takes from its source topic.
type topicInfo struct {
	partitions int32
	configs    map[string]string // those of metadata.MirrorSyncedConfigs set on it
	err        error             // the topic's own error (unknown ...)
}

// describe asks the source for the partition counts and synced configs of
// topics; an error for the whole call is returned, one topic's in its
// topicInfo.
func (s *clientSource) describe(ctx context.Context, topics []string) (map[string]topicInfo, error) {
	adm := kadm.NewClient(s.cl)
	tds, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := map[string]topicInfo{}
	var found []string
	for _, t := range topics {
		td, ok := tds[t]
		switch {
		case !ok:
			out[t] = topicInfo{err: fmt.Errorf("source topic %s: %w", t, kerr.UnknownTopicOrPartition)}
		case td.Err != nil:
			out[t] = topicInfo{err: fmt.Errorf("source topic %s: %w", t, td.Err)}
		default:
			out[t] = topicInfo{partitions: int32(len(td.Partitions))}
			found = append(found, t)
		}
	}
	if len(found) == 0 {
		return out, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, found...)
	if err != nil {
		return nil, fmt.Errorf("source topics' configs: %w", err)
	}
	for _, rc := range rcs {
		ti, ok := out[rc.Name]
		if !ok {
			continue
		}
		if rc.Err != nil {
			ti.err = fmt.Errorf("source topic %s's configs: %w", rc.Name, rc.Err)
		} else {
			ti.configs = map[string]string{}
			for _, c := range rc.Configs {
				if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil && slices.Contains(metadata.MirrorSyncedConfigs, c.Key) {
					ti.configs[c.Key] = *c.Value
				}
			}
		}
		out[rc.Name] = ti
	}
	for _, t := range found {
		if out[t].configs == nil && out[t].err == nil {
			out[t] = topicInfo{err: fmt.Errorf("the source did not describe the configs of topic %s", t)}
		}
	}
	return out, nil
}

// SourceEndOffsets asks the source cluster of l for the high watermarks
// of every partition of topics (ListOffsets, latest), by topic and
// partition.
func SourceEndOffsets(ctx context.Context, l *metadata.Link, topics []string) (map[string]map[int32]int64, error) {
	src, err := newClientSource(l, "weir-cluster-link-admin-"+l.Name)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	lo, err := kadm.NewClient(src.cl).ListEndOffsets(ctx, topics...)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) {
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	for _, t := range topics {
		if out[t] == nil {
			return nil, fmt.Errorf("source topic %s: %w", t, kerr.UnknownTopicOrPartition)
		}
	}
	return out, nil
}
