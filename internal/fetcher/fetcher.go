// Package fetcher is follower replication: for each leader broker this
// broker follows partitions of, num.replica.fetchers goroutines each send
// one Fetch at a time carrying all their partitions of that leader, and
// hand the answers to the partitions (append, truncate on divergence,
// restart behind the leader's log start).
//
// A partition whose fetch fails is left out of the fetches for
// replica.fetch.backoff.ms; the metadata image, not the fetcher, decides
// when it follows another leader.
package fetcher

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"weir/internal/log"
	"weir/internal/nodeclient"
	"weir/internal/partition"
	"weir/internal/quota"
)

// Config is the follower side of the broker configuration.
type Config struct {
	Self              int32
	NumFetchers       int           // num.replica.fetchers
	MaxWait           time.Duration // replica.fetch.wait.max.ms
	MinBytes          int32         // replica.fetch.min.bytes
	ResponseMaxBytes  int32         // replica.fetch.response.max.bytes
	PartitionMaxBytes int32         // replica.fetch.max.bytes
	Backoff           time.Duration // replica.fetch.backoff.ms
	SocketTimeout     time.Duration // replica.socket.timeout.ms
	// BrokerEpoch is this broker's current registration epoch.
	BrokerEpoch func() int64
	// Address is a broker's inter-broker endpoint (host:port), as the
	// current metadata image has it.
	Address func(id int32) (string, bool)
	// Quota throttles fetching for replicas listed in
	// follower.replication.throttled.replicas (nil: never).
	Quota  *quota.Replication
	Dial   nodeclient.Dialer
	Logger *slog.Logger
}

// Manager assigns followed partitions to fetchers.
type Manager struct {
	cfg Config
	lg  *slog.Logger

	mu       sync.Mutex
	fetchers map[fetcherKey]*fetcher
	assigned map[log.TopicPartition]fetcherKey
	closed   bool
}

type fetcherKey struct {
	leader int32
	id     int
}

// New returns a manager with no fetchers; Follow starts them.
func New(cfg Config) *Manager {
	cfg.NumFetchers = max(cfg.NumFetchers, 1)
	return &Manager{cfg: cfg, lg: cfg.Logger, fetchers: map[fetcherKey]*fetcher{}, assigned: map[log.TopicPartition]fetcherKey{}}
}

// Follow makes p fetched from leader, moving it from another fetcher if
// it followed another leader.
func (m *Manager) Follow(p *partition.Partition, leader int32) {
	tp := p.TopicPartition()
	key := fetcherKey{leader: leader, id: fetcherID(tp, m.cfg.NumFetchers)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if old, ok := m.assigned[tp]; ok {
		if old == key {
			m.fetchers[key].wake()
			return
		}
		m.removeLocked(tp, old)
	}
	f := m.fetchers[key]
	if f == nil {
		f = newFetcher(m, key.leader)
		m.fetchers[key] = f
		go f.run()
	}
	m.assigned[tp] = key
	f.add(p)
}

// Unfollow stops fetching tp.
func (m *Manager) Unfollow(tp log.TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if key, ok := m.assigned[tp]; ok {
		m.removeLocked(tp, key)
	}
}

func (m *Manager) removeLocked(tp log.TopicPartition, key fetcherKey) {
	delete(m.assigned, tp)
	f := m.fetchers[key]
	if f.remove(tp) == 0 {
		f.stop()
		delete(m.fetchers, key)
	}
}

// Lag is how far tp's follower replica trails its leader's high
// watermark as of its last fetch (0 when not following).
func (m *Manager) Lag(tp log.TopicPartition) int64 {
	m.mu.Lock()
	key, ok := m.assigned[tp]
	var f *fetcher
	if ok {
		f = m.fetchers[key]
	}
	m.mu.Unlock()
	if f == nil {
		return 0
	}
	return f.lag(tp)
}

// Close stops every fetcher and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	fs := make([]*fetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fs = append(fs, f)
	}
	m.fetchers, m.assigned = map[fetcherKey]*fetcher{}, map[log.TopicPartition]fetcherKey{}
	m.mu.Unlock()
	for _, f := range fs {
		f.stop()
		<-f.done
	}
}

// fetcherID spreads a leader's partitions over num.replica.fetchers.
func fetcherID(tp log.TopicPartition, n int) int {
	h := fnv.New32a()
	h.Write([]byte(tp.Topic))
	return int((h.Sum32()*31 + uint32(tp.Partition)) % uint32(n))
}

// wait sleeps for d unless ctx ends first; it reports whether to go on.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
