package fetcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/log"
	"weir/internal/nodeclient"
	"weir/internal/partition"
	"weir/internal/record"
)

// fetchVersion is the Fetch version followers send: topic ids (v13),
// the replica's id and broker epoch in ReplicaState (v15).
const fetchVersion = 15

// fetcher fetches a set of partitions from one leader, one request at a
// time.
type fetcher struct {
	m      *Manager
	leader int32
	lg     *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wakeC  chan struct{}

	mu    sync.Mutex
	parts map[log.TopicPartition]*followed
}

// followed is one partition of a fetcher.
type followed struct {
	p            *partition.Partition
	delayedUntil time.Time
	lag          int64
}

func newFetcher(m *Manager, leader int32) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &fetcher{m: m, leader: leader, lg: m.lg.With("leader", leader), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), wakeC: make(chan struct{}, 1), parts: map[log.TopicPartition]*followed{}}
}

func (f *fetcher) add(p *partition.Partition) {
	f.mu.Lock()
	f.parts[p.TopicPartition()] = &followed{p: p}
	f.mu.Unlock()
	f.wake()
}

// remove drops tp and returns how many partitions are left.
func (f *fetcher) remove(tp log.TopicPartition) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, tp)
	return len(f.parts)
}

func (f *fetcher) lag(tp log.TopicPartition) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fp := f.parts[tp]; fp != nil {
		return fp.lag
	}
	return 0
}

func (f *fetcher) wake() {
	select {
	case f.wakeC <- struct{}{}:
	default:
	}
}

func (f *fetcher) stop() { f.cancel() }

// request is one fetch in flight: what was asked for each partition.
type request struct {
	req *kmsg.FetchRequest
	pos map[partKey]asked
}

type partKey struct {
	topicID   [16]byte
	partition int32
}

type asked struct {
	fp        *followed
	pos       partition.FetchPosition
	throttled bool // counts against the follower-side quota
}

