package kafka

// The transaction coordinator's APIs: InitProducerId with a transactional
// id, AddPartitionsToTxn (v4+ carries the KIP-890 verifications brokers
// send), AddOffsetsToTxn, EndTxn, DescribeTransactions and
// ListTransactions are answered by the transaction coordinator (package
// txn), whose files state each API's rules. The handler forwards the
// decoded request and completes the reply when the coordinator answers,
// which is once the change is durable in __transaction_state; replies
// still leave the connection in request order.
//
// With an authorizer, as Kafka's KafkaApis: AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn need WRITE on the transactional id (else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED); AddPartitionsToTxn also WRITE on
// each topic (else TOPIC_AUTHORIZATION_FAILED, and the transaction's other
// partitions OPERATION_NOT_ATTEMPTED); from v4, sent by brokers, it needs
// CLUSTER_ACTION instead (else CLUSTER_AUTHORIZATION_FAILED) and nothing
// per transaction or topic; AddOffsetsToTxn READ
// on the group (else GROUP_AUTHORIZATION_FAILED). DescribeTransactions
// needs DESCRIBE on each transactional id and shows only the topics the
// principal may DESCRIBE; ListTransactions lists the ids it may DESCRIBE.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
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
	finish := func(r kmsg.Response) kmsg.Response { return r }
	if s.cfg.Authorizer != nil && req.Principal != "" {
		var answer kmsg.Response
		finish, answer = s.authorizeTxnRequest(req)
		if answer != nil {
			return done(answer)
		}
	}
	rep := newReply()
	s.deps.Txns.Handle(req.Ctx, req.Body, func(r kmsg.Response) { rep.complete(finish(r)) })
	return rep
}

// authorizeTxnRequest returns a function completing the coordinator's
// answer, or the whole answer when the request is denied.
func (s *Server) authorizeTxnRequest(req *Request) (func(kmsg.Response) kmsg.Response, kmsg.Response) {
	same := func(r kmsg.Response) kmsg.Response { return r }
	txnID := func(op int8, id string) bool { return s.authorized(req, op, acl.ResourceTransactionalID, id) }
	switch r := req.Body.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		resp := respFor(req).(*kmsg.AddPartitionsToTxnResponse)
		if req.Version >= 4 {
			// As Kafka's KafkaApis: the brokers' batched form needs
			// CLUSTER_ACTION only. WRITE on the transactional ids and
			// topics is checked for v0-3 (clients) alone: the broker
			// sending a verification checked its producer's WRITE on
			// the topics when the produce request came in.
			if !s.authorizedCluster(req, acl.OpClusterAction) {
				resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				return nil, resp
			}
			break
		}
		if !txnID(acl.OpWrite, r.TransactionalID) {
			resp.Topics = txnPartitionsFailed(r.Topics, func(string) int16 { return kerr.TransactionalIDAuthorizationFailed.Code })
			return nil, resp
		}
		denied := map[string]bool{}
		for _, t := range r.Topics {
			if !s.authorized(req, acl.OpWrite, acl.ResourceTopic, t.Topic) {
				denied[t.Topic] = true
			}
		}
		if len(denied) > 0 {
			resp.Topics = txnPartitionsFailed(r.Topics, func(topic string) int16 {
				if denied[topic] {
					return kerr.TopicAuthorizationFailed.Code
				}
				return kerr.OperationNotAttempted.Code
			})
			return nil, resp
		}
	case *kmsg.AddOffsetsToTxnRequest:
		resp := respFor(req).(*kmsg.AddOffsetsToTxnResponse)
		switch {
		case !txnID(acl.OpWrite, r.TransactionalID):
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return nil, resp
		case !s.authorized(req, acl.OpRead, acl.ResourceGroup, r.Group):
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return nil, resp
		}
	case *kmsg.EndTxnRequest:
		if !txnID(acl.OpWrite, r.TransactionalID) {
			resp := respFor(req).(*kmsg.EndTxnResponse)
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return nil, resp
		}
	case *kmsg.DescribeTransactionsRequest:
		return func(got kmsg.Response) kmsg.Response {
			g := got.(*kmsg.DescribeTransactionsResponse)
			for i := range g.TransactionStates {
				st := &g.TransactionStates[i]
				if id := st.TransactionalID; !txnID(acl.OpDescribe, id) {
					*st = kmsg.NewDescribeTransactionsResponseTransactionState()
					st.TransactionalID, st.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
					continue
				}
				st.Topics = slices.DeleteFunc(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
					return !s.authorized(req, acl.OpDescribe, acl.ResourceTopic, t.Topic)
				})
			}
			return g
		}, nil
	case *kmsg.ListTransactionsRequest:
		return func(got kmsg.Response) kmsg.Response {
			g := got.(*kmsg.ListTransactionsResponse)
			g.TransactionStates = slices.DeleteFunc(g.TransactionStates, func(st kmsg.ListTransactionsResponseTransactionState) bool {
				return !txnID(acl.OpDescribe, st.TransactionalID)
			})
			return g
		}, nil
	}
	return same, nil
}

// txnPartitionsFailed answers every partition of an AddPartitionsToTxn
// (v0-3) with the code of its topic.
func txnPartitionsFailed(topics []kmsg.AddPartitionsToTxnRequestTopic, code func(topic string) int16) []kmsg.AddPartitionsToTxnResponseTopic {
	var out []kmsg.AddPartitionsToTxnResponseTopic
	for _, t := range topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code(t.Topic)
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
