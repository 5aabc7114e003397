package txn

// AddPartitionsToTxn, versions 0-4, and AddOffsetsToTxn, versions 0-4
// (Kafka's handleAddPartitionsToTransaction and
// handleVerifyPartitionsInTransaction, with KafkaApis's checks).
//
// Versions 0-3 come from producers and carry one transaction; v4 (KIP-890)
// comes from brokers and carries many, each possibly VerifyOnly. For each
// transaction:
//
//   - If any partition does not exist, those get UNKNOWN_TOPIC_OR_PARTITION
//     and the others OPERATION_NOT_ATTEMPTED; nothing is added.
//   - An empty transactional id is INVALID_REQUEST; a partition of
//     __transaction_state this broker does not lead is NOT_COORDINATOR (or
//     COORDINATOR_LOAD_IN_PROGRESS); an unknown transactional id or another
//     producer id INVALID_PRODUCER_ID_MAPPING; another epoch PRODUCER_FENCED
//     (INVALID_PRODUCER_EPOCH before v2).
//   - Adding: a prepared transaction, or one with a change being written, is
//     CONCURRENT_TRANSACTIONS; partitions already in the ongoing transaction
//     are answered at once; otherwise the transaction becomes Ongoing with
//     them (its start time set if it is new) and the answer waits until that
//     is written. Every partition gets the same code.
//   - VerifyOnly asks whether each partition is in the transaction: a
//     prepared one is CONCURRENT_TRANSACTIONS; a partition in it gets no
//     error, one not in it TRANSACTION_ABORTABLE (Kafka 3.8+; the broker
//     that asked maps it for old producers). Nothing is written.
//
// AddOffsetsToTxn adds the __consumer_offsets partition of the group
// (hash of the group id over offsets.topic.num.partitions), as adding a
// partition does; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
)

// OffsetsTopic is the topic whose partitions AddOffsetsToTxn adds.
const OffsetsTopic = "__consumer_offsets"

type addTxn struct {
	id     string
	pid    int64
	epoch  int16
	verify bool
	tps    []TopicPartition // request order, without duplicates
}

func (c *Coordinator) addPartitionsToTxn(req Request, r *kmsg.AddPartitionsToTxnRequest) {
	var txns []addTxn
	collect := func(id string, pid int64, epoch int16, verify bool, topics func(yield func(string, []int32))) {
		t := addTxn{id: id, pid: pid, epoch: epoch, verify: verify}
		seen := map[TopicPartition]bool{}
		topics(func(topic string, ps []int32) {
			for _, p := range ps {
				tp := TopicPartition{topic, p}
				if !seen[tp] {
					seen[tp] = true
					t.tps = append(t.tps, tp)
				}
			}
		})
		txns = append(txns, t)
	}
	if r.Version < 4 {
		collect(r.TransactionalID, r.ProducerID, r.ProducerEpoch, false, func(yield func(string, []int32)) {
			for _, t := range r.Topics {
				yield(t.Topic, t.Partitions)
			}
		})
	} else {
		for _, t := range r.Transactions {
			collect(t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly, func(yield func(string, []int32)) {
				for _, tt := range t.Topics {
					yield(tt.Topic, tt.Partitions)
				}
			})
		}
	}
	results := make([][]int16, len(txns))
	remaining := len(txns)
	finish := func(i int, codes []int16) {
		results[i] = codes
		if remaining--; remaining == 0 {
			c.out.Respond(req.Token, addPartitionsResponse(r.Version, txns, results))
		}
	}
	if remaining == 0 {
		c.out.Respond(req.Token, addPartitionsResponse(r.Version, nil, nil))
		return
	}
	for i, t := range txns {
		if codes, bad := c.checkPartitions(t.tps); bad {
			finish(i, codes)
			continue
		}
		if t.verify {
			finish(i, c.verifyPartitions(t))
			continue
		}
		c.addPartitions(t.id, t.pid, t.epoch, t.tps, func(code int16) {
			code = fencedCode(code, r.Version, 2)
			codes := make([]int16, len(t.tps))
			for j := range codes {
				codes[j] = code
			}
			finish(i, codes)
		})
	}
}

