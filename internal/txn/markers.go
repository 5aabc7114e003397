package txn

// Transaction markers (Kafka's TransactionMarkerChannelManager and
// TransactionMarkerRequestCompletionHandler). Once PrepareCommit or
// PrepareAbort is durable, the coordinator asks the driver to write a
// marker to every partition of the transaction, tagged with the coordinator
// epoch (the leader epoch of the __transaction_state partition), and
// removes each partition from the transaction as its marker is written.
// When none is left, CompleteCommit or CompleteAbort is written; until
// then the transaction has that transition pending, so its producer gets
// CONCURRENT_TRANSACTIONS.
//
// Per partition, as Kafka handles WriteTxnMarkers answers:
//
//   - no error, a partition that no longer exists, UNSUPPORTED_VERSION or
//     UNSUPPORTED_FOR_MESSAGE_FORMAT: done with that partition;
//   - INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED: a newer
//     producer epoch or coordinator took over; this coordinator stops
//     sending the transaction's markers (the transaction stays prepared
//     here until the partition is loaded again);
//   - anything else (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
//     NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
//     KAFKA_STORAGE_ERROR, a failed connection): sent again after
//     RetryBackoff, to the partition's leader of that time. Kafka treats
//     unexpected codes as fatal for the transaction; weir retries them.
//
// A completion record that fails to be written is retried after
// RetryBackoff as long as this broker leads the partition (Kafka retries
// on COORDINATOR_NOT_AVAILABLE only, and leaves the transaction to the
// next coordinator otherwise).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// markerRound is the marker writing of one prepared transaction.
type markerRound struct {
	commit   bool
	complete *transit // the pending CompleteCommit/CompleteAbort
	epoch    int32    // coordinator epoch
	retry    partitionSet
	// timer is the seq of the live retry timer (0: none).
	timer      uint64
	completing bool // the completion record is being written
}

// markerReq is one MarkerRequest in flight.
type markerReq struct {
	txn         *txnMeta
	round       *markerRound
	outstanding partitionSet
}

// startMarkers begins writing the markers of m, prepared, whose pending
// completion is ct.
func (c *Coordinator) startMarkers(m *txnMeta, ct *transit) {
	round := &markerRound{commit: ct.state == CompleteCommit, complete: ct,
		epoch: c.parts[m.partition].epoch, retry: partitionSet{}}
	m.markers = round
	c.sendMarkers(m, m.partitions.sorted())
	c.maybeComplete(m)
}

func (c *Coordinator) sendMarkers(m *txnMeta, tps []TopicPartition) {
	if len(tps) == 0 {
		return
	}
	round := m.markers
	c.lastMarker++
	out := partitionSet{}
	for _, tp := range tps {
		out[tp] = struct{}{}
	}
	c.markerReqs[c.lastMarker] = &markerReq{txn: m, round: round, outstanding: out}
	c.out.Markers = append(c.out.Markers, MarkerRequest{ID: c.lastMarker, TransactionalID: m.id,
		ProducerID: m.producerID, ProducerEpoch: m.epoch, Commit: round.commit,
		CoordinatorEpoch: round.epoch, Partitions: tps})
}

// MarkersWritten reports the outcome of partitions of the MarkerRequest
// with this id; a request may be reported in several calls (one per
// leader). Results for unknown ids or partitions are ignored.
func (c *Coordinator) MarkersWritten(now time.Time, id uint64, results []MarkerResult) Ready {
	c.begin(now)
	mr := c.markerReqs[id]
	if mr == nil {
		return c.end()
	}
	m := mr.txn
	if !c.live(m) || m.markers != mr.round {
		delete(c.markerReqs, id)
		return c.end()
	}
	round := m.markers
	cancel := false
	for _, r := range results {
		if _, ok := mr.outstanding[r.Partition]; !ok {
			continue
		}
		delete(mr.outstanding, r.Partition)
		switch {
		case r.Gone, r.Code == 0, r.Code == kerr.UnsupportedVersion.Code, r.Code == kerr.UnsupportedForMessageFormat.Code:
			delete(m.partitions, r.Partition)
		case r.Code == kerr.InvalidProducerEpoch.Code, r.Code == kerr.TransactionCoordinatorFenced.Code:
			cancel = true
		default:
			round.retry[r.Partition] = struct{}{}
		}
	}
	if len(mr.outstanding) == 0 {
		delete(c.markerReqs, id)
	}
	if cancel {
		m.markers = nil
		for id, other := range c.markerReqs {
			if other.round == round {
				delete(c.markerReqs, id)
			}
		}
		return c.end()
	}
	if len(round.retry) > 0 && round.timer == 0 {
		round.timer = c.schedule(timerMarkerRetry, c.cfg.RetryBackoff, m.id)
	}
	c.maybeComplete(m)
	return c.end()
}

// retryMarkers sends again the markers that failed.
func (c *Coordinator) retryMarkers(m *txnMeta) {
	round := m.markers
	var tps []TopicPartition
	for _, tp := range round.retry.sorted() {
		if _, ok := m.partitions[tp]; ok {
			tps = append(tps, tp)
		}
	}
	round.retry = partitionSet{}
	c.sendMarkers(m, tps)
}

// maybeComplete writes the completion record once every marker is
// written.
func (c *Coordinator) maybeComplete(m *txnMeta) {
	round := m.markers
	if round == nil || round.completing || len(m.partitions) > 0 {
		return
	}
	round.completing = true
	ct := round.complete
	c.emitWrite(m.partition, []Record{encodeTransit(m.id, ct)}, func(code int16) {
		if !c.live(m) || m.markers != round {
			return
		}
		if code == 0 && m.pending == ct {
			m.complete(ct)
			c.touch(m.id)
			m.markers = nil
			return
		}
		round.completing = false
		if round.timer == 0 {
			round.timer = c.schedule(timerCompleteRetry, c.cfg.RetryBackoff, m.id)
		}
	})
}
