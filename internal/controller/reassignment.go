package controller

// Partition reassignment, as Kafka's controller runs it:
//
//  1. AlterPartitionReassignments with target replicas: the replicas become
//     the target followed by the current replicas left out of it (in id
//     order), AddingReplicas target - current, RemovingReplicas current -
//     target, all in one PartitionChangeRecord. The brokers of the adding
//     replicas create them and catch up as followers.
//  2. Once the ISR, less the removing replicas, holds every target replica
//     (checked on every change of the partition: AlterPartition, elections,
//     and at once in step 1), the replicas become the target, the ISR loses
//     the removing replicas, adding and removing clear, and a leader being
//     removed hands over to the first target replica in the ISR.
//  3. Target null cancels: the replicas go back to the original ones (the
//     current less the adding), the ISR loses the adding replicas, and a
//     leader is elected among what is left. When no ISR member would be
//     left, the first original replica takes over alone (RECOVERING), an
//     unclean election refused (INVALID_REPLICA_ASSIGNMENT) unless the
//     topic allows those.
//
// A new target while a reassignment is in progress starts over from the
// current replicas (which include the earlier adding ones).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// ReassignmentsResult is the answer of AlterPartitionReassignments: one
// outcome per requested partition, by topic, in request order.
type ReassignmentsResult struct {
	Committed
	Topics []TopicResult
}

// AlterPartitionReassignments starts, replaces or cancels reassignments
// (see the file comment). Errors: UNKNOWN_TOPIC_OR_PARTITION;
// INVALID_REPLICA_ASSIGNMENT for an empty target, a repeated broker or an
// unregistered one; NO_REASSIGNMENT_IN_PROGRESS for cancelling none.
func (c *Controller) AlterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) (ReassignmentsResult, error) {
	return run(c, func(img *metadata.Image) (result[ReassignmentsResult], error) {
		return c.alterPartitionReassignments(img, req)
	})
}

// alterPartitionReassignments builds AlterPartitionReassignments.
func (c *Controller) alterPartitionReassignments(img *metadata.Image, req *kmsg.AlterPartitionAssignmentsRequest) (result[ReassignmentsResult], error) {
	res := result[ReassignmentsResult]{Answer: ReassignmentsResult{Committed: Committed{img.Offset}}}
	electionFor := c.onlineElection(img)
	var out []TopicResult
	var recs userRecords
	for _, rt := range req.Topics {
		tr := TopicResult{Topic: rt.Topic}
		for _, rp := range rt.Partitions {
			rec, err := c.reassign(img, rt.Topic, rp, electionFor)
			if rec != nil {
				if err := recs.add(rec); err != nil {
					return res, err
				}
				next, _, aerr := img.Apply([]metadata.Record{rec}, img.Offset)
				if aerr != nil {
					return res, aerr
				}
				img = next
			}
			tr.Partitions = append(tr.Partitions, PartitionResult{rp.Partition, err})
		}
		out = append(out, tr)
	}
	res.Records, res.Answer.Topics = recs, out
	return res, nil
}

// reassign plans one partition's reassignment change (nil: none needed).
func (c *Controller) reassign(img *metadata.Image, topic string, rp kmsg.AlterPartitionAssignmentsRequestTopicPartition, electionFor func(string) election) (*metadata.PartitionChangeRecord, error) {
	t := img.Topics.Get(topic)
	if t == nil || t.Partitions[rp.Partition] == nil {
		return nil, topicErr(kerr.UnknownTopicOrPartition, "Unable to find partition %s-%d.", topic, rp.Partition)
	}
	p := t.Partitions[rp.Partition]
	ch := newChange(img, t.ID, p, c.elrMinISR(img)(topic))
	if rp.Replicas == nil {
		if !inReassignment(p) {
			return nil, topicErr(kerr.NoReassignmentInProgress, "No partition reassignment is in progress for %s-%d.", topic, p.ID)
		}
		ch.replicas, ch.isr = without(p.Replicas, p.Adding), without(p.ISR, p.Adding)
		ch.adding, ch.removing, ch.election = nil, nil, electionFor(topic)
		if len(ch.isr) == 0 {
			if ch.election != electUnclean {
				return nil, topicErr(kerr.InvalidReplicaAssignment, "Unable to revert the reassignment of %s-%d because it would require an unclean leader election.", topic, p.ID)
			}
			// The first original replica takes over alone: mark it
			// RECOVERING, as any leader elected from outside the ISR.
			ch.isr, ch.recovery = ch.replicas[:1], recovering
		}
		return ch.record(), nil
	}
	target := rp.Replicas
	if len(target) == 0 {
		return nil, topicErr(kerr.InvalidReplicaAssignment, "The target replica list of %s-%d is empty.", topic, p.ID)
	}
	for i, b := range target {
		if slices.Contains(target[:i], b) {
			return nil, topicErr(kerr.InvalidReplicaAssignment, "The target replicas of %s-%d name broker %d more than once.", topic, p.ID, b)
		}
		if img.Brokers[b] == nil {
			return nil, topicErr(kerr.InvalidReplicaAssignment, "The target replicas of %s-%d include broker %d, but no such broker is registered.", topic, p.ID, b)
		}
	}
	removing := slices.Sorted(slices.Values(without(p.Replicas, target)))
	ch.adding = slices.Sorted(slices.Values(without(target, p.Replicas)))
	ch.removing = removing
	ch.replicas = append(slices.Clone(target), removing...)
	return ch.record(), nil
}

// Reassignment is a partition's reassignment in progress.
type Reassignment struct {
	Topic                      string
	Partition                  int32
	Replicas, Adding, Removing []int32
}

// ListPartitionReassignments lists the reassignments in progress: of every
// partition when topics is nil, else of the partitions named (unknown ones
// and those not reassigning are left out). Topics come in name order when
// listing all, else in request order; partitions in id or request order.
func (c *Controller) ListPartitionReassignments(topics []kmsg.ListPartitionReassignmentsRequestTopic) ([]Reassignment, error) {
	return run(c, func(img *metadata.Image) (result[[]Reassignment], error) {
		return result[[]Reassignment]{Answer: listPartitionReassignments(img, topics)}, nil
	})
}

// listPartitionReassignments builds ListPartitionReassignments, which
// commits nothing.
func listPartitionReassignments(img *metadata.Image, topics []kmsg.ListPartitionReassignmentsRequestTopic) []Reassignment {
	var out []Reassignment
	add := func(t *metadata.Topic, p *metadata.Partition) {
		if p != nil && inReassignment(p) {
			out = append(out, Reassignment{Topic: t.Name, Partition: p.ID, Replicas: slices.Clone(p.Replicas),
				Adding: append([]int32{}, p.Adding...), Removing: append([]int32{}, p.Removing...)})
		}
	}
	if topics == nil {
		for _, name := range sortedTopicNames(img) {
			t := img.Topics.Get(name)
			for _, p := range t.SortedPartitions() {
				add(t, p)
			}
		}
		return out
	}
	for _, rt := range topics {
		if t := img.Topics.Get(rt.Topic); t != nil {
			for _, id := range rt.Partitions {
				add(t, t.Partitions[id])
			}
		}
	}
	return out
}
