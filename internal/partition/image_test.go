package partition

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"weir/internal/config"
	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/record"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// The clock of every test: records carry timestamps a little before it.
var testNow = time.UnixMilli(1_700_000_000_000)

func clock() time.Time { return testNow }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runNow runs deferred segment and log deletions at once.
func runNow(_ time.Duration, fn func()) { fn() }

func staticConfig(t *testing.T, props map[string]string) *config.Broker {
	t.Helper()
	if props == nil {
		props = map[string]string{}
	}
	b, _, err := config.LoadBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// topicConfig is the effective configuration of a topic with overrides kv.
func topicConfig(t *testing.T, kv ...string) config.Topic {
	t.Helper()
	overrides := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		overrides[kv[i]] = kv[i+1]
	}
	if err := config.ValidateTopicConfigs(overrides); err != nil {
		t.Fatal(err)
	}
	return config.ResolveTopic(overrides, nil, nil, staticConfig(t, nil))
}

// newPartition returns replica 1 of t-0 over a fresh log in an in-memory
// filesystem, not yet leader.
func newPartition(t *testing.T, topic config.Topic) *Partition {
	t.Helper()
	fs := vfstest.NewMem()
	tp := log.TopicPartition{Topic: "t", Partition: 0}
	l, err := log.Open(filepath.Join("/data", tp.String()), tp, LogConfig(topic),
		log.Options{FS: fs, Now: clock, Logger: quiet(), AfterDelay: runNow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return New(tp, [16]byte{1}, 1, l, topic, quiet(), clock)
}

func lead(t *testing.T, p *Partition, epoch int32, isr ...int32) {
	t.Helper()
	if len(isr) == 0 {
		isr = []int32{1}
	}
	replicas := slices.Clone(isr)
	if !slices.Contains(replicas, 1) {
		replicas = append(replicas, 1)
	}
	if err := p.Apply(State{Leader: 1, LeaderEpoch: epoch, Replicas: replicas, ISR: isr}); err != nil {
		t.Fatal(err)
	}
}

// batch builds a producer batch of records with the given timestamps
// (milliseconds before testNow is typical), keyed "k<i>".
func batch(t *testing.T, timestamps ...int64) record.Batch {
	t.Helper()
	h := record.NewBatchHeader()
	h.BaseTimestamp = timestamps[0]
	h.MaxTimestamp = slices.Max(timestamps)
	var recs []record.Record
	for i, ts := range timestamps {
		recs = append(recs, record.Record{OffsetDelta: int32(i), TimestampDelta: ts - timestamps[0],
			Key: []byte("k" + strconv.Itoa(i)), Value: []byte("value-" + strconv.Itoa(i))})
	}
	b, err := record.Build(h, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ms(d time.Duration) int64 { return testNow.Add(-d).UnixMilli() }

func appendOK(t *testing.T, p *Partition, acks int16, b record.Batch) AppendResult {
	t.Helper()
	var scratch []byte
	res, err := p.Append(b, acks, &scratch)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

// readBatches returns the batches of a fetch result.
func readBatches(t *testing.T, sl log.Slice) []record.Batch {
	t.Helper()
	if sl.Size == 0 {
		return nil
	}
	buf := make([]byte, sl.Size)
	if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	var out []record.Batch
	for len(buf) > 0 {
		b, rest, err := record.Next(buf)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		buf = rest
	}
	return out
}

func read(t *testing.T, p *Partition, offset int64) (FetchResult, []record.Batch) {
	t.Helper()
	res, err := p.Read(FetchParams{Offset: offset, MaxBytes: 1 << 20, LeaderEpoch: -1})
	if err != nil {
		t.Fatalf("Read(%d): %v", offset, err)
	}
	return res, readBatches(t, res.Slice)
}

// pending reports whether an acks=all wait is still open.
func pending(w <-chan error) bool {
	select {
	case <-w:
		return false
	default:
		return true
	}
}

func waitResult(t *testing.T, w <-chan error) error {
	t.Helper()
	select {
	case err := <-w:
		return err
	default:
		t.Fatal("the acks=all wait is still open")
		return nil
	}
}

func TestApplyLeadershipAndEpochs(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	if p.IsLeader() {
		t.Fatal("a new replica is leader")
	}
	var scratch []byte
	if _, err := p.Append(batch(t, ms(time.Second)), AcksLeader, &scratch); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append before leadership: %v", err)
	}
	if p.Log().LogEndOffset() != 0 {
		t.Fatal("a refused append wrote data")
	}

	lead(t, p, 3)
	if !p.IsLeader() || p.State().LeaderEpoch != 3 {
		t.Fatalf("state = %+v", p.State())
	}
	if got := p.Log().Epochs(); !slices.Equal(got, []log.EpochEntry{{Epoch: 3, StartOffset: 0}}) {
		t.Fatalf("epochs = %v", got)
	}
	res := appendOK(t, p, AcksLeader, batch(t, ms(2*time.Second), ms(time.Second)))
	if res.BaseOffset != 0 || res.LastOffset != 1 || res.Wait != nil {
		t.Fatalf("append = %+v", res)
	}
	if p.HighWatermark() != 2 {
		t.Fatalf("HW = %d with a single-replica ISR", p.HighWatermark())
	}
	_, bs := read(t, p, 0)
	if len(bs) != 1 || bs[0].LeaderEpoch() != 3 || bs[0].BaseOffset() != 0 {
		t.Fatalf("stored batches: %d, epoch %d", len(bs), bs[0].LeaderEpoch())
	}

	// A new epoch starts at the log end; a stale state is ignored.
	lead(t, p, 5)
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	if got := p.Log().Epochs(); !slices.Equal(got, []log.EpochEntry{{Epoch: 3, StartOffset: 0}, {Epoch: 5, StartOffset: 2}}) {
		t.Fatalf("epochs = %v", got)
	}
	if err := p.Apply(State{Leader: 2, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if !p.IsLeader() || p.State().LeaderEpoch != 5 {
		t.Fatalf("a stale state was applied: %+v", p.State())
	}
	_, bs = read(t, p, 2)
	if len(bs) != 1 || bs[0].LeaderEpoch() != 5 {
		t.Fatalf("batch at 2: %d batches, epoch %d", len(bs), bs[0].LeaderEpoch())
	}

	// Losing leadership refuses appends.
	if err := p.Apply(State{Leader: 2, LeaderEpoch: 6, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if p.IsLeader() {
		t.Fatal("still leader after the leader moved")
	}
	end := p.Log().LogEndOffset()
	if _, err := p.Append(batch(t, ms(time.Second)), AcksNone, &scratch); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append as follower: %v", err)
	}
	if p.Log().LogEndOffset() != end {
		t.Fatal("a follower appended")
	}
	// Leading again in a later epoch records that epoch.
	lead(t, p, 7)
	if got := p.Log().LatestEpoch(); got != 7 {
		t.Fatalf("latest epoch = %d", got)
	}
}

func TestAcksAllNeedsMinInsyncReplicas(t *testing.T) {
	p := newPartition(t, topicConfig(t, "min.insync.replicas", "2"))
	lead(t, p, 0) // ISR [1]
	var scratch []byte
	_, err := p.Append(batch(t, ms(time.Second)), AcksAll, &scratch)
	if !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with ISR below min.insync.replicas: %v", err)
	}
	if p.Log().LogEndOffset() != 0 {
		t.Fatal("the refused batch was appended")
	}
	// acks=1 does not care.
	if res := appendOK(t, p, AcksLeader, batch(t, ms(time.Second))); res.BaseOffset != 0 || res.Wait != nil {
		t.Fatalf("acks=1: %+v", res)
	}
	// With a big enough ISR acks=all is accepted (and waits for the follower).
	lead(t, p, 1, 1, 2)
	if res := appendOK(t, p, AcksAll, batch(t, ms(time.Second))); res.Wait == nil || !pending(res.Wait) {
		t.Fatalf("acks=all with ISR [1 2] did not wait: %+v", res)
	}
}

func TestAcksAllSingleReplicaCompletesAtOnce(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	lead(t, p, 0)
	res := appendOK(t, p, AcksAll, batch(t, ms(time.Second), ms(time.Second)))
	if res.Wait != nil {
		t.Fatal("acks=all on a single-replica ISR waits")
	}
	if p.HighWatermark() != 2 {
		t.Fatalf("HW = %d", p.HighWatermark())
	}
}

// TestAcksAllWaitsForTheISR: with a follower in the ISR that has fetched
// nothing, the high watermark stays put and acks=all appends wait. They
// complete when the ISR shrinks to the leader (the HW then moves to the
// log end), and fail when leadership moves away.
func TestAcksAllWaitsForTheISR(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	lead(t, p, 0, 1, 2)
	w1 := appendOK(t, p, AcksAll, batch(t, ms(time.Second))).Wait
	w2 := appendOK(t, p, AcksAll, batch(t, ms(time.Second))).Wait
	if w1 == nil || w2 == nil || !pending(w1) || !pending(w2) {
		t.Fatal("acks=all appends did not wait for the follower")
	}
	if p.HighWatermark() != 0 || p.Log().LogEndOffset() != 2 {
		t.Fatalf("HW %d, LEO %d", p.HighWatermark(), p.Log().LogEndOffset())
	}
	// acks=1 in the meantime answers at once but is not visible either.
	if res := appendOK(t, p, AcksLeader, batch(t, ms(time.Second))); res.Wait != nil || res.BaseOffset != 2 {
		t.Fatalf("acks=1: %+v", res)
	}
	res, bs := read(t, p, 0)
	if len(bs) != 0 || res.HighWatermark != 0 || res.LastStableOffset != 0 {
		t.Fatalf("a consumer read %d batches above the HW (%+v)", len(bs), res)
	}
	// A follower's fetch reads up to the log end.
	fres, err := p.ReadForFollower(FollowerFetch{ReplicaID: 2, BrokerEpoch: -1, FetchOffset: 0, LastFetchedEpoch: -1, CurrentLeaderEpoch: 0, MaxBytes: 1 << 20})
	if err != nil || len(readBatches(t, fres.Slice)) != 3 {
		t.Fatalf("follower read: %v", err)
	}

	// The ISR shrinks to the leader: everything is committed.
	if err := p.Apply(State{Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if err := waitResult(t, w1); err != nil {
		t.Fatalf("first wait: %v", err)
	}
	if err := waitResult(t, w2); err != nil {
		t.Fatalf("second wait: %v", err)
	}
	if p.HighWatermark() != 3 {
		t.Fatalf("HW = %d after the ISR shrank", p.HighWatermark())
	}
	if _, bs := read(t, p, 0); len(bs) != 3 {
		t.Fatalf("read %d batches below the HW", len(bs))
	}

	// Waiting again, then the leader moves: the wait fails.
	if err := p.Apply(State{Leader: 1, LeaderEpoch: 0, PartitionEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	w3 := appendOK(t, p, AcksAll, batch(t, ms(time.Second))).Wait
	if w3 == nil || !pending(w3) {
		t.Fatal("acks=all did not wait")
	}
	if err := p.Apply(State{Leader: 2, LeaderEpoch: 1, PartitionEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := waitResult(t, w3); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait after losing leadership: %v", err)
	}
	if p.HighWatermark() != 3 {
		t.Fatalf("HW moved to %d on losing leadership", p.HighWatermark())
	}
}

func TestAcksAllISRShrinksBelowMinInsync(t *testing.T) {
	p := newPartition(t, topicConfig(t, "min.insync.replicas", "2"))
	lead(t, p, 0, 1, 2)
	w := appendOK(t, p, AcksAll, batch(t, ms(time.Second))).Wait
	if w == nil || !pending(w) {
		t.Fatal("acks=all did not wait")
	}
	if err := p.Apply(State{Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if err := waitResult(t, w); !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("wait after the ISR shrank below min.insync.replicas: %v", err)
	}
}

func TestReadBoundsAndErrors(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	if _, err := p.Read(FetchParams{Offset: 0, MaxBytes: 100, LeaderEpoch: -1}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("read from a non-leader: %v", err)
	}
	lead(t, p, 2)
	for range 3 {
		appendOK(t, p, AcksLeader, batch(t, ms(time.Second), ms(time.Second)))
	}
	res, bs := read(t, p, 2)
	if res.HighWatermark != 6 || res.LogStartOffset != 0 || len(bs) != 2 || bs[0].BaseOffset() != 2 {
		t.Fatalf("read from 2: %+v, %d batches", res, len(bs))
	}
	if _, bs := read(t, p, 6); len(bs) != 0 {
		t.Fatal("read at the log end returned data")
	}
	if _, err := p.Read(FetchParams{Offset: 7, MaxBytes: 100, LeaderEpoch: -1}); !errors.Is(err, log.ErrOffsetOutOfRange) {
		t.Fatalf("read past the log end: %v", err)
	}
	// MaxBytes smaller than a batch: nothing, or the whole first batch
	// with MinOne.
	res, err := p.Read(FetchParams{Offset: 0, MaxBytes: 10, LeaderEpoch: -1})
	if err != nil || res.Slice.Size != 0 {
		t.Fatalf("tiny read: %v, %+v", err, res.Slice)
	}
	res, err = p.Read(FetchParams{Offset: 0, MaxBytes: 10, LeaderEpoch: -1, MinOne: true})
	if err != nil || len(readBatches(t, res.Slice)) != 1 {
		t.Fatalf("tiny read with MinOne: %v, %+v", err, res.Slice)
	}
}

// TestLeaderEpochChecks follows KIP-320: a request's epoch older than the
// replica's is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, and
// -1 skips the check. The epoch is checked before leadership, as Kafka's
// Partition.getLocalLog does.
func TestLeaderEpochChecks(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	lead(t, p, 4)
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))

	type op func(epoch int32) error
	ops := map[string]op{
		"Read": func(e int32) error {
			_, err := p.Read(FetchParams{Offset: 0, MaxBytes: 100, LeaderEpoch: e})
			return err
		},
		"ListOffset": func(e int32) error {
			_, _, _, _, err := p.ListOffset(LatestTimestamp, e, ReadUncommitted)
			return err
		},
		"EndOffsetForEpoch": func(e int32) error {
			_, _, err := p.EndOffsetForEpoch(e, 4)
			return err
		},
	}
	for name, fn := range ops {
		for _, tc := range []struct {
			epoch int32
			want  error
		}{{-1, nil}, {4, nil}, {3, ErrFencedLeaderEpoch}, {0, ErrFencedLeaderEpoch}, {5, ErrUnknownLeaderEpoch}} {
			if err := fn(tc.epoch); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("%s with epoch %d: %v, want %v", name, tc.epoch, err, tc.want)
			}
		}
	}

	if err := p.Apply(State{Leader: 2, LeaderEpoch: 6, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	for name, fn := range ops {
		for _, tc := range []struct {
			epoch int32
			want  error
		}{{-1, ErrNotLeader}, {6, ErrNotLeader}, {4, ErrFencedLeaderEpoch}, {7, ErrUnknownLeaderEpoch}} {
			if err := fn(tc.epoch); !errors.Is(err, tc.want) {
				t.Fatalf("%s on a follower with epoch %d: %v, want %v", name, tc.epoch, err, tc.want)
			}
		}
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	lead(t, p, 3)
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second), ms(time.Second)))
	lead(t, p, 5)
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{{5, 5, 3}, {3, 3, 2}, {4, 3, 2}, {1, 1, 0}, {6, -1, -1}} {
		e, o, err := p.EndOffsetForEpoch(5, tc.epoch)
		if err != nil || e != tc.wantEpoch || o != tc.wantEnd {
			t.Fatalf("EndOffsetForEpoch(%d) = %d, %d, %v; want %d, %d", tc.epoch, e, o, err, tc.wantEpoch, tc.wantEnd)
		}
	}
}

func TestListOffset(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	if _, _, _, _, err := p.ListOffset(EarliestTimestamp, -1, ReadUncommitted); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("ListOffset on a non-leader: %v", err)
	}
	lead(t, p, 1)
	t0 := ms(time.Hour)
	appendOK(t, p, AcksLeader, batch(t, t0+1000, t0+1001)) // offsets 0-1
	lead(t, p, 2)
	appendOK(t, p, AcksLeader, batch(t, t0+3000)) // offset 2, the max timestamp
	appendOK(t, p, AcksLeader, batch(t, t0+2000)) // offset 3

	type want struct {
		offset, ts int64
		epoch      int32
		found      bool
	}
	check := func(name string, ts int64, w want) {
		t.Helper()
		o, gotTS, e, found, err := p.ListOffset(ts, -1, ReadUncommitted)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if found != w.found || (found && (o != w.offset || gotTS != w.ts || e != w.epoch)) {
			t.Fatalf("%s: offset %d ts %d epoch %d found %v; want %+v", name, o, gotTS, e, found, w)
		}
	}
	check("earliest", EarliestTimestamp, want{0, -1, 1, true})
	check("earliest local", EarliestLocalTimestamp, want{0, -1, 1, true})
	check("latest", LatestTimestamp, want{4, -1, 2, true})
	check("latest tiered", LatestTieredTimestamp, want{-1, -1, -1, true})
	check("max timestamp", MaxTimestamp, want{2, t0 + 3000, 2, true})
	check("by time, first record", t0, want{0, t0 + 1000, 1, true})
	check("by time, exact", t0+1001, want{1, t0 + 1001, 1, true})
	check("by time, between", t0+1500, want{2, t0 + 3000, 2, true})
	check("by time, past the end", t0+5000, want{found: false})

	// Nothing above the high watermark is listed.
	lead(t, p, 3, 1, 2)
	appendOK(t, p, AcksLeader, batch(t, t0+9000)) // offset 4, not committed
	check("latest with an uncommitted tail", LatestTimestamp, want{4, -1, 3, true})
	check("by time, uncommitted only", t0+8000, want{found: false})
	// The newest timestamp is above the high watermark: like Kafka's
	// Partition.fetchOffsetForTimestamp, nothing is found.
	check("max timestamp in the uncommitted tail", MaxTimestamp, want{found: false})

	// Deleting records moves the earliest offset.
	if lso, err := p.DeleteRecords(2); err != nil || lso != 2 {
		t.Fatalf("DeleteRecords(2) = %d, %v", lso, err)
	}
	check("earliest after DeleteRecords", EarliestTimestamp, want{2, -1, 2, true})
	check("by time below the start", t0, want{2, t0 + 3000, 2, true})
}

func TestDeleteRecords(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	if _, err := p.DeleteRecords(-1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("DeleteRecords on a non-leader: %v", err)
	}
	lead(t, p, 0)
	for range 3 {
		appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	}
	if lso, err := p.DeleteRecords(1); err != nil || lso != 1 {
		t.Fatalf("DeleteRecords(1) = %d, %v", lso, err)
	}
	if lso, err := p.DeleteRecords(0); err != nil || lso != 1 {
		t.Fatalf("DeleteRecords below the start = %d, %v", lso, err)
	}
	if _, err := p.Read(FetchParams{Offset: 0, MaxBytes: 100, LeaderEpoch: -1}); !errors.Is(err, log.ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	if res, _ := read(t, p, 1); res.LogStartOffset != 1 {
		t.Fatalf("LogStartOffset = %d", res.LogStartOffset)
	}
	for _, off := range []int64{4, 100, -2} {
		if _, err := p.DeleteRecords(off); !errors.Is(err, log.ErrOffsetOutOfRange) {
			t.Fatalf("DeleteRecords(%d): %v", off, err)
		}
	}

	// Above the high watermark is refused; -1 means the high watermark.
	lead(t, p, 1, 1, 2)
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second))) // offset 3, HW stays 3
	if _, err := p.DeleteRecords(4); !errors.Is(err, log.ErrOffsetOutOfRange) {
		t.Fatalf("DeleteRecords above the HW: %v", err)
	}
	if lso, err := p.DeleteRecords(-1); err != nil || lso != 3 {
		t.Fatalf("DeleteRecords(-1) = %d, %v", lso, err)
	}
	if p.Log().LogEndOffset() != 4 {
		t.Fatal("DeleteRecords changed the log end")
	}
}

func TestWatchersFire(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	w := NewWatcher()
	p.Watch(w, 0, BoundHighWatermark)
	lead(t, p, 0)
	<-w.C // leadership changes signal every watcher
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	select {
	case <-w.C:
		t.Fatal("a disarmed watcher fired on append")
	default:
	}
	w.Reset()
	if w.Arm(1) {
		t.Fatal("bytes counted before the watcher was reset")
	}
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	select {
	case <-w.C:
	default:
		t.Fatal("the watcher did not fire on append")
	}
	select {
	case <-w.C:
		t.Fatal("notifications did not coalesce")
	default:
	}
	other := NewWatcher()
	p.Watch(other, p.Log().LogEndOffset(), BoundHighWatermark)
	other.Arm(1)
	p.Unwatch(w)
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	select {
	case <-w.C:
		t.Fatal("an unwatched watcher fired")
	default:
	}
	select {
	case <-other.C:
	default:
		t.Fatal("the second watcher did not fire")
	}
}

// TestWatchersWakeOnlyWhatCompletes: an append signals the waiting
// fetches it gives enough bytes to, and no other (issue 33): 200 fetches
// at the log end, half needing one byte and half ten batches, wait on a
// partition that gets one batch at a time. Before, every append signalled
// all 200.
func TestWatchersWakeOnlyWhatCompletes(t *testing.T) {
	const waiters, batches = 200, 10
	p := newPartition(t, topicConfig(t))
	lead(t, p, 0)
	one := batch(t, ms(time.Second))
	ws := make([]*Watcher, waiters)
	for i := range ws {
		ws[i] = NewWatcher()
		p.Watch(ws[i], p.Log().LogEndOffset(), BoundHighWatermark)
		need := int64(1)
		if i%2 == 1 {
			need = int64(batches * len(one))
		}
		ws[i].Reset()
		ws[i].Arm(need)
	}
	// A signalled fetch completes: it reads and unwatches.
	signalled := func() (n int) {
		for _, w := range ws {
			select {
			case <-w.C:
				n++
				p.Unwatch(w)
			default:
			}
		}
		return n
	}
	for i := range batches {
		appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
		want := 0
		switch i {
		case 0:
			want = waiters / 2 // the one-byte fetches
		case batches - 1:
			want = waiters / 2 // the others, now with ten batches
		}
		if got := signalled(); got != want {
			t.Fatalf("append %d woke %d fetches, want %d", i+1, got, want)
		}
	}
}

// TestWatchersFollowTheirBound: a leader's append the high watermark does
// not yet cover wakes the followers' fetches (they read to the log end),
// not the consumers'; the follower's progress that moves the high
// watermark wakes the consumers'.
func TestWatchersFollowTheirBound(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	lead(t, p, 0, 1, 2)
	consumer, follower := NewWatcher(), NewWatcher()
	p.Watch(consumer, 0, BoundHighWatermark)
	p.Watch(follower, 0, BoundLogEnd)
	for _, w := range []*Watcher{consumer, follower} {
		w.Reset()
		w.Arm(1)
	}
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	select {
	case <-consumer.C:
		t.Fatal("a consumer's fetch woke for data above the high watermark")
	default:
	}
	select {
	case <-follower.C:
	default:
		t.Fatal("the follower's fetch did not wake on append")
	}
	if _, err := p.ReadForFollower(FollowerFetch{ReplicaID: 2, BrokerEpoch: -1, FetchOffset: 1, LastFetchedEpoch: -1,
		CurrentLeaderEpoch: -1, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d after the follower caught up, want 1", hw)
	}
	select {
	case <-consumer.C:
	default:
		t.Fatal("the consumer's fetch did not wake when the high watermark passed its offset")
	}
}

func TestSetConfigChangesValidation(t *testing.T) {
	p := newPartition(t, topicConfig(t))
	lead(t, p, 0)
	var scratch []byte
	big := batch(t, ms(time.Second), ms(time.Second), ms(time.Second))
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second), ms(time.Second), ms(time.Second)))

	p.SetConfig(topicConfig(t, "max.message.bytes", strconv.Itoa(len(big)-1)))
	end := p.Log().LogEndOffset()
	if _, err := p.Append(big, AcksLeader, &scratch); !errors.Is(err, record.ErrBatchTooLarge) {
		t.Fatalf("append over max.message.bytes: %v", err)
	}
	if p.Log().LogEndOffset() != end {
		t.Fatal("a refused batch was appended")
	}

	// Compacted topics need keys.
	p.SetConfig(topicConfig(t, "cleanup.policy", "compact"))
	h := record.NewBatchHeader()
	h.BaseTimestamp, h.MaxTimestamp = ms(time.Second), ms(time.Second)
	keyless, err := record.Build(h, []record.Record{{Value: []byte("v")}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(keyless, AcksLeader, &scratch); !errors.Is(err, record.ErrInvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v", err)
	}
	if !p.Log().Config().Compact || p.Log().Config().Delete {
		t.Fatalf("log config not updated: %+v", p.Log().Config())
	}
	p.SetConfig(topicConfig(t))
	appendOK(t, p, AcksLeader, keyless)

	// compression.type recompresses what producers send.
	p.SetConfig(topicConfig(t, "compression.type", "gzip", "retention.ms", "1234"))
	res := appendOK(t, p, AcksLeader, batch(t, ms(time.Second), ms(time.Second)))
	if p.Log().Config().RetentionMs != 1234 {
		t.Fatalf("log retention = %d", p.Log().Config().RetentionMs)
	}
	_, bs := read(t, p, res.BaseOffset)
	if len(bs) != 1 || bs[0].Attributes().Codec() != record.Gzip || bs[0].NumRecords() != 2 {
		t.Fatalf("stored batch codec %v", bs[0].Attributes().Codec())
	}
	p.SetConfig(topicConfig(t, "compression.type", "producer"))
	res = appendOK(t, p, AcksLeader, batch(t, ms(time.Second)))
	if _, bs := read(t, p, res.BaseOffset); bs[0].Attributes().Codec() != record.None {
		t.Fatal("compression.type=producer changed the codec")
	}

	// LogAppendTime stamps the broker's clock.
	p.SetConfig(topicConfig(t, "message.timestamp.type", "LogAppendTime"))
	res = appendOK(t, p, AcksLeader, batch(t, ms(time.Hour)))
	if res.LogAppendTime != testNow.UnixMilli() {
		t.Fatalf("LogAppendTime = %d", res.LogAppendTime)
	}
}

// managerEnv is a broker's storage in memory: a log manager over a MemFS
// and the replica manager of broker self.
type managerEnv struct {
	t      *testing.T
	fs     *vfstest.MemFS
	static *config.Broker
	logs   *log.Manager
	bg     *background
	m      *Manager
}

// background holds the log manager's background work (the directories
// of new logs, flushes of rolled segments) until the test runs it.
type background struct {
	mu  sync.Mutex
	fns []func()
}

func (b *background) add(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fns = append(b.fns, fn)
}

// run runs the queued work, and the work it queues, until none is left.
func (b *background) run() {
	for {
		b.mu.Lock()
		fns := b.fns
		b.fns = nil
		b.mu.Unlock()
		if len(fns) == 0 {
			return
		}
		for _, fn := range fns {
			fn()
		}
	}
}

const dataDir = "/data"

func newLogManager(fs vfs.FS, bg *background) *log.Manager {
	return log.NewManager(log.ManagerConfig{Dirs: []string{dataDir}},
		log.Options{FS: fs, Now: clock, Logger: quiet(), AfterDelay: runNow, Background: bg.add})
}

// openEnv opens the logs found on fs, as the server does at start-up.
func openEnv(t *testing.T, fs *vfstest.MemFS, img *metadata.Image) *managerEnv {
	t.Helper()
	bg := &background{}
	e := &managerEnv{t: t, fs: fs, static: staticConfig(t, nil), logs: newLogManager(fs, bg), bg: bg}
	e.m = NewManager(1, e.logs, e.static, quiet(), clock)
	if err := e.logs.Load(func(tp log.TopicPartition) log.Config {
		return LogConfig(e.m.TopicConfig(img, tp.Topic))
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.logs.Close() })
	return e
}

func topicID(b byte) metadata.Uuid { return metadata.Uuid{b, 0xee} }

func topicRecords(name string, id metadata.Uuid, assignment ...[]int32) []metadata.Record {
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicId: id}}
	for p, replicas := range assignment {
		pr := metadata.NewPartitionRecord()
		pr.PartitionId, pr.TopicId = int32(p), id
		pr.Replicas, pr.Isr = replicas, replicas
		pr.Leader, pr.LeaderEpoch, pr.PartitionEpoch = replicas[0], 0, 0
		recs = append(recs, pr)
	}
	return recs
}

func apply(t *testing.T, img *metadata.Image, recs ...metadata.Record) (*metadata.Image, *metadata.Delta) {
	t.Helper()
	next, d, err := img.Apply(recs, img.Offset+int64(len(recs)))
	if err != nil {
		t.Fatal(err)
	}
	return next, d
}

func (e *managerEnv) dirs() []string {
	ents, err := e.fs.ReadDir(dataDir)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, de := range ents {
		if de.IsDir() {
			out = append(out, de.Name())
		}
	}
	return out
}

func (e *managerEnv) local() map[string]bool {
	out := map[string]bool{}
	for _, p := range e.m.All() {
		out[p.TopicPartition().String()] = p.IsLeader()
	}
	return out
}

// oldLog is a log an earlier run left, with one batch.
type oldLog struct {
	tp log.TopicPartition
	id metadata.Uuid
}

// writeOldLogs leaves logs on fs as an earlier run of the broker would:
// each holding one batch, closed cleanly.
func writeOldLogs(t *testing.T, fs vfs.FS, logs []oldLog) {
	t.Helper()
	old := newLogManager(fs, &background{})
	for _, l := range logs {
		lg, err := old.GetOrCreate(l.tp, l.id, log.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lg.AppendAsLeader(batch(t, ms(time.Second)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestManagerLoadCreatesAssignedAndDeletesStray(t *testing.T) {
	fs := vfstest.NewMem()
	// Logs left by an earlier run.
	writeOldLogs(t, fs, []oldLog{
		{log.TopicPartition{Topic: "keep", Partition: 0}, topicID(1)},
		{log.TopicPartition{Topic: "keep", Partition: 5}, topicID(1)},   // partition gone
		{log.TopicPartition{Topic: "gone", Partition: 0}, topicID(2)},   // topic gone
		{log.TopicPartition{Topic: "moved", Partition: 0}, topicID(3)},  // now on broker 2 only
		{log.TopicPartition{Topic: "reborn", Partition: 0}, topicID(4)}, // topic re-created with a new id
	})

	var recs []metadata.Record
	recs = append(recs, topicRecords("keep", topicID(1), []int32{1}, []int32{2, 1})...)
	recs = append(recs, topicRecords("moved", topicID(3), []int32{2})...)
	recs = append(recs, topicRecords("reborn", topicID(5), []int32{1})...)
	recs = append(recs, topicRecords("new", topicID(6), []int32{2, 1}, []int32{2})...)
	img, _ := apply(t, metadata.Empty(), recs...)

	e := openEnv(t, fs, img)
	if err := e.m.Load(img); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"keep-0": true, "keep-1": false, "reborn-0": true, "new-0": false}
	if got := e.local(); !maps.Equal(got, want) {
		t.Fatalf("local replicas (leader?) = %v, want %v", got, want)
	}
	var names []string
	for _, l := range e.logs.All() {
		names = append(names, l.TopicPartition().String())
	}
	slices.Sort(names)
	if want := []string{"keep-0", "keep-1", "new-0", "reborn-0"}; !slices.Equal(names, want) {
		t.Fatalf("open logs %v, want %v", names, want)
	}
	e.bg.run() // new logs' directories are made in the background
	if got, want := e.dirs(), []string{"keep-0", "keep-1", "new-0", "reborn-0"}; !slices.Equal(got, want) {
		t.Fatalf("directories %v, want %v", got, want)
	}
	// The kept log kept its data; the re-created topic's log is new.
	if e.m.Get(log.TopicPartition{Topic: "keep", Partition: 0}).Log().LogEndOffset() != 1 {
		t.Fatal("keep-0 lost its data")
	}
	reborn := e.m.Get(log.TopicPartition{Topic: "reborn", Partition: 0})
	if id, err := reborn.Log().ReadTopicID(); err != nil || id != topicID(5) || reborn.Log().LogEndOffset() != 0 {
		t.Fatalf("reborn-0: id %v (%v), LEO %d", id, err, reborn.Log().LogEndOffset())
	}
	if reborn.TopicID() != topicID(5) {
		t.Fatal("reborn-0 replica has the old topic id")
	}
}

func TestManagerApplyDeltas(t *testing.T) {
	e := openEnv(t, vfstest.NewMem(), metadata.Empty())
	img := metadata.Empty()
	if err := e.m.Load(img); err != nil {
		t.Fatal(err)
	}
	step := func(recs ...metadata.Record) {
		t.Helper()
		var d *metadata.Delta
		img, d = apply(t, img, recs...)
		if err := e.m.Apply(img, d); err != nil {
			t.Fatal(err)
		}
	}
	t0 := log.TopicPartition{Topic: "t", Partition: 0}
	t1 := log.TopicPartition{Topic: "t", Partition: 1}
	u0 := log.TopicPartition{Topic: "u", Partition: 0}

	// Create: only partitions assigned to broker 1 get a replica.
	step(append(append(topicRecords("t", topicID(1), []int32{1, 2}, []int32{2}),
		topicRecords("u", topicID(2), []int32{1})...),
		&metadata.ConfigRecord{ResourceType: metadata.ResourceTopic, ResourceName: "u", Name: "retention.ms", Value: strp("111")})...)
	if got := e.local(); !maps.Equal(got, map[string]bool{"t-0": true, "u-0": true}) {
		t.Fatalf("local replicas = %v", got)
	}
	if e.logs.Get(t1) != nil {
		t.Fatal("a log was created for a partition of another broker")
	}
	if got := e.m.Get(u0).Log().Config().RetentionMs; got != 111 {
		t.Fatalf("u-0 created with retention %d, want its topic config", got)
	}
	if id, _ := e.m.Get(t0).Log().ReadTopicID(); id != topicID(1) {
		t.Fatal("t-0 log has the wrong topic id")
	}

	// Leadership moves away, then comes back in a later epoch.
	ch := metadata.NewPartitionChangeRecord()
	ch.TopicId, ch.PartitionId, ch.Leader = topicID(1), 0, 2
	step(ch)
	p := e.m.Get(t0)
	if p.IsLeader() || p.State().LeaderEpoch != 1 || p.State().Leader != 2 {
		t.Fatalf("t-0 state after leader change: %+v", p.State())
	}
	ch = metadata.NewPartitionChangeRecord()
	ch.TopicId, ch.PartitionId, ch.Leader = topicID(1), 0, 1
	step(ch)
	if !p.IsLeader() || p.Log().LatestEpoch() != 2 || e.m.Get(t0) != p {
		t.Fatalf("t-0 after leading again: leader %v, epoch %d", p.IsLeader(), p.Log().LatestEpoch())
	}

	// A topic config change reconfigures that topic only.
	step(&metadata.ConfigRecord{ResourceType: metadata.ResourceTopic, ResourceName: "t", Name: "retention.ms", Value: strp("222")})
	if got := p.Log().Config().RetentionMs; got != 222 {
		t.Fatalf("t-0 retention = %d", got)
	}
	if got := e.m.Get(u0).Log().Config().RetentionMs; got != 111 {
		t.Fatalf("u-0 retention = %d", got)
	}
	// Broker-wide changes (cluster default, then this broker) reach every
	// topic without an override; another broker's do not.
	step(&metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, ResourceName: "", Name: "log.segment.bytes", Value: strp("2097152")})
	for _, tp := range []log.TopicPartition{t0, u0} {
		if got := e.m.Get(tp).Log().Config().SegmentBytes; got != 2097152 {
			t.Fatalf("%s segment.bytes = %d after the cluster default changed", tp, got)
		}
	}
	step(&metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, ResourceName: "2", Name: "log.segment.bytes", Value: strp("3145728")})
	if got := p.Log().Config().SegmentBytes; got != 2097152 {
		t.Fatalf("another broker's config changed ours: %d", got)
	}
	step(&metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, ResourceName: "1", Name: "log.segment.bytes", Value: strp("4194304")},
		&metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, ResourceName: "1", Name: "log.retention.ms", Value: strp("999")})
	if got := p.Log().Config().SegmentBytes; got != 4194304 {
		t.Fatalf("segment.bytes = %d after this broker's config changed", got)
	}
	if got := p.Log().Config().RetentionMs; got != 222 {
		t.Fatalf("a broker config overrode the topic's retention.ms: %d", got)
	}
	// producer.id.expiration.ms is a broker key that every log honours.
	if got := p.Log().Config().ProducerExpiryMs; got != 86400000 {
		t.Fatalf("producer expiry = %d, want the default", got)
	}
	step(&metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, ResourceName: "", Name: "producer.id.expiration.ms", Value: strp("5000")})
	if got := e.m.Get(u0).Log().Config().ProducerExpiryMs; got != 5000 {
		t.Fatalf("producer expiry = %d after the cluster default changed", got)
	}
	step(&metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, ResourceName: "", Name: "message.max.bytes", Value: strp("100")})
	var scratch []byte
	if _, err := p.Append(batch(t, ms(time.Second), ms(time.Second), ms(time.Second)), AcksLeader, &scratch); !errors.Is(err, record.ErrBatchTooLarge) {
		t.Fatalf("append after message.max.bytes=100: %v", err)
	}
	step(&metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, ResourceName: "", Name: "message.max.bytes"})
	appendOK(t, p, AcksLeader, batch(t, ms(time.Second), ms(time.Second), ms(time.Second)))

	// Reassignment away from this broker removes the replica and its log,
	// failing what waited on it.
	ch = metadata.NewPartitionChangeRecord()
	ch.TopicId, ch.PartitionId, ch.Isr = topicID(2), 0, []int32{1, 2}
	ch.Replicas = []int32{1, 2}
	step(ch)
	w := appendOK(t, e.m.Get(u0), AcksAll, batch(t, ms(time.Second))).Wait
	if w == nil || !pending(w) {
		t.Fatal("acks=all did not wait for the new follower")
	}
	ch = metadata.NewPartitionChangeRecord()
	ch.TopicId, ch.PartitionId, ch.Leader, ch.Replicas, ch.Isr = topicID(2), 0, 2, []int32{2}, []int32{2}
	step(ch)
	if e.m.Get(u0) != nil || e.logs.Get(u0) != nil {
		t.Fatal("u-0 still local after moving to broker 2")
	}
	if err := waitResult(t, w); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait of a removed replica: %v", err)
	}

	// Deleting a topic removes its replicas and logs; re-creating it under
	// the same name in the same commit starts afresh.
	old := e.m.Get(t0)
	step(append([]metadata.Record{&metadata.RemoveTopicRecord{TopicId: topicID(1)}},
		topicRecords("t", topicID(3), []int32{1})...)...)
	nw := e.m.Get(t0)
	if nw == nil || nw == old || nw.TopicID() != topicID(3) || nw.Log().LogEndOffset() != 0 {
		t.Fatalf("t-0 after delete and re-create: %+v", nw)
	}
	if id, _ := nw.Log().ReadTopicID(); id != topicID(3) {
		t.Fatal("re-created log has the old topic id")
	}
	if old.IsLeader() {
		t.Fatal("the deleted replica still claims leadership")
	}
	step(&metadata.RemoveTopicRecord{TopicId: topicID(3)})
	if len(e.m.All()) != 0 || len(e.logs.All()) != 0 || len(e.dirs()) != 0 {
		t.Fatalf("after deleting everything: %v %v %v", e.local(), e.logs.All(), e.dirs())
	}
}