// build makes the next request from the partitions that are not backing
// off; it returns nil with the time the next one stops backing off (zero:
// none) when there is nothing to fetch.
func (f *fetcher) build() (*request, time.Time) {
	cfg := &f.m.cfg
	now := time.Now()
	r := &request{pos: map[partKey]asked{}}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaState.ID, req.ReplicaState.Epoch = cfg.Self, cfg.BrokerEpoch()
	req.ReplicaID = cfg.Self
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(cfg.MaxWait.Milliseconds()), cfg.MinBytes, cfg.ResponseMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	var next time.Time
	topics := map[[16]byte]int{}
	throttle := cfg.Quota.FollowerExceeded()
	// The partitions not backing off are listed under the lock, and
	// their positions read after it: adding a partition (Follow) never
	// waits for a request of thousands of partitions to be built.
	f.mu.Lock()
	ready := make([]*followed, 0, len(f.parts))
	for _, fp := range f.parts {
		if now.Before(fp.delayedUntil) {
			if next.IsZero() || fp.delayedUntil.Before(next) {
				next = fp.delayedUntil
			}
			continue
		}
		ready = append(ready, fp)
	}
	f.mu.Unlock()
	for _, fp := range ready {
		pos, ok := fp.p.FetchPosition()
		if !ok || pos.Leader != f.leader {
			continue // the manager moves or drops it
		}
		throttled := fp.p.FollowerThrottled()
		if throttled && throttle {
			// Over the follower-side quota: skip it for now.
			if retry := now.Add(100 * time.Millisecond); next.IsZero() || retry.Before(next) {
				next = retry
			}
			continue
		}
		id := fp.p.TopicID()
		i, ok := topics[id]
		if !ok {
			i = len(req.Topics)
			topics[id] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID, rt.Topic = id, fp.p.TopicPartition().Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = fp.p.TopicPartition().Partition, pos.LeaderEpoch
		rp.FetchOffset, rp.LastFetchedEpoch, rp.LogStartOffset = pos.FetchOffset, pos.LastFetchedEpoch, pos.LogStartOffset
		rp.PartitionMaxBytes = cfg.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		r.pos[partKey{id, rp.Partition}] = asked{fp: fp, pos: pos, throttled: throttled}
	}
	if len(r.pos) == 0 {
		return nil, next
	}
	r.req = req
	return r, next
}

func (f *fetcher) run() {
	defer close(f.done)
	cfg := &f.m.cfg
	var conn *nodeclient.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	// The answers are read into buf, reused from one fetch to the next:
	// handle is done with an answer (its batches are written to the logs)
	// before the next fetch is sent. One far over the response limit (a
	// single large batch) is not kept.
	var buf []byte
	keep := 2 * max(int(cfg.ResponseMaxBytes), 1<<20)
	failures := 0
	for f.ctx.Err() == nil {
		r, next := f.build()
		if r == nil {
			if !f.idle(next) {
				return
			}
			continue
		}
		if conn == nil {
			addr, ok := cfg.Address(f.leader)
			if !ok {
				if !wait(f.ctx, cfg.Backoff) {
					return
				}
				continue
			}
			conn = nodeclient.New(addr, fmt.Sprintf("weir-replica-fetcher-%d", cfg.Self), cfg.Dial)
		}
		ctx, cancel := context.WithTimeout(f.ctx, cfg.MaxWait+cfg.SocketTimeout)
		resp, err := conn.CallReusing(ctx, r.req, &buf)
		cancel()
		if err != nil {
			if f.ctx.Err() != nil {
				return
			}
			failures++
			if failures == 1 || failures%100 == 0 {
				f.lg.Info("fetch from leader failed; retrying", "err", err, "failures", failures)
			}
			conn.Close()
			conn = nil
			if !wait(f.ctx, cfg.Backoff) {
				return
			}
			continue
		}
		failures = 0
		err = f.handle(r, resp.(*kmsg.FetchResponse), conn)
		if cap(buf) > keep {
			buf = nil
		}
		if err != nil {
			f.lg.Info("fetch answered with an error; backing off", "err", err)
			if !wait(f.ctx, cfg.Backoff) {
				return
			}
		}
	}
}

// idle waits for a partition to be added, or until next (zero: no limit);
// it reports whether to go on.
func (f *fetcher) idle(next time.Time) bool {
	var timer <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-f.ctx.Done():
		return false
	case <-f.wakeC:
	case <-timer:
	}
	return true
}

// handle applies a fetch response to its partitions.
func (f *fetcher) handle(r *request, resp *kmsg.FetchResponse, conn *nodeclient.Conn) error {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			sp := &rt.Partitions[i]
			a, ok := r.pos[partKey{rt.TopicID, sp.Partition}]
			if !ok {
				continue
			}
			if err := f.apply(a, sp, conn); err != nil && !errors.Is(err, partition.ErrNotFollowing) {
				// The leader not (yet) leading at the follower's epoch is
				// routine while leadership moves, or a new partition is
				// created, on thousands of partitions at once: debug, as
				// Kafka's fetcher logs it.
				level := slog.LevelInfo
				if errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.FencedLeaderEpoch) || errors.Is(err, kerr.UnknownLeaderEpoch) {
					level = slog.LevelDebug
				}
				f.lg.Log(f.ctx, level, "replica fetch error; backing off", "partition", a.fp.p.TopicPartition().String(), "err", err)
				f.mu.Lock()
				a.fp.delayedUntil = time.Now().Add(f.m.cfg.Backoff)
				f.mu.Unlock()
			}
		}
	}
	return nil
}

