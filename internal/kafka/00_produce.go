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

import (
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/log"
	"weir/internal/partition"
	"weir/internal/record"
)

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// pendingAck is one partition's acks=all append waiting for the HW.
type pendingAck struct {
	part *kmsg.ProduceResponseTopicPartition
	wait <-chan error
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
	var pending []pendingAck
	failed := false
	for ti, rt := range r.Topics {
		st := &resp.Topics[ti]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for pi, rp := range rt.Partitions {
			sp := &st.Partitions[pi]
			sp.Default()
			sp.Partition, sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = rp.Partition, -1, -1, -1
			if badAcks {
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			} else if wait, err := s.produceOne(req, rt.Topic, rp, acks, sp, scratch); err != nil {
				s.setProduceError(sp, rt.Topic, rp.Partition, err)
			} else if wait != nil {
				pending = append(pending, pendingAck{part: sp, wait: wait})
			}
			failed = failed || sp.ErrorCode != 0
		}
	}
	if acks == partition.AcksNone {
		return &Reply{ready: closedChan, none: true, closeConn: failed}
	}
	if len(pending) == 0 {
		return done(resp)
	}
	rep := newReply()
	go s.awaitAcks(rep, resp, pending, time.Duration(r.TimeoutMillis)*time.Millisecond)
	return rep
}

func (s *Server) awaitAcks(rep *Reply, resp *kmsg.ProduceResponse, pending []pendingAck, timeout time.Duration) {
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

// produceOne appends one partition's records and fills its response. It
// returns a channel when the append waits for acks=all.
func (s *Server) produceOne(req *Request, topic string, rp kmsg.ProduceRequestTopicPartition, acks int16, sp *kmsg.ProduceResponseTopicPartition, scratch *[]byte) (<-chan error, error) {
	p := s.deps.Partitions.Get(log.TopicPartition{Topic: topic, Partition: rp.Partition})
	if p == nil {
		img := s.deps.Metadata.Image()
		if t := img.Topics[topic]; t != nil && t.Partitions[rp.Partition] != nil {
			return nil, partition.ErrNotLeader
		}
		return nil, kerr.UnknownTopicOrPartition
	}
	batch, err := produceBatch(req.Version, rp.Records)
	if err != nil {
		return nil, err
	}
	res, err := p.Append(batch, acks, scratch)
	if err != nil {
		return nil, err
	}
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
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
