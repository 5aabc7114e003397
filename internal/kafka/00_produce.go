package kafka

// Produce, versions 0-11.
//
// v3+ must carry exactly one complete v2 batch per partition
// (INVALID_RECORD otherwise, also for a batch cut short, as Kafka finds no
// batch in it; a magic byte no Kafka writes is CORRUPT_MESSAGE); v0-v2
// carry legacy message sets, converted once to a v2 batch. Each batch is
// validated (CRC, size, offsets, timestamps, keys for compacted topics)
// before anything is written, so a rejected batch leaves the log
// untouched. Partitions of one request are appended in order, and
// requests of one connection are handled one at a time, so pipelined
// batches of an idempotent producer reach the log in the order sent.
// acks=all answers when the high watermark covers the batch, or
// REQUEST_TIMED_OUT after the request's timeout. With acks=0 nothing is
// answered, and an error closes the connection, as Kafka does.
//
// Transactional batches (txn_verify.go) need the request's transactional
// id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition) and
// a single producer (else INVALID_PRODUCER_ID_MAPPING); a batch that would
// open the producer's transaction on a partition is first checked with the
// transaction coordinator when transaction.partition.verification.enable
// (KIP-890): INVALID_TXN_STATE when the partition is not in the
// transaction, NOT_ENOUGH_REPLICAS (retriable) when the coordinator cannot
// say. The log refuses a non-transactional batch of a producer with an
// open transaction (INVALID_TXN_STATE); clients' control batches are
// INVALID_RECORD.
//
// With an authorizer, a request with transactional batches needs WRITE on
// its transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for
// every partition) and each topic WRITE (else TOPIC_AUTHORIZATION_FAILED
// for its partitions, before any other check), as Kafka does.
//
// Internal topics (__consumer_offsets, __transaction_state, and
// __cluster_metadata, which never exists as a topic) are written by the
// coordinators only: a produce to them is INVALID_TOPIC_EXCEPTION ("Cannot
// append to internal topic"), as Kafka answers clients. Kafka lets a
// client whose id is "__admin_client" through; weir does not.

import (
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/metrics"
	"weir/internal/partition"
	"weir/internal/record"
)

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// pendingAck is one partition's acks=all append waiting for the HW.
type pendingAck struct {
	part *kmsg.ProduceResponseTopicPartition
	wait <-chan error
}

// produceEntry is one partition of a produce request on its way to the log.
type produceEntry struct {
	topic string
	rp    *kmsg.ProduceRequestTopicPartition
	sp    *kmsg.ProduceResponseTopicPartition
	p     *partition.Partition
	batch record.Batch
	guard log.VerificationGuard
	err   error
	// counted: the partition goes to the log (authorized, valid acks),
	// so it counts in the BrokerTopicMetrics.
	counted bool
}

func (s *Server) handleProduce(req *Request) *Reply {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := respFor(req).(*kmsg.ProduceResponse)
	acks := r.Acks
	badAcks := acks != partition.AcksNone && acks != partition.AcksLeader && acks != partition.AcksAll
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)

	// The response slices are sized up front so pointers into them stay
	// valid for the acks=all waiters.
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(r.Topics))
	var entries []*produceEntry
	for ti := range r.Topics {
		rt := &r.Topics[ti]
		st := &resp.Topics[ti]
		denied := !s.authorized(req, acl.OpWrite, acl.ResourceTopic, rt.Topic)
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for pi := range rt.Partitions {
			e := &produceEntry{topic: rt.Topic, rp: &rt.Partitions[pi], sp: &st.Partitions[pi]}
			e.sp.Default()
			e.sp.Partition, e.sp.BaseOffset, e.sp.LogAppendTime, e.sp.LogStartOffset = e.rp.Partition, -1, -1, -1
			switch {
			case denied:
				// The batch is still read: a transactional one makes
				// the transactional id's check apply (checkTxnProduce).
				e.batch, _ = produceBatch(req.Version, e.rp.Records)
				e.err = kerr.TopicAuthorizationFailed
			case badAcks:
				e.err = kerr.InvalidRequiredAcks
			default:
				e.p, e.batch, e.err = s.producePartition(req.Version, rt.Topic, e.rp)
				e.counted = true
			}
			entries = append(entries, e)
		}
	}
	verifyTxn := s.checkTxnProduce(req, r, entries)
	var pending []pendingAck
	failed := false
	for _, e := range entries {
		if e.err == nil {
			var wait <-chan error
			if wait, e.err = s.produceOne(e, acks, verifyTxn, scratch); wait != nil {
				pending = append(pending, pendingAck{part: e.sp, wait: wait})
			}
		}
		if e.err != nil {
			s.setProduceError(e.sp, e.topic, e.rp.Partition, e.err)
		}
		if e.counted {
			s.countProduce(e)
		}
		failed = failed || e.sp.ErrorCode != 0
	}
	if acks == partition.AcksNone {
		return &Reply{ready: closedChan, none: true, closeConn: failed}
	}
	if len(pending) == 0 {
		return done(resp)
	}
	rep := newReply()
	s.reqs.Waiting(false, 1)
	go s.awaitAcks(rep, resp, pending, time.Duration(r.TimeoutMillis)*time.Millisecond)
	return rep
}

