package link

// A deterministic, seeded simulation of one mirror partition following a
// source partition: the real partitions, logs (in memory), follower
// replication (fetcher.Apply) and Step, with source leader changes, ISR
// shrinks and unclean elections on the source that truncate, link cuts,
// and destination leader changes. After every step the mirror leader's
// committed log must be a prefix, byte for byte and at the same offsets, of a log
// the source committed (its current one, or one an unclean election has
// since replaced), and after the mirror checked its log at the source's
// current leader epoch, its whole log a prefix of the source leader's;
// once the faults stop, the mirror must equal the source's committed log.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/config"
	"weir/internal/fetcher"
	"weir/internal/log"
	"weir/internal/partition"
	"weir/internal/record"
	"weir/internal/vfs/vfstest"
)

var simNow = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func simConfig(t *testing.T) config.Topic {
	t.Helper()
	b, _, err := config.LoadBroker(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	return config.ResolveTopic(map[string]string{}, nil, nil, b)
}

// replicas is one partition's replicas on brokers 1..n with the state the
// metadata would publish. ISR changes come only from the simulation.
type replicas struct {
	t     *testing.T
	reps  map[int32]*partition.Partition
	state partition.State
}

func newReplicas(t *testing.T, topic string, n int, mirror partition.MirrorState) *replicas {
	rs := &replicas{t: t, reps: map[int32]*partition.Partition{}}
	tp := log.TopicPartition{Topic: topic, Partition: 0}
	cfg := simConfig(t)
	clock := func() time.Time { return simNow }
	for id := int32(1); id <= int32(n); id++ {
		l, err := log.Open(filepath.Join("/data", tp.String()), tp, partition.LogConfig(cfg),
			log.Options{FS: vfstest.NewMem(), Now: clock, Logger: quiet(), AfterDelay: func(_ time.Duration, fn func()) { fn() }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := partition.New(tp, [16]byte{byte(len(topic))}, id, l, cfg, quiet(), clock)
		p.SetReplication(&partition.Replication{LagTimeMax: time.Hour})
		rs.reps[id] = p
		rs.state.Replicas = append(rs.state.Replicas, id)
	}
	rs.state.Mirror = mirror
	rs.publish(1, rs.state.Replicas...)
	return rs
}

// publish makes leader lead in a new epoch with isr.
func (rs *replicas) publish(leader int32, isr ...int32) {
	rs.state.Leader, rs.state.ISR = leader, slices.Clone(isr)
	rs.state.LeaderEpoch++
	rs.state.PartitionEpoch++
	rs.apply()
}

// setISR changes the ISR within the leader epoch.
func (rs *replicas) setISR(isr ...int32) {
	rs.state.ISR = slices.Clone(isr)
	rs.state.PartitionEpoch++
	rs.apply()
}

func (rs *replicas) apply() {
	for _, p := range rs.reps {
		if err := p.Apply(rs.state); err != nil {
			rs.t.Fatal(err)
		}
	}
}

func (rs *replicas) leader() *partition.Partition { return rs.reps[rs.state.Leader] }

// replicate has follower id fetch once from the leader.
func (rs *replicas) replicate(id int32) error {
	f := rs.reps[id]
	pos, ok := f.FetchPosition()
	if !ok {
		return nil
	}
	res, err := rs.leader().ReadForFollower(partition.FollowerFetch{ReplicaID: id, BrokerEpoch: -1, FetchOffset: pos.FetchOffset,
		LogStartOffset: pos.LogStartOffset, LastFetchedEpoch: pos.LastFetchedEpoch, CurrentLeaderEpoch: pos.LeaderEpoch,
		MaxBytes: 4096, MinOne: true})
	ans := fetcher.Answer{Err: kerrFor(err), DivergingEpoch: res.DivergingEpoch, DivergingEndOffset: res.DivergingEndOffset,
		HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset}
	if err == nil && res.DivergingEpoch < 0 {
		ans.Records = sliceBytes(rs.t, res.Slice)
	}
	return fetcher.Apply(f, pos, ans, func() (int64, error) { return rs.leader().Log().LogEndOffset(), nil })
}

func kerrFor(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	case errors.Is(err, partition.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch
	case errors.Is(err, partition.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch
	case errors.Is(err, partition.ErrNotLeader):
		return kerr.NotLeaderForPartition
	}
	return err
}

func sliceBytes(t *testing.T, sl log.Slice) []byte {
	if sl.Size == 0 {
		return nil
	}
	buf := make([]byte, sl.Size)
	if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return buf
}

// committed returns the batches of p's log below its high watermark.
func committed(t *testing.T, p *partition.Partition) [][]byte {
	return batchesUpTo(t, p, p.Log().HighWatermark())
}

// batchesUpTo returns the batches of p's log below end.
func batchesUpTo(t *testing.T, p *partition.Partition, end int64) [][]byte {
	l := p.Log()
	var out [][]byte
	for off := l.LogStartOffset(); off < end; {
		sl, err := l.Read(off, 1<<20, end, true)
		if err != nil {
			t.Fatal(err)
		}
		buf := sliceBytes(t, sl)
		if len(buf) == 0 {
			break
		}
		for len(buf) > 0 {
			b, rest, err := record.Next(buf)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, slices.Clone(buf[:len(buf)-len(rest)]))
			off = b.LastOffset() + 1
			buf = rest
		}
	}
	return out
}

// memSource is the source cluster over the source replicas; cut makes
// every call fail as a broken link would.
type memSource struct {
	src *replicas
	cut bool
}

var errCut = errors.New("link cut")

func (m *memSource) LeaderEpoch(context.Context, string, int32, bool) (int32, error) {
	if m.cut {
		return 0, errCut
	}
	return m.src.state.LeaderEpoch, nil
}

func (m *memSource) Fetch(_ context.Context, _ string, _, epoch int32, offset int64, maxBytes int32) (Fetched, error) {
	if m.cut {
		return Fetched{}, errCut
	}
	res, err := m.src.leader().Read(partition.FetchParams{Offset: offset, MaxBytes: int(maxBytes), LeaderEpoch: epoch, MinOne: true})
	if err != nil {
		f := Fetched{Err: kerrFor(err), HighWatermark: -1, LogStartOffset: res.LogStartOffset}
		if offset%2 == 0 {
			f.LogStartOffset = -1 // as Kafka answers errors
		}
		return f, nil
	}
	return Fetched{Records: sliceBytes(m.src.t, res.Slice), HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset}, nil
}

func (m *memSource) LogStart(_ context.Context, _ string, _, epoch int32) (int64, error) {
	if m.cut {
		return 0, errCut
	}
	off, _, _, _, err := m.src.leader().ListOffset(partition.EarliestTimestamp, epoch, partition.ReadUncommitted)
	return off, kerrFor(err)
}

func (m *memSource) EpochEnd(_ context.Context, _ string, _, epoch, leaderEpoch int32) (int32, int64, error) {
	if m.cut {
		return 0, 0, errCut
	}
	e, end, err := m.src.leader().EndOffsetForEpoch(leaderEpoch, epoch)
	return e, end, kerrFor(err)
}

type sim struct {
	t      *testing.T
	rng    *rand.Rand
	src    *replicas
	dst    *replicas
	source *memSource
	state  State
	// histories are the logs the source committed, one per unclean
	// election (an extension of the last one is merged into it): the
	// mirror's committed log must be part of one of them.
	histories []history
	seq       int
	trace     []string
	// truncations counts the mirror's cuts over all seeds.
	truncations *int
}

func (s *sim) produce() {
	h := record.NewBatchHeader()
	h.BaseTimestamp, h.MaxTimestamp = simNow.UnixMilli(), simNow.UnixMilli()
	n := 1 + s.rng.IntN(3)
	var recs []record.Record
	for i := range n {
		s.seq++
		recs = append(recs, record.Record{OffsetDelta: int32(i), Key: []byte("k" + strconv.Itoa(s.seq%7)), Value: []byte("v" + strconv.Itoa(s.seq))})
	}
	b, err := record.Build(h, recs, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	var scratch []byte
	if _, err := s.src.leader().Append(b, partition.AcksLeader, &scratch); err != nil {
		s.t.Fatal(err)
	}
}

// step runs one random action.
func (s *sim) step() {
	src := s.src
	switch r := s.rng.IntN(100); {
	case r < 25:
		s.do("produce")
		s.produce()
	case r < 45:
		id := int32(1 + s.rng.IntN(3))
		s.do("source replica %d fetches", id)
		src.replicate(id)
	case r < 48:
		// Shrink the source ISR to its leader: it commits alone.
		s.do("source ISR shrinks to its leader %d", src.state.Leader)
		src.setISR(src.state.Leader)
	case r < 52:
		var caughtUp []int32
		leo := src.leader().Log().LogEndOffset()
		for _, id := range src.state.Replicas {
			if src.reps[id].Log().LogEndOffset() == leo {
				caughtUp = append(caughtUp, id)
			}
		}
		s.do("source ISR grows to %v", caughtUp)
		src.setISR(caughtUp...)
	case r < 56:
		l := src.state.ISR[s.rng.IntN(len(src.state.ISR))]
		s.do("source clean election of %d", l)
		src.publish(l, src.state.ISR...)
	case r < 58:
		var out []int32
		for _, id := range src.state.Replicas {
			if !slices.Contains(src.state.ISR, id) {
				out = append(out, id)
			}
		}
		if len(out) == 0 {
			return
		}
		l := out[s.rng.IntN(len(out))]
		s.do("source UNCLEAN election of %d (ISR was %v)", l, src.state.ISR)
		src.publish(l, l)
	case r < 60:
		l := src.leader()
		start, hw := l.Log().LogStartOffset(), l.HighWatermark()
		if hw <= start {
			return
		}
		off := start + s.rng.Int64N(hw-start+1)
		s.do("source deletes records below %d", off)
		if _, err := l.DeleteRecords(off); err != nil {
			s.t.Fatal(err)
		}
	case r < 80:
		s.do("mirror step")
		res, err := Step(context.Background(), s.dst.leader(), "orders", &s.state, s.source, int32(64+s.rng.IntN(400)))
		if res.Truncated {
			*s.truncations++
		}
		if err != nil && !errors.Is(err, errCut) && !isKerr(err) {
			s.t.Fatalf("%s\nStep: %v", s.dump(), err)
		}
	case r < 92:
		id := int32(1 + s.rng.IntN(2))
		s.do("mirror replica %d fetches", id)
		if err := s.dst.replicate(id); err != nil && !isKerr(err) {
			s.t.Fatalf("%s\nmirror follower: %v", s.dump(), err)
		}
	case r < 95:
		s.source.cut = !s.source.cut
		s.do("link cut: %v", s.source.cut)
	default:
		// A destination leader change: to a replica holding the mirror's
		// committed log (its ISR is both replicas).
		l := 3 - s.dst.state.Leader
		s.do("mirror leader moves to %d", l)
		s.dst.publish(l, s.dst.state.ISR...)
		s.state = NewState()
	}
	s.check()
}

func isKerr(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) || errors.Is(err, partition.ErrNotMirroring) || errors.Is(err, partition.ErrNotFollowing)
}

func (s *sim) do(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf(format, args...))
}

func (s *sim) dump() string {
	from := max(0, len(s.trace)-30)
	return fmt.Sprintf("last steps:\n  %s", bytesJoin(s.trace[from:]))
}

func bytesJoin(ss []string) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// history is a log the source committed, by batch base offset.
type history map[int64][]byte

func baseOf(b []byte) int64 { return record.Batch(b).BaseOffset() }

// fits reports whether every batch of log is, byte for byte, the batch h
// has at its offset.
func fits(log [][]byte, h history) bool {
	for _, b := range log {
		if hb, ok := h[baseOf(b)]; !ok || !bytes.Equal(hb, b) {
			return false
		}
	}
	return true
}

// extends reports whether cur continues h: its batches are h's, or past
// h's last.
func extends(cur [][]byte, h history) bool {
	end := int64(-1)
	for o := range h {
		end = max(end, o)
	}
	for _, b := range cur {
		if hb, ok := h[baseOf(b)]; ok && !bytes.Equal(hb, b) || !ok && baseOf(b) <= end {
			return false
		}
	}
	return true
}

// check verifies the invariant after a step.
func (s *sim) check() {
	cur := committed(s.t, s.src.leader())
	if last := s.histories[len(s.histories)-1]; extends(cur, last) {
		for _, b := range cur {
			last[baseOf(b)] = b
		}
	} else {
		h := history{}
		for _, b := range cur {
			h[baseOf(b)] = b
		}
		s.histories = append(s.histories, h)
	}
	// Consumers read the leader; a follower's high watermark may lag
	// behind a truncation until its next fetch, as in any partition.
	m := committed(s.t, s.dst.leader())
	ok := false
	for _, h := range s.histories {
		ok = ok || fits(m, h)
	}
	if !ok {
		s.t.Fatalf("%s\nthe mirror leader's committed log (%d batches, HW %d) is not part of any log the source committed",
			s.dump(), len(m), s.dst.leader().Log().HighWatermark())
	}
	// Once the mirror checked its log at the source's current epoch, its
	// whole log is part of the source leader's (from the source's log
	// start: below it the source deleted what would tell).
	if s.state.Checked == s.src.state.LeaderEpoch {
		srcLog := s.src.leader().Log()
		src := history{}
		for _, b := range batchesUpTo(s.t, s.src.leader(), srcLog.LogEndOffset()) {
			src[baseOf(b)] = b
		}
		for _, b := range batchesUpTo(s.t, s.dst.leader(), s.dst.leader().Log().LogEndOffset()) {
			if record.Batch(b).LastOffset() >= srcLog.LogStartOffset() && !bytes.Equal(src[baseOf(b)], b) {
				s.t.Fatalf("%s\nthe mirror leader's batch at %d is not the source leader's, in the epoch it checked", s.dump(), baseOf(b))
			}
		}
	}
}

func equalLogs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestMirrorFollowsSourceSimulation(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	truncations := 0
	defer func() {
		if !t.Failed() && truncations == 0 {
			t.Error("no seed made the mirror truncate: the simulation misses source divergence")
		}
	}()
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 14)), state: NewState(), histories: []history{{}},
				truncations: &truncations}
			s.src = newReplicas(t, "src", 3, partition.MirrorState{})
			s.dst = newReplicas(t, "orders", 2, partition.MirrorState{Link: "dr", ReadOnly: true, Active: true})
			s.source = &memSource{src: s.src}
			for range 600 {
				s.step()
			}
			// Heal: the link comes back, the source's ISR is complete,
			// and the mirror catches up.
			s.source.cut = false
			for range 50 {
				for id := int32(1); id <= 3; id++ {
					s.src.replicate(id)
				}
			}
			for range 200 {
				if _, err := Step(context.Background(), s.dst.leader(), "orders", &s.state, s.source, 1<<20); err != nil && !isKerr(err) {
					t.Fatal(err)
				}
				for id := int32(1); id <= 2; id++ {
					s.dst.replicate(id)
				}
				s.check()
			}
			all := committed(t, s.src.leader())
			for id, p := range s.dst.reps {
				got := committed(t, p)
				// The source's log start is its leader's: an older
				// leader may have deleted more, which the mirror followed.
				want := all
				for len(want) > 0 && record.Batch(want[0]).LastOffset() < p.Log().LogStartOffset() {
					want = want[1:]
				}
				if !equalLogs(got, want) {
					t.Fatalf("%s\nmirror replica %d has %d committed batches (HW %d), the source %d (HW %d)", s.dump(), id,
						len(got), p.Log().HighWatermark(), len(want), s.src.leader().Log().HighWatermark())
				}
			}
			if a, b := s.dst.leader().Log().LogEndOffset(), s.src.leader().Log().HighWatermark(); a != b {
				t.Fatalf("mirror log end %d, source high watermark %d", a, b)
			}
		})
	}
}
