package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type testWrite struct {
	id uint64
	p  int32
}

func (w testWrite) Target() (uint64, int32) { return w.id, w.p }

// testShard records what the runtime fed it, in order. It is only touched
// by the runtime's goroutine; the test reads trace through the runtime
// (Do) or after Run has returned.
type testShard struct {
	trace []string
	// waiting are the tokens of requests left unanswered, which the next
	// BeginLoad answers, as a shard re-elected in a new epoch answers the
	// requests waiting on the old epoch's writes.
	waiting []uint64
}

func (s *testShard) BeginLoad(_ time.Time, p int32) Ready[testWrite] {
	s.trace = append(s.trace, fmt.Sprintf("begin %d", p))
	var r Ready[testWrite]
	for _, tok := range s.waiting {
		r.Responses = append(r.Responses, Response{Token: tok, Body: &kmsg.HeartbeatResponse{ErrorCode: kerr.NotCoordinator.Code}})
	}
	s.waiting = nil
	return r
}
func (s *testShard) Load(_ time.Time, p, epoch int32, recs []string) (Ready[testWrite], []error) {
	s.trace = append(s.trace, fmt.Sprintf("load %d@%d %v", p, epoch, recs))
	var skipped []error
	for _, r := range recs {
		if r == "bad" {
			skipped = append(skipped, errors.New("bad record"))
		}
	}
	return Ready[testWrite]{}, skipped
}
func (s *testShard) Unload(_ time.Time, p int32) Ready[testWrite] {
	s.trace = append(s.trace, fmt.Sprintf("unload %d", p))
	return Ready[testWrite]{}
}
func (s *testShard) Tick(time.Time) Ready[testWrite] { return Ready[testWrite]{} }
func (s *testShard) Persisted(_ time.Time, id uint64, _ int64, err error) Ready[testWrite] {
	s.trace = append(s.trace, fmt.Sprintf("persisted %d %v", id, err))
	return Ready[testWrite]{}
}

// testLog fails the appends whose id is in fail; others succeed at once.
type testLog struct {
	fail     map[uint64]bool
	mu       sync.Mutex
	appended []uint64
}

func (l *testLog) Append(w testWrite, done func(int64, error)) {
	l.mu.Lock()
	l.appended = append(l.appended, w.id)
	l.mu.Unlock()
	if l.fail[w.id] {
		done(-1, errors.New("append failed"))
		return
	}
	done(int64(w.id), nil)
}
func (l *testLog) ReadAll(p int32) ([]string, error) { return []string{"ok", "bad"}, nil }

func newTestRuntime(log *testLog, deltas bool, skipped func(int)) (*Runtime[testWrite, string], *testShard) {
	s := &testShard{}
	return New(Config[testWrite, string]{Topic: "t", Shard: s, Log: log, Lg: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: time.Now, Skipped: skipped, Deltas: deltas}), s
}

// request submits a request whose shard call returns r and waits for its
// answer.
func request(t *testing.T, rt *Runtime[testWrite, string], r func(token uint64) Ready[testWrite]) kmsg.Response {
	t.Helper()
	got := make(chan kmsg.Response, 1)
	rt.Request(context.Background(), func(resp kmsg.Response) { got <- resp }, func(_ time.Time, token uint64) Ready[testWrite] {
		return r(token)
	})
	select {
	case resp := <-got:
		return resp
	case <-time.After(time.Minute):
		t.Fatal("no response")
		return nil
	}
}

