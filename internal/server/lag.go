package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/group"
	"weir/internal/log"
	"weir/internal/metrics"
	"weir/internal/nodeclient"
)

// lagRefreshMin is the least time between two refreshes of the consumer
// lag, however often it is scraped.
const lagRefreshMin = time.Second

// lagTimeout bounds one refresh's wait for the coordinator and for each
// partition leader's ListOffsets answer.
const lagTimeout = 5 * time.Second

// consumerLag computes the consumer lag of the groups this broker
// coordinates, in the background: a scrape reads the last result and asks
// for a refresh, which runs at most once per lagRefreshMin, so a scrape
// never waits for the coordinator or a slow peer. A refresh reads the
// groups' committed offsets through the coordinator's runtime and the high
// watermark of each of their partitions: from the local replica when this
// broker leads it, else from its leader with ListOffsets (latest,
// read_uncommitted), one request per leader; a partition whose high
// watermark cannot be learned is left out of that refresh.
type consumerLag struct {
	s    *Server
	kick chan struct{}
	last atomic.Pointer[[]metrics.ConsumerLag]

	mu    sync.Mutex
	conns map[int32]*txnConn // ListOffsets connections, per leader
}

func newConsumerLag(s *Server) *consumerLag {
	return &consumerLag{s: s, kick: make(chan struct{}, 1), conns: map[int32]*txnConn{}}
}

// current returns the last refresh's lag and asks for a new one.
func (c *consumerLag) current() []metrics.ConsumerLag {
	select {
	case c.kick <- struct{}{}:
	default:
	}
	if l := c.last.Load(); l != nil {
		return *l
	}
	return nil
}

// run refreshes on request until ctx ends, then closes its connections.
func (c *consumerLag) run(ctx context.Context) {
	defer c.close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		start := time.Now()
		if lag, err := c.refresh(ctx); err == nil {
			c.last.Store(&lag)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(lagRefreshMin - time.Since(start)):
		}
	}
}

func (c *consumerLag) refresh(ctx context.Context) ([]metrics.ConsumerLag, error) {
	rctx, cancel := context.WithTimeout(ctx, lagTimeout)
	defer cancel()
	offsets, err := c.s.groups.CommittedOffsets(rctx)
	if err != nil {
		return nil, err
	}
	hw := map[log.TopicPartition]int64{}
	remote := map[int32][]log.TopicPartition{} // by leader
	img := c.s.publisher.Image()
	for _, o := range offsets {
		tp := log.TopicPartition{Topic: o.Topic, Partition: o.Partition}
		if _, ok := hw[tp]; ok {
			continue
		}
		if p := c.s.partitions.Get(tp); p != nil && p.IsLeader() {
			hw[tp] = p.HighWatermark()
			continue
		}
		hw[tp] = -1
		if t := img.Topics.Get(tp.Topic); t != nil {
			if p := t.Partitions[tp.Partition]; p != nil && p.Leader >= 0 {
				remote[p.Leader] = append(remote[p.Leader], tp)
			}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for leader, tps := range remote {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := c.listOffsets(rctx, leader, tps)
			mu.Lock()
			defer mu.Unlock()
			for tp, off := range got {
				hw[tp] = off
			}
		}()
	}
	wg.Wait()
	out := make([]metrics.ConsumerLag, 0, len(offsets))
	for _, o := range offsets {
		if h := hw[log.TopicPartition{Topic: o.Topic, Partition: o.Partition}]; h >= 0 {
			out = append(out, metrics.ConsumerLag{Group: o.Group, Topic: o.Topic, Partition: o.Partition, Lag: lagOf(h, o)})
		}
	}
	return out, nil
}

// lagOf is kafka-consumer-groups --describe's LAG: the high watermark
// minus the committed offset, never below 0.
func lagOf(hw int64, o group.CommittedOffset) int64 { return max(hw-o.Offset, 0) }

// listOffsets asks leader for the high watermarks of tps; the partitions
// it does not answer without error are left out.
func (c *consumerLag) listOffsets(ctx context.Context, leader int32, tps []log.TopicPartition) map[log.TopicPartition]int64 {
	addr, ok := c.s.brokerAddress(leader)
	if !ok {
		return nil
	}
	c.mu.Lock()
	pc := c.conns[leader]
	if pc == nil || pc.addr != addr {
		if pc != nil {
			pc.conn.Close()
		}
		pc = &txnConn{addr: addr, conn: nodeclient.New(addr, fmt.Sprintf("weir-consumer-lag-%d", c.s.cfg.NodeID), c.s.dialBroker)}
		c.conns[leader] = pc
	}
	c.mu.Unlock()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = -1
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp, p.CurrentLeaderEpoch = tp.Partition, -1, -1
		last := &req.Topics[len(req.Topics)-1]
		last.Partitions = append(last.Partitions, p)
	}
	resp, err := pc.conn.Call(ctx, req)
	if err != nil {
		c.s.lg.Debug("consumer lag: ListOffsets failed", "broker", leader, "err", err)
		return nil
	}
	out := map[log.TopicPartition]int64{}
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Offset >= 0 {
				out[log.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Offset
			}
		}
	}
	return out
}

func (c *consumerLag) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pc := range c.conns {
		pc.conn.Close()
	}
}

// Coordinators implements metrics.Source.
func (m metricsSource) Coordinators() metrics.CoordinatorStatus {
	s := m.s
	gs, ts := s.groupStats.Snapshot(), s.txnStats.Snapshot()
	st := metrics.CoordinatorStatus{ClassicGroups: gs.Classic, ConsumerGroups: gs.Consumer, Offsets: gs.Offsets,
		OffsetCommits: gs.OffsetCommits, OffsetExpirations: gs.OffsetExpirations, OffsetDeletions: gs.OffsetDeletions,
		ClassicRebalances: gs.ClassicRebalances, ConsumerRebalances: gs.ConsumerRebalances,
		Transactions: ts.States, MarkersQueued: ts.MarkersQueued, ProducerIDBlocks: ts.ProducerIDBlocks, ProducerIDs: ts.ProducerIDs}
	if s.lag != nil {
		st.Lag = s.lag.current()
	}
	return st
}
