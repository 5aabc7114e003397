package txn

// EndTxn, versions 0-4 (Kafka's TransactionCoordinator.endTransaction,
// transaction version 0/1: the epoch is not bumped at each end).
//
//   - An empty transactional id is INVALID_REQUEST; NOT_COORDINATOR and
//     COORDINATOR_LOAD_IN_PROGRESS as for every request; an unknown
//     transactional id or another producer id is INVALID_PRODUCER_ID_MAPPING;
//     another epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2); a
//     change being written CONCURRENT_TRANSACTIONS.
//   - Ongoing: PrepareCommit (or PrepareAbort) is written, and once it is
//     durable the answer is sent and the markers go out; when every marker is
//     written, CompleteCommit (CompleteAbort) is.
//   - A retry of the same decision: CONCURRENT_TRANSACTIONS while its
//     markers are being written, no error once complete. The opposite
//     decision, or any end of an Empty transaction, is INVALID_TXN_STATE.
//
// The coordinator itself aborts with the same path (isFromClient false):
// a new incarnation's InitProducerId and the timeout sweep abort at a
// bumped epoch, so that the markers fence the old producer.

import "github.com/twmb/franz-go/pkg/kmsg"

func (c *Coordinator) endTxn(req Request, r *kmsg.EndTxnRequest) {
	answer := func(code int16) {
		resp := kmsg.NewPtrEndTxnResponse()
		resp.Version = r.Version
		resp.ErrorCode = fencedCode(code, r.Version, 2)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		c.out.Respond(req.Token, resp)
	}
	if r.TransactionalID == "" {
		answer(codeInvalidRequest)
		return
	}
	if _, code := c.route(r.TransactionalID); code != 0 {
		answer(code)
		return
	}
	m := c.txns[r.TransactionalID]
	if m == nil {
		answer(codeInvalidMapping)
		return
	}
	c.endTransaction(m, r.ProducerID, r.ProducerEpoch, r.Commit, true, answer)
}

// endTransaction commits or aborts m's transaction and calls done with the
// outcome once the decision is durable (or refused). From the
// coordinator (fromClient false) epoch may be above m's: it is the epoch of
// a fence prepared on m, which the abort makes current.
func (c *Coordinator) endTransaction(m *txnMeta, pid int64, epoch int16, commit, fromClient bool, done func(int16)) {
	var fence *transit
	if m.pending != nil && m.pending.state == PrepareEpochFence {
		fence = m.pending
	}
	fail := func(code int16) {
		if fence != nil && m.pending == fence {
			m.pending = nil
		}
		done(code)
	}
	want, opposite := PrepareCommit, CompleteAbort
	if !commit {
		want, opposite = PrepareAbort, CompleteCommit
	}
	switch {
	case m.producerID != pid:
		fail(codeInvalidMapping)
		return
	case (fromClient && epoch != m.epoch) || epoch < m.epoch:
		fail(codeProducerFenced)
		return
	case m.pending != nil && fence == nil:
		fail(codeConcurrent)
		return
	}
	switch m.state {
	case Ongoing:
	case CompleteCommit, CompleteAbort:
		if m.state == opposite {
			fail(codeInvalidTxnState)
		} else {
			fail(0)
		}
		return
	case PrepareCommit, PrepareAbort:
		if m.state == want {
			fail(codeConcurrent)
		} else {
			fail(codeInvalidTxnState)
		}
		return
	case Empty:
		fail(codeInvalidTxnState)
		return
	default:
		fail(codeUnknownServerError)
		return
	}
	isFence := false
	if !commit && fence != nil {
		// The fence's bumped epoch becomes current now, before the abort
		// is written: requests of the old epoch are fenced from here on.
		isFence = true
		m.pending = nil
		m.epoch, m.lastEpoch = epoch, noEpoch
	}
	t := m.prepareEnd(want, c.out.NowMs())
	if t == nil {
		fail(codeUnknownServerError)
		return
	}
	c.persist(m, t, func(code int16) {
		if code != 0 {
			if isFence && c.live(m) {
				m.failedFence = true
			}
			done(code)
			return
		}
		switch {
		case m.producerID != pid:
			done(codeInvalidMapping)
		case m.epoch != epoch:
			done(codeProducerFenced)
		case m.pending != nil:
			done(codeConcurrent)
		case m.state != want:
			done(codeInvalidTxnState)
		default:
			ct := m.prepareComplete(c.out.NowMs())
			done(0)
			c.startMarkers(m, ct)
		}
	})
}
