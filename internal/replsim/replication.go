package replsim

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/fetcher"
	"weir/internal/log"
	"weir/internal/partition"
)

// The follower side sends what fetcher.build sends for one partition and
// hands the answer to fetcher.Apply; the leader side is kafka/01_fetch.go's
// fetchPartition for a replica, with its long poll.

// scheduleFetch starts the next fetch after d unless one is under way.
func (b *broker) scheduleFetch(d time.Duration) {
	if b.fetching || b.follow < 0 {
		return
	}
	b.fetching = true
	b.s.after(d, b.id, "fetch", func() {
		b.fetching = false
		b.sendFetch()
	})
}

// sendFetch sends one fetch to the leader followed, from the replica's
// current position.
func (b *broker) sendFetch() {
	if b.follow < 0 || b.fetchReq != 0 {
		return
	}
	p := b.part()
	if p == nil {
		return
	}
	pos, ok := p.FetchPosition()
	if !ok || pos.Leader != b.follow {
		return // the manager moves or drops it
	}
	id := b.s.nextID()
	b.fetchReq = id
	ff := partition.FollowerFetch{ReplicaID: b.id, BrokerEpoch: b.epoch, FetchOffset: pos.FetchOffset,
		LogStartOffset: pos.LogStartOffset, LastFetchedEpoch: pos.LastFetchedEpoch, CurrentLeaderEpoch: pos.LeaderEpoch,
		MaxBytes: 256 << b.s.rng.IntN(5), MinOne: true}
	leader := b.s.brokers[pos.Leader]
	label := fmt.Sprintf("fetch %d->%d offset %d epoch %d (last fetched %d)", b.id, pos.Leader, pos.FetchOffset, pos.LeaderEpoch, pos.LastFetchedEpoch)
	b.s.send(b.id, pos.Leader, label, func() { leader.serveFetch(b, id, ff, pos) })
	b.s.after(fetchTimeout, b.id, "fetch timeout", func() {
		if b.fetchReq == id {
			b.fetchReq = 0
			b.scheduleFetch(fetchBackoff)
		}
	})
}

// parkedFetch is a follower fetch waiting, in the leader's long poll, for
// data or replica.fetch.wait.max.ms.
type parkedFetch struct {
	from *broker
	id   uint64
	ff   partition.FollowerFetch
	pos  partition.FetchPosition
	p    *partition.Partition
	w    *partition.Watcher
}

// serveFetch answers a follower's fetch, or parks it when there is no data.
func (b *broker) serveFetch(from *broker, id uint64, ff partition.FollowerFetch, pos partition.FetchPosition) {
	p := b.part()
	if p == nil || !b.live {
		b.answerFetch(from, id, pos, fetcher.Answer{Err: kerr.NotLeaderForPartition, DivergingEndOffset: -1,
			HighWatermark: -1, LogStartOffset: -1})
		return
	}
	a, urgent := b.readForFollower(p, ff)
	if urgent || len(a.Records) > 0 {
		b.answerFetch(from, id, pos, a)
		return
	}
	pf := &parkedFetch{from: from, id: id, ff: ff, pos: pos, p: p, w: partition.NewWatcher()}
	// Woken by an append past its offset (one byte completes it, as
	// replica.fetch.min.bytes=1) or a change of the partition's state.
	p.Watch(pf.w, ff.FetchOffset, partition.BoundLogEnd)
	pf.w.Arm(1)
	b.parked = append(b.parked, pf)
	b.s.after(fetchMaxWait, b.id, "fetch long poll expires", func() {
		if b.unpark(pf) {
			a, _ := b.readForFollower(pf.p, pf.ff)
			b.answerFetch(pf.from, pf.id, pf.pos, a)
		}
	})
}

// readForFollower is fetchPartition for a replica: the read, the error
// code, and whether the answer is urgent (an error or a divergence).
func (b *broker) readForFollower(p *partition.Partition, ff partition.FollowerFetch) (fetcher.Answer, bool) {
	leo := p.Log().LogEndOffset()
	res, err := p.ReadForFollower(ff)
	if err == nil && res.DivergingEpoch < 0 && ff.FetchOffset >= leo && p.IsLeader() {
		b.s.chk.sawAtEnd(b.id, ff.ReplicaID)
	}
	a := fetcher.Answer{DivergingEpoch: res.DivergingEpoch, DivergingEndOffset: res.DivergingEndOffset,
		HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset}
	if err != nil {
		a.Err = fetchErrCode(err)
		if !errors.Is(err, log.ErrOffsetOutOfRange) {
			a.HighWatermark, a.LogStartOffset = -1, -1
		}
		return a, true
	}
	if res.Slice.Size > 0 {
		// The bytes go on the wire now (sendfile at the reply).
		buf := make([]byte, res.Slice.Size)
		if _, err := res.Slice.File.ReadAt(buf, res.Slice.Pos); err != nil && err != io.EOF {
			b.s.fail("broker %d: reading a fetch slice: %v", b.id, err)
		}
		a.Records = buf
	}
	return a, a.DivergingEndOffset >= 0
}

