package partition

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"weir/internal/config"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/metrics"
)

// Manager holds the replicas this broker hosts and keeps them in step with
// the metadata image: it creates replicas assigned to the broker, deletes
// removed ones, and applies leadership and config changes.
type Manager struct {
	self   int32
	logs   *log.Manager
	static *config.Broker
	lg     *slog.Logger
	now    func() time.Time

	// recMu orders reconciling with the image (Load, Apply: exclusive)
	// against adopting the logs opened at start-up (Adopt: shared, as
	// each touches only its own partition).
	recMu sync.RWMutex
	img   *metadata.Image // the image last reconciled with; under recMu

	// cfgs caches the topic configurations resolved from cfgImg for the
	// logs opened at start-up (resolving one is costly, and a topic has
	// many partitions).
	cfgMu  sync.Mutex
	cfgImg *metadata.Image
	cfgs   map[string]config.Topic

	mu    sync.RWMutex
	parts map[log.TopicPartition]*Partition
	// loading holds the partitions whose logs were found at start-up and
	// not adopted yet: reconciling leaves them to Adopt.
	loading   map[log.TopicPartition]bool
	listeners []LeadershipListener
	repl      *Replication
	fetcher   Fetcher
	mirrorer  Mirrorer
	stats     *metrics.BrokerTopicStats
}

// SetTopicStats makes the replicas count their topics' BrokerTopicMetrics
// in b; call it before Load.
func (m *Manager) SetTopicStats(b *metrics.BrokerTopicStats) { m.stats = b }

// Mirrorer runs the link fetchers of the mirror partitions this broker
// leads (internal/link).
type Mirrorer interface {
	// Mirror starts (or keeps) copying p from sourceTopic through link.
	Mirror(p *Partition, link *metadata.Link, sourceTopic string)
	// Unmirror stops copying tp.
	Unmirror(tp log.TopicPartition)
}

// SetMirrorer installs the link fetchers active mirror leaders are handed
// to; call it before Load. Without it mirror topics are not copied.
func (m *Manager) SetMirrorer(f Mirrorer) { m.mirrorer = f }

// mirrorState is the mirror state of partition of topic t in img.
func mirrorState(img *metadata.Image, t *metadata.Topic, partition int32) (MirrorState, *metadata.Link, string) {
	mi := img.Mirrors[t.ID]
	if mi == nil {
		return MirrorState{}, nil, ""
	}
	st := MirrorState{ReadOnly: mi.ReadOnly(), Active: mi.State == metadata.MirrorActive}
	if !st.ReadOnly && int(partition) < len(mi.StopEpochs) {
		st.Stopped, st.StopEpoch = true, mi.StopEpochs[partition]
	}
	l := img.Links[mi.LinkID]
	if l != nil {
		st.Link = l.Name
	} else {
		st.Active = false // cannot happen: a link with active mirrors is not deleted
	}
	return st, l, mi.SourceTopic
}

// Fetcher fetches the partitions this broker follows from their leaders.
type Fetcher interface {
	// Follow starts (or keeps) fetching p from leader.
	Follow(p *Partition, leader int32)
	// Unfollow stops fetching tp.
	Unfollow(tp log.TopicPartition)
}

// SetReplication installs the replication hooks every replica gets and
// the fetcher followers are handed to; call it before Load. Without it a
// replica never proposes ISR changes and followers do not fetch.
func (m *Manager) SetReplication(r *Replication, f Fetcher) {
	m.repl, m.fetcher = r, f
}

// MaybeShrinkISRs checks every partition this broker leads for followers
// that fell out of sync (see Partition.MaybeShrinkISR). The broker calls
// it every replica.lag.time.max.ms / 2.
func (m *Manager) MaybeShrinkISRs() {
	for _, p := range m.All() {
		p.MaybeShrinkISR()
	}
}

