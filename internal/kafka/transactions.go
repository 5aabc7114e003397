package kafka

// The transaction coordinator's APIs: InitProducerId with a transactional
// id, AddPartitionsToTxn (v4+ carries the KIP-890 verifications brokers
// send), AddOffsetsToTxn, EndTxn, DescribeTransactions and
// ListTransactions are answered by the transaction coordinator (package
// txn), whose files state each API's rules. The handler forwards the
// decoded request and completes the reply when the coordinator answers,
// which is once the change is durable in __transaction_state; replies
// still leave the connection in request order.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Txns is the transaction coordinator.
type Txns interface {
	// Handle answers a transaction request through done, possibly later.
	Handle(ctx context.Context, body kmsg.Request, done func(kmsg.Response))
	// PartitionFor is the __transaction_state partition owning a
	// transactional id.
	PartitionFor(transactionalID string) int32
}

func (s *Server) handleTxnRequest(req *Request) *Reply {
	rep := newReply()
	s.deps.Txns.Handle(req.Ctx, req.Body, rep.complete)
	return rep
}