func TestRuntimeEventsNeverBlockAndPrecedeLaterRequests(t *testing.T) {
	var skipped int
	rt, shard := newTestRuntime(&testLog{}, false, func(n int) { skipped += n })
	// Far more than the request queue holds, before Run: the metadata
	// path must never wait on the loop.
	for p := range int32(1000) {
		rt.Elected(p, 1)
		rt.Resigned(p)
	}
	rt.Elected(7, 3)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { rt.Run(ctx); close(stopped) }()
	var trace []string
	request(t, rt, func(token uint64) Ready[testWrite] {
		trace = append([]string(nil), shard.trace...)
		return Ready[testWrite]{Responses: []Response{{Token: token, Body: &kmsg.HeartbeatResponse{}}}}
	})
	// The load of partition 7 may have completed too, after its election.
	if len(trace) < 2001 || trace[0] != "begin 0" || trace[1] != "unload 0" || trace[1998] != "begin 999" ||
		trace[1999] != "unload 999" || trace[2000] != "begin 7" {
		t.Fatalf("before the request the shard saw %d inputs: %q", len(trace), trace)
	}
	// The load of partition 7 completes later, as an event; only the
	// current epoch's load reaches the shard.
	for {
		var loads []string
		request(t, rt, func(token uint64) Ready[testWrite] {
			for _, e := range shard.trace {
				if len(e) > 4 && e[:4] == "load" {
					loads = append(loads, e)
				}
			}
			return Ready[testWrite]{Responses: []Response{{Token: token, Body: &kmsg.HeartbeatResponse{}}}}
		})
		if len(loads) > 0 {
			if len(loads) != 1 || loads[0] != "load 7@3 [ok bad]" || skipped != 1 {
				t.Fatalf("loads %q, skipped %d", loads, skipped)
			}
			break
		}
	}
	cancel()
	<-stopped
	rt.Elected(1, 1) // dropped, not blocked, once stopped
	rt.Request(context.Background(), func(kmsg.Response) { t.Error("answered after Run returned") },
		func(time.Time, uint64) Ready[testWrite] { return Ready[testWrite]{} })
}

func TestRuntimeDeltasFailWritesBehindAFailedOne(t *testing.T) {
	for _, deltas := range []bool{false, true} {
		log := &testLog{fail: map[uint64]bool{1: true}}
		rt, shard := newTestRuntime(log, deltas, nil)
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { rt.Run(ctx); close(stopped) }()
		// Writes 1 (fails), 2 (same partition), 3 (another partition) in
		// one Ready; then 4 once every outcome is in.
		request(t, rt, func(token uint64) Ready[testWrite] {
			return Ready[testWrite]{Responses: []Response{{Token: token, Body: &kmsg.HeartbeatResponse{}}},
				Writes: []testWrite{{1, 0}, {2, 0}, {3, 1}}}
		})
		request(t, rt, func(token uint64) Ready[testWrite] {
			return Ready[testWrite]{Responses: []Response{{Token: token, Body: &kmsg.HeartbeatResponse{}}},
				Writes: []testWrite{{4, 0}}}
		})
		var trace []string
		for len(trace) < 4 {
			request(t, rt, func(token uint64) Ready[testWrite] {
				trace = append([]string(nil), shard.trace...)
				return Ready[testWrite]{Responses: []Response{{Token: token, Body: &kmsg.HeartbeatResponse{}}}}
			})
		}
		cancel()
		<-stopped
		want := []string{"persisted 1 append failed", "persisted 2 <nil>", "persisted 3 <nil>", "persisted 4 <nil>"}
		wantAppended := []uint64{1, 2, 3, 4}
		if deltas {
			want[1] = "persisted 2 " + errBrokenPartition.Error()
			wantAppended = []uint64{1, 3, 4}
		}
		if fmt.Sprint(trace) != fmt.Sprint(want) || fmt.Sprint(log.appended) != fmt.Sprint(wantAppended) {
			t.Errorf("deltas %v: shard saw %q, log appended %v; want %q, %v", deltas, trace, log.appended, want, wantAppended)
		}
	}
}

// What BeginLoad answers reaches the requesters: a shard re-elected in a
// new epoch answers the requests waiting on the old epoch's writes there.
func TestRuntimeDeliversBeginLoadsAnswers(t *testing.T) {
	rt, shard := newTestRuntime(&testLog{}, false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { rt.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()
	rt.Elected(0, 1)
	got := make(chan kmsg.Response, 1)
	taken := make(chan struct{})
	rt.Request(context.Background(), func(resp kmsg.Response) { got <- resp }, func(_ time.Time, token uint64) Ready[testWrite] {
		shard.waiting = append(shard.waiting, token)
		close(taken)
		return Ready[testWrite]{}
	})
	<-taken // the shard holds the request; then the re-election
	rt.Elected(0, 2)
	select {
	case resp := <-got:
		if code := resp.(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.NotCoordinator.Code {
			t.Fatalf("answered %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
		}
	case <-time.After(time.Minute):
		t.Fatal("the request BeginLoad answered never got its answer")
	}
}
