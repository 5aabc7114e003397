package partition

// A mirror partition (cluster links, see docs/ARCHITECTURE.md): the
// partition of a mirror topic, whose leader copies the source partition's
// log with the link fetcher (internal/link) rather than taking produces.
// Its batches keep the source's offsets and leader epochs, so while the
// topic mirrors, the log's epoch lineage is the source's: the leader does
// not record its own epochs in it (Apply), and its high watermark never
// passes the source's.

import (
	"errors"
	"fmt"

	"weir/internal/log"
)

// ErrMirrorReadOnly is returned for a produce to a mirror topic that still
// follows its source (INVALID_REQUEST); the message names the link.
var ErrMirrorReadOnly = errors.New("partition: mirror topic is read-only")

// ErrNotMirroring is returned when a link fetcher's answer no longer fits
// the partition: it is not the leader of an active mirror in the same
// epoch, or its log end moved. The fetcher drops the answer.
var ErrNotMirroring = errors.New("partition: not the leader of an active mirror at that position")

// MirrorState is the mirror state of the partition's topic; the zero
// value is an ordinary topic.
type MirrorState struct {
	Link string // the link's name, for messages
	// ReadOnly: the topic follows its source (active or paused).
	ReadOnly bool
	// Active: the leader fetches from the source.
	Active bool
	// Stopped: mirroring ended (promoted or failed over) and the topic's
	// own writes start in leader epoch StopEpoch; the producers of the
	// batches before it are the source's.
	Stopped   bool
	StopEpoch int32
}

// foreignBelowLocked is where the partition's own producers begin, for
// log.LeaderAppend.ForeignBelow: 0 unless the topic is a stopped mirror.
func (p *Partition) foreignBelowLocked() int64 {
	if !p.state.Mirror.Stopped {
		return 0
	}
	return p.log.EpochStartFrom(p.state.Mirror.StopEpoch)
}

// mirrorErr is the error a produce to a read-only mirror gets.
func (p *Partition) mirrorErrLocked() error {
	return fmt.Errorf("%w: %s is a mirror of cluster link %q; it takes no produce until it is promoted or failed over",
		ErrMirrorReadOnly, p.tp.Topic, p.state.Mirror.Link)
}

// MirrorPosition is where the link fetcher of a mirror leader fetches
// from the source.
type MirrorPosition struct {
	LeaderEpoch      int32 // the destination leader epoch
	FetchOffset      int64 // the mirror's log end offset
	LastFetchedEpoch int32 // the source epoch of its last batch, -1 if empty
	LogStartOffset   int64
	HighWatermark    int64
}

// MirrorPosition returns where to fetch from the source, or false when
// this replica is not the leader of an active mirror.
func (p *Partition) MirrorPosition() (MirrorPosition, bool) {
	p.mu.Lock()
	epoch, ok := p.state.LeaderEpoch, p.applied && p.leader && p.state.Mirror.Active
	p.mu.Unlock()
	if !ok {
		return MirrorPosition{}, false
	}
	return MirrorPosition{LeaderEpoch: epoch, FetchOffset: p.log.LogEndOffset(), LastFetchedEpoch: p.log.LatestEpoch(),
		LogStartOffset: p.log.LogStartOffset(), HighWatermark: p.log.HighWatermark()}, true
}

// mirroringRLock takes leaderMu shared (the caller releases it) and checks
// that the replica still leads the active mirror where pos was taken.
func (p *Partition) mirroringRLock(pos MirrorPosition) error {
	p.leaderMu.RLock()
	p.mu.Lock()
	ok := p.applied && p.leader && p.state.Mirror.Active && p.state.LeaderEpoch == pos.LeaderEpoch
	p.mu.Unlock()
	if !ok || p.log.LogEndOffset() != pos.FetchOffset {
		p.leaderMu.RUnlock()
		return ErrNotMirroring
	}
	return nil
}

// AppendMirrored appends whole batches fetched from the source partition
// at the source's offsets, as a follower appends its leader's, then moves
// the high watermark as far as the ISR and the source's high watermark
// allow, and the log start up to the source's (never past the high
// watermark).
func (p *Partition) AppendMirrored(pos MirrorPosition, batches []byte, sourceHW, sourceLogStart int64) (log.AppendInfo, error) {
	if err := p.mirroringRLock(pos); err != nil {
		return log.AppendInfo{}, err
	}
	defer p.leaderMu.RUnlock()
	var info log.AppendInfo
	if len(batches) > 0 {
		if err := p.alignFetched(batches, pos.FetchOffset, "mirrored"); err != nil {
			return info, err
		}
		var err error
		if info, err = p.log.AppendAsFollower(batches); err != nil {
			return info, storageErr(err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(batches) > 0 {
		p.appendedLocked(info.BaseOffset, info.LastOffset+1, len(batches))
	}
	p.sourceHW = sourceHW
	p.maybeAdvanceHWLocked()
	if start := min(sourceLogStart, p.log.HighWatermark()); start > p.log.LogStartOffset() {
		if _, err := p.log.SetLogStartOffset(start); err != nil {
			return info, storageErr(err)
		}
	}
	p.notifyDataLocked()
	return info, nil
}

// TruncateMirrored handles the source's answer to OffsetForLeaderEpoch
// for the epoch of the mirror's last batch: its epoch srcEpoch ends at
// srcEnd there. The log is cut where a follower's would be (see
// TruncateDiverged); a cut means the source lost records the mirror had
// copied (an unclean election on the source). It returns the new log end.
func (p *Partition) TruncateMirrored(pos MirrorPosition, srcEpoch int32, srcEnd int64) (int64, error) {
	if err := p.mirroringRLock(pos); err != nil {
		return 0, err
	}
	defer p.leaderMu.RUnlock()
	to := p.divergencePoint(srcEpoch, srcEnd)
	if to >= p.log.LogEndOffset() {
		return to, nil
	}
	if err := p.truncateLocked(to); err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.notifyLocked()
	p.mu.Unlock()
	return to, nil
}

// RestartMirrored empties the log and restarts it at the source's log
// start, for a mirror that fell behind it, or whose divergence from the
// source lies at or below it (the source deleted what would tell).
func (p *Partition) RestartMirrored(pos MirrorPosition, sourceLogStart int64) error {
	if err := p.mirroringRLock(pos); err != nil {
		return err
	}
	defer p.leaderMu.RUnlock()
	p.lg.Info("restarting the mirror's log at the source's log start", "offset", sourceLogStart, "log_end", p.log.LogEndOffset())
	if err := p.log.TruncateFullyAndStartAt(sourceLogStart); err != nil {
		return storageErr(err)
	}
	p.mu.Lock()
	p.notifyLocked()
	p.mu.Unlock()
	return nil
}

// endMirrorLocked cuts the log of a leader whose mirror was just promoted
// or failed over at its last stable offset: transactions open at the
// source would never get their markers here (the source's coordinator
// does not know this cluster), and would hold the last stable offset back
// for good. What follows the first of them goes with it, as the issue's
// "writable at the mirror's last stable offset" says. Followers cut their
// logs the same way when they fetch (the leader's next epoch starts
// there). Called with leaderMu held exclusively.
func (p *Partition) endMirrorLocked() error {
	lso, leo := p.log.LastStableOffset(), p.log.LogEndOffset()
	if lso >= leo {
		return nil
	}
	p.lg.Warn("mirroring ended: cutting the log at its last stable offset (transactions the source had not completed)",
		"last_stable_offset", lso, "log_end", leo, "high_watermark", p.log.HighWatermark())
	if err := p.log.TruncateTo(lso); err != nil {
		return storageErr(err)
	}
	return nil
}
