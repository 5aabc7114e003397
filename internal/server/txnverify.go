package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
	"weir/internal/kafka"
	"weir/internal/log"
	"weir/internal/nodeclient"
)

// TransactionStateTopic holds the transaction coordinators' state.
const TransactionStateTopic = "__transaction_state"

// txnVerifier is the broker's kafka.TxnVerifier (KIP-890 part 1): it asks
// the coordinator of a transactional id, the leader of the id's
// __transaction_state partition, with AddPartitionsToTxn v4 and VerifyOnly,
// over the inter-broker listener. As Kafka's AddPartitionsToTxnManager,
// it sends one request at a time per coordinator node; checks that arrive
// meanwhile go together in the next one, one per transactional id (a newer
// check of an id replaces a queued one, which fails retriably, or with
// INVALID_PRODUCER_EPOCH when its epoch is older).
type txnVerifier struct {
	// locate names the coordinator node of a transactional id and its
	// address (see coordinator).
	locate   func(txnID string) (int32, string, error)
	clientID string
	dial     nodeclient.Dialer
	timeout  time.Duration // of one request

	mu    sync.Mutex
	nodes map[int32]*verifyNode
}

type verifyNode struct {
	conn     *nodeclient.Conn
	addr     string
	inflight bool
	queue    map[string]*verifyCall // by transactional id
}

type verifyCall struct {
	txnID string
	pid   int64
	epoch int16
	parts []log.TopicPartition
	done  chan verifyResult // buffered: one result
}

type verifyResult struct {
	codes map[log.TopicPartition]int16
	err   error
}

// errVerifyRetry fails a check replaced by a newer one of its id with the
// same epoch (Kafka answers NETWORK_EXCEPTION: the client is retrying).
var errVerifyRetry = errors.New("a newer verification of the transactional id replaced this one")

// txnVerifier returns the verifier the broker's listeners share.
func (s *Server) txnVerifier() kafka.TxnVerifier {
	if s.opts.TxnVerifier != nil {
		return s.opts.TxnVerifier
	}
	if s.txnVerify == nil {
		timeout := s.cfg.RequestTimeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		s.txnVerify = &txnVerifier{locate: s.txnCoordinator, clientID: fmt.Sprintf("weir-txn-verify-%d", s.cfg.NodeID),
			dial: s.dialBroker, timeout: timeout, nodes: map[int32]*verifyNode{}}
	}
	return s.txnVerify
}

// VerifyTxn implements kafka.TxnVerifier.
func (v *txnVerifier) VerifyTxn(ctx context.Context, txnID string, producerID int64, epoch int16, parts []log.TopicPartition) (map[log.TopicPartition]int16, error) {
	node, addr, err := v.locate(txnID)
	if err != nil {
		return nil, err
	}
	call := &verifyCall{txnID: txnID, pid: producerID, epoch: epoch, parts: parts, done: make(chan verifyResult, 1)}
	v.mu.Lock()
	n := v.nodes[node]
	if n == nil || n.addr != addr {
		if n != nil {
			n.conn.Close()
		}
		n = &verifyNode{conn: nodeclient.New(addr, v.clientID, v.dial), addr: addr, queue: map[string]*verifyCall{}}
		v.nodes[node] = n
	}
	if old := n.queue[txnID]; old != nil {
		if epoch < old.epoch {
			v.mu.Unlock()
			return fenced(parts), nil
		}
		if epoch > old.epoch {
			old.done <- verifyResult{codes: fenced(old.parts)}
		} else {
			old.done <- verifyResult{err: errVerifyRetry}
		}
	}
	n.queue[txnID] = call
	if !n.inflight {
		n.inflight = true
		go v.send(node, n)
	}
	v.mu.Unlock()
	select {
	case r := <-call.done:
		return r.codes, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fenced answers INVALID_PRODUCER_EPOCH for every partition.
func fenced(parts []log.TopicPartition) map[log.TopicPartition]int16 {
	codes := make(map[log.TopicPartition]int16, len(parts))
	for _, tp := range parts {
		codes[tp] = kerr.InvalidProducerEpoch.Code
	}
	return codes
}

// txnCoordinator finds the coordinator of a transactional id in the
// metadata image and its inter-broker address; COORDINATOR_NOT_AVAILABLE
// when there is none.
func (s *Server) txnCoordinator(txnID string) (int32, string, error) {
	img := s.publisher.Image()
	t := img.Topics.Get(TransactionStateTopic)
	if t == nil {
		return 0, "", kerr.CoordinatorNotAvailable
	}
	// The partition of a transactional id is computed as a group's is.
	p := t.Partitions[coordinator.PartitionFor(txnID, s.cfg.TransactionStateLogNumPartitions)]
	if p == nil || p.Leader < 0 {
		return 0, "", kerr.CoordinatorNotAvailable
	}
	addr, ok := s.brokerAddress(p.Leader)
	if !ok {
		return 0, "", kerr.CoordinatorNotAvailable
	}
	return p.Leader, addr, nil
}

// send drains a node's queue, one request at a time.
func (v *txnVerifier) send(id int32, n *verifyNode) {
	for {
		v.mu.Lock()
		calls := n.queue
		if len(calls) == 0 {
			n.inflight = false
			v.mu.Unlock()
			return
		}
		n.queue = map[string]*verifyCall{}
		v.mu.Unlock()
		v.exchange(n.conn, calls)
	}
}

// exchange sends one AddPartitionsToTxn for calls and answers each.
func (v *txnVerifier) exchange(conn *nodeclient.Conn, calls map[string]*verifyCall) {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(4)
	for _, c := range calls {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = c.txnID, c.pid, c.epoch, true
		byTopic := map[string]int{}
		for _, tp := range c.parts {
			i, ok := byTopic[tp.Topic]
			if !ok {
				i = len(t.Topics)
				byTopic[tp.Topic] = i
				rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				rt.Topic = tp.Topic
				t.Topics = append(t.Topics, rt)
			}
			t.Topics[i].Partitions = append(t.Topics[i].Partitions, tp.Partition)
		}
		req.Transactions = append(req.Transactions, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), v.timeout)
	defer cancel()
	kresp, err := conn.Call(ctx, req)
	if err != nil {
		v.answerAll(calls, verifyResult{err: fmt.Errorf("asking the transaction coordinator: %w", err)})
		return
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		v.answerAll(calls, verifyResult{err: kerr.ErrorForCode(resp.ErrorCode)})
		return
	}
	for _, t := range resp.Transactions {
		c := calls[t.TransactionalID]
		if c == nil {
			continue
		}
		codes := map[log.TopicPartition]int16{}
		for _, rt := range t.Topics {
			for _, rp := range rt.Partitions {
				codes[log.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
		c.done <- verifyResult{codes: codes}
		delete(calls, t.TransactionalID)
	}
	// An id the answer left out was not verified.
	v.answerAll(calls, verifyResult{err: kerr.UnknownServerError})
}

func (v *txnVerifier) answerAll(calls map[string]*verifyCall, r verifyResult) {
	for _, c := range calls {
		c.done <- r
	}
}

// close closes the connections to the coordinators.
func (v *txnVerifier) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, n := range v.nodes {
		n.conn.Close()
	}
}
