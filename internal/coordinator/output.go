package coordinator

import (
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NumberedWrite is a Write an Output can number: WithID returns a copy of
// the write carrying id, the one Target reports.
type NumberedWrite[W any] interface {
	Write
	WithID(id uint64) W
}

// OutputHooks is what an Output asks of its shard.
type OutputHooks struct {
	// Serves reports whether the shard serves partition p now (leads it
	// and has loaded it); writes of other partitions fail at once.
	Serves func(p int32) bool
	// Settle runs at the end of each input, before Deadline (nil: none);
	// a shard brings its gauges up to date there.
	Settle func()
	// Deadline is when the shard next needs Tick (zero: never), asked at
	// the end of each input.
	Deadline func() time.Time
}

// Output is the plumbing every shard shares: the time of the input being
// handled, the Ready it builds, and the writes in flight. A shard calls
// Begin as an input starts and returns End's Ready once it is handled;
// between them it answers with Respond and writes with Emit, which panic
// outside an input: what they added would be lost, and its requester
// never answered. Persisted hands a write's outcome to the callback Emit
// was given, FailWrites the NOT_COORDINATOR of a partition given up; both
// are called within an input, as their callbacks answer. Write ids are
// never reused. Its methods are called from the shard's goroutine only.
type Output[W NumberedWrite[W]] struct {
	hooks   OutputHooks
	inInput bool // between Begin and End
	now     time.Time
	ready   Ready[W]
	pending map[uint64]pendingWrite
	lastID  uint64
}

type pendingWrite struct {
	partition int32
	done      func(code int16, offset int64)
}

// NewOutput returns an Output with no write in flight.
func NewOutput[W NumberedWrite[W]](hooks OutputHooks) *Output[W] {
	return &Output[W]{hooks: hooks, pending: make(map[uint64]pendingWrite)}
}

// Begin starts an input at now with an empty Ready.
func (o *Output[W]) Begin(now time.Time) {
	o.now, o.inInput = now, true
	o.ready = Ready[W]{}
}

// End settles the shard and returns what the input produced, with the
// shard's next deadline.
func (o *Output[W]) End() Ready[W] {
	if o.hooks.Settle != nil {
		o.hooks.Settle()
	}
	r := o.ready
	o.ready, o.inInput = Ready[W]{}, false
	r.Deadline = o.hooks.Deadline()
	return r
}

// Now is the time of the input being handled.
func (o *Output[W]) Now() time.Time { return o.now }

// NowMs is Now in Unix milliseconds.
func (o *Output[W]) NowMs() int64 { return o.now.UnixMilli() }

// Respond answers the request of token with body.
func (o *Output[W]) Respond(token uint64, body kmsg.Response) {
	o.mustBeInInput("Respond")
	o.ready.Responses = append(o.ready.Responses, Response{Token: token, Body: body})
}

// Emit numbers w and adds it to the Ready; done is called once, when
// Persisted or FailWrites reports it, with 0 and the log offset of its
// first record, or with the Kafka code of the failure and -1. A write of a
// partition the shard does not serve (Serves) is not emitted: done gets
// NOT_COORDINATOR at once.
func (o *Output[W]) Emit(w W, done func(code int16, offset int64)) {
	o.mustBeInInput("Emit")
	if _, p := w.Target(); !o.hooks.Serves(p) {
		done(kerr.NotCoordinator.Code, -1)
		return
	}
	o.lastID++
	w = w.WithID(o.lastID)
	_, p := w.Target()
	o.pending[o.lastID] = pendingWrite{partition: p, done: done}
	o.ready.Writes = append(o.ready.Writes, w)
}

func (o *Output[W]) mustBeInInput(what string) {
	if !o.inInput {
		panic("coordinator: Output." + what + " outside an input (Begin/End)")
	}
}

// Persisted reports the outcome of write id: nil once its records are
// durable from offset on, else the append error (its Kafka code is
// AppendErrorCode's). Unknown ids, such as writes FailWrites already
// failed, are ignored.
func (o *Output[W]) Persisted(id uint64, offset int64, err error) {
	w, ok := o.pending[id]
	if !ok {
		return
	}
	delete(o.pending, id)
	if code := AppendErrorCode(err); code != 0 {
		w.done(code, -1)
	} else {
		w.done(0, offset)
	}
}

// FailWrites fails the writes of partition p in flight with code, in the
// order they were emitted; their later outcomes are ignored.
func (o *Output[W]) FailWrites(p int32, code int16) {
	var ids []uint64
	for id, w := range o.pending {
		if w.partition == p {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		w := o.pending[id]
		delete(o.pending, id)
		w.done(code, -1)
	}
}

// AppendErrorCode is the Kafka code of an append failure: 0 for nil, the
// code of the *kerr.Error it wraps, else UNKNOWN_SERVER_ERROR.
func AppendErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