func strp(s string) *string { return &s }

// TestManagerAdoptsLogsAsTheyOpen is the start-up pipeline: replicas
// without a log on disk are set up first, each log found is adopted with
// the image of the time it opens, and the changes applied meanwhile leave
// the loading ones alone.
func TestManagerAdoptsLogsAsTheyOpen(t *testing.T) {
	fs := vfstest.NewMem()
	writeOldLogs(t, fs, []oldLog{
		{log.TopicPartition{Topic: "keep", Partition: 0}, topicID(1)},
		{log.TopicPartition{Topic: "keep", Partition: 1}, topicID(1)},
		{log.TopicPartition{Topic: "gone", Partition: 0}, topicID(2)},   // topic gone
		{log.TopicPartition{Topic: "reborn", Partition: 0}, topicID(4)}, // topic re-created with a new id
		{log.TopicPartition{Topic: "later", Partition: 0}, topicID(8)},  // deleted while loading
	})
	var recs []metadata.Record
	recs = append(recs, topicRecords("keep", topicID(1), []int32{1}, []int32{2, 1})...)
	recs = append(recs, topicRecords("reborn", topicID(5), []int32{1})...)
	recs = append(recs, topicRecords("later", topicID(8), []int32{1})...)
	recs = append(recs, topicRecords("new", topicID(6), []int32{2, 1})...)
	img, _ := apply(t, metadata.Empty(), recs...)

	bg := &background{}
	e := &managerEnv{t: t, fs: fs, static: staticConfig(t, nil), logs: newLogManager(fs, bg), bg: bg}
	e.m = NewManager(1, e.logs, e.static, quiet(), clock)
	t.Cleanup(func() { e.logs.Close() })
	found, err := e.logs.Scan()
	if err != nil {
		t.Fatal(err)
	}
	e.m.StartLoading(found)
	if err := e.m.Load(img); err != nil {
		t.Fatal(err)
	}
	keep0 := log.TopicPartition{Topic: "keep", Partition: 0}
	if got, want := e.local(), map[string]bool{"new-0": false}; !maps.Equal(got, want) {
		t.Fatalf("local replicas before any log opened = %v, want %v", got, want)
	}
	if !e.m.Loading(keep0) || e.m.Get(keep0) != nil {
		t.Fatal("keep-0 is not loading")
	}
	// Changes while the logs load: keep-1's leadership moves here, and
	// "later" is deleted.
	step := func(recs ...metadata.Record) {
		t.Helper()
		var d *metadata.Delta
		img, d = apply(t, img, recs...)
		if err := e.m.Apply(img, d); err != nil {
			t.Fatal(err)
		}
	}
	ch := metadata.NewPartitionChangeRecord()
	ch.TopicId, ch.PartitionId, ch.Leader = topicID(1), 1, 1
	step(ch)
	step(&metadata.RemoveTopicRecord{TopicId: topicID(8)})
	if got := len(e.m.All()); got != 1 {
		t.Fatalf("%d replicas before any log opened, want 1", got)
	}
	if !slices.Contains(e.dirs(), "later-0") {
		t.Fatal("a loading log was deleted before it opened")
	}

	var mu sync.Mutex
	var adopted []string
	if err := e.logs.LoadEach(context.Background(), func(tp log.TopicPartition) log.Config {
		return LogConfig(e.m.TopicConfig(img, tp.Topic))
	}, func(tp log.TopicPartition, l *log.Log, err error) {
		if err != nil {
			t.Errorf("opening %s: %v", tp, err)
		}
		e.m.Adopt(tp, l, err)
		mu.Lock()
		adopted = append(adopted, tp.String())
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if len(adopted) != 5 || e.m.Loading(keep0) {
		t.Fatalf("adopted %v", adopted)
	}
	want := map[string]bool{"keep-0": true, "keep-1": true, "reborn-0": true, "new-0": false}
	if got := e.local(); !maps.Equal(got, want) {
		t.Fatalf("local replicas (leader?) = %v, want %v", got, want)
	}
	e.bg.run() // new logs' directories are made in the background
	if got, want := e.dirs(), []string{"keep-0", "keep-1", "new-0", "reborn-0"}; !slices.Equal(got, want) {
		t.Fatalf("directories %v, want %v", got, want)
	}
	if p := e.m.Get(keep0); p.Log().LogEndOffset() != 1 {
		t.Fatal("keep-0 lost its data")
	}
	if p := e.m.Get(log.TopicPartition{Topic: "keep", Partition: 1}); p.State().LeaderEpoch != 1 || p.Log().LogEndOffset() != 1 {
		t.Fatalf("keep-1 did not take the leadership given while it loaded: %+v", p.State())
	}
	reborn := e.m.Get(log.TopicPartition{Topic: "reborn", Partition: 0})
	if id, err := reborn.Log().ReadTopicID(); err != nil || id != topicID(5) || reborn.Log().LogEndOffset() != 0 || reborn.TopicID() != topicID(5) {
		t.Fatalf("reborn-0: id %v (%v), LEO %d", id, err, reborn.Log().LogEndOffset())
	}
}