// apply hands one partition's answer to the partition.
func (f *fetcher) apply(a asked, sp *kmsg.FetchResponseTopicPartition, conn *nodeclient.Conn) error {
	if a.throttled {
		f.m.cfg.Quota.RecordFollower(int64(len(sp.RecordBatches)))
	}
	ans := Answer{Err: kerr.ErrorForCode(sp.ErrorCode), DivergingEpoch: sp.DivergingEpoch.Epoch, DivergingEndOffset: sp.DivergingEpoch.EndOffset,
		Records: sp.RecordBatches, HighWatermark: sp.HighWatermark, LogStartOffset: sp.LogStartOffset}
	err := Apply(a.fp.p, a.pos, ans, func() (int64, error) { return f.leaderEndOffset(a.fp.p, a.pos, conn) })
	if err == nil && ans.Err == nil {
		lag := max(0, sp.HighWatermark-a.fp.p.Log().LogEndOffset())
		f.mu.Lock()
		a.fp.lag = lag
		f.mu.Unlock()
	}
	return err
}

// Answer is one partition's part of a leader's fetch response.
type Answer struct {
	Err                error // the partition's error code, as a kerr error
	DivergingEpoch     int32
	DivergingEndOffset int64 // -1: the logs do not diverge
	Records            []byte
	HighWatermark      int64
	LogStartOffset     int64
}

// Apply does with one partition's answer what a follower must: append
// the whole batches and follow the leader's high watermark and log
// start; truncate on a diverging epoch (or restart the log at the leader's
// log start when the divergence is at or below it); after OFFSET_OUT_OF_RANGE,
// restart the log at the leader's log start if behind it, else cut it
// back to the leader's log end (asked with leaderEnd; possible only after
// an unclean election). Other errors are returned for the caller to back
// off. pos is the position the fetch was sent from; an answer that no
// longer fits the replica returns partition.ErrNotFollowing.
func Apply(p *partition.Partition, pos partition.FetchPosition, a Answer, leaderEnd func() (int64, error)) error {
	switch {
	case errors.Is(a.Err, kerr.OffsetOutOfRange):
		if a.LogStartOffset >= 0 && pos.FetchOffset < a.LogStartOffset {
			return p.RestartAt(pos, a.LogStartOffset)
		}
		end, err := leaderEnd()
		if err != nil {
			return err
		}
		if end < pos.FetchOffset {
			return p.TruncateTo(pos, end)
		}
		return fmt.Errorf("offset %d out of range, but the leader's log ends at %d", pos.FetchOffset, end)
	case a.Err != nil:
		return a.Err
	case a.DivergingEndOffset >= 0 && a.DivergingEndOffset <= a.LogStartOffset:
		// Diverged at or below the leader's log start: what this log
		// holds there cannot be checked against the leader's (deleted).
		return p.RestartDiverged(pos, a.LogStartOffset)
	case a.DivergingEndOffset >= 0:
		_, err := p.TruncateDiverged(pos, a.DivergingEpoch, a.DivergingEndOffset)
		return err
	}
	_, err := p.AppendFetched(pos, wholeBatches(a.Records), a.HighWatermark, a.LogStartOffset)
	return err
}

// leaderEndOffset asks the leader for its log end offset (ListOffsets
// latest, as a replica).
func (f *fetcher) leaderEndOffset(p *partition.Partition, pos partition.FetchPosition, conn *nodeclient.Conn) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	req.ReplicaID = f.m.cfg.Self
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = p.TopicPartition().Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p.TopicPartition().Partition, pos.LeaderEpoch, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(f.ctx, f.m.cfg.SocketTimeout)
	defer cancel()
	resp, err := conn.Call(ctx, req)
	if err != nil {
		return 0, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return 0, errors.New("malformed ListOffsets answer")
	}
	lp := lr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(lp.ErrorCode); err != nil {
		return 0, err
	}
	return lp.Offset, nil
}

// wholeBatches drops a batch cut short at the end of a fetch answer.
func wholeBatches(b []byte) []byte {
	off := 0
	for off < len(b) {
		n, ok := record.PeekSize(b[off:])
		if !ok || n <= 0 || off+n > len(b) {
			break
		}
		off += n
	}
	return b[:off]
}
