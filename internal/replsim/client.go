package replsim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
	"weir/internal/partition"
	"weir/internal/record"
)

// producer is an idempotent producer with one batch in flight
// (max.in.flight.requests.per.connection=1): it retries a batch, with the
// same producer epoch and sequence, until it is answered without error,
// asking a broker for the leader when told it asked the wrong one. After
// OUT_OF_ORDER_SEQUENCE_NUMBER it bumps its epoch and starts over at
// sequence 0 (KIP-360).
type producer struct {
	s       *Sim
	name    string
	pid     int64
	epoch   int16
	acks    int16
	nextIdx int   // the next batch's index; record values name it
	nextSeq int32 // the next batch's base sequence
	cur     *pbatch
	attempt uint64
	leader  int32
	acked   []ackedBatch
}

// pbatch is a batch the producer owns; data is its copy of the bytes.
type pbatch struct {
	idx      int
	seq      int32
	epoch    int16
	n        int
	data     []byte
	attempts int
}

// ackedBatch is a batch acknowledged to the producer.
type ackedBatch struct {
	idx    int
	offset int64
	n      int
}

func newProducer(s *Sim, name string, pid int64, acks int16) *producer {
	return &producer{s: s, name: name, pid: pid, acks: acks, leader: -1}
}

// value is record i of batch idx.
func (c *producer) value(idx, i int) string { return fmt.Sprintf("%s-%d-%d", c.name, idx, i) }

// next starts a new batch, unless the cluster is healing.
func (c *producer) next() {
	if c.cur != nil || c.s.healing {
		return
	}
	c.cur = &pbatch{idx: c.nextIdx, n: 1 + c.s.rng.IntN(3)}
	c.nextIdx++
	c.build(c.nextSeq, c.epoch)
	c.nextSeq += int32(c.cur.n)
	c.send()
}

// build encodes the current batch with a sequence and epoch.
func (c *producer) build(seq int32, epoch int16) {
	b := c.cur
	b.seq, b.epoch = seq, epoch
	now := c.s.now.UnixMilli()
	h := record.NewBatchHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = c.pid, epoch, seq
	h.BaseTimestamp, h.MaxTimestamp = now, now
	recs := make([]record.Record, b.n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte(c.value(b.idx, i))}
	}
	data, err := record.Build(h, recs, 0)
	if err != nil {
		c.s.fail("%s: building a batch: %v", c.name, err)
		return
	}
	b.data = data
}

// send sends the current batch to the leader the producer knows.
func (c *producer) send() {
	if c.cur == nil {
		return
	}
	if c.leader < 0 {
		c.refreshLeader()
	}
	if c.leader < 0 {
		b := c.cur
		c.attempt = 0
		c.s.after(clientBackoff, clientID, c.name+": retry", func() {
			if c.cur == b && c.attempt == 0 {
				c.send()
			}
		})
		return
	}
	c.attempt = c.s.nextID()
	c.cur.attempts++
	id, b := c.attempt, c.cur
	req := &produceReq{c: c, attempt: id, data: slices.Clone(b.data), acks: c.acks}
	to := c.s.brokers[c.leader]
	label := fmt.Sprintf("produce %s batch %d (seq %d epoch %d, try %d) to %d", c.name, b.idx, b.seq, b.epoch, b.attempts, to.id)
	c.s.send(clientID, to.id, label, func() { to.handleProduce(req) })
	c.s.after(clientTimeout, clientID, c.name+": request timeout", func() {
		if c.attempt == id && c.cur == b {
			c.leader = -1
			c.send()
		}
	})
}

// refreshLeader asks a random reachable broker for the partition's leader,
// as a client's metadata request does: the answer may be stale.
func (c *producer) refreshLeader() {
	c.leader = -1
	var ids []int32
	for _, b := range c.s.brokers[1:] {
		if b.up && !b.paused() && !c.s.isCut(clientID, b.id) {
			ids = append(ids, b.id)
		}
	}
	if len(ids) == 0 {
		return
	}
	b := c.s.brokers[ids[c.s.rng.IntN(len(ids))]]
	if t := b.img.Topics.Get(topic.Topic); t != nil && t.Partitions[topic.Partition] != nil {
		c.leader = t.Partitions[topic.Partition].Leader
	}
}

