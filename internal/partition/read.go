package partition

import (
	"errors"
	"fmt"

	"weir/internal/log"
)

// Isolation levels of a fetch.
const (
	ReadUncommitted = 0
	ReadCommitted   = 1
)

// FetchParams describe one partition of a fetch.
type FetchParams struct {
	Offset      int64
	MaxBytes    int
	LeaderEpoch int32 // the client's current leader epoch, -1 if unknown
	Isolation   int8
	MinOne      bool
}

// FetchResult is a partition's part of a fetch response.
type FetchResult struct {
	Slice            log.Slice
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	// AbortedTxns, for read_committed only (nil otherwise), are the
	// aborted transactions the consumer must skip in Slice.
	AbortedTxns []log.AbortedTxn
}

// Read serves a consumer's fetch from the leader, up to the high watermark
// (read_uncommitted) or the last stable offset (read_committed, with the
// aborted transactions of what it returns). Followers fetch with
// ReadForFollower.
func (p *Partition) Read(fp FetchParams) (FetchResult, error) {
	p.mu.Lock()
	if err := p.checkEpochLocked(fp.LeaderEpoch); err != nil {
		p.mu.Unlock()
		return FetchResult{}, err
	}
	if !p.leader {
		p.mu.Unlock()
		return FetchResult{}, ErrNotLeader
	}
	p.mu.Unlock()
	// The LSO first: it never passes the HW read after it.
	lso := p.log.LastStableOffset()
	hw := p.log.HighWatermark()
	res := FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: p.log.LogStartOffset()}
	bound := hw
	if fp.Isolation == ReadCommitted {
		bound = lso
	}
	// A read_committed read is retried when compaction replaced its
	// segment before its aborted transactions were looked up.
	for range maxReadAttempts {
		sl, err := p.log.Read(fp.Offset, fp.MaxBytes, bound, fp.MinOne)
		if err != nil {
			if errors.Is(err, log.ErrOffsetOutOfRange) {
				return res, err
			}
			return res, storageErr(err)
		}
		res.Slice = sl
		if fp.Isolation != ReadCommitted {
			return res, nil
		}
		var ok bool
		if res.AbortedTxns, ok = p.log.AbortedTxns(fp.Offset, sl); ok {
			return res, nil
		}
	}
	// Still replaced: answer with no records, and the consumer fetches again.
	res.Slice, res.AbortedTxns = log.Slice{}, []log.AbortedTxn{}
	return res, nil
}

// maxReadAttempts bounds the retries of a read_committed read whose
// segment compaction keeps replacing (each swap takes a whole clean).
const maxReadAttempts = 5

// Watcher is notified when a partition it watches gets new data or
// changes state: a waiting fetch re-reads when its channel fires.
type Watcher struct {
	C chan struct{}
}

// NewWatcher returns a watcher with a one-slot channel; notifications
// coalesce.
func NewWatcher() *Watcher { return &Watcher{C: make(chan struct{}, 1)} }

// Watch registers w; Unwatch must follow.
func (p *Partition) Watch(w *Watcher) {
	p.mu.Lock()
	p.watchers[w] = struct{}{}
	p.mu.Unlock()
}

// Unwatch removes w.
func (p *Partition) Unwatch(w *Watcher) {
	p.mu.Lock()
	delete(p.watchers, w)
	p.mu.Unlock()
}

func (p *Partition) notifyLocked() {
	for w := range p.watchers {
		select {
		case w.C <- struct{}{}:
		default:
		}
	}
}

// Special timestamps of ListOffsets.
const (
	LatestTimestamp   = -1
	EarliestTimestamp = -2
	MaxTimestamp      = -3
	// EarliestLocalTimestamp (KIP-405) is the earliest offset here: every
	// segment is local. LatestTieredTimestamp, the end of what is in
	// remote storage, is offset -1 (leader epoch -1): nothing is, as in
	// Kafka with remote storage disabled.
	EarliestLocalTimestamp = -4
	LatestTieredTimestamp  = -5
)

