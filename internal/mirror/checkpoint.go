package mirror

// Checkpoints of flow A->B: every emit.checkpoints.interval.seconds, the
// committed offsets of A's groups (groups, groups.exclude) on topics of the
// topic filter are translated through the flow's offset syncs and written
// to A.checkpoints.internal on B, as MM2's checkpoint task does. A
// checkpoint is written only when its downstream offset advances or the
// group went back upstream. The groups are listed again at each interval.
//
// With sync.group.offsets.enabled, every sync.group.offsets.interval.seconds
// the latest checkpoints are also committed as the groups' offsets on B, as
// MM2's checkpoint task does, but only for groups that are empty or absent
// there (a group consuming on B is never touched) and only forwards.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type checkpointer struct {
	f     *flow
	store *syncStore
	// syncsNext is the read position in the offset-syncs topic.
	syncsNext map[int32]int64
	// last is the latest checkpoint of each group and remote partition.
	last map[string]map[topicPartition]Checkpoint
}

func (f *flow) checkpoints(ctx context.Context) error {
	c := &checkpointer{f: f, store: newSyncStore(), last: map[string]map[topicPartition]Checkpoint{}}
	topic := f.cfg.Policy.CheckpointsTopic(f.cfg.Source)
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	if err := f.ensureTopic(ctx, f.cfg.Target, topic, 1, f.cfg.CheckpointsReplicationFactor, "checkpoints.topic.replication.factor", compact); err != nil {
		return err
	}
	// The checkpoints already written (by weir or MM2), so that a restart
	// neither repeats nor rewinds them.
	if _, err := readTopic(ctx, f.dst, f.dstAdm, topic, nil, func(r *kgo.Record) {
		cp, err := DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			f.log.Warn("unreadable checkpoint skipped", "topic", topic, "offset", r.Offset, "err", err)
			return
		}
		c.remember(cp)
	}); err != nil {
		return err
	}
	if err := c.readSyncs(ctx); err != nil {
		return err
	}
	c.store.readToEnd = true
	t := time.NewTicker(f.cfg.CheckpointsInterval)
	defer t.Stop()
	var syncC <-chan time.Time
	if f.cfg.SyncGroupOffsetsInterval > 0 {
		st := time.NewTicker(f.cfg.SyncGroupOffsetsInterval)
		defer st.Stop()
		syncC = st.C
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err = c.round(ctx, topic); err != nil {
				err = fmt.Errorf("checkpoints not written this round: %w", err)
			}
		case <-syncC:
			if err = c.syncGroupOffsets(ctx); err != nil {
				err = fmt.Errorf("group offsets not synced this round: %w", err)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// As MM2, a failed round is logged and the next one tries again.
			f.log.Warn(err.Error())
		}
	}
}

// syncGroupOffsets commits the latest checkpoints of each group as its
// offsets on the target, where offsetsToSync allows it.
func (c *checkpointer) syncGroupOffsets(ctx context.Context) error {
	listed, err := c.f.dstAdm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("listing the target's groups: %w", err)
	}
	for _, g := range slices.Sorted(mapKeys(c.last)) {
		if !c.f.cfg.Groups.Match(g) {
			continue
		}
		state := ""
		if lg, ok := listed[g]; ok {
			state = lg.State
		}
		committed := map[topicPartition]int64{}
		if state != "" {
			offsets, err := c.f.dstAdm.FetchOffsets(ctx, g)
			if err == nil {
				err = offsets.Error()
			}
			if err != nil {
				return fmt.Errorf("fetching the target's offsets of group %s: %w", g, err)
			}
			offsets.Each(func(o kadm.OffsetResponse) {
				if o.At >= 0 {
					committed[topicPartition{o.Topic, o.Partition}] = o.At
				}
			})
		}
		due := offsetsToSync(c.last[g], state, committed)
		if len(due) == 0 {
			continue
		}
		offs := kadm.Offsets{}
		for _, cp := range due {
			offs.Add(kadm.Offset{Topic: cp.Topic, Partition: cp.Partition, At: cp.DownstreamOffset, LeaderEpoch: -1, Metadata: cp.Metadata})
		}
		r, err := c.f.dstAdm.CommitOffsets(ctx, g, offs)
		if err == nil {
			err = r.Error()
		}
		if err != nil {
			// The group may have become active since it was listed.
			c.f.log.Warn("group offsets not synced", "group", g, "err", err)
			continue
		}
		c.f.log.Debug("group offsets synced", "group", g, "partitions", len(due))
	}
	return nil
}

