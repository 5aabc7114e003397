package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/log"
)

// TxnVerifier asks the transaction coordinator of a transactional id
// whether partitions are in its producer's ongoing transaction, before a
// leader appends a batch that would open the transaction there (KIP-890
// part 1): AddPartitionsToTxn v4+ with VerifyOnly, sent to the leader of
// the id's __transaction_state partition.
type TxnVerifier interface {
	// VerifyTxn returns the coordinator's error code for each partition
	// (0: in the transaction). A non-nil error means it could not be
	// asked: a *kerr.Error is a top-level error code of its answer
	// (COORDINATOR_NOT_AVAILABLE when no coordinator is known),
	// errors.ErrUnsupported that the coordinator does not serve the check
	// (the append goes ahead, as in Kafka), anything else a transport
	// failure. It returns by ctx's deadline.
	VerifyTxn(ctx context.Context, txnID string, producerID int64, epoch int16, parts []log.TopicPartition) (map[log.TopicPartition]int16, error)
}

// checkTxnProduce applies Kafka's rules to the transactional batches of a
// produce: they need the request's transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition otherwise)
// and one producer (INVALID_PRODUCER_ID_MAPPING); with
// transaction.partition.verification.enable, each partition where the
// producer has no transaction open yet is checked with the coordinator
// first, and its append carries the guard of that check. It reports
// whether appends must carry their guard. It blocks while the coordinator
// is asked, so the connection's later requests wait, as Kafka mutes the
// channel.
func (s *Server) checkTxnProduce(req *Request, r *kmsg.ProduceRequest, entries []*produceEntry) bool {
	type producer struct {
		id    int64
		epoch int16
	}
	var txn []*produceEntry
	producers := map[producer]bool{}
	for _, e := range entries {
		if e.batch == nil || !e.batch.Attributes().Transactional() {
			continue
		}
		txn = append(txn, e)
		if e.batch.ProducerID() >= 0 {
			producers[producer{e.batch.ProducerID(), e.batch.ProducerEpoch()}] = true
		}
	}
	if len(txn) == 0 {
		return false
	}
	failAll := func(err error) {
		for _, e := range entries {
			e.err = err
		}
	}
	if r.TransactionID == nil || !s.authorized(req, acl.OpWrite, acl.ResourceTransactionalID, *r.TransactionID) {
		failAll(kerr.TransactionalIDAuthorizationFailed)
		return false
	}
	if len(producers) > 1 {
		failAll(&codedError{kerr.InvalidProducerIDMapping, "Transactional records contained more than one producer ID"})
		return false
	}
	verify := s.cfg.Broker.TransactionPartitionVerification && s.deps.TxnVerifier != nil
	if !verify || len(producers) == 0 {
		return verify
	}
	var pr producer
	for k := range producers {
		pr = k
	}
	var ask []*produceEntry
	var parts []log.TopicPartition
	for _, e := range txn {
		if e.err != nil || e.batch.ProducerID() < 0 || e.batch.Attributes().Control() {
			continue // a client's control batch fails validation anyway
		}
		g, err := e.p.StartTxnVerification(pr.id, pr.epoch)
		if err != nil {
			e.err = err
			continue
		}
		if g != log.NoGuard {
			e.guard = g
			ask = append(ask, e)
			parts = append(parts, log.TopicPartition{Topic: e.topic, Partition: e.rp.Partition})
		}
	}
	if len(ask) == 0 {
		return true
	}
	timeout := s.cfg.Broker.RequestTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(req.Ctx, timeout)
	defer cancel()
	codes, err := s.deps.TxnVerifier.VerifyTxn(ctx, *r.TransactionID, pr.id, pr.epoch, parts)
	if errors.Is(err, errors.ErrUnsupported) {
		return true // the guards stand: the append proceeds unverified
	}
	for i, e := range ask {
		e.err = txnVerifyError(codes[parts[i]], err, req.Version)
	}
	return true
}
