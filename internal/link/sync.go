package link

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/acl"
	"weir/internal/metadata"
)

// Link property defaults (Confluent's).
const (
	DefaultTopicConfigSyncMs = 5000
)

// linkMs is a link's millisecond property, or def when unset.
func linkMs(l *metadata.Link, key string, def int64) time.Duration {
	if n, err := strconv.ParseInt(l.Configs[key], 10, 64); err == nil && n > 0 {
		return time.Duration(n) * time.Millisecond
	}
	return time.Duration(def) * time.Millisecond
}

// MirrorUpdate is a mirror topic's source as the sync task last read it:
// its synced configs and partition count.
type MirrorUpdate struct {
	Topic, SourceTopic string
	Configs            map[string]string
	Partitions         int32
}

// SyncConfig is what a Syncer needs of its node.
type SyncConfig struct {
	// Image is the active controller's metadata image.
	Image func() *metadata.Image
	// Active reports whether this node is the active controller.
	Active func() bool
	// SyncMirror has the controller make a mirror topic's synced configs
	// and partition count the source's (controller.SyncMirror).
	SyncMirror func(MirrorUpdate) error
	// CreateMirror has the controller create a mirror topic of the link
	// named link (controller.CreateMirrorTopic), with the default
	// replication factor.
	CreateMirror func(link string, u MirrorUpdate) error
	// CreateACLs and DeleteACLs have the controller create and delete
	// ACLs (controller.CreateAcls, DeleteAcls).
	CreateACLs func([]acl.Binding) error
	DeleteACLs func([]acl.Filter) error
	// Local returns a new client of this cluster (for consumer offsets).
	Local  func() (*kgo.Client, error)
	Logger *slog.Logger
}

// Syncer runs the periodic tasks of every cluster link on the active
// controller's node, one goroutine per link with its own client of the
// source: every topic.config.sync.ms it has the controller follow the
// configs and partition counts of the link's mirrors' sources (and, with
// auto.create.mirror.topics.enable, create the mirrors of the source
// topics the filters select); with consumer.offset.sync.enable, every
// consumer.offset.sync.ms it copies the selected groups' offsets
// (syncOffsets); with acl.sync.enable, every acl.sync.ms it makes the
// ACLs acl.filters selects the source's (syncACLs). It does nothing on
// the other nodes; a newly active controller starts the tasks over.
type Syncer struct {
	cfg SyncConfig
	// reconcile is how often the set of tasks is matched to the links.
	reconcile time.Duration
}

// NewSyncer returns a syncer; Run runs it.
func NewSyncer(cfg SyncConfig) *Syncer {
	return &Syncer{cfg: cfg, reconcile: 500 * time.Millisecond}
}