func (s *Server) awaitAcks(rep *Reply, resp *kmsg.ProduceResponse, pending []pendingAck, timeout time.Duration) {
	defer s.reqs.Waiting(false, -1)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	expired := false
	for _, p := range pending {
		var err error
		if expired {
			select {
			case err = <-p.wait:
			default:
				err = kerr.RequestTimedOut
			}
		} else {
			select {
			case err = <-p.wait:
			case <-timer.C:
				expired, err = true, kerr.RequestTimedOut
			}
		}
		if err != nil {
			p.part.ErrorCode = errorCode(err)
			p.part.ErrorMessage = errorMessage(err)
		}
	}
	rep.complete(resp)
}

// countProduce counts a partition of a Produce request in its topic's
// BrokerTopicMetrics as Kafka's ReplicaManager does: every one handed to
// the log, the records and bytes of an appended batch (at the append,
// before acks=all is met), the bytes of one too large, and a failure for
// any error but those Kafka expects (notProduceFailure).
func (s *Server) countProduce(e *produceEntry) {
	tc := s.unattributed()
	if e.p != nil {
		tc = e.p.Stats()
	}
	tc.ProduceRequested()
	if e.err == nil {
		tc.Produced(int(e.batch.NumRecords()), len(e.rp.Records))
		return
	}
	switch code := e.sp.ErrorCode; code {
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		tc.Rejected(len(e.rp.Records))
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.CorruptMessage.Code,
		kerr.KafkaStorageError.Code, kerr.UnknownTopicID.Code:
	default:
		tc.ProduceFailed()
	}
}

// unattributed counts what belongs to no local replica.
func (s *Server) unattributed() *metrics.TopicCounters {
	if s.deps.Metrics == nil {
		return nil
	}
	return s.deps.Metrics.Topics.Unattributed()
}

// producePartition finds a partition's leader replica and its batch.
func (s *Server) producePartition(version int16, topic string, rp *kmsg.ProduceRequestTopicPartition) (*partition.Partition, record.Batch, error) {
	if internalTopics[topic] || topic == metadata.LogTopic {
		return nil, nil, &codedError{kerr.InvalidTopicException, "Cannot append to internal topic " + topic}
	}
	p, err := s.leaderPartition(s.deps.Metadata.Image(), log.TopicPartition{Topic: topic, Partition: rp.Partition})
	if err != nil {
		return nil, nil, err
	}
	b, err := produceBatch(version, rp.Records)
	return p, b, err
}

// produceOne appends one partition's batch and fills its response. It
// returns a channel when the append waits for acks=all.
func (s *Server) produceOne(e *produceEntry, acks int16, verifyTxn bool, scratch *[]byte) (<-chan error, error) {
	res, err := e.p.AppendWith(e.batch, partition.AppendOptions{Acks: acks, VerifyTxn: verifyTxn, Guard: e.guard}, scratch)
	if err != nil {
		return nil, err
	}
	e.sp.BaseOffset, e.sp.LogAppendTime, e.sp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
	return res.Wait, nil
}

// produceBatch extracts the one batch a partition's records must hold.
func produceBatch(version int16, records []byte) (record.Batch, error) {
	if len(records) == 0 {
		return nil, errors.Join(record.ErrInvalidRecord, errors.New("produce request has no records for the partition"))
	}
	if version < 3 {
		if len(records) > record.MagicOffset && records[record.MagicOffset] < 2 {
			return record.ConvertLegacy(records, 64<<20)
		}
		return nil, errors.Join(record.ErrInvalidRecord, errors.New("produce v0-v2 must carry magic 0 or 1 message sets"))
	}
	b, rest, err := record.Next(records)
	if errors.Is(err, record.ErrShort) {
		// A batch cut short is no batch at all: Kafka's iterator finds
		// none and answers INVALID_RECORD, which clients do not retry
		// (they would retry CORRUPT_MESSAGE).
		return nil, errors.Join(record.ErrInvalidRecord, errors.New("produce requests of version 3 or higher must have at least one complete record batch per partition"))
	}
	if errors.Is(err, record.ErrMagic) {
		// A magic no Kafka version writes makes the batch corrupt to
		// Kafka; a legacy magic is merely not allowed here.
		if m := int8(records[record.MagicOffset]); m < 0 || m > record.CurrentMagic {
			return nil, errors.Join(record.ErrCorrupt, err)
		}
	}
	if err != nil {
		return nil, errors.Join(record.ErrInvalidRecord, err)
	}
	if len(rest) != 0 {
		return nil, errors.Join(record.ErrInvalidRecord, errors.New("produce requests of version 3 or higher must carry exactly one record batch per partition"))
	}
	return b, nil
}

func (s *Server) setProduceError(sp *kmsg.ProduceResponseTopicPartition, topic string, part int32, err error) {
	sp.ErrorCode = errorCode(err)
	sp.ErrorMessage = errorMessage(err)
	sp.BaseOffset, sp.LogAppendTime = -1, -1
	switch sp.ErrorCode {
	case kerr.InvalidRecord.Code:
		sp.ErrorRecords = []kmsg.ProduceResponseTopicPartitionErrorRecord{{RelativeOffset: 0, ErrorMessage: sp.ErrorMessage}}
	case kerr.NotLeaderForPartition.Code:
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leaderOf(s.deps.Metadata.Image(), topic, part)
	case kerr.UnknownServerError.Code:
		s.lg.Error("produce failed", "topic", topic, "partition", part, "err", err)
	}
}
