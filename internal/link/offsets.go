package link

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/metadata"
)

// DefaultConsumerOffsetSyncMs is consumer.offset.sync.ms when not set.
const DefaultConsumerOffsetSyncMs = 30000

// offsetSync reports whether the link syncs consumer offsets.
func offsetSync(l *metadata.Link) bool { return l.Configs["consumer.offset.sync.enable"] == "true" }

// syncOffsets copies, once, the committed offsets of the source's
// consumer groups that consumer.group.filters selects, for the partitions
// of the link's read-only mirror topics, into the destination (dst, a
// client of this cluster): with the source's offsets and leader epochs
// (a mirror's offsets and epochs are its source's), capped at the mirror's
// high watermark (an offset the mirror does not have yet would be out of
// range to a consumer moved here; the next pass moves it on). A group
// with members on the destination is skipped: its own commits win (and
// the coordinator refuses a commit from outside an active group anyway).
// Offsets already equal are not committed again.
func syncOffsets(ctx context.Context, img *metadata.Image, l *metadata.Link, src *clientSource, dst *kgo.Client) error {
	filters, err := ParseFilters("groupFilters", l.Configs["consumer.group.filters"])
	if err != nil {
		return err
	}
	mirrors := map[string][]string{} // source topic -> mirror topics
	var mirrorTopics []string
	for topic, st := range mirrorsOf(img, l.ID) {
		mirrors[st] = append(mirrors[st], topic)
		mirrorTopics = append(mirrorTopics, topic)
	}
	if len(mirrors) == 0 || len(filters) == 0 {
		return nil
	}
	sadm, dadm := kadm.NewClient(src.cl), kadm.NewClient(dst)
	listed, err := sadm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("listing the source's groups: %w", err)
	}
	var groups []string
	for _, g := range listed.Groups() {
		if filters.Match(g) {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	slices.Sort(groups)
	ends, err := dadm.ListEndOffsets(ctx, mirrorTopics...)
	if err != nil {
		return fmt.Errorf("the mirrors' high watermarks: %w", err)
	}
	described, err := dadm.DescribeGroups(ctx, groups...)
	if err != nil {
		return fmt.Errorf("describing the groups here: %w", err)
	}
	srcOffsets := sadm.FetchManyOffsets(ctx, groups...)
	dstOffsets := dadm.FetchManyOffsets(ctx, groups...)
	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, g := range groups {
		d, ok := described[g]
		if !ok || d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) || len(d.Members) > 0 {
			continue // active here, or not known to be idle
		}
		so := srcOffsets[g]
		if so.Err != nil {
			fail(fmt.Errorf("group %s's offsets at the source: %w", g, so.Err))
			continue
		}
		have := dstOffsets[g].Fetched
		commit := kadm.Offsets{}
		so.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 {
				return
			}
			for _, topic := range mirrors[o.Topic] {
				end, ok := ends.Lookup(topic, o.Partition)
				if !ok || end.Err != nil {
					continue
				}
				at, epoch := o.At, o.LeaderEpoch
				if at > end.Offset {
					at, epoch = end.Offset, -1
				}
				if h, ok := have.Lookup(topic, o.Partition); ok && h.Err == nil && h.At == at {
					continue
				}
				commit.Add(kadm.Offset{Topic: topic, Partition: o.Partition, At: at, LeaderEpoch: epoch, Metadata: o.Metadata})
			}
		})
		if len(commit) == 0 {
			continue
		}
		res, err := dadm.CommitOffsets(ctx, g, commit)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			fail(fmt.Errorf("committing group %s's offsets here: %w", g, err))
		}
	}
	return firstErr
}
