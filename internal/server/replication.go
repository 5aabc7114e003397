package server

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/fetcher"
	"weir/internal/link"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/partition"
	"weir/internal/quota"
)

// openReplication wires the broker's replicas to the rest of the cluster:
// followers fetch through the fetcher, leaders send ISR changes to the
// active controller through the isrSender.
func (s *Server) openReplication() {
	s.isr = &isrSender{s: s, queue: map[log.TopicPartition]isrItem{}, wake: make(chan struct{}, 1)}
	s.replQuota = quota.NewReplication(int(s.cfg.ReplicationQuotaWindowNum), s.cfg.ReplicationQuotaWindowSize, s.replicationRates)
	s.fetchers = fetcher.New(fetcher.Config{
		Self:              s.cfg.NodeID,
		NumFetchers:       int(s.cfg.NumReplicaFetchers),
		MaxWait:           s.cfg.ReplicaFetchWaitMax,
		MinBytes:          s.cfg.ReplicaFetchMinBytes,
		ResponseMaxBytes:  s.cfg.ReplicaFetchResponseMaxBytes,
		PartitionMaxBytes: s.cfg.ReplicaFetchMaxBytes,
		Backoff:           s.cfg.ReplicaFetchBackoff,
		SocketTimeout:     s.cfg.ReplicaSocketTimeout,
		BrokerEpoch:       func() int64 { return s.lifecycle.epoch.Load() },
		Address:           s.brokerAddress,
		Quota:             s.replQuota,
		Dial:              s.dialBroker,
		Logger:            s.lg.With("component", "replica-fetcher"),
	})
	s.partitions.SetReplication(&partition.Replication{
		LagTimeMax: s.cfg.ReplicaLagTimeMax,
		Eligible:   s.isrEligible,
		AlterISR:   s.isr.submit,
		IsrChanged: s.metrics.Counters.IsrChanged,
		StrictMinISR: func() bool {
			return s.publisher.Image().Features[metadata.ELRFeature] >= 1
		},
	}, s.fetchers)
	s.links = link.NewManager(s.cfg.NodeID, s.cfg.ReplicaFetchBackoff, s.lg.With("component", "cluster-link"))
	s.partitions.SetMirrorer(s.links)
}

// runReplication runs the ISR sender and the periodic ISR shrink check
// until ctx ends.
func (s *Server) runReplication(ctx context.Context) {
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.isr.run(ctx)
	}()
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(max(s.cfg.ReplicaLagTimeMax/2, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.partitions.MaybeShrinkISRs()
			}
		}
	}()
}

// replicationRates are leader.replication.throttled.rate and
// follower.replication.throttled.rate as now configured: this broker's
// dynamic value, else the cluster-wide dynamic default, else the static
// one.
func (s *Server) replicationRates() (leader, follower int64) {
	img := s.publisher.Image()
	rate := func(key string) int64 {
		n, _ := strconv.ParseInt(config.BrokerValue(key, img.BrokerConfig(strconv.Itoa(int(s.cfg.NodeID))), img.BrokerConfig(""), s.cfg), 10, 64)
		return n
	}
	return rate("leader.replication.throttled.rate"), rate("follower.replication.throttled.rate")
}

// brokerAddress is a broker's inter-broker endpoint in the current image.
func (s *Server) brokerAddress(id int32) (string, bool) {
	b := s.publisher.Image().Brokers[id]
	if b == nil {
		return "", false
	}
	e, ok := b.Endpoint(s.cfg.InterBrokerListenerName)
	if !ok {
		return "", false
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
}

// isrEligible reports whether a broker may join an ISR, as the image has
// it: registered, unfenced, not shutting down, and of brokerEpoch if
// known.
func (s *Server) isrEligible(id int32, brokerEpoch int64) bool {
	b := s.publisher.Image().Brokers[id]
	return b != nil && !b.Fenced && !b.InControlledShutdown && (brokerEpoch < 0 || b.Epoch == brokerEpoch)
}

// isrSender sends the leaders' ISR changes to the active controller as
// AlterPartition requests, batching what queued while one was in flight,
// and hands each partition its answer. Changes that could not be
// delivered (no controller, a transport error) are retried.
type isrSender struct {
	s     *Server
	mu    sync.Mutex
	queue map[log.TopicPartition]isrItem // the latest change per partition
	wake  chan struct{}
}

type isrItem struct {
	p *partition.Partition
	c partition.IsrChange
}

// submit queues a change; it implements partition.Replication.AlterISR.
func (q *isrSender) submit(p *partition.Partition, c partition.IsrChange) {
	q.mu.Lock()
	q.queue[c.TopicPartition] = isrItem{p: p, c: c}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *isrSender) run(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for {
			q.mu.Lock()
			items := q.queue
			q.queue = map[log.TopicPartition]isrItem{}
			q.mu.Unlock()
			if len(items) == 0 {
				break
			}
			if err := q.send(ctx, items); err != nil {
				q.s.lg.Debug("AlterPartition not delivered; retrying", "err", err)
				q.requeue(items)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			backoff = 50 * time.Millisecond
		}
	}
}

// requeue puts back changes not superseded by newer ones.
func (q *isrSender) requeue(items map[log.TopicPartition]isrItem) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for tp, it := range items {
		if _, newer := q.queue[tp]; !newer {
			q.queue[tp] = it
		}
	}
}

// send delivers one batch and answers its partitions; an error means
// nothing was answered.
func (q *isrSender) send(ctx context.Context, items map[log.TopicPartition]isrItem) error {
	l := q.s.lifecycle
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = q.s.cfg.NodeID, l.epoch.Load()
	topics := map[[16]byte]int{}
	for _, it := range items {
		i, ok := topics[it.c.TopicID]
		if !ok {
			i = len(req.Topics)
			topics[it.c.TopicID] = i
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.TopicID = it.c.TopicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = it.c.TopicPartition.Partition, it.c.LeaderEpoch, it.c.PartitionEpoch
		for _, m := range it.c.ISR {
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: m.ID, BrokerEpoch: m.BrokerEpoch})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := q.call(ctx, req)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if errors.Is(err, kerr.NotController) || errors.Is(err, kerr.StaleBrokerEpoch) {
			return err // retried: the controller moved, or this broker re-registers
		}
		for _, it := range items {
			it.p.IsrChangeDone(it.c, nil, err)
		}
		return nil
	}
	byID := map[[16]byte]map[int32]isrItem{}
	for _, it := range items {
		if byID[it.c.TopicID] == nil {
			byID[it.c.TopicID] = map[int32]isrItem{}
		}
		byID[it.c.TopicID][it.c.TopicPartition.Partition] = it
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			it, ok := byID[rt.TopidID][rp.Partition]
			if !ok {
				continue
			}
			delete(byID[rt.TopidID], rp.Partition)
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				it.p.IsrChangeDone(it.c, nil, err)
				continue
			}
			st := &partition.State{Leader: rp.LeaderID, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, ISR: rp.ISR,
				Recovering: rp.LeaderRecoveryState == 1}
			it.p.IsrChangeDone(it.c, st, nil)
		}
	}
	for _, parts := range byID {
		for _, it := range parts {
			it.p.IsrChangeDone(it.c, nil, errors.New("no answer from the controller"))
		}
	}
	return nil
}

// call sends the request to the active controller: the local one, or over
// the controller listener.
func (q *isrSender) call(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	c, err := q.s.lifecycle.target()
	if err != nil {
		return nil, err
	}
	if c == nil {
		return q.s.controller.AlterPartition(req)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.AlterPartitionResponse), nil
}
