package partition

import (
	"errors"
	"fmt"
	"sort"

	"weir/internal/log"
	"weir/internal/record"
)

// Acks values of a produce request.
const (
	AcksNone   = 0
	AcksLeader = 1
	AcksAll    = -1
)

// ackWaiter is an acks=all produce waiting for the high watermark.
type ackWaiter struct {
	offset int64 // the high watermark must pass this offset
	done   chan error
}

// AppendResult is what a produce learns from its append.
type AppendResult struct {
	log.AppendInfo
	// Wait, when not nil, delivers the outcome of an acks=all append once
	// the high watermark covers it (nil) or leadership is lost (error).
	Wait <-chan error
}

// AppendOptions say how a batch is appended as leader.
type AppendOptions struct {
	Acks int16
	// Origin is log.OriginClient for producers; coordinators of this
	// broker append with log.OriginCoordinator (no sequence checks).
	Origin log.Origin
	// VerifyTxn requires a transactional batch that opens a transaction
	// to carry Guard, from StartTxnVerification, as confirmed by the
	// transaction coordinator (KIP-890).
	VerifyTxn bool
	Guard     log.VerificationGuard
}

// Append validates a client's batch against the topic's rules and appends
// it as leader (AppendWith with acks only).
func (p *Partition) Append(b record.Batch, acks int16, scratch *[]byte) (AppendResult, error) {
	return p.AppendWith(b, AppendOptions{Acks: acks}, scratch)
}

// AppendWith validates a batch against the topic's rules and appends it as
// leader. Validation runs before taking the partition lock; the append
// itself is ordered by the log. scratch is decompression space reused
// across calls.
func (p *Partition) AppendWith(b record.Batch, o AppendOptions, scratch *[]byte) (AppendResult, error) {
	cfg := p.cfg.Load()
	v, err := record.Validate(b, &cfg.policy, p.now().UnixMilli(), scratch)
	if err != nil {
		return AppendResult{}, err
	}
	return p.appendLeader(v.Batch, o)
}

// AppendMarker writes a transaction marker (WriteTxnMarkers) for a
// producer, as the coordinator's append with acks=all.
func (p *Partition) AppendMarker(producerID int64, epoch int16, m log.Marker) (AppendResult, error) {
	b := log.MarkerBatch(producerID, epoch, m, p.now().UnixMilli())
	return p.appendLeader(b, AppendOptions{Acks: AcksAll, Origin: log.OriginCoordinator})
}

func (p *Partition) appendLeader(b record.Batch, o AppendOptions) (AppendResult, error) {
	cfg := p.cfg.Load()
	acks := o.Acks
	// leaderMu is held (shared) across the write, so leadership cannot
	// change under it: no batch is stamped with an epoch that has ended.
	// The log itself serializes appends; p.mu is not held across the
	// write, so reads and HW updates are not blocked by the disk.
	p.leaderMu.RLock()
	p.mu.Lock()
	if !p.leader {
		p.mu.Unlock()
		p.leaderMu.RUnlock()
		return AppendResult{}, ErrNotLeader
	}
	if p.state.Mirror.ReadOnly {
		err := p.mirrorErrLocked()
		p.mu.Unlock()
		p.leaderMu.RUnlock()
		return AppendResult{}, err
	}
	if acks == AcksAll && len(p.state.ISR) < cfg.minISR {
		isr := p.state.ISR // read under p.mu: an ISR change replaces it
		p.mu.Unlock()
		p.leaderMu.RUnlock()
		return AppendResult{}, fmt.Errorf("%w: ISR %v, min.insync.replicas=%d", ErrNotEnoughReplicas, isr, cfg.minISR)
	}
	epoch := p.state.LeaderEpoch
	if latest := p.log.LatestEpoch(); latest > epoch {
		// Only a promoted mirror whose promotion read a stale epoch
		// can get here: writing would put an older epoch after a newer
		// one in the lineage.
		p.mu.Unlock()
		p.leaderMu.RUnlock()
		return AppendResult{}, fmt.Errorf("%w: the log holds leader epoch %d, above this leader's %d", ErrNotLeader, latest, epoch)
	}
	foreignBelow := p.foreignBelowLocked()
	p.mu.Unlock()
	info, err := p.log.AppendWith(b, log.LeaderAppend{LeaderEpoch: epoch, Origin: o.Origin, VerifyTxn: o.VerifyTxn, Guard: o.Guard,
		ForeignBelow: foreignBelow})
	p.leaderMu.RUnlock()
	if err != nil {
		return AppendResult{}, storageErr(err)
	}
	res := AppendResult{AppendInfo: info}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !info.Duplicate {
		p.appendedLocked(info.BaseOffset, info.LastOffset+1, len(b))
	}
	p.maybeAdvanceHWLocked()
	p.notifyDataLocked()
	if acks != AcksAll || p.log.HighWatermark() > info.LastOffset {
		return res, nil
	}
	if !p.leader {
		return res, ErrNotLeader
	}
	if len(p.state.ISR) < cfg.minISR {
		return res, ErrNotEnoughReplicasAfterAppend
	}
	w := &ackWaiter{offset: info.LastOffset, done: make(chan error, 1)}
	i := sort.Search(len(p.ackWaiters), func(i int) bool { return p.ackWaiters[i].offset > w.offset })
	p.ackWaiters = append(p.ackWaiters, nil)
	copy(p.ackWaiters[i+1:], p.ackWaiters[i:])
	p.ackWaiters[i] = w
	res.Wait = w.done
	return res, nil
}

// storageErr marks I/O failures (a full disk, a failed fsync) so they map
// to KAFKA_STORAGE_ERROR; the log's protocol errors pass through.
func storageErr(err error) error {
	if errors.Is(err, log.ErrOutOfOrderSequence) || errors.Is(err, log.ErrInvalidProducerEpoch) ||
		errors.Is(err, log.ErrInvalidTxnState) || errors.Is(err, log.ErrCoordinatorFenced) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrStorage, err)
}

// completeWaitersLocked answers every acks=all append the high watermark
// now covers. An append whose ISR shrank below min.insync.replicas while
// it waited is answered with NOT_ENOUGH_REPLICAS_AFTER_APPEND.
func (p *Partition) completeWaitersLocked(hw int64) {
	n := 0
	for n < len(p.ackWaiters) && p.ackWaiters[n].offset < hw {
		var err error
		if len(p.state.ISR) < p.cfg.Load().minISR {
			err = ErrNotEnoughReplicasAfterAppend
		}
		p.ackWaiters[n].done <- err
		n++
	}
	p.ackWaiters = p.ackWaiters[n:]
}

func (p *Partition) failWaitersLocked(err error) {
	for _, w := range p.ackWaiters {
		w.done <- err
	}
	p.ackWaiters = nil
}