// fetchErrCode maps a partition error to its Kafka code, as
// kafka/errors.go does for the errors ReadForFollower returns.
func fetchErrCode(err error) error {
	switch {
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	case errors.Is(err, partition.ErrNotLeader):
		return kerr.NotLeaderForPartition
	case errors.Is(err, partition.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch
	case errors.Is(err, partition.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch
	case errors.Is(err, partition.ErrStorage):
		return kerr.KafkaStorageError
	}
	return kerr.UnknownServerError
}

func (b *broker) unpark(pf *parkedFetch) bool {
	for i, x := range b.parked {
		if x == pf {
			b.parked = append(b.parked[:i:i], b.parked[i+1:]...)
			pf.p.Unwatch(pf.w)
			return true
		}
	}
	return false
}

func (b *broker) answerFetch(to *broker, id uint64, pos partition.FetchPosition, a fetcher.Answer) {
	label := fmt.Sprintf("fetch answer %d->%d: %d bytes, HW %d", b.id, to.id, len(a.Records), a.HighWatermark)
	switch {
	case a.Err != nil:
		label = fmt.Sprintf("fetch answer %d->%d: %v", b.id, to.id, a.Err)
	case a.DivergingEndOffset >= 0:
		label = fmt.Sprintf("fetch answer %d->%d: diverging at epoch %d end %d", b.id, to.id, a.DivergingEpoch, a.DivergingEndOffset)
	}
	b.s.send(b.id, to.id, label, func() { to.fetchAnswered(id, pos, a) })
}

// fetchAnswered hands an answer to the replica through fetcher.Apply.
func (b *broker) fetchAnswered(id uint64, pos partition.FetchPosition, a fetcher.Answer) {
	if b.fetchReq != id {
		return // a stopped session's answer
	}
	b.fetchReq = 0
	p := b.part()
	if p == nil {
		return
	}
	if a.DivergingEndOffset >= 0 && b.s.opts.Trace != nil {
		b.s.tracef("  broker %d epochs %v LEO %d; leader %d epochs %v", b.id, p.Log().Epochs(), p.Log().LogEndOffset(), pos.Leader,
			b.s.brokers[pos.Leader].part().Log().Epochs())
	}
	before := b.s.chk.replicaState(p)
	err := fetcher.Apply(p, pos, a, func() (int64, error) { return b.leaderEnd(pos) })
	b.s.chk.afterFollowerStep(b, p, before, "fetch answer")
	switch {
	case err == nil:
		b.scheduleFetch(0)
	case errors.Is(err, partition.ErrNotFollowing):
		b.scheduleFetch(0)
	default:
		b.s.tracef("  broker %d: fetch from %d failed: %v", b.id, pos.Leader, err)
		b.scheduleFetch(fetchBackoff)
	}
}

// leaderEnd is the follower's ListOffsets (latest, as a replica) after
// OFFSET_OUT_OF_RANGE, answered at once from the leader's state.
func (b *broker) leaderEnd(pos partition.FetchPosition) (int64, error) {
	l := b.s.brokers[pos.Leader]
	if b.s.isCut(b.id, l.id) || l.paused() {
		return 0, errors.New("ListOffsets: no answer")
	}
	lp := l.part()
	if lp == nil {
		return 0, kerr.NotLeaderForPartition
	}
	end, _, err := lp.LogEndForReplica(pos.LeaderEpoch)
	if err != nil {
		return 0, fetchErrCode(err)
	}
	return end, nil
}

// poll completes what waits on channels: parked fetches whose partition
// changed, and acks=all appends the high watermark reached.
func (b *broker) poll() {
	for i := 0; i < len(b.parked); i++ {
		pf := b.parked[i]
		select {
		case <-pf.w.C:
		default:
			continue
		}
		a, urgent := b.readForFollower(pf.p, pf.ff)
		if urgent || len(a.Records) > 0 {
			b.unpark(pf)
			i--
			b.answerFetch(pf.from, pf.id, pf.pos, a)
		}
	}
	b.pollWaiters()
}

// pollWaiters answers the acks=all appends whose wait ended.
func (b *broker) pollWaiters() {
	for i := 0; i < len(b.waiters); i++ {
		w := b.waiters[i]
		var err error
		select {
		case err = <-w.wait:
		default:
			continue
		}
		b.waiters = append(b.waiters[:i:i], b.waiters[i+1:]...)
		i--
		b.s.tracef("  broker %d: acks=all wait for %d-%d ends: %v (HW %d, state %+v)", b.id, w.info.BaseOffset, w.info.LastOffset, err,
			w.p.HighWatermark(), w.p.State())
		b.answerProduce(w.req, w.p, w.info, err)
	}
}