// offsetsToSync returns the checkpoints of a group to commit on the target:
// none unless the group is empty or absent there (state "", Empty or
// Dead), and of those only the ones ahead of what the group has committed
// there (committed, by remote partition).
func offsetsToSync(cps map[topicPartition]Checkpoint, state string, committed map[topicPartition]int64) []Checkpoint {
	if state != "" && state != "Empty" && state != "Dead" {
		return nil
	}
	var out []Checkpoint
	for tp, cp := range cps {
		if at, ok := committed[tp]; ok && at >= cp.DownstreamOffset {
			continue
		}
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b Checkpoint) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

func (c *checkpointer) remember(cp Checkpoint) {
	m := c.last[cp.Group]
	if m == nil {
		m = map[topicPartition]Checkpoint{}
		c.last[cp.Group] = m
	}
	m[topicPartition{cp.Topic, cp.Partition}] = cp
}

// readSyncs reads the offset syncs written since the last read.
func (c *checkpointer) readSyncs(ctx context.Context) error {
	cl, adm := c.f.syncClient()
	topic := c.f.cfg.OffsetSyncsTopic()
	next, err := readTopic(ctx, cl, adm, topic, c.syncsNext, func(r *kgo.Record) {
		if r.Partition != 0 {
			return // MM2 reads partition 0 only
		}
		s, err := DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			c.f.log.Warn("unreadable offset sync skipped", "topic", topic, "offset", r.Offset, "err", err)
			return
		}
		c.store.add(s)
	})
	if err != nil {
		return err
	}
	c.syncsNext = next
	return nil
}

// round writes the checkpoints due now.
func (c *checkpointer) round(ctx context.Context, topic string) error {
	if err := c.readSyncs(ctx); err != nil {
		return err
	}
	created := time.Now()
	listed, err := c.f.srcAdm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("listing the source's groups: %w", err)
	}
	var recs []*kgo.Record
	var due []Checkpoint
	for _, g := range slices.Sorted(func(yield func(string) bool) {
		for g := range listed {
			if !yield(g) {
				return
			}
		}
	}) {
		if !c.f.cfg.Groups.Match(g) {
			continue
		}
		offsets, err := c.f.srcAdm.FetchOffsets(ctx, g)
		if err == nil {
			err = offsets.Error()
		}
		if err != nil {
			return fmt.Errorf("fetching the offsets of group %s: %w", g, err)
		}
		offsets.Each(func(o kadm.OffsetResponse) {
			if cp, ok := c.checkpoint(g, o); ok {
				due = append(due, cp)
				recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Key: cp.Key(), Value: cp.Value()})
			}
		})
	}
	if len(recs) == 0 {
		return nil
	}
	if err := c.f.dst.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("writing checkpoints: %w", err)
	}
	for _, cp := range due {
		c.remember(cp)
		c.f.metrics.checkpointed(cp.Group, topicPartition{cp.Topic, cp.Partition}, created)
	}
	return nil
}

// checkpoint translates one committed offset, and reports whether it is to
// be written.
func (c *checkpointer) checkpoint(group string, o kadm.OffsetResponse) (Checkpoint, bool) {
	if o.Err != nil || o.At < 0 || !c.f.cfg.Topics.Match(o.Topic) {
		return Checkpoint{}, false
	}
	down, ok := translateOffset(c.store, c.f.copied, topicPartition{o.Topic, o.Partition}, o.At)
	if !ok || down < 0 {
		return Checkpoint{}, false
	}
	cp := Checkpoint{Group: group, Topic: c.remoteName(o.Topic), Partition: o.Partition,
		UpstreamOffset: o.At, DownstreamOffset: down, Metadata: o.Metadata}
	prev, seen := c.last[group][topicPartition{cp.Topic, cp.Partition}]
	if seen && cp.UpstreamOffset >= prev.UpstreamOffset && cp.DownstreamOffset <= prev.DownstreamOffset {
		return Checkpoint{}, false // repeated, or it would move the group back downstream
	}
	return cp, true
}

// remoteName is the name on the target of a source topic: a topic that came
// from the target goes back to its original name.
func (c *checkpointer) remoteName(topic string) string {
	p := c.f.cfg.Policy
	if p.TopicSource(topic) == c.f.cfg.Target {
		return p.OriginalTopic(topic)
	}
	return p.FormatRemoteTopic(c.f.cfg.Source, topic)
}
