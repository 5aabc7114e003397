package partition

// The follower's side of replication: the fetcher asks where to fetch
// from, and hands back what the leader answered. Every step checks that
// this replica still follows the same leader in the same leader epoch, so
// an answer that arrives after a leadership change is dropped rather than
// written into the wrong log.

import (
	"errors"
	"fmt"

	"weir/internal/log"
	"weir/internal/record"
)

// ErrNotFollowing is returned when an answer no longer fits the replica:
// it follows another leader or epoch, or its log end moved since the
// fetch was sent. The fetcher drops the answer.
var ErrNotFollowing = errors.New("partition: the answer is for another leader epoch or log end")

// FetchPosition is where a follower fetches from.
type FetchPosition struct {
	Leader           int32
	LeaderEpoch      int32
	FetchOffset      int64 // the follower's log end offset
	LastFetchedEpoch int32 // the epoch of its last batch, -1 if empty
	LogStartOffset   int64
}

// FetchPosition returns where to fetch from, or false when this replica is
// not a follower of a live leader.
func (p *Partition) FetchPosition() (FetchPosition, bool) {
	p.mu.Lock()
	leader, epoch, following := p.state.Leader, p.state.LeaderEpoch, p.applied && !p.leader && p.state.Leader >= 0
	p.mu.Unlock()
	if !following {
		return FetchPosition{}, false
	}
	return FetchPosition{Leader: leader, LeaderEpoch: epoch, FetchOffset: p.log.LogEndOffset(),
		LastFetchedEpoch: p.log.LatestEpoch(), LogStartOffset: p.log.LogStartOffset()}, true
}

// followingRLock takes leaderMu shared (the caller releases it) and checks
// that the replica is still where pos was taken: following the same
// leader in the same epoch, with the same log end.
func (p *Partition) followingRLock(pos FetchPosition) error {
	p.leaderMu.RLock()
	p.mu.Lock()
	ok := p.applied && !p.leader && p.state.Leader == pos.Leader && p.state.LeaderEpoch == pos.LeaderEpoch
	p.mu.Unlock()
	if !ok || p.log.LogEndOffset() != pos.FetchOffset {
		p.leaderMu.RUnlock()
		return ErrNotFollowing
	}
	return nil
}

// AppendFetched appends whole batches fetched from the leader in epoch, as
// the leader wrote them, then follows the leader's high watermark (never
// past its own log end) and log start offset.
func (p *Partition) AppendFetched(pos FetchPosition, batches []byte, leaderHW, leaderLogStart int64) (log.AppendInfo, error) {
	if err := p.followingRLock(pos); err != nil {
		return log.AppendInfo{}, err
	}
	defer p.leaderMu.RUnlock()
	var info log.AppendInfo
	if len(batches) > 0 {
		if err := p.alignFetched(batches, pos.FetchOffset, "fetched"); err != nil {
			return info, err
		}
		p.mu.Lock()
		foreignBelow := p.foreignBelowLocked()
		p.mu.Unlock()
		var err error
		if info, err = p.log.AppendFollowerWith(batches, foreignBelow); err != nil {
			return info, storageErr(err)
		}
		p.stats.Replicated(len(batches))
	}
	p.log.SetHighWatermark(min(leaderHW, p.log.LogEndOffset()))
	if leaderLogStart > p.log.LogStartOffset() {
		if _, err := p.log.SetLogStartOffset(min(leaderLogStart, p.log.HighWatermark())); err != nil {
			return info, storageErr(err)
		}
	}
	p.mu.Lock()
	if len(batches) > 0 {
		p.appendedLocked(info.BaseOffset, info.LastOffset+1, len(batches))
	}
	p.notifyDataLocked()
	p.mu.Unlock()
	return info, nil
}

// TruncateDiverged handles a leader's DivergingEpoch answer: the log is cut
// at the end of the leader's epoch divEpoch (divEnd) or of the largest
// local epoch below it, whichever is lower. It returns the new log end.
func (p *Partition) TruncateDiverged(pos FetchPosition, divEpoch int32, divEnd int64) (int64, error) {
	if err := p.followingRLock(pos); err != nil {
		return 0, err
	}
	defer p.leaderMu.RUnlock()
	to := p.divergencePoint(divEpoch, divEnd)
	return to, p.truncateLocked(to)
}

