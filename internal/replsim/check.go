package replsim

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/partition"
	"weir/internal/record"
)

// checker holds what the invariants need to remember across steps. After
// every step it checks (step, committed, afterFollowerStep):
//
//   - a leader's high watermark never goes down in its leader epoch, and
//     never passes its log end;
//   - the leader epoch a broker applied never goes down; one leader epoch
//     has one leader, as the controller chose it and as brokers act;
//   - the controller elects only ISR members (unclean elections only where
//     allowed, and then only uncleanly), never empties the ISR, keeps the
//     leader in it;
//   - below the high watermark, replicas hold byte-identical batches: the
//     committed log ("canon") is the sequence of batches below some
//     replica's high watermark, as first seen; every replica's log below
//     its own high watermark, and every healthy member of a leader's ISR
//     below that leader's, must be a prefix of it (checked incrementally
//     from verified[id]), and no idempotent batch is in it twice;
//   - no replica's log is cut below what was verified, nor truncated by a
//     fetch answer below its high watermark;
//   - every healthy member of the controller's ISR holds every offset
//     acknowledged to acks=all;
//   - the ISR never loses a replica that its leader saw at its log end
//     within replica.lag.time.max.ms (proposed), and the controller takes
//     a live replica out of an ISR only when its leader asks (committed);
//   - a partition whose leader is not live while a live ISR member could
//     lead gets a live leader within the session timeout and one fencing
//     check (available);
//
// and when a leader answers acks=all (appendedAll, ackAllAnswered): the ISR
// had min.insync.replicas members at the append and has them now, the high
// watermark covers the batch, which is the request's. At the end (final):
// all replicas hold the same log, and every batch of the acks=all producer
// is on the leader once, in order, where it was acknowledged. Checks about
// committed data stop once it may legitimately be lost (durable).
type checker struct {
	s *Sim
	// epochLeader is the leader of each leader epoch, as the controller
	// chose it and as the replicas acted.
	epochLeader map[int32]int32
	nodeEpoch   [numBrokers + 1]int32 // the highest leader epoch each broker applied
	tenure      [numBrokers + 1]tenure
	verified    [numBrokers + 1]int64

	canon    []record.Batch
	canonAt  map[int64]int // base offset -> index in canon
	canonEnd int64
	keys     map[batchKey]int64 // idempotent batches in canon -> base offset

	// unclean is set by an unclean election; outside is set when a chaos
	// seed impairs brokers beyond the failure assumption. Either makes
	// loss of committed data legitimate, and the checks that forbid it
	// stop.
	unclean bool
	outside string

	truncations int
	// maxAcked is the highest offset a leader acknowledged to acks=all.
	maxAcked int64

	// seenAtEnd is when a leader last served a follower's fetch made at
	// its log end, by (leader, follower); isrAt is the controller's ISR
	// at each partition epoch; inAlter is set while the controller
	// handles an AlterPartition.
	seenAtEnd map[[2]int32]time.Time
	isrAt     map[int32][]int32
	inAlter   bool
	// leaderless is when the partition was first seen, in leader epoch
	// leaderlessEpoch, without a live leader while a live ISR member
	// could lead (zero: it is not); failover is the last controller
	// failover.
	leaderless, failover time.Time
	leaderlessEpoch      int32
}

// tenure is a broker's leadership: the epoch and its highest HW.
type tenure struct {
	leading bool
	epoch   int32
	hw      int64
}

type batchKey struct {
	pid   int64
	epoch int16
	seq   int32
}

func newChecker(s *Sim) *checker {
	k := &checker{s: s, epochLeader: map[int32]int32{}, canonAt: map[int64]int{}, keys: map[batchKey]int64{}, maxAcked: -1,
		seenAtEnd: map[[2]int32]time.Time{}, isrAt: map[int32][]int32{}}
	for i := range k.nodeEpoch {
		k.nodeEpoch[i] = -1
	}
	return k
}

// durable reports whether committed data must survive: no unclean election
// and no failure beyond the assumption happened.
func (k *checker) durable() bool { return !k.unclean && k.outside == "" }