// LeadershipListener learns when this broker becomes leader of a partition
// (leader true, with the new leader epoch) or stops being its leader. The
// coordinators use it to load and unload their partitions of internal
// topics. It is called from the metadata path and must not block.
type LeadershipListener func(tp log.TopicPartition, leader bool, epoch int32)

// OnLeadership registers l; register before Load.
func (m *Manager) OnLeadership(l LeadershipListener) { m.listeners = append(m.listeners, l) }

func (m *Manager) tellLeadership(tp log.TopicPartition, leader bool, epoch int32) {
	for _, l := range m.listeners {
		l(tp, leader, epoch)
	}
}

// NewManager returns a manager for broker self.
func NewManager(self int32, logs *log.Manager, static *config.Broker, lg *slog.Logger, now func() time.Time) *Manager {
	m := &Manager{self: self, logs: logs, static: static, lg: lg, now: now, parts: map[log.TopicPartition]*Partition{},
		loading: map[log.TopicPartition]bool{}}
	logs.OnOffline(m.offline)
	return m
}

// StartLoading notes the partitions whose logs log.Manager.Scan found:
// until Adopt takes each, Load and Apply leave it alone. Call it before
// Load; then hand Adopt to log.Manager.LoadEach.
func (m *Manager) StartLoading(tps []log.TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tp := range tps {
		m.loading[tp] = true
	}
}

// Loading reports whether tp's log, found at start-up, is not adopted yet.
func (m *Manager) Loading(tp log.TopicPartition) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.loading[tp]
}

// AllAdopted reports whether every log found at start-up was adopted.
func (m *Manager) AllAdopted() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.loading) == 0
}

// Adopt takes a log opened at start-up (or the error that left it
// offline) once Load has run, and brings its replica in step with the
// latest image reconciled: a log the image does not assign here, or of an
// earlier topic with the same name, is deleted (and the replica of the
// new topic created empty), a missing partition.metadata is rewritten,
// and the replica is made leader or follower at once. It is safe to call
// from several goroutines, and while metadata changes are applied.
func (m *Manager) Adopt(tp log.TopicPartition, l *log.Log, openErr error) {
	m.recMu.RLock()
	defer m.recMu.RUnlock()
	m.mu.Lock()
	delete(m.loading, tp)
	m.mu.Unlock()
	img := m.img
	var t *metadata.Topic
	var mp *metadata.Partition
	if t = img.Topics.Get(tp.Topic); t != nil {
		mp = t.Partitions[tp.Partition]
	}
	assigned := mp != nil && mp.HasReplica(m.self)
	var errs []error
	switch {
	case openErr != nil:
		if !assigned {
			errs = append(errs, m.logs.Delete(tp))
		}
		assigned = false // offline: the log manager reported it
	default:
		id, err := l.ReadTopicID()
		if !assigned || (err == nil && id != t.ID) {
			m.lg.Info("deleting stray log", "partition", tp.String())
			errs = append(errs, m.logs.Delete(tp))
		} else if err != nil {
			// A new partition's partition.metadata is not fsynced (see
			// internal/log/dirs.go): a crash may have lost it.
			m.lg.Info("rewriting a missing or torn partition.metadata", "partition", tp.String())
			if err := l.WriteTopicID(t.ID); err != nil {
				errs = append(errs, fmt.Errorf("rewriting partition.metadata of %s: %w", tp, err))
			}
		}
	}
	if assigned {
		errs = append(errs, m.applyPartition(img, t, mp, m.StartupTopicConfig(img, t.Name)))
	}
	if err := errors.Join(errs...); err != nil {
		m.lg.Error("adopting a log opened at start-up", "partition", tp.String(), "err", err)
	}
}

// Get returns the local replica of tp, or nil.
func (m *Manager) Get(tp log.TopicPartition) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.parts[tp]
}

// Offline returns an error wrapping ErrStorage when tp is assigned to this
// broker but its log could not be opened or created (the replica is
// offline until the broker restarts), else nil.
func (m *Manager) Offline(tp log.TopicPartition) error {
	if err := m.logs.Failed(tp); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return nil
}

