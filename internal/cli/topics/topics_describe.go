package topics

// weir topics --describe.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
)

// partitionInfo is one partition as --describe prints it.
type partitionInfo struct {
	id                int32
	leader            int32 // -1: none
	replicas, isr     []int32
	elr, lastKnownELR []int32 // nil: N/A
}

// describedTopic is one topic of --describe.
type describedTopic struct {
	name       string
	id         [16]byte
	partitions []partitionInfo
}

// describeTopicPartitions describes names (sorted) with
// DescribeTopicPartitions, paging with its cursor as Kafka's admin client
// does.
func describeTopicPartitions(ctx context.Context, tc *tool.Client, names []string, limit int32) (map[string]*describedTopic, error) {
	out := map[string]*describedTopic{}
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		for _, n := range names {
			if cursor == nil || n >= cursor.Topic {
				rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				rt.Topic = n
				req.Topics = append(req.Topics, rt)
			}
		}
		resp, err := req.RequestWith(ctx, tc.Kgo)
		if err != nil {
			return nil, err
		}
		for _, t := range resp.Topics {
			if t.Topic == nil {
				continue
			}
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return nil, tool.KafkaError(err, nil)
			}
			dt := out[*t.Topic]
			if dt == nil {
				dt = &describedTopic{name: *t.Topic, id: t.TopicID}
				out[*t.Topic] = dt
			}
			for _, p := range t.Partitions {
				dt.partitions = append(dt.partitions, partitionInfo{id: p.Partition, leader: p.LeaderID, replicas: p.Replicas, isr: p.ISR,
					elr: nonNil(p.EligibleLeaderReplicas), lastKnownELR: nonNil(p.LastKnownELR)})
			}
		}
		if resp.NextCursor == nil {
			return out, nil
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

func describeTopics(ctx context.Context, tc *tool.Client, cmd *cobra.Command, f *topicsFlags) error {
	md, err := tc.Admin.Metadata(ctx)
	if err != nil {
		return err
	}
	var names []string
	if f.topicID != "" && f.topicID != "AAAAAAAAAAAAAAAAAAAAAA" {
		id, err := base64.RawURLEncoding.DecodeString(f.topicID)
		if err != nil || len(id) != 16 {
			return fmt.Errorf("Invalid topic id: %s", f.topicID)
		}
		for _, name := range md.Topics.Names() {
			if td := md.Topics[name]; [16]byte(td.ID) == [16]byte(id) && !(f.noInternal && (td.IsInternal || internalTopics[name])) {
				names = append(names, name)
			}
		}
		if len(names) == 0 && !f.ifExists {
			return fmt.Errorf("TopicId '%s' does not exist as expected", f.topicID)
		}
	} else {
		if names, err = filterTopics(md, f, f.topic != ""); err != nil {
			return err
		}
		if err := ensureTopicExists(names, f, !f.ifExists); err != nil {
			return err
		}
	}
	if len(names) == 0 {
		return nil
	}

	var described map[string]*describedTopic
	supported, err := tc.Supports(ctx, 75)
	if err != nil {
		return err
	}
	if supported {
		if described, err = describeTopicPartitions(ctx, tc, names, f.partitionLimit); err != nil {
			return err
		}
	} else {
		described = map[string]*describedTopic{}
		for _, name := range names {
			td := md.Topics[name]
			if td.Err != nil {
				return tool.KafkaError(td.Err, nil)
			}
			dt := &describedTopic{name: name, id: td.ID}
			for _, p := range td.Partitions.Sorted() {
				dt.partitions = append(dt.partitions, partitionInfo{id: p.Partition, leader: p.Leader, replicas: p.Replicas, isr: p.ISR})
			}
			described[name] = dt
		}
	}

	rcs, err := tc.Admin.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return err
	}
	configs := map[string]kadm.ResourceConfig{}
	for _, rc := range rcs {
		configs[rc.Name] = rc
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	var all kadm.TopicsSet
	for _, dt := range described {
		for _, p := range dt.partitions {
			all.Add(dt.name, p.id)
		}
	}
	reassignments := map[string]map[int32]kadm.ListPartitionReassignmentsResponse{}
	if ls, err := tc.Admin.ListPartitionReassignments(ctx, all); err == nil {
		ls.Each(func(r kadm.ListPartitionReassignmentsResponse) {
			if reassignments[r.Topic] == nil {
				reassignments[r.Topic] = map[int32]kadm.ListPartitionReassignmentsResponse{}
			}
			reassignments[r.Topic][r.Partition] = r
		})
	} else if !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(err, kerr.UnsupportedVersion) {
		return err
	}

	has := cmd.Flags().Changed
	reportAny := has("under-replicated-partitions") || has("under-min-isr-partitions") || has("at-min-isr-partitions") || has("unavailable-partitions")
	var b strings.Builder
	for _, name := range names {
		dt := described[name]
		rc, ok := configs[name]
		if dt == nil || !ok {
			return fmt.Errorf("no description of topic %s", name)
		}
		if rc.Err != nil {
			return tool.KafkaError(rc.Err, &rc.ErrMessage)
		}
		slices.SortFunc(dt.partitions, func(a, b partitionInfo) int { return int(a.id - b.id) })
		var overrides []string
		minISR := 1
		for _, c := range rc.Configs {
			if c.Key == "min.insync.replicas" && c.Value != nil {
				if n, err := strconv.Atoi(*c.Value); err == nil {
					minISR = n
				}
			}
			if c.Source != kmsg.ConfigSourceDefaultConfig {
				v := "null"
				if c.Value != nil {
					v = *c.Value
				}
				overrides = append(overrides, c.Key+"="+v)
			}
		}
		if !reportAny && (!f.withOverrides || len(overrides) > 0) && len(dt.partitions) > 0 {
			first := dt.partitions[0]
			b.WriteString("Topic: " + name)
			if dt.id != [16]byte{} {
				b.WriteString("\tTopicId: " + base64.RawURLEncoding.EncodeToString(dt.id[:]))
			}
			fmt.Fprintf(&b, "\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n", len(dt.partitions),
				replicationFactor(first, reassignments[name]), strings.Join(overrides, ","))
		}
		if f.withOverrides {
			continue
		}
		for _, p := range dt.partitions {
			ra, moving := reassignments[name][p.id]
			hasLeader := p.leader >= 0 && live[p.leader]
			if reportAny {
				rf := replicationFactor(p, reassignments[name])
				show := (f.underReplicated && rf-len(p.isr) > 0) ||
					(f.unavailable && !hasLeader) ||
					(f.underMin && (!hasLeader || len(p.isr) < minISR)) ||
					(f.atMin && len(p.isr) == minISR)
				if !show {
					continue
				}
			}
			leader := "none"
			if hasLeader {
				leader = tool.Itoa(int64(p.leader))
			}
			fmt.Fprintf(&b, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s", name, p.id, leader, joinIDs(p.replicas), joinIDs(p.isr))
			if moving {
				fmt.Fprintf(&b, "\tAdding Replicas: %s\tRemoving Replicas: %s", joinIDs(ra.AddingReplicas), joinIDs(ra.RemovingReplicas))
			}
			if p.elr != nil {
				b.WriteString("\tElr: " + joinIDs(p.elr))
			} else {
				b.WriteString("\tElr: N/A")
			}
			if p.lastKnownELR != nil {
				b.WriteString("\tLastKnownElr: " + joinIDs(p.lastKnownELR))
			} else {
				b.WriteString("\tLastKnownElr: N/A")
			}
			b.WriteByte('\n')
		}
	}
	_, err = io.WriteString(cmd.OutOrStdout(), b.String())
	return err
}

// replicationFactor is a partition's replica count, without the replicas
// a reassignment in progress is adding.
func replicationFactor(p partitionInfo, moving map[int32]kadm.ListPartitionReassignmentsResponse) int {
	ra, ok := moving[p.id]
	if !ok {
		return len(p.replicas)
	}
	changing := append(slices.Clone(ra.AddingReplicas), ra.RemovingReplicas...)
	for _, r := range p.replicas {
		if slices.Contains(changing, r) {
			return len(ra.Replicas) - len(ra.AddingReplicas)
		}
	}
	return len(p.replicas)
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = tool.Itoa(int64(id))
	}
	return strings.Join(s, ",")
}