func (k *checker) leftAssumption(why string) {
	if k.outside == "" {
		k.outside = why
		k.s.tracef("  == %s: durability checks stop", why)
	}
}

// committed checks a metadata commit: leader epochs only grow, a leader
// comes from the ISR (unless elected uncleanly where allowed), and one
// epoch has one leader.
func (k *checker) committed(before, after *metadata.Image) {
	p0, p1 := partOf(before), partOf(after)
	if p1 == nil {
		return
	}
	if len(p1.ISR) == 0 {
		k.s.fail("controller: empty ISR")
	}
	if p1.Leader >= 0 && !slices.Contains(p1.ISR, p1.Leader) {
		k.s.fail("controller: leader %d is not in the ISR %v", p1.Leader, p1.ISR)
	}
	if p0 != nil {
		if p1.LeaderEpoch < p0.LeaderEpoch || p1.PartitionEpoch < p0.PartitionEpoch {
			k.s.fail("controller: epochs went down: leader %d->%d partition %d->%d", p0.LeaderEpoch, p1.LeaderEpoch,
				p0.PartitionEpoch, p1.PartitionEpoch)
		}
		if p1.Leader >= 0 && p1.Leader != p0.Leader && !slices.Contains(p0.ISR, p1.Leader) {
			if k.s.p.chaos && p1.LeaderRecoveryState == 1 {
				k.unclean = true
				k.s.tracef("  == unclean election of %d (ISR was %v): durability checks stop", p1.Leader, p0.ISR)
			} else {
				k.s.fail("controller: broker %d elected leader in epoch %d from outside the ISR %v", p1.Leader, p1.LeaderEpoch, p0.ISR)
			}
		}
		k.s.rejoined(after, p0.ISR, p1.ISR)
		for _, id := range p0.ISR {
			if slices.Contains(p1.ISR, id) || k.inAlter {
				continue
			}
			if b0, b1 := before.Brokers[id], after.Brokers[id]; b1 != nil && b0 != nil && b0.Epoch == b1.Epoch && !b1.Fenced && !b1.InControlledShutdown {
				k.s.fail("controller: live broker %d taken out of the ISR %v -> %v without its leader asking", id, p0.ISR, p1.ISR)
			}
		}
	}
	k.isrAt[p1.PartitionEpoch] = p1.ISR
	if p1.Leader >= 0 {
		k.leads(p1.LeaderEpoch, p1.Leader, "the controller")
	}
	k.s.tracef("  metadata: leader %d epoch %d partition epoch %d ISR %v", p1.Leader, p1.LeaderEpoch, p1.PartitionEpoch, p1.ISR)
}

func partOf(img *metadata.Image) *metadata.Partition {
	t := img.Topics.Get(topic.Topic)
	if t == nil {
		return nil
	}
	return t.Partitions[topic.Partition]
}

// leads records that id leads epoch; a second leader of an epoch fails.
func (k *checker) leads(epoch, id int32, who string) {
	if l, ok := k.epochLeader[epoch]; ok && l != id {
		k.s.fail("%s: broker %d leads epoch %d, which broker %d led", who, id, epoch, l)
		return
	}
	k.epochLeader[epoch] = id
}

// loaded notes that a broker (re)opened its logs: its log is checked
// afresh, and its leadership starts over, having seen no follower.
func (k *checker) loaded(b *broker) {
	k.verified[b.id], k.tenure[b.id] = 0, tenure{}
	for key := range k.seenAtEnd {
		if key[0] == b.id {
			delete(k.seenAtEnd, key)
		}
	}
}

// sawAtEnd notes that leader served follower's fetch made at its log end.
func (k *checker) sawAtEnd(leader, follower int32) {
	k.seenAtEnd[[2]int32{leader, follower}] = k.s.now
}

