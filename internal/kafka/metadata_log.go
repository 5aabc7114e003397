package kafka

// On controller listeners, Fetch of __cluster_metadata-0 serves observers
// (brokers that are not voters) the committed metadata log, as KRaft does:
// only the leader answers (others say NOT_LEADER_OR_FOLLOWER with the
// current leader), only batches below the high watermark are returned, a
// fetch with nothing new waits up to max wait for a commit, and an offset
// older than the log start is answered with the id of the newest snapshot,
// which the observer then reads with FetchSnapshot.

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/quorum"
)

// MetadataLog is the controller's committed metadata log.
type MetadataLog interface {
	Leadership() (leader, epoch int32)
	ReadCommitted(offset int64, maxBytes int) (sl log.Slice, hw, logStart, snapEnd int64, snapEpoch int32, err error)
	WaitCommitted(ctx context.Context, offset int64)
	ObserverFetched(id int32, offset int64)
	ReadSnapshot(endOffset int64, epoch int32, position int64, maxBytes int) ([]byte, int64, error)
}

// isMetadataFetch reports a fetch of the metadata log on a controller
// listener.
func (s *Server) isMetadataFetch(r *kmsg.FetchRequest) bool {
	return s.deps.MetadataLog != nil && len(r.Topics) == 1 && r.Topics[0].Topic == metadata.LogTopic
}

func (s *Server) handleMetadataFetch(req *Request, r *kmsg.FetchRequest) *Reply {
	read := func() (*kmsg.FetchResponse, []section, bool) {
		resp := respFor(req).(*kmsg.FetchResponse)
		st := kmsg.NewFetchResponseTopic()
		st.Topic = metadata.LogTopic
		var sections []section
		ready := false
		for _, rp := range r.Topics[0].Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.RecordBatches = rp.Partition, []byte{}
			leader, epoch := s.deps.MetadataLog.Leadership()
			switch {
			case rp.Partition != 0:
				sp.ErrorCode, ready = kerr.UnknownTopicOrPartition.Code, true
			case leader != s.cfg.Broker.NodeID:
				sp.ErrorCode, ready = kerr.NotLeaderForPartition.Code, true
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
			default:
				if r.ReplicaID >= 0 && !s.isVoter(r.ReplicaID) {
					s.deps.MetadataLog.ObserverFetched(r.ReplicaID, rp.FetchOffset)
				}
				sl, hw, start, snapEnd, snapEpoch, err := s.deps.MetadataLog.ReadCommitted(rp.FetchOffset, int(min(rp.PartitionMaxBytes, max(r.MaxBytes, 1))))
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, hw, start
				switch {
				case errors.Is(err, quorum.ErrSnapshotNeeded) && snapEnd >= 0:
					sp.SnapshotID.EndOffset, sp.SnapshotID.Epoch, ready = snapEnd, snapEpoch, true
				case err != nil:
					sp.ErrorCode, ready = errorCode(err), true
				case sl.Size > 0:
					sp.RecordBatches = sectionMarker(len(sections))
					sections = append(sections, section{file: sl.File, pos: sl.Pos, size: sl.Size})
					ready = true
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
		return resp, sections, ready
	}
	if r.ClusterID != nil && *r.ClusterID != s.cfg.ClusterID {
		resp := respFor(req).(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return done(resp)
	}
	resp, sections, ready := read()
	if ready || r.MaxWaitMillis <= 0 {
		return &Reply{ready: closedChan, resp: resp, sections: sections}
	}
	rep := newReply()
	go func() {
		ctx, cancel := context.WithTimeout(req.Ctx, time.Duration(r.MaxWaitMillis)*time.Millisecond)
		defer cancel()
		s.deps.MetadataLog.WaitCommitted(ctx, r.Topics[0].Partitions[0].FetchOffset)
		resp, sections, _ := read()
		rep.sections = sections
		rep.complete(resp)
	}()
	return rep
}

// FetchSnapshot, versions 0-1, on controller listeners: a chunk of a
// metadata snapshot file, for an observer whose offset is older than the
// leader's log start. A snapshot the leader no longer has is
// SNAPSHOT_NOT_FOUND; a node that is not the leader says so.
func (s *Server) handleFetchSnapshot(req *Request) *Reply {
	r := req.Body.(*kmsg.FetchSnapshotRequest)
	resp := respFor(req).(*kmsg.FetchSnapshotResponse)
	if !s.authorizedCluster(req, acl.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	if r.ClusterID != nil && *r.ClusterID != s.cfg.ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return done(resp)
	}
	leader, epoch := s.deps.MetadataLog.Leadership()
	for _, rt := range r.Topics {
		st := kmsg.NewFetchSnapshotResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchSnapshotResponseTopicPartition()
			sp.Partition, sp.SnapshotID.EndOffset, sp.SnapshotID.Epoch = rp.Partition, rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch
			switch {
			case rt.Topic != metadata.LogTopic || rp.Partition != 0:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case leader != s.cfg.Broker.NodeID:
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
			default:
				data, size, err := s.deps.MetadataLog.ReadSnapshot(rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch, rp.Position, int(max(r.MaxBytes, 1)))
				switch {
				case errors.Is(err, io.EOF):
					sp.ErrorCode = kerr.SnapshotNotFound.Code
				case err != nil:
					sp.ErrorCode = kerr.PositionOutOfRange.Code
				default:
					sp.Bytes, sp.Size, sp.Position = data, size, rp.Position
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}

func (s *Server) isVoter(id int32) bool {
	for _, v := range s.cfg.Broker.QuorumVoters {
		if v.ID == id {
			return true
		}
	}
	return false
}
