package coordinator

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Response is a shard's answer to the request with the same Token. Body
// has the request's version.
type Response struct {
	Token uint64
	Body  kmsg.Response
}

// Write is an append a shard asks for: records of one partition, whose
// outcome the Runtime reports with Shard.Persisted(id, ...).
type Write interface {
	Target() (id uint64, partition int32)
}

// Ready is what a shard asks of the Runtime after each input: responses to
// complete, writes to append, and when it next needs Tick (zero: never).
type Ready[W Write] struct {
	Responses []Response
	Writes    []W
	Deadline  time.Time
}

// Shard is a coordinator's deterministic state machine as the Runtime
// drives it. Requests and other inputs reach it through the closures given
// to Runtime.Request and Runtime.Do; these are the inputs every shard has.
// All calls come from the Runtime's goroutine.
type Shard[W Write, Rec any] interface {
	// BeginLoad: this broker became leader of partition p (perhaps again,
	// in a new epoch); its keys answer COORDINATOR_LOAD_IN_PROGRESS until
	// Load. The Ready answers what a new epoch fails.
	BeginLoad(now time.Time, p int32) Ready[W]
	// Load replays partition p's records (led in epoch); the shard serves
	// p from now on. skipped are the records it could not read.
	Load(now time.Time, p, epoch int32, records []Rec) (r Ready[W], skipped []error)
	// Unload: leadership of p is lost.
	Unload(now time.Time, p int32) Ready[W]
	// Tick fires the timers due at now.
	Tick(now time.Time) Ready[W]
	// Persisted reports the outcome of write id: durable from offset on
	// (err nil), or failed.
	Persisted(now time.Time, id uint64, offset int64, err error) Ready[W]
}

// PartitionLog is the internal topic as the Runtime needs it (Kafka's
// PartitionWriter and loader).
type PartitionLog[W Write, Rec any] interface {
	// Append writes w's records to its partition as its leader and calls
	// done, from any goroutine, once they are committed (the high
	// watermark covers them), with the offset of the first record, or once
	// they have failed. done may be called before Append returns.
	Append(w W, done func(offset int64, err error))
	// ReadAll returns partition p's records, in order, up to what a new
	// leader must replay.
	ReadAll(p int32) ([]Rec, error)
}

// Config is what a Runtime drives and how.
type Config[W Write, Rec any] struct {
	Topic string // the internal topic, for logs
	Shard Shard[W, Rec]
	Log   PartitionLog[W, Rec]
	Lg    *slog.Logger
	Now   func() time.Time
	// Skipped is told how many unreadable records each load skipped (nil:
	// not counted).
	Skipped func(n int)
	// Deltas: the shard's records are deltas of its state, so once a write
	// of a partition has failed, later writes of that partition must not
	// reach the log before the shard has undone them. The Runtime fails
	// them without appending (NOT_LEADER_OR_FOLLOWER) until every
	// outstanding write of the partition has been reported.
	Deltas bool
}

// errBrokenPartition fails writes queued behind a failed one (Deltas).
var errBrokenPartition = kerr.NotLeaderForPartition

// Runtime runs a Shard on its own goroutine (Run) and does its I/O. Its
// methods are safe for concurrent use. Request waits while the loop is
// busy (bounded queue); Elected, Resigned and Do never block, so the
// metadata path may call them: they are queued in order and run before
// any request queued after them.
type Runtime[W Write, Rec any] struct {
	cfg Config[W, Rec]

	in chan func() // requests, run on the loop goroutine

	// Events (Do, Elected, Resigned, completions) come from any goroutine,
	// possibly from the loop itself; they are queued here, unbounded.
	mu      sync.Mutex
	events  []func()
	stopped bool // Run returned: events are dropped
	wake    chan struct{}
	done    chan struct{} // closed when Run returns

	// Owned by the loop goroutine.
	waiting   map[uint64]func(kmsg.Response)
	nextToken uint64
	loads     map[int32]int32 // partition -> leader epoch being loaded or served
	timer     *time.Timer
	inflight  map[int32]int  // writes of each partition not yet reported (Deltas)
	broken    map[int32]bool // a write failed; later ones are refused (Deltas)
	brokenNow map[int32]bool // failures seen by Append callbacks (under mu)
}

// New returns a Runtime; Run starts it.
func New[W Write, Rec any](cfg Config[W, Rec]) *Runtime[W, Rec] {
	if cfg.Skipped == nil {
		cfg.Skipped = func(int) {}
	}
	return &Runtime[W, Rec]{cfg: cfg, in: make(chan func(), 256), wake: make(chan struct{}, 1),
		done: make(chan struct{}), waiting: map[uint64]func(kmsg.Response){}, loads: map[int32]int32{},
		inflight: map[int32]int{}, broken: map[int32]bool{}, brokenNow: map[int32]bool{}}
}

// Request submits a request: call runs on the loop with the time and the
// token the shard's response must carry, and done receives that response,
// possibly much later. done must not block. The request is dropped if ctx
// ends or Run returns before the loop takes it.
func (rt *Runtime[W, Rec]) Request(ctx context.Context, done func(kmsg.Response), call func(now time.Time, token uint64) Ready[W]) {
	select {
	case rt.in <- func() {
		rt.nextToken++
		rt.waiting[rt.nextToken] = done
		rt.process(call(rt.cfg.Now(), rt.nextToken))
	}:
	case <-rt.done:
	case <-ctx.Done():
	}
}