// proposed checks an ISR change a leader proposes: it drops no replica
// the leader saw at its log end within replica.lag.time.max.ms.
func (k *checker) proposed(leader int32, c partition.IsrChange) {
	for _, id := range k.isrAt[c.PartitionEpoch] {
		if slices.ContainsFunc(c.ISR, func(m partition.IsrMember) bool { return m.ID == id }) {
			continue
		}
		if at, ok := k.seenAtEnd[[2]int32{leader, id}]; ok && k.s.now.Sub(at) <= lagTimeMax {
			k.s.fail("leader %d proposes taking %d out of the ISR %v (partition epoch %d), which fetched at its log end %v ago",
				leader, id, k.isrAt[c.PartitionEpoch], c.PartitionEpoch, k.s.now.Sub(at))
		}
	}
}

// available checks that the partition does not stay without a live
// leader while a live ISR member could lead for longer than it takes the
// controller to fence the leader: its session, one fencing check, and
// (in chaos seeds) a late heartbeat's delay, counted from the last
// controller failover, which restarts every session, and from the last
// election (which may pick a broker that died but whose session has not
// run out). Live: up, loaded, heard by the controller, registered under
// its current epoch, unfenced.
func (k *checker) available() {
	st := k.s.ctrl.partition()
	if st == nil {
		return
	}
	img := k.s.ctrl.c.Image()
	live := func(id int32) bool {
		b, r := k.s.brokers[id], img.Brokers[id]
		return b.up && b.live && !b.paused() && !b.silent && !k.s.isCut(id, controllerID) &&
			r != nil && r.Epoch == b.epoch && !r.Fenced && !r.InControlledShutdown
	}
	if st.Leader >= 0 && live(st.Leader) || !slices.ContainsFunc(st.ISR, live) {
		k.leaderless = time.Time{}
		return
	}
	if k.leaderless.IsZero() || k.leaderlessEpoch != st.LeaderEpoch {
		k.leaderless, k.leaderlessEpoch = k.s.now, st.LeaderEpoch
	}
	bound := sessionTimeout + fenceCheckEvery + 5*time.Millisecond
	if k.s.p.chaos {
		bound += k.s.p.maxDelay
	}
	if since := latest(k.leaderless, k.failover); k.s.now.Sub(since) > bound {
		k.s.fail("the partition has had no live leader for %v (leader %d, ISR %v) while ISR members are live",
			k.s.now.Sub(since), st.Leader, st.ISR)
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// step checks every broker after an event.
func (k *checker) step() {
	k.available()
	var leaders []*broker
	bound := [numBrokers + 1]int64{}
	for _, b := range k.s.brokers[1:] {
		p := b.part()
		if p == nil || !b.live {
			continue
		}
		st := p.State()
		if st.LeaderEpoch < k.nodeEpoch[b.id] {
			k.s.fail("broker %d: leader epoch went down from %d to %d", b.id, k.nodeEpoch[b.id], st.LeaderEpoch)
		}
		k.nodeEpoch[b.id] = max(k.nodeEpoch[b.id], st.LeaderEpoch)
		hw, leo := p.HighWatermark(), p.Log().LogEndOffset()
		if hw > leo {
			k.s.fail("broker %d: high watermark %d above log end %d", b.id, hw, leo)
		}
		bound[b.id] = hw
		t := &k.tenure[b.id]
		if !p.IsLeader() {
			*t = tenure{}
			continue
		}
		k.leads(st.LeaderEpoch, b.id, fmt.Sprintf("broker %d", b.id))
		if t.leading && t.epoch == st.LeaderEpoch && hw < t.hw {
			k.s.fail("broker %d: leader's high watermark went down from %d to %d in epoch %d", b.id, t.hw, hw, st.LeaderEpoch)
		}
		*t = tenure{leading: true, epoch: st.LeaderEpoch, hw: hw}
		leaders = append(leaders, b)
	}
	if !k.durable() {
		return
	}
	// Every healthy member of the controller's ISR, which may be elected,
	// holds every record acknowledged to acks=all.
	if st := k.s.ctrl.partition(); st != nil {
		for _, id := range st.ISR {
			m := k.s.brokers[id]
			if mp := m.part(); mp != nil && m.live && !m.crashed && mp.Log().LogEndOffset() <= k.maxAcked {
				k.s.fail("broker %d, in the controller's ISR %v (epochs %d/%d), ends at %d but offset %d was acknowledged",
					id, st.ISR, st.LeaderEpoch, st.PartitionEpoch, mp.Log().LogEndOffset(), k.maxAcked)
				return
			}
		}
	}
	// A healthy ISR member in the leader's epoch holds what the leader
	// committed.
	for _, l := range leaders {
		lp := l.part()
		st, hw := lp.State(), lp.HighWatermark()
		for _, id := range st.ISR {
			m := k.s.brokers[id]
			mp := m.part()
			if id == l.id || mp == nil || !m.live || m.crashed || mp.State().LeaderEpoch != st.LeaderEpoch {
				continue
			}
			if leo := mp.Log().LogEndOffset(); leo < hw {
				k.s.fail("broker %d, in leader %d's ISR %v in epoch %d, ends at %d below the high watermark %d",
					id, l.id, st.ISR, st.LeaderEpoch, leo, hw)
				return
			}
			bound[id] = max(bound[id], hw)
		}
	}
	for _, b := range k.s.brokers[1:] {
		if p := b.part(); p != nil && b.live {
			k.verify(b, p, bound[b.id])
		}
	}
}

// verify compares a broker's log in [verified, bound) with the committed
// log, extending the committed log with what no replica showed before.
func (k *checker) verify(b *broker, p *partition.Partition, bound int64) {
	l := p.Log()
	if leo := l.LogEndOffset(); leo < k.verified[b.id] {
		k.s.fail("broker %d: log cut to %d below %d, which was committed", b.id, leo, k.verified[b.id])
		return
	}
	// Below the log start records are gone (DeleteRecords); the log
	// start may be inside a batch, which is then read whole.
	for from := max(k.verified[b.id], l.LogStartOffset()); from < bound; {
		buf, err := l.ReadBytes(from, 1<<20, bound)
		if err != nil {
			k.s.fail("broker %d: reading [%d, %d): %v", b.id, from, bound, err)
			return
		}
		if len(buf) == 0 {
			k.s.fail("broker %d: nothing to read at %d below %d", b.id, from, bound)
			return
		}
		for len(buf) > 0 {
			bt, rest, err := record.Next(buf)
			if err != nil {
				k.s.fail("broker %d: a bad batch at %d: %v", b.id, from, err)
				return
			}
			buf = rest
			if bt.BaseOffset() > from || bt.LastOffset() < from {
				k.s.fail("broker %d: batch at %d-%d where %d was expected", b.id, bt.BaseOffset(), bt.LastOffset(), from)
				return
			}
			if !k.match(b, bt) {
				return
			}
			from = bt.NextOffset()
			k.verified[b.id] = from
		}
	}
}

// match checks one batch against the committed log or appends it.
func (k *checker) match(b *broker, bt record.Batch) bool {
	base := bt.BaseOffset()
	if base < k.canonEnd {
		i, ok := k.canonAt[base]
		if !ok {
			k.s.fail("broker %d: committed batch at %d does not start where a committed batch does", b.id, base)
			return false
		}
		if !bytes.Equal(k.canon[i], bt) {
			k.s.fail("broker %d: committed batch at %d differs from the one committed first: %s vs %s", b.id, base,
				describeBatch(bt), describeBatch(k.canon[i]))
			return false
		}
		return true
	}
	if base != k.canonEnd {
		k.s.fail("broker %d: committed batch at %d leaves a gap after %d", b.id, base, k.canonEnd)
		return false
	}
	if bt.ProducerID() >= 0 {
		key := batchKey{bt.ProducerID(), bt.ProducerEpoch(), bt.BaseSequence()}
		// A replica whose log starts after the first copy (DeleteRecords
		// removed it, and the replica restarted its log at the log start)
		// has no producer state for it and cannot know: Kafka forgets
		// that too.
		if at, ok := k.keys[key]; ok && at >= b.part().Log().LogStartOffset() {
			k.s.fail("producer %d's batch (epoch %d, sequence %d) committed twice, at %d and %d", key.pid, key.epoch, key.seq, at, base)
			return false
		}
		k.keys[key] = base
	}
	k.canonAt[base] = len(k.canon)
	k.canon = append(k.canon, slices.Clone(bt))
	k.canonEnd = bt.NextOffset()
	return true
}

func describeBatch(b record.Batch) string {
	return fmt.Sprintf("[offsets %d-%d epoch %d producer %d/%d seq %d]", b.BaseOffset(), b.LastOffset(), b.LeaderEpoch(),
		b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
}

// replicaState is what a follower step may not undo.
type replicaState struct{ hw, leo int64 }

func (k *checker) replicaState(p *partition.Partition) replicaState {
	return replicaState{hw: p.HighWatermark(), leo: p.Log().LogEndOffset()}
}

// afterFollowerStep checks that handling a fetch answer did not truncate
// the log below the high watermark it had.
func (k *checker) afterFollowerStep(b *broker, p *partition.Partition, before replicaState, what string) {
	leo := p.Log().LogEndOffset()
	if leo < before.leo {
		k.truncations++
	}
	if leo < before.leo && leo < before.hw && k.durable() {
		k.s.fail("broker %d: %s truncated the log to %d, below its high watermark %d", b.id, what, leo, before.hw)
	}
}

// appendedAll checks an acks=all append the leader accepted.
func (k *checker) appendedAll(b *broker, p *partition.Partition, isr int, info log.AppendInfo) {
	if isr < minISR {
		k.s.fail("broker %d: acks=all append at %d accepted with an ISR of %d", b.id, info.BaseOffset, isr)
	}
}

// ackAllAnswered checks an acks=all success the leader is about to send:
// the ISR is large enough, the high watermark covers the batch, and the
// batch at the offset answered is the request's.
func (k *checker) ackAllAnswered(b *broker, p *partition.Partition, req *produceReq, info log.AppendInfo) {
	if isr := p.State().ISR; len(isr) < minISR {
		k.s.fail("broker %d: acks=all answered with the ISR %v", b.id, isr)
	}
	k.maxAcked = max(k.maxAcked, info.LastOffset)
	if hw := p.HighWatermark(); hw <= info.LastOffset {
		k.s.fail("broker %d: acks=all answered for offsets %d-%d with the high watermark at %d", b.id, info.BaseOffset, info.LastOffset, hw)
		return
	}
	if info.BaseOffset < p.Log().LogStartOffset() {
		return // deleted by DeleteRecords meanwhile
	}
	buf, err := p.Log().ReadBytes(info.BaseOffset, 1, info.BaseOffset+1)
	if err != nil {
		k.s.fail("broker %d: reading the acknowledged batch at %d: %v", b.id, info.BaseOffset, err)
		return
	}
	got, _, err := record.Next(buf)
	want := record.Batch(req.data)
	if err != nil || got.BaseOffset() != info.BaseOffset || got.ProducerID() != want.ProducerID() ||
		got.ProducerEpoch() != want.ProducerEpoch() || got.BaseSequence() != want.BaseSequence() {
		k.s.fail("broker %d: acks=all answered offset %d, which holds %v, not the request's batch %s", b.id, info.BaseOffset, err, describeBatch(want))
	}
}

// final checks the quiesced cluster: every replica holds the same log,
// and (when committed data had to survive) every batch the acks=all
// producer sent is on the leader exactly once, in order, where it was
// acknowledged.
func (k *checker) final() {
	st := k.s.ctrl.partition()
	leader := k.s.brokers[st.Leader].part().Log()
	// Log starts may differ (a restarted replica's is checkpointed):
	// compare from the highest.
	from := int64(0)
	for _, b := range k.s.brokers[1:] {
		from = max(from, b.part().Log().LogStartOffset())
	}
	want, err := readFrom(leader, from)
	if err != nil {
		k.s.fail("reading the leader's log: %v", err)
		return
	}
	for _, b := range k.s.brokers[1:] {
		got, err := readFrom(b.part().Log(), from)
		if err != nil {
			k.s.fail("reading broker %d's log: %v", b.id, err)
			return
		}
		if !bytes.Equal(got, want) {
			k.s.fail("after quiescing, broker %d's log differs from the leader %d's from offset %d", b.id, st.Leader, from)
			return
		}
	}
	if want, err = readFrom(leader, leader.LogStartOffset()); err != nil {
		k.s.fail("reading the leader's log: %v", err)
		return
	}
	seen := map[batchKey]int64{}
	var found []string // the acks=all producer's batches in log order
	offsetOf := map[string]int64{}
	for buf := want; len(buf) > 0; {
		bt, rest, err := record.Next(buf)
		if err != nil {
			k.s.fail("the leader's log: %v", err)
			return
		}
		buf = rest
		key := batchKey{bt.ProducerID(), bt.ProducerEpoch(), bt.BaseSequence()}
		if at, ok := seen[key]; ok {
			k.s.fail("producer %d's batch (epoch %d, sequence %d) is in the log twice, at %d and %d", key.pid, key.epoch, key.seq, at, bt.BaseOffset())
			return
		}
		seen[key] = bt.BaseOffset()
		raw, err := bt.Decoded(nil, 1<<20)
		if err != nil {
			k.s.fail("decoding the batch at %d: %v", bt.BaseOffset(), err)
			return
		}
		it := record.NewRecords(raw, bt.NumRecords())
		for r, ok := it.Next(); ok; r, ok = it.Next() {
			if v := string(r.Value); strings.HasPrefix(v, "all-") {
				found = append(found, v)
				offsetOf[v] = bt.BaseOffset() + int64(r.OffsetDelta)
			}
		}
	}
	if !k.durable() {
		k.s.tracef("== quiesced (durability not checked: %s, unclean %v)", k.outside, k.unclean)
		return
	}
	c := k.s.clients[0]
	var expect []string
	for idx := 0; idx < c.nextIdx; idx++ {
		var a *ackedBatch
		for i := range c.acked {
			if c.acked[i].idx == idx {
				a = &c.acked[i]
			}
		}
		if a == nil {
			k.s.fail("batch %d of the acks=all producer was never acknowledged", idx)
			return
		}
		if a.offset+int64(a.n) <= leader.LogStartOffset() {
			continue // deleted by DeleteRecords
		}
		for i := range a.n {
			expect = append(expect, c.value(idx, i))
		}
	}
	if !slices.Equal(found, expect) {
		k.s.fail("the acks=all producer's records on the leader are %v, want %v", abbreviate(found), abbreviate(expect))
		return
	}
	for _, a := range c.acked {
		if a.offset+int64(a.n) <= leader.LogStartOffset() {
			continue
		}
		if got := offsetOf[c.value(a.idx, 0)]; got != a.offset {
			k.s.fail("batch %d of the acks=all producer was acknowledged at offset %d but is at %d", a.idx, a.offset, got)
			return
		}
	}
	k.s.tracef("== quiesced: %d acks=all batches, log end %d, all checks passed", len(c.acked), leader.LogEndOffset())
}

// readFrom reads a log's batches from the one holding offset from.
func readFrom(l *log.Log, from int64) ([]byte, error) {
	var out []byte
	for end := l.LogEndOffset(); from < end; {
		buf, err := l.ReadBytes(from, 1<<20, end)
		if err != nil {
			return nil, err
		}
		if len(buf) == 0 {
			return nil, fmt.Errorf("nothing to read at %d below %d", from, end)
		}
		out = append(out, buf...)
		for len(buf) > 0 {
			b, rest, err := record.Next(buf)
			if err != nil {
				return nil, err
			}
			from, buf = b.NextOffset(), rest
		}
	}
	return out, nil
}

func abbreviate(s []string) string {
	if len(s) <= 12 {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%v ... %v (%d)", s[:6], s[len(s)-6:], len(s))
}