// ListOffset answers ListOffsets for one partition: the offset (and
// timestamp) for a target timestamp, bounded by the high watermark (or
// the last stable offset for read_committed). found is false when no
// record qualifies.
func (p *Partition) ListOffset(ts int64, leaderEpoch int32, isolation int8) (offset, timestamp int64, epoch int32, found bool, err error) {
	p.mu.Lock()
	if err := p.checkEpochLocked(leaderEpoch); err != nil {
		p.mu.Unlock()
		return 0, 0, 0, false, err
	}
	if !p.leader {
		p.mu.Unlock()
		return 0, 0, 0, false, ErrNotLeader
	}
	epoch = p.state.LeaderEpoch
	if p.state.Mirror.ReadOnly {
		// The lineage is the source's: the latest epoch in the log, as
		// Kafka answers from its epoch cache.
		epoch = p.log.LatestEpoch()
	}
	p.mu.Unlock()
	bound := p.log.HighWatermark()
	if isolation == ReadCommitted {
		bound = p.log.LastStableOffset()
	}
	switch ts {
	case LatestTimestamp:
		return bound, -1, epoch, true, nil
	case LatestTieredTimestamp:
		return -1, -1, -1, true, nil
	case EarliestTimestamp, EarliestLocalTimestamp:
		return p.log.LogStartOffset(), -1, p.epochAt(p.log.LogStartOffset()), true, nil
	case MaxTimestamp:
		o, t, ok, err := p.log.MaxTimestampOffset(bound)
		if err != nil {
			return 0, 0, 0, false, storageErr(err)
		}
		return o, t, p.epochAt(o), ok, nil
	}
	o, t, ok, err := p.log.OffsetForTimestamp(ts, bound)
	if err != nil {
		return 0, 0, 0, false, storageErr(err)
	}
	return o, t, p.epochAt(o), ok, nil
}

// LogEndForReplica answers a follower's ListOffsets for the latest offset:
// the leader's log end offset, not its high watermark.
func (p *Partition) LogEndForReplica(leaderEpoch int32) (int64, int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkEpochLocked(leaderEpoch); err != nil {
		return 0, 0, err
	}
	if !p.leader {
		return 0, 0, ErrNotLeader
	}
	return p.log.LogEndOffset(), p.state.LeaderEpoch, nil
}

// epochAt is the leader epoch that wrote offset, from the epoch lineage.
func (p *Partition) epochAt(offset int64) int32 {
	epoch := int32(-1)
	for _, e := range p.log.Epochs() {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}

// DeleteRecords raises the log start offset to offset (-1: the high
// watermark) and returns the new low watermark. A log whose cleanup.policy
// lacks delete refuses with ErrPolicyViolation, as Kafka does.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	p.mu.Lock()
	leader := p.leader
	var mirrorErr error
	if p.state.Mirror.ReadOnly {
		mirrorErr = fmt.Errorf("%w: %s is a mirror of cluster link %q; its log start follows the source's",
			ErrMirrorReadOnly, p.tp.Topic, p.state.Mirror.Link)
	}
	p.mu.Unlock()
	if !leader {
		return -1, ErrNotLeader
	}
	if mirrorErr != nil {
		return -1, mirrorErr
	}
	if offset == -1 {
		offset = p.log.HighWatermark()
	}
	if offset < 0 {
		return -1, log.ErrOffsetOutOfRange
	}
	if !p.log.Config().Delete {
		// As Kafka: only a delete cleanup policy lets the log start move
		// (compaction relies on it staying put, see log/cleaner.go).
		return -1, ErrPolicyViolation
	}
	return p.log.SetLogStartOffset(offset)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch.
func (p *Partition) EndOffsetForEpoch(currentEpoch, epoch int32) (int32, int64, error) {
	p.mu.Lock()
	if err := p.checkEpochLocked(currentEpoch); err != nil {
		p.mu.Unlock()
		return -1, -1, err
	}
	if !p.leader {
		p.mu.Unlock()
		return -1, -1, ErrNotLeader
	}
	p.mu.Unlock()
	e, o := p.log.EndOffsetForEpoch(epoch)
	return e, o, nil
}
