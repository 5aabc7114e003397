// Package link copies the partitions of mirror topics from the source
// cluster of a cluster link (see "Cluster links" in docs/ARCHITECTURE.md).
// On the destination leader of each partition of an active mirror topic a
// loop fetches the source partition as a consumer does (read_uncommitted,
// up to the source's high watermark) and appends the raw batches at the
// source's offsets with partition.AppendMirrored: no decoding, no
// re-batching, the source's leader epochs kept.
//
// Step is the whole decision for one partition, given a Source; the
// Manager runs it in a loop per partition over a franz-go client of the
// source cluster (source.go). Divergence: whenever the source partition's
// leader epoch is not the one the mirror last checked against (a new
// leadership here, a leader change there, an error), the mirror asks the
// source for the end of the epoch of its last batch (OffsetForLeaderEpoch)
// before fetching, and cuts its log where a follower would.
package link

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/partition"
	"weir/internal/record"
)

// Source is a source cluster as a mirror partition's loop sees it. Each
// call names the source topic and partition; epoch is the source leader
// epoch the caller believes current (from Leader), sent so that a source
// leader of another epoch refuses (FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER, as kerr errors).
type Source interface {
	// LeaderEpoch is the current leader epoch of the source partition
	// as last learnt from the source's metadata; refresh asks again.
	LeaderEpoch(ctx context.Context, topic string, part int32, refresh bool) (int32, error)
	// Fetch reads the source partition from offset (up to maxBytes, at
	// least one batch) as a read_uncommitted consumer.
	Fetch(ctx context.Context, topic string, part, epoch int32, offset int64, maxBytes int32) (Fetched, error)
	// EpochEnd answers OffsetForLeaderEpoch for leaderEpoch: the largest
	// epoch <= leaderEpoch the source has and where it ends (-1, -1:
	// undefined).
	EpochEnd(ctx context.Context, topic string, part, epoch, leaderEpoch int32) (int32, int64, error)
	// LogStart is the source partition's log start offset (ListOffsets
	// earliest), for a fetch answered OFFSET_OUT_OF_RANGE without it
	// (Kafka sends -1 there).
	LogStart(ctx context.Context, topic string, part, epoch int32) (int64, error)
}

// Fetched is the source's answer to a fetch of one partition.
type Fetched struct {
	Err            error // the partition's error, as a kerr error
	Records        []byte
	HighWatermark  int64
	LogStartOffset int64
}

// State is what a partition's loop remembers between steps.
type State struct {
	// Checked is the source leader epoch at which the mirror's log was
	// last checked against the source's; -1: not checked yet.
	Checked int32
}

// NewState is the state of a loop that has not checked its log yet.
func NewState() State { return State{Checked: -1} }

// Result says what a step did.
type Result struct {
	Appended  int   // bytes appended
	Records   int   // records appended
	Truncated bool  // the log was cut (source divergence) or restarted
	SourceHW  int64 // the source's high watermark, -1 if not fetched
}

// Step does one round for mirror partition p of sourceTopic: check the log
// against the source when the source leader epoch changed, else fetch and
// append. An error means back off (the source is unreachable, or the
// answer did not fit); partition.ErrNotMirroring means p is no longer an
// active mirror here, or moved under the step.
func Step(ctx context.Context, p *partition.Partition, sourceTopic string, st *State, src Source, maxBytes int32) (Result, error) {
	res := Result{SourceHW: -1}
	pos, ok := p.MirrorPosition()
	if !ok {
		return res, partition.ErrNotMirroring
	}
	part := p.TopicPartition().Partition
	epoch, err := src.LeaderEpoch(ctx, sourceTopic, part, st.Checked < 0)
	if err != nil {
		return res, err
	}
	if st.Checked != epoch {
		if pos.LastFetchedEpoch >= 0 {
			e, end, err := src.EpochEnd(ctx, sourceTopic, part, pos.LastFetchedEpoch, epoch)
			if err == nil && e >= 0 && end < 0 {
				err = fmt.Errorf("source answered epoch %d with end offset %d", e, end)
			}
			if err != nil {
				st.Checked = -1
				return res, err
			}
			if e < 0 {
				// The source has no epoch at or below the mirror's last
				// one (its log start passed it): what the mirror holds
				// cannot be checked; start again from nothing.
				if err := p.RestartMirrored(pos, 0); err != nil {
					return res, err
				}
				res.Truncated = true
			} else {
				to, err := p.TruncateMirrored(pos, e, end)
				if err != nil {
					return res, err
				}
				res.Truncated = to < pos.FetchOffset
			}
		}
		st.Checked = epoch
		return res, nil
	}
	f, err := src.Fetch(ctx, sourceTopic, part, epoch, pos.FetchOffset, maxBytes)
	if err != nil {
		return res, err
	}
	switch {
	case errors.Is(f.Err, kerr.OffsetOutOfRange):
		if f.LogStartOffset < 0 {
			if f.LogStartOffset, err = src.LogStart(ctx, sourceTopic, part, epoch); err != nil {
				return res, err
			}
		}
		if pos.FetchOffset < f.LogStartOffset {
			if err := p.RestartMirrored(pos, f.LogStartOffset); err != nil {
				return res, err
			}
			res.Truncated = true
			return res, nil
		}
		// Past the source's log end: the source lost records; check.
		st.Checked = -1
		return res, f.Err
	case errors.Is(f.Err, kerr.FencedLeaderEpoch) || errors.Is(f.Err, kerr.UnknownLeaderEpoch) ||
		errors.Is(f.Err, kerr.NotLeaderForPartition) || errors.Is(f.Err, kerr.UnknownTopicOrPartition) ||
		errors.Is(f.Err, kerr.UnknownTopicID) || errors.Is(f.Err, kerr.InconsistentTopicID):
		st.Checked = -1 // learn the new leader, then check again
		return res, f.Err
	case f.Err != nil:
		return res, f.Err
	}
	batches := wholeBatches(f.Records)
	if _, err := p.AppendMirrored(pos, batches, f.HighWatermark, f.LogStartOffset); err != nil {
		return res, err
	}
	res.Appended, res.SourceHW = len(batches), f.HighWatermark
	for b := batches; len(b) > 0; {
		batch, rest, err := record.Next(b)
		if err != nil {
			break
		}
		res.Records += int(batch.NumRecords())
		b = rest
	}
	if len(batches) == 0 && len(f.Records) > 0 {
		return res, fmt.Errorf("a batch of %s-%d at %d is larger than link.fetcher.max.bytes (%d)", sourceTopic, part, pos.FetchOffset, maxBytes)
	}
	return res, nil
}

// wholeBatches drops a batch cut short at the end of a fetch answer.
func wholeBatches(b []byte) []byte {
	off := 0
	for off < len(b) {
		n, ok := record.PeekSize(b[off:])
		if !ok || n <= 0 || off+n > len(b) {
			break
		}
		off += n
	}
	return b[:off]
}
