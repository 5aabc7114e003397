package kafka

// WriteTxnMarkers, versions 0-1.
//
// Transaction coordinators end transactions with it. For each marker and
// partition a COMMIT or ABORT control batch of the producer is appended to
// the leader replica here, as the coordinator's append with acks=all
// (Kafka's appendRecords with requiredAcks=-1 and origin COORDINATOR): the
// partition is answered once the high watermark covers the marker, or with
// REQUEST_TIMED_OUT after request.timeout.ms. A partition not hosted here
// answers UNKNOWN_TOPIC_OR_PARTITION, one hosted but not led
// NOT_LEADER_OR_FOLLOWER. A marker whose producer epoch is older than the
// producer's answers INVALID_PRODUCER_EPOCH, one from an older coordinator
// epoch than the producer's last marker TRANSACTION_COORDINATOR_FENCED;
// neither is written, so a late marker never ends a newer transaction. For
// __consumer_offsets partitions the group coordinator is told of a marker
// once it is committed (Groups.TxnMarker), before the answer.
//
// Not served: v2 (Kafka 4.2, KIP-1228's transaction version per marker).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
)

// markerWait is one partition's marker waiting for the high watermark.
type markerWait struct {
	part       *kmsg.WriteTxnMarkersResponseMarkerTopicPartition
	wait       <-chan error // nil: already committed
	group      bool         // a __consumer_offsets partition
	producerID int64
	commit     bool
	offset     int64
}

func (s *Server) handleWriteTxnMarkers(req *Request) *Reply {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := respFor(req).(*kmsg.WriteTxnMarkersResponse)
	// Sized up front: the waits keep pointers into the slices.
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(r.Markers))
	var waits []markerWait
	denied := !s.authorizedCluster(req, acl.OpClusterAction)
	for mi, m := range r.Markers {
		rm := &resp.Markers[mi]
		rm.Default()
		rm.ProducerID = m.ProducerID
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for ti, t := range m.Topics {
			rt := &rm.Topics[ti]
			rt.Default()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for pi, part := range t.Partitions {
				rp := &rt.Partitions[pi]
				rp.Default()
				rp.Partition = part
				if denied {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					continue
				}
				tp := log.TopicPartition{Topic: t.Topic, Partition: part}
				p := s.deps.Partitions.Get(tp)
				if p == nil && s.deps.Partitions.Offline(tp) != nil {
					rp.ErrorCode = kerr.KafkaStorageError.Code
					continue
				}
				if p == nil {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					continue
				}
				res, err := p.AppendMarker(m.ProducerID, m.ProducerEpoch, log.Marker{Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch})
				if err != nil {
					s.markerError(rp, t.Topic, err)
					continue
				}
				waits = append(waits, markerWait{part: rp, wait: res.Wait, group: t.Topic == OffsetsTopic && s.deps.Groups != nil,
					producerID: m.ProducerID, commit: m.Committed, offset: res.BaseOffset})
			}
		}
	}
	if len(waits) == 0 {
		return done(resp)
	}
	rep := newReply()
	go s.awaitMarkers(rep, resp, waits)
	return rep
}

// awaitMarkers answers once every marker is committed or failed, telling
// the group coordinator of the committed __consumer_offsets markers first.
func (s *Server) awaitMarkers(rep *Reply, resp *kmsg.WriteTxnMarkersResponse, waits []markerWait) {
	timeout := s.cfg.Broker.RequestTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	expired := false
	for _, w := range waits {
		var err error
		if w.wait != nil {
			if expired {
				select {
				case err = <-w.wait:
				default:
					err = kerr.RequestTimedOut
				}
			} else {
				select {
				case err = <-w.wait:
				case <-timer.C:
					expired, err = true, kerr.RequestTimedOut
				}
			}
		}
		if err != nil {
			s.markerError(w.part, "", err)
			continue
		}
		if w.group {
			s.deps.Groups.TxnMarker(w.part.Partition, w.producerID, w.commit, w.offset)
		}
	}
	rep.complete(resp)
}

func (s *Server) markerError(rp *kmsg.WriteTxnMarkersResponseMarkerTopicPartition, topic string, err error) {
	rp.ErrorCode = errorCode(err)
	if rp.ErrorCode == kerr.UnknownServerError.Code || rp.ErrorCode == kerr.KafkaStorageError.Code {
		s.lg.Error("writing a transaction marker failed", "topic", topic, "partition", rp.Partition, "err", err)
	}
}
