package coordinator

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (w testWrite) WithID(id uint64) testWrite { w.id = id; return w }

func TestOutput(t *testing.T) {
	served := map[int32]bool{0: true, 1: true}
	var trace []string
	deadline := time.UnixMilli(9000)
	o := NewOutput[testWrite](OutputHooks{
		Serves:   func(p int32) bool { return served[p] },
		Settle:   func() { trace = append(trace, "settle") },
		Deadline: func() time.Time { trace = append(trace, "deadline"); return deadline },
	})
	outcome := func(name string) func(int16, int64) {
		return func(code int16, offset int64) { trace = append(trace, fmt.Sprintf("%s %d %d", name, code, offset)) }
	}

	now := time.UnixMilli(1234)
	o.Begin(now)
	if !o.Now().Equal(now) || o.NowMs() != 1234 {
		t.Fatalf("Now %v, NowMs %d", o.Now(), o.NowMs())
	}
	o.Emit(testWrite{p: 0}, outcome("a"))
	o.Emit(testWrite{p: 2}, outcome("unserved"))
	o.Emit(testWrite{p: 1}, outcome("b"))
	o.Emit(testWrite{p: 0}, outcome("c"))
	o.Emit(testWrite{p: 0}, outcome("d"))
	o.Respond(7, kmsg.NewPtrHeartbeatResponse())
	r := o.End()
	want := []testWrite{{1, 0}, {2, 1}, {3, 0}, {4, 0}}
	if !reflect.DeepEqual(r.Writes, want) || len(r.Responses) != 1 || r.Responses[0].Token != 7 || !r.Deadline.Equal(deadline) {
		t.Fatalf("Ready %+v", r)
	}
	if got := o.End(); len(got.Writes) != 0 || len(got.Responses) != 0 {
		t.Fatalf("second End %+v: the Ready was not reset", got)
	}

	o.Begin(now)
	o.Persisted(3, 40, nil)
	o.Persisted(2, -1, kerr.NotEnoughReplicas)
	o.FailWrites(0, kerr.NotCoordinator.Code) // a and d, in order
	o.Persisted(1, 10, nil)                   // already failed: ignored
	o.Persisted(99, 0, errors.New("unknown id: ignored"))
	o.Emit(testWrite{p: 1}, outcome("e"))
	o.Persisted(5, -1, errors.New("not a Kafka error"))
	if r := o.End(); len(r.Writes) != 1 || r.Writes[0].id != 5 {
		t.Fatalf("a new write after failed ones: %+v", r.Writes)
	}

	wantTrace := []string{
		fmt.Sprintf("unserved %d -1", kerr.NotCoordinator.Code),
		"settle", "deadline", "settle", "deadline",
		"c 0 40",
		fmt.Sprintf("b %d -1", kerr.NotEnoughReplicas.Code),
		fmt.Sprintf("a %d -1", kerr.NotCoordinator.Code),
		fmt.Sprintf("d %d -1", kerr.NotCoordinator.Code),
		fmt.Sprintf("e %d -1", kerr.UnknownServerError.Code),
		"settle", "deadline",
	}
	if !reflect.DeepEqual(trace, wantTrace) {
		t.Fatalf("trace\n%q\nwant\n%q", trace, wantTrace)
	}
}

// Output added outside an input would be dropped by the next Begin, its
// requester never answered: Respond and Emit refuse it.
func TestOutputOutsideAnInputPanics(t *testing.T) {
	o := NewOutput[testWrite](OutputHooks{Serves: func(int32) bool { return true }, Deadline: func() time.Time { return time.Time{} }})
	o.Begin(time.UnixMilli(1))
	o.Emit(testWrite{p: 0}, func(int16, int64) { o.Respond(1, kmsg.NewPtrHeartbeatResponse()) })
	o.End()
	for name, f := range map[string]func(){
		"Respond":    func() { o.Respond(2, kmsg.NewPtrHeartbeatResponse()) },
		"Emit":       func() { o.Emit(testWrite{p: 0}, func(int16, int64) {}) },
		"FailWrites": func() { o.FailWrites(0, kerr.NotCoordinator.Code) }, // its callback responds
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s outside an input did not panic", name)
				}
			}()
			f()
		}()
	}
}
