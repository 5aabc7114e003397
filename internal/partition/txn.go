package partition

import "weir/internal/log"

// StartTxnVerification begins the KIP-890 check of a transactional batch
// of producerID at epoch on this leader: it returns the guard to append
// with once the transaction coordinator confirms the partition is in the
// producer's transaction, or log.NoGuard when the producer already has a
// transaction open here (nothing to ask).
func (p *Partition) StartTxnVerification(producerID int64, epoch int16) (log.VerificationGuard, error) {
	p.mu.Lock()
	leader := p.leader
	p.mu.Unlock()
	if !leader {
		return log.NoGuard, ErrNotLeader
	}
	return p.log.StartTxnVerification(producerID, epoch), nil
}

// ActiveProducers lists the producers this replica keeps state for
// (DescribeProducers); any replica answers, as in Kafka.
func (p *Partition) ActiveProducers() []log.ProducerInfo { return p.log.ActiveProducers() }

// LastStableOffset is the offset read_committed consumers read up to.
func (p *Partition) LastStableOffset() int64 { return p.log.LastStableOffset() }
