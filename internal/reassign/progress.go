// Package reassign holds what more than one front end shows of partition
// reassignments: the bytes each moving replica has caught up, which
// `weir reassign-partitions --execute --wait` draws as bars on a
// terminal and the web console's reassignments page as progress bars.
package reassign

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ReplicaProgress is a replica being added by a reassignment: Have, the
// bytes its broker holds of the partition, and Want, the bytes of the
// partition's largest replica that stays (not being added).
type ReplicaProgress struct {
	Topic      string
	Partition  int32
	Broker     int32
	Have, Want int64
}

// Name is the partition as Kafka's tools print it, "topic-partition".
func (p ReplicaProgress) Name() string { return fmt.Sprintf("%s-%d", p.Topic, p.Partition) }

// Percent is how much of Want the replica has, at most 100; 100 when
// Want is zero (nothing to copy).
func (p ReplicaProgress) Percent() float64 {
	if p.Want <= 0 {
		return 100
	}
	return min(100, 100*float64(p.Have)/float64(p.Want))
}

// Progress reads the replica sizes of the moving partitions from every
// broker (DescribeLogDirs of those partitions only) and returns one entry
// per adding replica, by topic, partition and broker. A log dir that
// fails is left out (its replicas count as holding nothing).
func Progress(ctx context.Context, adm *kadm.Client, moving []kadm.ListPartitionReassignmentsResponse) ([]ReplicaProgress, error) {
	if len(moving) == 0 {
		return nil, nil
	}
	var set kadm.TopicsSet
	for _, m := range moving {
		set.Add(m.Topic, m.Partition)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, err
	}
	type tp struct {
		topic     string
		partition int32
	}
	sizes := map[tp]map[int32]int64{}
	for broker, ds := range dirs {
		for _, d := range ds {
			if d.Err != nil {
				continue
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				k := tp{p.Topic, p.Partition}
				if sizes[k] == nil {
					sizes[k] = map[int32]int64{}
				}
				sizes[k][broker] = max(sizes[k][broker], p.Size)
			})
		}
	}
	moving = slices.Clone(moving)
	sort.Slice(moving, func(i, j int) bool {
		if moving[i].Topic != moving[j].Topic {
			return moving[i].Topic < moving[j].Topic
		}
		return moving[i].Partition < moving[j].Partition
	})
	var out []ReplicaProgress
	for _, m := range moving {
		k := tp{m.Topic, m.Partition}
		var want int64
		for _, b := range m.Replicas {
			if !slices.Contains(m.AddingReplicas, b) {
				want = max(want, sizes[k][b])
			}
		}
		for _, b := range slices.Sorted(slices.Values(m.AddingReplicas)) {
			out = append(out, ReplicaProgress{Topic: m.Topic, Partition: m.Partition, Broker: b, Have: sizes[k][b], Want: want})
		}
	}
	return out, nil
}