// divergencePoint is where the log must be cut when the leader's (or a
// mirror's source's) epoch divEpoch ends at divEnd: there, or at the end
// of the largest local epoch below it, whichever is lower.
func (p *Partition) divergencePoint(divEpoch int32, divEnd int64) int64 {
	leo := p.log.LogEndOffset()
	to := min(divEnd, leo)
	if e, end := p.log.EndOffsetForEpoch(divEpoch); e >= 0 {
		if e == divEpoch {
			to = min(to, end)
		} else {
			// The leader's epoch is unknown here: cut back to the end of
			// the last epoch both may share, and fetch again.
			to = min(end, leo)
		}
	}
	return to
}

// TruncateTo cuts the log at offset, for a follower whose log end is past
// the leader's (OFFSET_OUT_OF_RANGE above the leader's log end).
func (p *Partition) TruncateTo(pos FetchPosition, offset int64) error {
	if err := p.followingRLock(pos); err != nil {
		return err
	}
	defer p.leaderMu.RUnlock()
	return p.truncateLocked(offset)
}

func (p *Partition) truncateLocked(to int64) error {
	switch hw := p.log.HighWatermark(); {
	case to >= p.log.LogEndOffset():
		// Nothing to cut, but the log still drops an epoch that starts
		// at its end (one this replica led without appending in it),
		// else the next fetch diverges the same way again.
	case to < hw:
		p.lg.Warn("truncating below the high watermark: records the leader committed are lost here", "to", to, "high_watermark", hw)
	default:
		p.lg.Info("truncating a diverged log", "to", to, "log_end", p.log.LogEndOffset())
	}
	if err := p.log.TruncateTo(to); err != nil {
		return storageErr(err)
	}
	return nil
}

// RestartDiverged empties the log and restarts it at the leader's log
// start, for a follower whose log diverged from the leader's at or below
// that offset (a DivergingEpoch answer ending there). Below its log start
// the leader has deleted its records and the epochs that described them,
// so this log's records there cannot be checked: they may be another
// history (a deposed leader's), and the producer state rebuilt from them
// would go on deciding, once this replica leads, which retried batches
// are duplicates. Cutting at the divergence kept them (found by
// internal/replsim).
func (p *Partition) RestartDiverged(pos FetchPosition, leaderLogStart int64) error {
	if err := p.followingRLock(pos); err != nil {
		return err
	}
	defer p.leaderMu.RUnlock()
	p.lg.Info("diverged at or below the leader's log start; restarting the log", "offset", leaderLogStart,
		"log_end", p.log.LogEndOffset())
	if err := p.log.TruncateFullyAndStartAt(leaderLogStart); err != nil {
		return storageErr(err)
	}
	return nil
}

// RestartAt empties the log and restarts it at the leader's log start
// offset, for a follower that fell behind it (OFFSET_OUT_OF_RANGE below
// the leader's log start).
func (p *Partition) RestartAt(pos FetchPosition, leaderLogStart int64) error {
	if err := p.followingRLock(pos); err != nil {
		return err
	}
	defer p.leaderMu.RUnlock()
	if leaderLogStart <= p.log.LogEndOffset() {
		return fmt.Errorf("partition %s: restart at %d within the log (end %d)", p.tp, leaderLogStart, p.log.LogEndOffset())
	}
	p.lg.Info("behind the leader's log start; restarting the log", "offset", leaderLogStart)
	if err := p.log.TruncateFullyAndStartAt(leaderLogStart); err != nil {
		return storageErr(err)
	}
	return nil
}

// alignFetched checks that batches, copied from an upstream log (the
// leader's, or a mirror's source) at fetchOffset, can follow this log's end.
// A first batch past fetchOffset is fine: the gap is records the upstream
// cleaner removed. A first batch containing fetchOffset is fine only when
// this log is empty at its log start (the upstream log start was moved inside
// that batch by DeleteRecords): the log then restarts at the batch, and the
// caller moves its log start back up. what names the batches in errors.
func (p *Partition) alignFetched(batches []byte, fetchOffset int64, what string) error {
	b, _, err := record.Next(batches)
	switch {
	case err != nil:
		return fmt.Errorf("partition %s: %s batches: %w", p.tp, what, err)
	case b.BaseOffset() >= fetchOffset:
		return nil
	case b.LastOffset() >= fetchOffset && fetchOffset == p.log.LogStartOffset():
		if err := p.log.TruncateFullyAndStartAt(b.BaseOffset()); err != nil {
			return storageErr(err)
		}
		return nil
	}
	return fmt.Errorf("partition %s: %s batches start at %d, before the fetch offset %d", p.tp, what, b.BaseOffset(), fetchOffset)
}
