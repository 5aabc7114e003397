package txn

// DescribeTransactions (v0) and ListTransactions (v0-1), KIP-664.
//
// DescribeTransactions answers each transactional id: INVALID_REQUEST if
// it is empty, NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS if this
// broker does not serve it now, TRANSACTIONAL_ID_NOT_FOUND if unknown (or
// expiring); else its producer id and epoch, state, timeout, start time
// (-1 before the first transaction) and partitions (in a prepared
// transaction, those whose markers are not yet written).
//
// ListTransactions lists the transactional ids of every partition this
// broker leads, COORDINATOR_LOAD_IN_PROGRESS while one is loading. Filters
// combine: states by Kafka's names (unknown names are returned in
// UnknownStateFilters and ignored, so that only unknown names filter
// nothing, as in Kafka), producer ids, and (v1) only
// transactions running longer than DurationFilterMillis (a transaction
// that never started counts as running since the epoch, as in Kafka).
// Expiring ids are left out.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *Coordinator) describeTransactions(req Request, r *kmsg.DescribeTransactionsRequest) {
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	resp.Version = r.Version
	for _, id := range r.TransactionalIDs {
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID = id
		if id == "" {
			s.ErrorCode = codeInvalidRequest
		} else if _, code := c.route(id); code != 0 {
			s.ErrorCode = code
		} else if m := c.txns[id]; m == nil || m.state == Dead {
			s.ErrorCode = kerr.TransactionalIDNotFound.Code
		} else {
			s.ProducerID, s.ProducerEpoch = m.producerID, m.epoch
			s.State, s.TimeoutMillis, s.StartTimestamp = m.state.String(), m.timeoutMs, m.startMs
			for _, tp := range m.partitions.sorted() {
				if n := len(s.Topics); n == 0 || s.Topics[n-1].Topic != tp.Topic {
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = tp.Topic
					s.Topics = append(s.Topics, t)
				}
				last := &s.Topics[len(s.Topics)-1]
				last.Partitions = append(last.Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	c.out.Respond(req.Token, resp)
}

func (c *Coordinator) listTransactions(req Request, r *kmsg.ListTransactionsRequest) {
	resp := kmsg.NewPtrListTransactionsResponse()
	resp.Version = r.Version
	defer c.out.Respond(req.Token, resp)
	for _, ps := range c.parts {
		if ps.loading {
			resp.ErrorCode = codeLoadInProgress
			return
		}
	}
	var states []State
	for _, name := range r.StateFilters {
		if s, ok := stateByName(name); ok {
			states = append(states, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	now := c.out.NowMs()
	for _, id := range sortedIDs(c.txns) {
		m := c.txns[id]
		switch {
		case m.state == Dead:
		case len(r.ProducerIDFilters) > 0 && !slices.Contains(r.ProducerIDFilters, m.producerID):
		case len(states) > 0 && !slices.Contains(states, m.state):
		case r.DurationFilterMillis >= 0 && now-m.startMs <= r.DurationFilterMillis:
		default:
			s := kmsg.NewListTransactionsResponseTransactionState()
			s.TransactionalID, s.ProducerID, s.TransactionState = id, m.producerID, m.state.String()
			resp.TransactionStates = append(resp.TransactionStates, s)
		}
	}
}
