package controller

// AlterPartition: a partition leader asks to change its ISR (and, after an
// unclean election, to mark itself recovered). Checks, in Kafka's order:
//
//	request:   not the active controller             quorum.ErrNotLeader
//	           BrokerID unregistered or BrokerEpoch  STALE_BROKER_EPOCH
//	           not its registration's epoch
//	topic:     unknown topic id                      UNKNOWN_TOPIC_ID
//	partition: unknown                               UNKNOWN_TOPIC_OR_PARTITION
//	           leader or partition epoch newer than  NOT_CONTROLLER (this
//	           the controller's                      controller is behind)
//	           leader epoch older                    FENCED_LEADER_EPOCH
//	           requester is not the leader           INVALID_REQUEST
//	           partition epoch older                 INVALID_UPDATE_VERSION
//	           new ISR not distinct replicas, or     INVALID_REQUEST
//	           without the leader
//	           RECOVERING with an ISR of more than   INVALID_REQUEST
//	           one, RECOVERED -> RECOVERING, or an
//	           unknown recovery state
//	           an ISR member unregistered, fenced,   INELIGIBLE_REPLICA
//	           shutting down, or (v3) of another
//	           broker epoch than given (-1: any)
//
// A valid request is answered with the partition's state after the change
// (its current state when nothing changes). An ISR that completes an
// ongoing reassignment completes it in the same commit; when that moves
// the leadership away the answer is NEW_LEADER_ELECTED.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// AlterPartition handles AlterPartition (versions 2 and 3: topics by id).
// A request-level failure is returned as the error (see the file comment);
// per-partition outcomes are in the response, at the request's version.
func (c *Controller) AlterPartition(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	return run(c, func(img *metadata.Image) (result[*kmsg.AlterPartitionResponse], error) {
		return c.alterPartition(img, req)
	})
}

// alterPartition builds AlterPartition.
func (c *Controller) alterPartition(img *metadata.Image, req *kmsg.AlterPartitionRequest) (result[*kmsg.AlterPartitionResponse], error) {
	var plan result[*kmsg.AlterPartitionResponse]
	if b := img.Brokers[req.BrokerID]; b == nil || b.Epoch != req.BrokerEpoch {
		return plan, kerr.StaleBrokerEpoch
	}
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.SetVersion(req.Version)
	electionFor, minISR := c.onlineElection(img), c.elrMinISR(img)
	var recs []metadata.Record
	for _, rt := range req.Topics {
		out := kmsg.NewAlterPartitionResponseTopic()
		out.TopidID = rt.TopicID
		for _, rp := range rt.Partitions {
			res := kmsg.NewAlterPartitionResponseTopicPartition()
			res.Partition = rp.Partition
			t := img.TopicsByID.Get(metadata.Uuid(rt.TopicID))
			if t == nil {
				res.ErrorCode = kerr.UnknownTopicID.Code
				out.Partitions = append(out.Partitions, res)
				continue
			}
			if code := checkAlterPartition(img, t, req.BrokerID, req.Version, rp); code != nil {
				res.ErrorCode = code.Code
				out.Partitions = append(out.Partitions, res)
				continue
			}
			p := t.Partitions[rp.Partition]
			ch := newChange(img, t.ID, p, minISR(t.Name))
			ch.isr, ch.recovery, ch.election = newISR(req.Version, rp), rp.LeaderRecoveryState, electionFor(t.Name)
			if rec := ch.record(); rec != nil {
				next, _, err := img.Apply([]metadata.Record{rec}, img.Offset)
				if err != nil {
					return plan, err
				}
				img, recs = next, append(recs, rec)
				t = img.TopicsByID.Get(t.ID)
				p = t.Partitions[p.ID]
				if rec.Leader != -2 && rec.Leader != req.BrokerID {
					res.ErrorCode = kerr.NewLeaderElected.Code
					out.Partitions = append(out.Partitions, res)
					continue
				}
			}
			res.LeaderID, res.LeaderEpoch, res.ISR = p.Leader, p.LeaderEpoch, slices.Clone(p.ISR)
			res.LeaderRecoveryState, res.PartitionEpoch = p.LeaderRecoveryState, p.PartitionEpoch
			out.Partitions = append(out.Partitions, res)
		}
		resp.Topics = append(resp.Topics, out)
	}
	plan.Records, plan.Answer = recs, resp
	return plan, nil
}

// checkAlterPartition returns the error code of one partition's request,
// or nil when it is valid (see the file comment).
func checkAlterPartition(img *metadata.Image, t *metadata.Topic, broker int32, version int16, rp kmsg.AlterPartitionRequestTopicPartition) *kerr.Error {
	p := t.Partitions[rp.Partition]
	switch {
	case p == nil:
		return kerr.UnknownTopicOrPartition
	case rp.LeaderEpoch > p.LeaderEpoch, rp.PartitionEpoch > p.PartitionEpoch:
		return kerr.NotController
	case rp.LeaderEpoch < p.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	case broker != p.Leader:
		return kerr.InvalidRequest
	case rp.PartitionEpoch < p.PartitionEpoch:
		return kerr.InvalidUpdateVersion
	}
	isr := newISR(version, rp)
	for i, r := range isr {
		if !p.HasReplica(r) || slices.Contains(isr[:i], r) {
			return kerr.InvalidRequest
		}
	}
	switch {
	case !slices.Contains(isr, p.Leader):
		return kerr.InvalidRequest
	case rp.LeaderRecoveryState != recovered && rp.LeaderRecoveryState != recovering:
		return kerr.InvalidRequest
	case rp.LeaderRecoveryState == recovering && len(isr) > 1:
		return kerr.InvalidRequest
	case p.LeaderRecoveryState == recovered && rp.LeaderRecoveryState == recovering:
		return kerr.InvalidRequest
	}
	for i, r := range isr {
		b := img.Brokers[r]
		epoch := int64(-1)
		if version >= 3 {
			epoch = rp.NewEpochISR[i].BrokerEpoch
		}
		if b == nil || b.Fenced || b.InControlledShutdown || (epoch != -1 && epoch != b.Epoch) {
			return kerr.IneligibleReplica
		}
	}
	return nil
}

// newISR is the ISR a partition's request asks for.
func newISR(version int16, rp kmsg.AlterPartitionRequestTopicPartition) []int32 {
	if version < 3 {
		return rp.NewISR
	}
	isr := make([]int32, len(rp.NewEpochISR))
	for i, b := range rp.NewEpochISR {
		isr[i] = b.BrokerID
	}
	return isr
}