// Run runs the link tasks while this node is the active controller, until
// ctx ends.
func (s *Syncer) Run(ctx context.Context) {
	type task struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	tasks := map[metadata.Uuid]task{}
	stop := func(id metadata.Uuid) {
		t := tasks[id]
		t.cancel()
		<-t.done
		delete(tasks, id)
	}
	defer func() {
		for id := range tasks {
			stop(id)
		}
	}()
	tick := time.NewTicker(s.reconcile)
	defer tick.Stop()
	for {
		links := map[metadata.Uuid]*metadata.Link{}
		if s.cfg.Active() {
			links = s.cfg.Image().Links
		}
		for id, t := range tasks {
			ended := false
			select {
			case <-t.done: // it could not start its client: start it again
				ended = true
			default:
			}
			if ended || links[id] == nil {
				stop(id)
			}
		}
		for id, l := range links {
			if _, ok := tasks[id]; !ok {
				tctx, cancel := context.WithCancel(ctx)
				t := task{cancel: cancel, done: make(chan struct{})}
				tasks[id] = t
				go func() {
					defer close(t.done)
					s.runLink(tctx, l)
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// runLink runs one link's tasks until ctx ends.
func (s *Syncer) runLink(ctx context.Context, l *metadata.Link) {
	lg := s.cfg.Logger.With("link", l.Name)
	src, err := newClientSource(l, "weir-cluster-link-sync-"+l.Name)
	if err != nil {
		// Run starts the task again once it ended.
		lg.Warn("cannot start the sync client of a cluster link; trying again in 30 s", "err", err)
		t := time.NewTimer(30 * time.Second)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		return
	}
	defer src.Close()
	type job struct {
		every time.Duration
		next  time.Time
		run   func()
	}
	jobs := []*job{{every: linkMs(l, "topic.config.sync.ms", DefaultTopicConfigSyncMs), run: func() { s.syncTopics(ctx, l, src, lg) }}}
	if offsetSync(l) {
		jobs = append(jobs, &job{every: linkMs(l, "consumer.offset.sync.ms", DefaultConsumerOffsetSyncMs), run: func() {
			if err := s.syncOffsetsWith(ctx, l, src); err != nil && ctx.Err() == nil {
				lg.Info("syncing consumer offsets failed; retrying at the next pass", "err", err)
			}
		}})
	}
	if aclSync(l) {
		jobs = append(jobs, &job{every: linkMs(l, "acl.sync.ms", DefaultACLSyncMs), run: func() {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := syncACLs(cctx, s.cfg.Image(), l, src, s.cfg.CreateACLs, s.cfg.DeleteACLs); err != nil && ctx.Err() == nil {
				lg.Info("syncing ACLs failed; retrying at the next pass", "err", err)
			}
		}})
	}
	for {
		next := time.Time{}
		for _, j := range jobs {
			if now := time.Now(); !now.Before(j.next) {
				j.run()
				j.next = now.Add(j.every)
			}
			if next.IsZero() || j.next.Before(next) {
				next = j.next
			}
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// SyncOffsets runs one consumer offset sync of the link named name now
// (for a promotion, which waits for it); nothing when the link does not
// sync offsets. It must run on the active controller's node.
func (s *Syncer) SyncOffsets(ctx context.Context, name string) error {
	l := s.cfg.Image().LinkByName(name)
	if l == nil {
		return fmt.Errorf("cluster link '%s' does not exist", name)
	}
	if !offsetSync(l) {
		return nil
	}
	src, err := newClientSource(l, "weir-cluster-link-sync-"+l.Name)
	if err != nil {
		return err
	}
	defer src.Close()
	return s.syncOffsetsWith(ctx, l, src)
}

func (s *Syncer) syncOffsetsWith(ctx context.Context, l *metadata.Link, src *clientSource) error {
	dst, err := s.cfg.Local()
	if err != nil {
		return err
	}
	defer dst.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return syncOffsets(cctx, s.cfg.Image(), l, src, dst)
}

// mirrorsOf returns the mirror topics of link id that still follow their
// source, by mirror topic name, with their source topic names.
func mirrorsOf(img *metadata.Image, id metadata.Uuid) map[string]string {
	out := map[string]string{}
	for tid, m := range img.Mirrors {
		if t := img.TopicsByID.Get(tid); t != nil && m.LinkID == id && m.ReadOnly() {
			out[t.Name] = m.SourceTopic
		}
	}
	return out
}

// syncTopics has the controller follow the configs and partition counts
// of the link's mirror topics' sources, and create the mirrors of the
// source topics auto.create.mirror.topics.filters selects.
func (s *Syncer) syncTopics(ctx context.Context, l *metadata.Link, src *clientSource, lg *slog.Logger) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	mirrors := mirrorsOf(s.cfg.Image(), l.ID)
	var sources []string
	for _, st := range mirrors {
		if !slices.Contains(sources, st) {
			sources = append(sources, st)
		}
	}
	if len(sources) > 0 {
		slices.Sort(sources)
		info, err := src.describe(cctx, sources)
		if err != nil {
			if ctx.Err() == nil {
				lg.Info("cannot read the source topics' configs", "err", err)
			}
			return
		}
		for topic, st := range mirrors {
			ti := info[st]
			if ti.err != nil {
				lg.Info("cannot read a mirror's source topic", "topic", topic, "source_topic", st, "err", ti.err)
				continue
			}
			if err := s.cfg.SyncMirror(MirrorUpdate{Topic: topic, SourceTopic: st, Configs: ti.configs, Partitions: ti.partitions}); err != nil && ctx.Err() == nil {
				lg.Info("cannot follow a mirror's source topic", "topic", topic, "source_topic", st, "err", err)
			}
		}
	}
	if l.Configs["auto.create.mirror.topics.enable"] == "true" {
		if err := s.autoCreate(cctx, l, src, lg); err != nil && ctx.Err() == nil {
			lg.Info("cannot auto-create mirror topics", "err", err)
		}
	}
}

// autoCreate creates the mirror (named cluster.link.prefix + its name) of
// every source topic auto.create.mirror.topics.filters selects that has
// none here; a name already taken by a topic here is left alone. The
// source's internal topics are never selected.
func (s *Syncer) autoCreate(ctx context.Context, l *metadata.Link, src *clientSource, lg *slog.Logger) error {
	filters, err := ParseFilters("topicFilters", l.Configs["auto.create.mirror.topics.filters"])
	if err != nil || len(filters) == 0 {
		return err
	}
	tds, err := kadm.NewClient(src.cl).ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing the source's topics: %w", err)
	}
	img := s.cfg.Image()
	prefix := l.Configs["cluster.link.prefix"]
	var want []string
	for _, t := range tds.Names() {
		if filters.Match(t) && img.Topics.Get(prefix+t) == nil {
			want = append(want, t)
		}
	}
	if len(want) == 0 {
		return nil
	}
	info, err := src.describe(ctx, want)
	if err != nil {
		return err
	}
	for _, st := range want {
		ti := info[st]
		if ti.err == nil {
			ti.err = s.cfg.CreateMirror(l.Name, MirrorUpdate{Topic: prefix + st, SourceTopic: st, Configs: ti.configs, Partitions: ti.partitions})
		}
		if ti.err != nil {
			lg.Info("cannot auto-create a mirror topic", "source_topic", st, "err", ti.err)
		} else {
			lg.Info("auto-created a mirror topic", "topic", prefix+st, "source_topic", st)
		}
	}
	return nil
}
