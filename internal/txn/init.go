package txn

// InitProducerId with a transactional id (Kafka's
// TransactionCoordinator.handleInitProducerId), versions 0-5.
//
//   - An empty transactional id is INVALID_REQUEST; a timeout of 0 or less,
//     or above transaction.max.timeout.ms, INVALID_TRANSACTION_TIMEOUT. In
//     v3+ a producer id without an epoch (or the reverse) is INVALID_REQUEST.
//   - A new transactional id gets a new producer id at epoch 0.
//   - A known one gets its epoch bumped, which fences the previous
//     incarnation everywhere (its requests now carry a stale epoch). When the
//     epoch is exhausted (32766 or more) it gets a new producer id at epoch 0.
//   - KIP-360 (v3+): a producer that names its producer id and epoch asks to
//     continue after an error: the epoch is bumped if it is current, the same
//     answer is given again if it is the one before the last bump (a retry),
//     and anything else is PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before
//     v4). A producer id the coordinator does not know is PRODUCER_FENCED too,
//     unless it is the previous id of a rotation retried at the exhausted
//     epoch.
//   - An ongoing transaction of the previous incarnation is aborted first:
//     its epoch is bumped, PrepareAbort written, and the request answered
//     CONCURRENT_TRANSACTIONS; the client retries, and gets its epoch once
//     the abort markers are written. While a transaction is prepared or
//     another change is being written, the answer is CONCURRENT_TRANSACTIONS.
//
// Without a transactional id the answer is a new producer id at epoch 0.

import "github.com/twmb/franz-go/pkg/kmsg"

func initProducerIDResponse(version int16, code int16, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.Version = version
	resp.ErrorCode = fencedCode(code, version, 4)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if code == 0 {
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
	}
	return resp
}

func (c *Coordinator) initProducerID(req Request, r *kmsg.InitProducerIDRequest) {
	answer := func(code int16, pid int64, epoch int16) {
		c.respond(req.Token, initProducerIDResponse(r.Version, code, pid, epoch))
	}
	var expectPID int64 = noProducerID
	var expectEpoch *int16
	if r.Version >= 3 {
		switch {
		case r.ProducerID == noProducerID && r.ProducerEpoch == noEpoch:
		case r.ProducerID == noProducerID || r.ProducerEpoch == noEpoch:
			answer(codeInvalidRequest, 0, 0)
			return
		default:
			expectPID, expectEpoch = r.ProducerID, &r.ProducerEpoch
		}
	}
	if r.TransactionalID == nil {
		pid, ok := c.takePID()
		if !ok {
			c.park(req)
			return
		}
		answer(0, pid, 0)
		return
	}
	id := *r.TransactionalID
	switch {
	case id == "":
		answer(codeInvalidRequest, 0, 0)
		return
	case r.TransactionTimeoutMillis <= 0 || int64(r.TransactionTimeoutMillis) > c.cfg.MaxTimeout.Milliseconds():
		answer(codeInvalidTimeout, 0, 0)
		return
	}
	p, code := c.route(id)
	if code != 0 {
		answer(code, 0, 0)
		return
	}
	m := c.txns[id]
	if m == nil {
		pid, ok := c.takePID()
		if !ok {
			c.park(req)
			return
		}
		m = &txnMeta{id: id, partition: p, producerID: pid, prevProducerID: noProducerID, epoch: noEpoch,
			lastEpoch: noEpoch, timeoutMs: r.TransactionTimeoutMillis, state: Empty, partitions: partitionSet{},
			startMs: -1, updateMs: c.nowMs()}
		c.txns[id] = m
		c.touch(id)
	}
	switch {
	case m.pending != nil:
		answer(codeConcurrent, 0, 0)
		return
	case expectEpoch != nil && !(m.epoch == noEpoch || expectPID == m.producerID ||
		(expectPID == m.prevProducerID && epochExhausted(*expectEpoch))):
		answer(codeProducerFenced, 0, 0)
		return
	}
	switch m.state {
	case PrepareCommit, PrepareAbort:
		answer(codeConcurrent, 0, 0)
	case Empty, CompleteCommit, CompleteAbort:
		var t *transit
		if epochExhausted(m.epoch) && (expectEpoch == nil || *expectEpoch == m.epoch) {
			pid, ok := c.takePID()
			if !ok {
				c.park(req)
				return
			}
			t = m.prepareRotate(pid, r.TransactionTimeoutMillis, c.nowMs(), expectEpoch != nil)
		} else {
			var code int16
			if t, code = m.prepareIncrementEpoch(r.TransactionTimeoutMillis, expectEpoch, c.nowMs()); code != 0 {
				answer(code, 0, 0)
				return
			}
		}
		if t == nil {
			answer(codeUnknownServerError, 0, 0)
			return
		}
		c.persist(m, t, func(code int16) { answer(code, t.producerID, t.epoch) })
	case Ongoing:
		t := m.prepareFence()
		if t == nil {
			answer(codeUnknownServerError, 0, 0)
			return
		}
		c.endTransaction(m, t.producerID, t.epoch, false, false, func(code int16) {
			if code == 0 {
				code = codeConcurrent
			}
			answer(code, 0, 0)
		})
	default:
		// Dead and PrepareEpochFence are never current without a pending
		// transition (Kafka throws here).
		answer(codeUnknownServerError, 0, 0)
	}
}
