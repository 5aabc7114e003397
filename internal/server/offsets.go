package server

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/group"
	"weir/internal/kafka"
	"weir/internal/log"
	"weir/internal/partition"
	"weir/internal/record"
)

// offsetsLog is __consumer_offsets for the group coordinator: appends go
// through the partition as any produce with acks=all does, and loading
// reads the partition's committed records.
type offsetsLog struct {
	parts         *partition.Manager
	commitTimeout time.Duration // offsets.commit.timeout.ms
	now           func() time.Time
}

func (o *offsetsLog) partition(p int32) *partition.Partition {
	return o.parts.Get(log.TopicPartition{Topic: kafka.OffsetsTopic, Partition: p})
}

func (o *offsetsLog) Append(w group.Write, done func(int64, error)) {
	part := o.partition(w.Partition)
	if part == nil {
		done(-1, kerr.NotLeaderForPartition)
		return
	}
	now := o.now().UnixMilli()
	rs := make([]record.Record, len(w.Records))
	for i, r := range w.Records {
		rs[i] = record.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	h := record.NewBatchHeader()
	h.BaseTimestamp, h.MaxTimestamp = now, now
	opts := partition.AppendOptions{Acks: partition.AcksAll}
	if w.Transactional {
		// The coordinator's append: the log checks the producer epoch,
		// not the sequence (0, as validation wants one with a producer).
		h.Attributes |= record.TransactionalAttributes
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = w.ProducerID, w.ProducerEpoch, 0
		opts.Origin = log.OriginCoordinator
		opts.VerifyTxn, opts.Guard = w.VerifyTxn, log.VerificationGuard(w.Guard)
	}
	b, err := record.Build(h, rs, 0)
	if err != nil {
		done(-1, kafka.KafkaError(err))
		return
	}
	res, err := part.AppendWith(b, opts, nil)
	if err != nil {
		done(-1, kafka.KafkaError(err))
		return
	}
	if res.Wait == nil {
		done(res.BaseOffset, nil)
		return
	}
	go func() {
		t := time.NewTimer(o.commitTimeout)
		defer t.Stop()
		select {
		case err := <-res.Wait:
			done(res.BaseOffset, kafka.KafkaError(err))
		case <-t.C:
			done(-1, kerr.RequestTimedOut)
		}
	}()
}

// ReadAll returns the partition's records up to its high watermark,
// control records included, each with its offset and its batch's
// transactional state.
func (o *offsetsLog) ReadAll(p int32) ([]group.LogRecord, error) {
	part := o.partition(p)
	if part == nil {
		return nil, kerr.NotLeaderForPartition
	}
	var out []group.LogRecord
	err := scanRecords(fmt.Sprintf("__consumer_offsets-%d", p), part.Log(), part.HighWatermark(), func(b record.Batch, r *record.Record) error {
		attrs := b.Attributes()
		out = append(out, group.LogRecord{Record: group.Record{Key: r.Key, Value: r.Value},
			Offset: b.BaseOffset() + int64(r.OffsetDelta), Transactional: attrs.Transactional(),
			Control: attrs.Control(), ProducerID: b.ProducerID()})
		return nil
	})
	return out, err
}
