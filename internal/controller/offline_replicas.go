package controller

// Offline replicas (KIP-858's AssignReplicasToDirs): a broker whose log of
// a partition cannot be opened or created assigns that replica to
// DirectoryId.LOST, a directory that is never online. As Kafka's
// controller does for an assignment to a directory that is not online
// ("offline-dir-assignment"), the replica leaves the ISR (unless it is its
// last member) and may no longer lead: a leader moves to another live ISR
// member, or the partition goes offline (leader -1) when there is none.
// weir does not record replicas' directories (there is no JBOD placement),
// so LOST is the only directory it takes; another is INVALID_REQUEST.
// Checks, in Kafka's order:
//
//	request:   not the active controller             quorum.ErrNotLeader
//	           BrokerID unregistered or BrokerEpoch  STALE_BROKER_EPOCH
//	           not its registration's epoch
//	directory: not LOST                              INVALID_REQUEST
//	topic:     unknown topic id                      UNKNOWN_TOPIC_ID
//	partition: unknown                               UNKNOWN_TOPIC_OR_PARTITION
//	           the broker is not a replica           NOT_LEADER_OR_FOLLOWER
//
// The replica is offline on its broker until that broker restarts and
// opens the log: then it fetches and rejoins the ISR as any follower, or,
// as the ISR's last member, is elected when the broker is unfenced.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// LostDir is Kafka's DirectoryId.LOST: a replica's directory that is gone.
var LostDir = [16]byte{15: 1}

// offlineReplicas plans AssignReplicasToDirs against img (the broker epoch
// already checked): the records to commit and the answer.
func (c *Controller) offlineReplicas(img *metadata.Image, req *kmsg.AssignReplicasToDirsRequest) ([]metadata.Record, *kmsg.AssignReplicasToDirsResponse, error) {
	resp := kmsg.NewPtrAssignReplicasToDirsResponse()
	resp.SetVersion(req.Version)
	electionFor, minISR := c.onlineElection(img), c.elrMinISR(img)
	var recs []metadata.Record
	for _, rd := range req.Directories {
		od := kmsg.NewAssignReplicasToDirsResponseDirectory()
		od.ID = rd.ID
		for _, rt := range rd.Topics {
			ot := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
			ot.TopicID = rt.TopicID
			t := img.TopicsByID.Get(metadata.Uuid(rt.TopicID))
			for _, rp := range rt.Partitions {
				op := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
				op.Partition = rp.Partition
				var p *metadata.Partition
				if t != nil {
					p = t.Partitions[rp.Partition]
				}
				switch {
				case rd.ID != LostDir:
					op.ErrorCode = kerr.InvalidRequest.Code
				case t == nil:
					op.ErrorCode = kerr.UnknownTopicID.Code
				case p == nil:
					op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case !p.HasReplica(req.BrokerID):
					op.ErrorCode = kerr.NotLeaderForPartition.Code
				default:
					ch := newChange(img, t.ID, p, minISR(t.Name))
					ch.isr, ch.election, ch.offline = without(p.ISR, []int32{req.BrokerID}), electionFor(t.Name), []int32{req.BrokerID}
					if rec := ch.record(); rec != nil {
						recs = append(recs, rec)
						// Later entries for the same partition see this change.
						next, _, err := img.Apply([]metadata.Record{rec}, img.Offset)
						if err != nil {
							return nil, nil, err
						}
						img, t = next, next.TopicsByID.Get(t.ID)
					}
				}
				ot.Partitions = append(ot.Partitions, op)
			}
			od.Topics = append(od.Topics, ot)
		}
		resp.Directories = append(resp.Directories, od)
	}
	return recs, resp, nil
}

// AssignReplicasToDirs handles AssignReplicasToDirs (see the file
// comment). A request-level failure is returned as the error.
func (c *Controller) AssignReplicasToDirs(req *kmsg.AssignReplicasToDirsRequest) (*kmsg.AssignReplicasToDirsResponse, error) {
	return run(c, func(img *metadata.Image) (result[*kmsg.AssignReplicasToDirsResponse], error) {
		if b := img.Brokers[req.BrokerID]; b == nil || b.Epoch != req.BrokerEpoch {
			return result[*kmsg.AssignReplicasToDirsResponse]{}, kerr.StaleBrokerEpoch
		}
		recs, resp, err := c.offlineReplicas(img, req)
		if err != nil {
			return result[*kmsg.AssignReplicasToDirsResponse]{}, err
		}
		return result[*kmsg.AssignReplicasToDirsResponse]{Records: recs, Answer: resp}, nil
	})
}