// checkPartitions answers UNKNOWN_TOPIC_OR_PARTITION for partitions that
// do not exist and OPERATION_NOT_ATTEMPTED for the rest, if any does not.
func (c *Coordinator) checkPartitions(tps []TopicPartition) ([]int16, bool) {
	codes := make([]int16, len(tps))
	bad := false
	for i, tp := range tps {
		if n, ok := c.topics[tp.Topic]; !ok || tp.Partition < 0 || tp.Partition >= n {
			codes[i] = kerr.UnknownTopicOrPartition.Code
			bad = true
		}
	}
	if !bad {
		return nil, false
	}
	for i := range codes {
		if codes[i] == 0 {
			codes[i] = kerr.OperationNotAttempted.Code
		}
	}
	return codes, true
}

func addPartitionsResponse(version int16, txns []addTxn, results [][]int16) *kmsg.AddPartitionsToTxnResponse {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.Version = version
	for i, t := range txns {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.id
		topicAt := map[string]int{}
		for j, tp := range t.tps {
			k, ok := topicAt[tp.Topic]
			if !ok {
				k = len(rt.Topics)
				topicAt[tp.Topic] = k
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = tp.Topic
				rt.Topics = append(rt.Topics, tt)
			}
			pr := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			pr.Partition, pr.ErrorCode = tp.Partition, results[i][j]
			rt.Topics[k].Partitions = append(rt.Topics[k].Partitions, pr)
		}
		if version >= 4 {
			resp.Transactions = append(resp.Transactions, rt)
			continue
		}
		for _, tt := range rt.Topics {
			ot := kmsg.NewAddPartitionsToTxnResponseTopic()
			ot.Topic = tt.Topic
			for _, p := range tt.Partitions {
				op := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				op.Partition, op.ErrorCode = p.Partition, p.ErrorCode
				ot.Partitions = append(ot.Partitions, op)
			}
			resp.Topics = append(resp.Topics, ot)
		}
	}
	return resp
}

// addPartitions adds tps to the transaction and calls done with the
// outcome.
func (c *Coordinator) addPartitions(id string, pid int64, epoch int16, tps []TopicPartition, done func(int16)) {
	if id == "" {
		done(codeInvalidRequest)
		return
	}
	if _, code := c.route(id); code != 0 {
		done(code)
		return
	}
	m := c.txns[id]
	switch {
	case m == nil || m.producerID != pid:
		done(codeInvalidMapping)
		return
	case m.epoch != epoch:
		done(codeProducerFenced)
		return
	case m.pending != nil, m.state == PrepareCommit, m.state == PrepareAbort:
		done(codeConcurrent)
		return
	case m.state == Ongoing && !slices.ContainsFunc(tps, func(tp TopicPartition) bool {
		_, in := m.partitions[tp]
		return !in
	}):
		done(0)
		return
	}
	t := m.prepareAddPartitions(tps, c.out.NowMs())
	if t == nil {
		done(codeUnknownServerError)
		return
	}
	c.persist(m, t, done)
}

// verifyPartitions answers a VerifyOnly transaction, per partition.
func (c *Coordinator) verifyPartitions(t addTxn) []int16 {
	codes := make([]int16, len(t.tps))
	all := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	if t.id == "" {
		return all(codeInvalidRequest)
	}
	if _, code := c.route(t.id); code != 0 {
		return all(code)
	}
	m := c.txns[t.id]
	switch {
	case m == nil || m.producerID != t.pid:
		return all(codeInvalidMapping)
	case m.epoch != t.epoch:
		return all(codeProducerFenced)
	case m.state == PrepareCommit || m.state == PrepareAbort:
		return all(codeConcurrent)
	}
	for i, tp := range t.tps {
		if _, in := m.partitions[tp]; !in {
			codes[i] = kerr.TransactionAbortable.Code
		}
	}
	return codes
}

func (c *Coordinator) addOffsetsToTxn(req Request, r *kmsg.AddOffsetsToTxnRequest) {
	tp := TopicPartition{OffsetsTopic, coordinator.PartitionFor(r.Group, c.cfg.OffsetsPartitions)}
	c.addPartitions(r.TransactionalID, r.ProducerID, r.ProducerEpoch, []TopicPartition{tp}, func(code int16) {
		resp := kmsg.NewPtrAddOffsetsToTxnResponse()
		resp.Version = r.Version
		resp.ErrorCode = fencedCode(code, r.Version, 2)
		c.out.Respond(req.Token, resp)
	})
}
