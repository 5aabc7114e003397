package fetcher

import (
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/partition"
	"weir/internal/quota"
	"weir/internal/record"
)

// A reassignment's new replica (broker 4, listed in
// follower.replication.throttled.replicas, not in the ISR) is fetched
// while the follower-side quota allows and left out of the requests
// while it is exceeded; what its answers bring is counted. Once in the
// ISR it is never throttled.
func TestFollowerThrottleDecisions(t *testing.T) {
	const limit = 1000 // bytes/s
	clock := testNow
	q := quota.NewReplication(11, time.Second, func() (int64, int64) { return math.MaxInt64, limit })
	q.Now = func() time.Time { return clock }

	p := replica(t, 4)
	static, _, err := config.LoadBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.ResolveTopic(nil, nil, nil, static)
	cfg.FollowerThrottledReplicas = []string{"0:4"}
	p.SetConfig(cfg)
	if err := p.Apply(partition.State{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 1, Replicas: []int32{4, 1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &Manager{cfg: Config{Self: 4, Quota: q, BrokerEpoch: func() int64 { return 1 }, PartitionMaxBytes: 1 << 20,
		ResponseMaxBytes: 10 << 20, Backoff: time.Second, Logger: lg}, lg: lg}
	f := newFetcher(m, 1)
	f.parts[p.TopicPartition()] = &followed{p: p}

	// fetch builds a request and, when the partition is in it, answers
	// it with one batch of records (about 100 bytes each) at the
	// follower's log end.
	fetch := func(records int) (asked, bool) {
		t.Helper()
		r, _ := f.build()
		if r == nil {
			return asked{}, false
		}
		if len(r.pos) != 1 {
			t.Fatalf("request for %d partitions", len(r.pos))
		}
		var a asked
		for _, a = range r.pos {
		}
		h := record.NewBatchHeader()
		h.BaseOffset, h.LeaderEpoch = p.Log().LogEndOffset(), 3
		recs := make([]record.Record, records)
		for i := range recs {
			recs[i] = record.Record{OffsetDelta: int32(i), Value: make([]byte, 90)}
		}
		b, err := record.Build(h, recs, 0)
		if err != nil {
			t.Fatal(err)
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.RecordBatches, sp.HighWatermark = b, b.NextOffset()
		if err := f.apply(a, &sp, nil); err != nil {
			t.Fatal(err)
		}
		return a, true
	}

	// The allowance of a fresh quota: 10 empty windows are assumed, so
	// about 10 s x limit bytes go through at once.
	fetched := 0
	for {
		a, ok := fetch(10)
		if !ok {
			break
		}
		if !a.throttled {
			t.Fatal("the moving replica's fetch is not counted against the quota")
		}
		fetched++
		if fetched > 100 {
			t.Fatal("the quota never stopped the fetches")
		}
	}
	moved := p.Log().LogEndOffset()
	if v := q.Follower.Value(clock); v <= limit || moved == 0 {
		t.Fatalf("stopped at rate %v after %d records, want just over %d", v, moved, limit)
	}
	// Time passes: the rate falls under the limit and fetching resumes.
	for i := 0; ; i++ {
		clock = clock.Add(100 * time.Millisecond)
		if _, ok := fetch(1); ok {
			break
		}
		if i > 200 {
			t.Fatal("fetching never resumed")
		}
	}
	if v := q.Follower.Value(clock); v > limit*1.2 {
		t.Fatalf("resumed with the rate at %v", v)
	}

	// In the ISR: fetched whatever the quota says, and not counted.
	if err := p.Apply(partition.State{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 2, Replicas: []int32{4, 1}, ISR: []int32{1, 4}}); err != nil {
		t.Fatal(err)
	}
	before := q.Follower.Value(clock)
	for i := 0; i < 20; i++ {
		a, ok := fetch(10)
		if !ok || a.throttled {
			t.Fatalf("an ISR member's fetch: sent %v, throttled %v", ok, a.throttled)
		}
	}
	if q.Follower.Value(clock) != before {
		t.Fatal("an ISR member's fetches were counted")
	}
}