// AllOffline returns the replicas assigned to this broker whose logs could
// not be opened.
func (m *Manager) AllOffline() []log.TopicPartition { return m.logs.AllFailed() }

// All returns every local replica.
func (m *Manager) All() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

// TopicConfig resolves a topic's effective configuration from the image.
func (m *Manager) TopicConfig(img *metadata.Image, topic string) config.Topic {
	return config.ResolveTopic(img.TopicConfig(topic), img.BrokerConfig(""), img.BrokerConfig(strconv.Itoa(int(m.self))), m.static)
}

// StartupTopicConfig is TopicConfig for the logs opened at start-up:
// each topic's is resolved once per image.
func (m *Manager) StartupTopicConfig(img *metadata.Image, topic string) config.Topic {
	m.cfgMu.Lock()
	if m.cfgImg != img {
		m.cfgImg, m.cfgs = img, map[string]config.Topic{}
	}
	cfg, ok := m.cfgs[topic]
	m.cfgMu.Unlock()
	if ok {
		return cfg
	}
	cfg = m.TopicConfig(img, topic)
	m.cfgMu.Lock()
	if m.cfgImg == img {
		m.cfgs[topic] = cfg
	}
	m.cfgMu.Unlock()
	return cfg
}

// Load reconciles with a whole image (at start-up, and for a snapshot):
// every assigned replica is opened or created, and logs on disk that the
// image does not assign to this broker (stray logs of deleted or moved
// partitions) are deleted. Partitions still loading are left to Adopt.
func (m *Manager) Load(img *metadata.Image) error {
	m.recMu.Lock()
	defer m.recMu.Unlock()
	m.img = img
	var errs []error
	// Stray logs go first: a log of an earlier topic with the same name
	// must not be adopted by the new topic's replica. Offline logs no
	// longer assigned here go too. Adopt sees to logs still loading.
	for _, tp := range m.logs.AllFailed() {
		if m.Loading(tp) {
			continue
		}
		if t := img.Topics.Get(tp.Topic); t == nil || t.Partitions[tp.Partition] == nil || !t.Partitions[tp.Partition].HasReplica(m.self) {
			errs = append(errs, m.logs.Delete(tp))
		}
	}
	for _, l := range m.logs.All() {
		tp := l.TopicPartition()
		if m.Loading(tp) {
			continue
		}
		t := img.Topics.Get(tp.Topic)
		id, err := l.ReadTopicID()
		stray := t == nil || t.Partitions[tp.Partition] == nil || !t.Partitions[tp.Partition].HasReplica(m.self) ||
			(err == nil && id != t.ID)
		if stray {
			m.lg.Info("deleting stray log", "partition", tp.String())
			m.mu.Lock()
			p := m.parts[tp]
			delete(m.parts, tp)
			m.mu.Unlock()
			if p != nil {
				m.stats.Release(p.stats)
			}
			errs = append(errs, m.logs.Delete(tp))
			continue
		}
		if err != nil {
			// A new partition's partition.metadata is not fsynced (see
			// internal/log/dirs.go): a crash may have lost it.
			m.lg.Info("rewriting a missing or torn partition.metadata", "partition", tp.String())
			if err := l.WriteTopicID(t.ID); err != nil {
				errs = append(errs, fmt.Errorf("rewriting partition.metadata of %s: %w", tp, err))
			}
		}
	}
	var changed []*metadata.Partition
	var topics []*metadata.Topic
	for _, t := range img.Topics.All() {
		for _, p := range t.Partitions {
			changed, topics = append(changed, p), append(topics, t)
		}
	}
	return errors.Join(append(errs, m.applyPartitions(img, topics, changed))...)
}