// Do queues f to run on the loop with the time, in order with the other
// events and before any request queued after Do returns. It never blocks;
// once Run has returned, f is dropped.
func (rt *Runtime[W, Rec]) Do(f func(now time.Time) Ready[W]) {
	rt.event(func() { rt.process(f(rt.cfg.Now())) })
}

// Elected tells the runtime this broker leads partition p in epoch: the
// shard loads p from the log and serves it once loaded. It never blocks.
func (rt *Runtime[W, Rec]) Elected(p, epoch int32) {
	rt.event(func() {
		rt.loads[p] = epoch
		rt.process(rt.cfg.Shard.BeginLoad(rt.cfg.Now(), p))
		go func() {
			recs, err := rt.cfg.Log.ReadAll(p)
			rt.event(func() { rt.loaded(p, epoch, recs, err) })
		}()
	})
}

// Resigned tells the runtime this broker no longer leads partition p. It
// never blocks.
func (rt *Runtime[W, Rec]) Resigned(p int32) {
	rt.event(func() {
		delete(rt.loads, p)
		rt.process(rt.cfg.Shard.Unload(rt.cfg.Now(), p))
	})
}

func (rt *Runtime[W, Rec]) event(f func()) {
	rt.mu.Lock()
	if rt.stopped {
		rt.mu.Unlock()
		return
	}
	rt.events = append(rt.events, f)
	rt.mu.Unlock()
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

func (rt *Runtime[W, Rec]) loaded(p, epoch int32, recs []Rec, err error) {
	if e, ok := rt.loads[p]; !ok || e != epoch {
		return // resigned or re-elected meanwhile; the newer load wins
	}
	if err != nil {
		rt.cfg.Lg.Error("reading the coordinator's partition failed; it stays unavailable",
			"topic", rt.cfg.Topic, "partition", p, "err", err)
		return
	}
	ready, skipped := rt.cfg.Shard.Load(rt.cfg.Now(), p, epoch, recs)
	if len(skipped) > 0 {
		rt.cfg.Lg.Error("skipped unreadable records while loading", "topic", rt.cfg.Topic, "partition", p,
			"skipped", len(skipped), "first", skipped[0])
		rt.cfg.Skipped(len(skipped))
	}
	rt.process(ready)
}

// Run serves until ctx is done.
func (rt *Runtime[W, Rec]) Run(ctx context.Context) {
	defer func() {
		rt.mu.Lock()
		rt.stopped, rt.events = true, nil
		rt.mu.Unlock()
		close(rt.done)
	}()
	rt.timer = time.NewTimer(time.Hour)
	rt.timer.Stop()
	defer rt.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-rt.in:
			rt.runEvents() // those queued before the request go first
			f()
		case <-rt.wake:
			rt.runEvents()
		case <-rt.timer.C:
			rt.process(rt.cfg.Shard.Tick(rt.cfg.Now()))
		}
	}
}

func (rt *Runtime[W, Rec]) runEvents() {
	for {
		rt.mu.Lock()
		evs := rt.events
		rt.events = nil
		rt.mu.Unlock()
		if len(evs) == 0 {
			return
		}
		for _, f := range evs {
			f()
		}
	}
}

// process carries out a Ready: answers, writes, and the next timer.
func (rt *Runtime[W, Rec]) process(r Ready[W]) {
	for _, resp := range r.Responses {
		if done := rt.waiting[resp.Token]; done != nil {
			delete(rt.waiting, resp.Token)
			done(resp.Body)
		}
	}
	for _, w := range r.Writes {
		rt.write(w)
	}
	rt.timer.Stop()
	if !r.Deadline.IsZero() {
		rt.timer.Reset(max(r.Deadline.Sub(rt.cfg.Now()), 0))
	}
}

func (rt *Runtime[W, Rec]) write(w W) {
	id, p := w.Target()
	if !rt.cfg.Deltas {
		rt.cfg.Log.Append(w, func(offset int64, err error) {
			rt.Do(func(now time.Time) Ready[W] { return rt.cfg.Shard.Persisted(now, id, offset, err) })
		})
		return
	}
	rt.inflight[p]++
	report := func(offset int64, err error) {
		rt.event(func() {
			rt.inflight[p]--
			if err != nil {
				rt.broken[p] = true
			}
			if rt.inflight[p] == 0 {
				// Every failure of p has reached the shard, which undid
				// the writes after it: p is whole again.
				delete(rt.broken, p)
				rt.mu.Lock()
				delete(rt.brokenNow, p)
				rt.mu.Unlock()
			}
			rt.process(rt.cfg.Shard.Persisted(rt.cfg.Now(), id, offset, err))
		})
	}
	if rt.broken[p] {
		report(-1, errBrokenPartition)
		return
	}
	rt.cfg.Log.Append(w, func(offset int64, err error) {
		if err != nil {
			rt.mu.Lock()
			rt.brokenNow[p] = true
			rt.mu.Unlock()
		}
		report(offset, err)
	})
	rt.mu.Lock()
	if rt.brokenNow[p] {
		rt.broken[p] = true
		delete(rt.brokenNow, p)
	}
	rt.mu.Unlock()
}