// answered takes a produce answer from broker from, which led (or
// thought it led) in epoch.
func (c *producer) answered(from, epoch int32, attempt uint64, info log.AppendInfo, err error) {
	if attempt != c.attempt || c.cur == nil {
		return // an earlier attempt's answer
	}
	b := c.cur
	c.attempt = 0
	retry := func(d time.Duration, refresh bool) {
		if refresh {
			c.leader = -1
		}
		c.s.after(d, clientID, c.name+": retry", func() {
			if c.cur == b && c.attempt == 0 {
				c.send()
			}
		})
	}
	switch {
	case err == nil:
		c.s.tracef("  %s batch %d acknowledged at offset %d", c.name, b.idx, info.BaseOffset)
		if c.acks == partition.AcksAll {
			c.acked = append(c.acked, ackedBatch{idx: b.idx, offset: info.BaseOffset, n: b.n})
		}
		c.cur = nil
		c.s.after(c.s.between(0, 20*time.Millisecond), clientID, c.name+": next batch", c.next)
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.FencedLeaderEpoch),
		errors.Is(err, kerr.UnknownLeaderEpoch), errors.Is(err, kerr.UnknownTopicOrPartition):
		retry(clientBackoff, true)
	case errors.Is(err, kerr.NotEnoughReplicas), errors.Is(err, kerr.NotEnoughReplicasAfterAppend),
		errors.Is(err, kerr.RequestTimedOut), errors.Is(err, kerr.KafkaStorageError):
		retry(clientBackoff, false)
	case (errors.Is(err, kerr.OutOfOrderSequenceNumber) || errors.Is(err, kerr.InvalidProducerEpoch)) && !c.s.isLeader(from, epoch):
		// A deposed leader that has not heard yet lacks the latest
		// batches: ask again for the leader.
		retry(clientBackoff, true)
	case errors.Is(err, kerr.OutOfOrderSequenceNumber), errors.Is(err, kerr.InvalidProducerEpoch):
		if c.acks == partition.AcksAll && c.s.chk.durable() {
			c.s.fail("%s: batch %d (seq %d epoch %d) refused with %v, though every earlier batch was acknowledged by acks=all",
				c.name, b.idx, b.seq, b.epoch, err)
			return
		}
		c.epoch++
		c.s.tracef("  %s: %v; bumping the producer epoch to %d", c.name, err, c.epoch)
		c.build(0, c.epoch)
		c.nextSeq = int32(b.n)
		retry(clientBackoff, true)
	default:
		c.s.fail("%s: batch %d refused with %v", c.name, b.idx, err)
	}
}

// produceReq is one produce request of one batch.
type produceReq struct {
	c       *producer
	attempt uint64
	data    []byte
	acks    int16
}

// ackWait is an acks=all append waiting for the high watermark.
type ackWait struct {
	req  *produceReq
	p    *partition.Partition
	info log.AppendInfo
	wait <-chan error
}

// handleProduce is kafka/00_produce.go for one partition: append, then for
// acks=all wait for the high watermark (or the request timeout).
func (b *broker) handleProduce(req *produceReq) {
	p := b.part()
	if p == nil || !b.live {
		b.replyProduce(req, log.AppendInfo{}, kerr.NotLeaderForPartition)
		return
	}
	isr := len(p.State().ISR)
	// The log owns the bytes appended; a duplicated message must not
	// share them.
	res, err := p.Append(record.Batch(slices.Clone(req.data)), req.acks, &b.scratch)
	if err != nil {
		b.replyProduce(req, res.AppendInfo, produceErrCode(err))
		return
	}
	if req.acks == partition.AcksAll {
		b.s.chk.appendedAll(b, p, isr, res.AppendInfo)
	}
	if res.Wait == nil {
		b.answerProduce(req, p, res.AppendInfo, nil)
		return
	}
	w := &ackWait{req: req, p: p, info: res.AppendInfo, wait: res.Wait}
	b.waiters = append(b.waiters, w)
	b.s.after(produceTimeout, b.id, "produce timeout", func() {
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i:i], b.waiters[i+1:]...)
				b.replyProduce(req, w.info, kerr.RequestTimedOut)
				return
			}
		}
	})
}

// answerProduce answers an append that completed (err nil) or failed after
// it was written; success of acks=all is checked against the partition.
func (b *broker) answerProduce(req *produceReq, p *partition.Partition, info log.AppendInfo, err error) {
	if err != nil {
		b.replyProduce(req, info, produceErrCode(err))
		return
	}
	if req.acks == partition.AcksAll {
		b.s.chk.ackAllAnswered(b, p, req, info)
	}
	b.replyProduce(req, info, nil)
}

func (b *broker) replyProduce(req *produceReq, info log.AppendInfo, err error) {
	label := fmt.Sprintf("produce answer %d->client: offset %d, %v", b.id, info.BaseOffset, err)
	if err == nil && info.Duplicate {
		label += " (duplicate)"
	}
	epoch := int32(-1)
	if p := b.part(); p != nil {
		epoch = p.State().LeaderEpoch
	}
	b.s.send(b.id, clientID, label, func() { req.c.answered(b.id, epoch, req.attempt, info, err) })
}

// produceErrCode maps Append's errors as kafka/errors.go does.
func produceErrCode(err error) error {
	switch {
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, partition.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas
	case errors.Is(err, partition.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend
	case errors.Is(err, kerr.RequestTimedOut):
		return err
	}
	return fetchErrCode(err)
}