// applyPartitions brings the local replicas of the given partitions
// (parts[i] of topics[i]) in step with img: the logs of new replicas are
// created in one batch (log.Manager.CreateAll), then the partitions are
// applied, the log manager's CreateWorkers at a time.
func (m *Manager) applyPartitions(img *metadata.Image, topics []*metadata.Topic, parts []*metadata.Partition) error {
	var create []log.NewLog
	// Each topic's configuration is resolved once.
	configs := map[string]config.Topic{}
	cfgs := make([]config.Topic, len(parts))
	for i, mp := range parts {
		t := topics[i]
		cfg, ok := configs[t.Name]
		if !ok {
			cfg = m.TopicConfig(img, t.Name)
			configs[t.Name] = cfg
		}
		cfgs[i] = cfg
		tp := log.TopicPartition{Topic: t.Name, Partition: mp.ID}
		if !mp.HasReplica(m.self) || m.Get(tp) != nil || m.logs.Get(tp) != nil || m.Loading(tp) {
			continue
		}
		create = append(create, log.NewLog{TopicPartition: tp, TopicID: t.ID, Config: LogConfig(cfg)})
	}
	m.logs.CreateAll(create)
	errs := make([]error, len(parts))
	m.logs.Parallel(len(parts), func(i int) {
		errs[i] = m.applyPartition(img, topics[i], parts[i], cfgs[i])
	})
	return errors.Join(errs...)
}

// Apply reconciles with the changes of one metadata commit.
func (m *Manager) Apply(img *metadata.Image, d *metadata.Delta) error {
	m.recMu.Lock()
	defer m.recMu.Unlock()
	m.img = img
	var errs []error
	for _, t := range d.DeletedTopics {
		for id := range t.Partitions {
			errs = append(errs, m.remove(log.TopicPartition{Topic: t.Name, Partition: id}))
		}
	}
	var changed []*metadata.Partition
	var topics []*metadata.Topic
	for id, parts := range d.ChangedPartitions {
		t := img.TopicsByID.Get(id)
		if t == nil {
			continue
		}
		for pid := range parts {
			changed, topics = append(changed, t.Partitions[pid]), append(topics, t)
		}
	}
	errs = append(errs, m.applyPartitions(img, topics, changed))
	brokerWide := false
	reconfigured := map[string]bool{}
	for res := range d.ChangedConfigs {
		switch {
		case res.Type == metadata.ResourceTopic:
			reconfigured[res.Name] = true
		case res.Type == metadata.ResourceBroker && (res.Name == "" || res.Name == strconv.Itoa(int(m.self))):
			brokerWide = true
		}
	}
	if brokerWide || len(reconfigured) > 0 {
		m.reconfigure(img, func(topic string) bool { return brokerWide || reconfigured[topic] })
	}
	return errors.Join(errs...)
}

// reconfigure gives the local replicas of the topics for which which holds
// their configuration from img, in one pass over the replicas (a broker
// config change reconfigures every topic), resolving each topic's once.
func (m *Manager) reconfigure(img *metadata.Image, which func(topic string) bool) {
	configs := map[string]config.Topic{}
	for _, p := range m.All() {
		topic := p.tp.Topic
		if !which(topic) || img.Topics.Get(topic) == nil {
			continue
		}
		cfg, ok := configs[topic]
		if !ok {
			cfg = m.TopicConfig(img, topic)
			configs[topic] = cfg
		}
		p.SetConfig(cfg)
	}
}

