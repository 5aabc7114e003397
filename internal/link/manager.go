package link

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/partition"
	"weir/internal/quota"
)

// Manager runs, on one broker, a copying loop for every partition of an
// active mirror topic the broker leads, over one client of each link's
// source cluster. It implements partition.Mirrorer.
type Manager struct {
	self    int32
	lg      *slog.Logger
	backoff time.Duration

	mu      sync.Mutex
	loops   map[log.TopicPartition]*loop
	sources map[metadata.Uuid]*linkSource
	wg      sync.WaitGroup
	closed  bool
}

type linkSource struct {
	src      *clientSource
	maxBytes int32
	users    int
	// throttle is the bytes this broker copied through the link, and
	// limit link.fetcher.throttle.bytes.per.sec (math.MaxInt64: none).
	throttle *quota.Rate
	limit    int64
}

// throttleCheck is how often a loop held by its link's throttle checks
// the rate again.
const throttleCheck = 100 * time.Millisecond

type loop struct {
	p    *partition.Partition
	link metadata.Uuid
	name string // the link's
	// Progress, for metrics.
	lag atomic.Int64
	// caughtUp (unix ms) is when a fetch last found the mirror at the
	// source's high watermark (or the loop started): the lag in time is
	// how long ago that was, while it is behind.
	caughtUp               atomic.Int64
	bytes, records, errors atomic.Uint64
	throttled              atomic.Uint64 // fetches held back by the throttle
	failing                atomic.Bool
	cancel                 context.CancelFunc
	// restart is signalled when the partition's leadership changed
	// under the loop (a new leader epoch, kept in epoch under the
	// manager's lock): it checks its log against the source again.
	restart chan struct{}
	epoch   int32
}

// NewManager returns a manager with no loops; backoff is how long a loop
// waits after an error (replica.fetch.backoff.ms).
func NewManager(self int32, backoff time.Duration, lg *slog.Logger) *Manager {
	return &Manager{self: self, lg: lg, backoff: backoff, loops: map[log.TopicPartition]*loop{},
		sources: map[metadata.Uuid]*linkSource{}}
}

// Mirror starts copying p from sourceTopic through link, or has the
// running loop check its log again (a new leader epoch here).
func (m *Manager) Mirror(p *partition.Partition, link *metadata.Link, sourceTopic string) {
	tp := p.TopicPartition()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || link == nil {
		return
	}
	epoch := p.State().LeaderEpoch
	if l := m.loops[tp]; l != nil {
		if l.p == p && l.link == link.ID {
			if l.epoch != epoch {
				l.epoch = epoch
				select {
				case l.restart <- struct{}{}:
				default:
				}
			}
			return
		}
		m.stopLocked(tp)
	}
	ls := m.sources[link.ID]
	if ls == nil {
		src, err := newClientSource(link, "weir-cluster-link-"+link.Name+"-"+strconv.Itoa(int(m.self)))
		if err != nil {
			m.lg.Warn("cannot start the client of a cluster link", "link", link.Name, "err", err)
			return
		}
		maxBytes := int64(1 << 20)
		if v, err := strconv.ParseInt(link.Configs["link.fetcher.max.bytes"], 10, 32); err == nil {
			maxBytes = v
		}
		limit := int64(math.MaxInt64)
		if v, err := strconv.ParseInt(link.Configs["link.fetcher.throttle.bytes.per.sec"], 10, 64); err == nil {
			limit = v
		}
		// Kafka's replication quota windows: 11 samples of a second.
		ls = &linkSource{src: src, maxBytes: int32(maxBytes), throttle: quota.NewRate(11, time.Second), limit: limit}
		m.sources[link.ID] = ls
	}
	ls.users++
	ctx, cancel := context.WithCancel(context.Background())
	l := &loop{p: p, link: link.ID, name: link.Name, epoch: epoch, cancel: cancel, restart: make(chan struct{}, 1)}
	l.caughtUp.Store(time.Now().UnixMilli())
	m.loops[tp] = l
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.run(ctx, l, sourceTopic, ls, m.lg.With("link", link.Name, "partition", tp.String(), "source_topic", sourceTopic))
	}()
}

// Unmirror stops copying tp.
func (m *Manager) Unmirror(tp log.TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopLocked(tp)
}

func (m *Manager) stopLocked(tp log.TopicPartition) {
	l := m.loops[tp]
	if l == nil {
		return
	}
	l.cancel()
	delete(m.loops, tp)
	if ls := m.sources[l.link]; ls != nil {
		if ls.users--; ls.users == 0 {
			delete(m.sources, l.link)
			go ls.src.Close() // may wait for requests in flight
		}
	}
}

// Close stops every loop and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for tp := range m.loops {
		m.stopLocked(tp)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// PartitionStatus is the progress of one mirror partition's loop.
type PartitionStatus struct {
	Link, Topic    string
	Partition      int32
	Failing        bool  // its last step failed
	Lag            int64 // source high watermark minus log end, as of the last fetch
	LagMs          int64 // while Lag > 0, how long since the mirror was last caught up; else 0
	Bytes, Records uint64
	Errors         uint64
	Throttled      uint64 // fetches held back by link.fetcher.throttle.bytes.per.sec
}

// Status returns the progress of every loop, by topic and partition.
func (m *Manager) Status() []PartitionStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]PartitionStatus, 0, len(m.loops))
	now := time.Now().UnixMilli()
	for tp, l := range m.loops {
		ps := PartitionStatus{Link: l.name, Topic: tp.Topic, Partition: tp.Partition, Failing: l.failing.Load(),
			Lag: l.lag.Load(), Bytes: l.bytes.Load(), Records: l.records.Load(), Errors: l.errors.Load(), Throttled: l.throttled.Load()}
		if ps.Lag > 0 {
			ps.LagMs = max(now-l.caughtUp.Load(), 0)
		}
		out = append(out, ps)
	}
	slices.SortFunc(out, func(a, b PartitionStatus) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

func (m *Manager) run(ctx context.Context, l *loop, sourceTopic string, ls *linkSource, lg *slog.Logger) {
	st := NewState()
	src := &pipeline{Source: ls.src}
	failures := 0
	for ctx.Err() == nil {
		select {
		case <-l.restart:
			st = NewState()
		default:
		}
		if ls.throttle.Exceeded(ls.limit, time.Now()) {
			// As Kafka's follower throttle: no fetch until this broker's
			// rate through the link falls below the limit (a fetch the
			// pipeline already has in flight still lands).
			l.throttled.Add(1)
			t := time.NewTimer(throttleCheck)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		res, err := Step(ctx, l.p, sourceTopic, &st, src, ls.maxBytes)
		ls.throttle.Record(int64(res.Appended), time.Now())
		l.bytes.Add(uint64(res.Appended))
		l.records.Add(uint64(res.Records))
		if res.SourceHW >= 0 {
			lag := res.SourceHW - l.p.Log().LogEndOffset()
			if lag <= 0 {
				l.caughtUp.Store(time.Now().UnixMilli())
			}
			l.lag.Store(lag)
		}
		l.failing.Store(err != nil && !errors.Is(err, partition.ErrNotMirroring))
		if res.Truncated {
			lg.Warn("the mirror's log was cut back to follow its source (the source truncated its log, or deleted what the mirror lacked)",
				"log_end", l.p.Log().LogEndOffset())
		}
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, partition.ErrNotMirroring) {
			st = NewState()
		} else {
			l.errors.Add(1)
			if failures++; failures == 1 || failures%100 == 0 {
				lg.Info("copying from the source failed; retrying", "err", err, "failures", failures)
			}
		}
		t := time.NewTimer(m.backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