// applyPartition brings the local replica of mp (of t) in step with img;
// cfg is t's configuration.
func (m *Manager) applyPartition(img *metadata.Image, t *metadata.Topic, mp *metadata.Partition, cfg config.Topic) error {
	tp := log.TopicPartition{Topic: t.Name, Partition: mp.ID}
	if m.Loading(tp) {
		return nil // Adopt applies the image of the time
	}
	if !mp.HasReplica(m.self) {
		return m.remove(tp)
	}
	p := m.Get(tp)
	if p == nil {
		if m.logs.Failed(tp) != nil {
			return nil // offline, already reported
		}
		l, err := m.logs.GetOrCreate(tp, t.ID, LogConfig(cfg))
		if errors.Is(err, log.ErrOffline) {
			return nil // the log manager reported it; Offline tells clients
		}
		if err != nil {
			return fmt.Errorf("creating log %s: %w", tp, err)
		}
		p = New(tp, t.ID, m.self, l, cfg, m.lg, m.now)
		p.stats = m.stats.Acquire(tp.Topic)
		if m.repl != nil {
			p.SetReplication(m.repl)
		}
		m.mu.Lock()
		m.parts[tp] = p
		m.mu.Unlock()
		if m.logs.Get(tp) != l {
			// Its directory could not be made meanwhile, and the log
			// manager's OnOffline found no replica to stop serving.
			m.offline(tp, l)
			return nil
		}
	}
	before := p.State()
	wasLeader := p.IsLeader()
	mirror, link, source := mirrorState(img, t, mp.ID)
	if err := p.Apply(State{Leader: mp.Leader, LeaderEpoch: mp.LeaderEpoch, PartitionEpoch: mp.PartitionEpoch,
		Replicas: mp.Replicas, ISR: mp.ISR, Recovering: mp.LeaderRecoveryState == 1, Mirror: mirror}); err != nil {
		return err
	}
	isLeader := p.IsLeader()
	if m.fetcher != nil {
		if pos, ok := p.FetchPosition(); ok {
			m.fetcher.Follow(p, pos.Leader)
		} else {
			m.fetcher.Unfollow(tp)
		}
	}
	if m.mirrorer != nil {
		if _, ok := p.MirrorPosition(); ok {
			m.mirrorer.Mirror(p, link, source)
		} else {
			m.mirrorer.Unmirror(tp)
		}
	}
	switch {
	case isLeader && (!wasLeader || p.State().LeaderEpoch != before.LeaderEpoch):
		m.tellLeadership(tp, true, p.State().LeaderEpoch)
	case wasLeader && !isLeader:
		m.tellLeadership(tp, false, p.State().LeaderEpoch)
	}
	return nil
}

func (m *Manager) remove(tp log.TopicPartition) error {
	m.mu.Lock()
	if m.loading[tp] {
		m.mu.Unlock()
		return nil // Adopt deletes it
	}
	p := m.parts[tp]
	delete(m.parts, tp)
	m.mu.Unlock()
	if p != nil {
		m.stopServing(tp, p)
		m.stats.Release(p.stats)
	}
	return m.logs.Delete(tp) // an offline log, if p is nil
}

// stopServing makes p, no longer in m.parts, neither leader nor follower:
// its waiters fail and late fetch answers are dropped.
func (m *Manager) stopServing(tp log.TopicPartition, p *Partition) {
	if m.fetcher != nil {
		m.fetcher.Unfollow(tp)
	}
	if m.mirrorer != nil {
		m.mirrorer.Unmirror(tp)
	}
	p.leaderMu.Lock()
	p.mu.Lock()
	wasLeader := p.leader
	p.leader, p.applied = false, false
	p.failWaitersLocked(ErrNotLeader)
	p.notifyLocked()
	p.mu.Unlock()
	p.leaderMu.Unlock()
	if wasLeader {
		m.tellLeadership(tp, false, p.State().LeaderEpoch)
	}
}

// offline stops serving tp if its replica still has l, a log that went
// offline after its creation (log.Manager.OnOffline): clients get
// KAFKA_STORAGE_ERROR (Offline) and the controller hears of it after the
// next heartbeat. A replica with another log (the topic deleted and made
// again meanwhile) is left alone.
func (m *Manager) offline(tp log.TopicPartition, l *log.Log) {
	m.mu.Lock()
	p := m.parts[tp]
	if p == nil || p.Log() != l {
		m.mu.Unlock()
		return
	}
	delete(m.parts, tp)
	m.mu.Unlock()
	m.stopServing(tp, p)
	m.stats.Release(p.stats)
}
