package txn

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/tracetest"
)

// TestTraces runs the scripted traces in testdata/: each directive is an
// input to the Coordinator, and its output what the input produced, in
// order: responses (#token Api {fields}), __transaction_state writes
// (decoded), marker requests and their outcome, producer id requests, and
// the transactions when asked. Writes, markers and producer ids are
// answered at once unless held. Time moves only by "advance". Run with
// -rewrite to regenerate the outputs. The directives:
//
//	init-pid id= [timeout=D] [pid= epoch=] [version=N]   InitProducerId
//	add id= pid= epoch= partitions=(topic:p,...) [verify]
//	                                    AddPartitionsToTxn v3, or v4 verifyOnly
//	add-offsets id= pid= epoch= group=  AddOffsetsToTxn
//	end id= pid= epoch= commit|abort    EndTxn v4
//	describe ids=(...)  |  list [states=(...)]
//	advance D                           move the clock, firing timers as they fall due
//	hold writes|markers|pids            keep them pending
//	release writes|markers|pids         answer what is pending (markers: OK, or
//	                                    code=NAME for partitions=(...))
//	fail writes [code=NAME]             fail the pending writes (NOT_LEADER_FOR_PARTITION)
//	unload partition=  |  reload partition= epoch=
//	state [id=]                         the transactions
func TestTraces(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := newScript(t)
		datadriven.RunTest(t, path, s.run)
	})
}

type script struct {
	t        *testing.T
	c        *Coordinator
	now      time.Time
	tok      uint64
	deadline time.Time
	log      map[int32][]Record
	nextPID  int64

	hold     map[string]bool
	writes   []Write
	markers  []MarkerRequest
	needPIDs bool

	out strings.Builder
}

func newScript(t *testing.T) *script {
	s := &script{t: t, c: New(testConfig()), now: t0, log: map[int32][]Record{}, nextPID: 1000, hold: map[string]bool{}}
	s.c.SetTopics(map[string]int32{"t1": 3, "t2": 1, OffsetsTopic: s.c.cfg.OffsetsPartitions})
	for p := range s.c.cfg.StatePartitions {
		s.apply(s.c.BeginLoad(s.now, p))
		rd, _ := s.c.LoadPartition(s.now, p, 0, nil)
		s.apply(rd)
	}
	s.out.Reset()
	return s
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	s.out.Reset()
	switch d.Cmd {
	case "advance":
		if len(d.CmdArgs) != 1 {
			d.Fatalf(t, "advance takes one duration")
		}
		by, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			d.Fatalf(t, "advance: %v", err)
		}
		end := s.now.Add(by)
		var ticked time.Time
		for !s.deadline.IsZero() && !s.deadline.After(end) {
			if s.deadline.After(s.now) {
				s.now = s.deadline
			}
			if !s.now.Equal(ticked) {
				fmt.Fprintf(&s.out, "tick at +%v\n", s.now.Sub(t0))
				ticked = s.now
			}
			s.apply(s.c.Tick(s.now))
		}
		s.now = end
	case "hold":
		s.hold[d.CmdArgs[0].Key] = true
	case "release":
		what := d.CmdArgs[0].Key
		s.hold[what] = false
		switch what {
		case "writes":
			s.persistWrites()
		case "markers":
			code := int16(0)
			if d.HasArg("code") {
				code = tracetest.ErrorNamed(t, d, tracetest.Arg(d, "code")).Code
			}
			failed := map[string]bool{}
			for _, p := range tracetest.Args(d, "partitions") {
				failed[p] = true
			}
			ms := s.markers
			s.markers = nil
			for _, m := range ms {
				s.answerMarkers(m, func(tp TopicPartition) int16 {
					if len(failed) == 0 || failed[fmt.Sprintf("%s:%d", tp.Topic, tp.Partition)] {
						return code
					}
					return 0
				})
			}
		case "pids":
			s.supplyPIDs()
		}
	case "fail":
		code := kerr.NotLeaderForPartition
		if d.HasArg("code") {
			code = tracetest.ErrorNamed(t, d, tracetest.Arg(d, "code"))
		}
		ws := s.writes
		s.writes = nil
		for _, w := range ws {
			fmt.Fprintf(&s.out, "write %d failed: %s\n", w.ID, code.Message)
			s.apply(s.c.Persisted(s.now, w.ID, code))
		}
	case "unload":
		s.apply(s.c.UnloadPartition(s.now, int32(tracetest.Int(t, d, "partition"))))
	case "reload":
		p := int32(tracetest.Int(t, d, "partition"))
		s.apply(s.c.BeginLoad(s.now, p))
		rd, skipped := s.c.LoadPartition(s.now, p, int32(tracetest.Int(t, d, "epoch")), s.log[p])
		for _, err := range skipped {
			fmt.Fprintf(&s.out, "skipped: %v\n", err)
		}
		s.apply(rd)
	case "state":
		for _, id := range sortedIDs(s.c.txns) {
			if d.HasArg("id") && id != tracetest.Arg(d, "id") {
				continue
			}
			m := s.c.txns[id]
			fmt.Fprintf(&s.out, "%s: %v, producer %d epoch %d, partitions %s", id, m.state, m.producerID, m.epoch, partitions(m.partitions.sorted()))
			if m.pending != nil {
				fmt.Fprintf(&s.out, ", pending %v", m.pending.state)
			}
			s.out.WriteString("\n")
		}
	default:
		s.tok++
		s.apply(s.c.Handle(s.now, Request{Token: s.tok, Body: s.request(t, d)}))
	}
	if s.out.Len() == 0 {
		return "ok\n"
	}
	return s.out.String()
}

// apply renders one Ready and answers what is not held.
func (s *script) apply(rd Ready) {
	for _, r := range rd.Responses {
		name := strings.TrimSuffix(strings.TrimPrefix(reflect.TypeOf(r.Body).String(), "*kmsg."), "Response")
		fmt.Fprintf(&s.out, "#%d %s %s\n", r.Token, name, tracetest.Format(r.Body))
	}
	s.deadline = rd.Deadline
	for _, w := range rd.Writes {
		fmt.Fprintf(&s.out, "write %d to partition %d\n", w.ID, w.Partition)
		for _, r := range w.Records {
			fmt.Fprintf(&s.out, "  %s\n", recordString(r))
		}
		s.writes = append(s.writes, w)
	}
	for _, m := range rd.Markers {
		kind := "ABORT"
		if m.Commit {
			kind = "COMMIT"
		}
		fmt.Fprintf(&s.out, "markers %d: %s of %s (producer %d epoch %d, coordinator epoch %d) to %s\n", m.ID, kind,
			m.TransactionalID, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, partitions(m.Partitions))
		s.markers = append(s.markers, m)
	}
	if rd.NeedProducerIDs {
		s.out.WriteString("need producer ids\n")
		s.needPIDs = true
	}
	if !s.hold["writes"] {
		s.persistWrites()
	}
	if !s.hold["markers"] {
		ms := s.markers
		s.markers = nil
		for _, m := range ms {
			s.answerMarkers(m, func(TopicPartition) int16 { return 0 })
		}
	}
	if s.needPIDs && !s.hold["pids"] {
		s.supplyPIDs()
	}
}

func (s *script) persistWrites() {
	for len(s.writes) > 0 {
		w := s.writes[0]
		s.writes = s.writes[1:]
		s.log[w.Partition] = append(s.log[w.Partition], w.Records...)
		s.apply(s.c.Persisted(s.now, w.ID, nil))
	}
}

func (s *script) answerMarkers(m MarkerRequest, code func(TopicPartition) int16) {
	var rs []MarkerResult
	var failed []string
	for _, tp := range m.Partitions {
		c := code(tp)
		if c != 0 {
			failed = append(failed, fmt.Sprintf("%s:%d %s", tp.Topic, tp.Partition, tracetest.Code(c)))
		}
		rs = append(rs, MarkerResult{Partition: tp, Code: c})
	}
	if failed != nil {
		fmt.Fprintf(&s.out, "markers %d failed: %s\n", m.ID, strings.Join(failed, ", "))
	}
	s.apply(s.c.MarkersWritten(s.now, m.ID, rs))
}

func (s *script) supplyPIDs() {
	s.needPIDs = false
	first := s.nextPID
	s.nextPID += 10
	fmt.Fprintf(&s.out, "producer ids %d-%d supplied\n", first, s.nextPID-1)
	s.apply(s.c.SupplyProducerIDs(s.now, first, 10))
}

// request builds the request a directive names.
func (s *script) request(t *testing.T, d *datadriven.TestData) kmsg.Request {
	id := tracetest.Arg(d, "id")
	pid, epoch := tracetest.IntOr(t, d, "pid", -1), int16(tracetest.IntOr(t, d, "epoch", -1))
	switch d.Cmd {
	case "init-pid":
		r := initReq(id, int32(tracetest.DurationOr(t, d, "timeout", time.Minute).Milliseconds()))
		r.Version = int16(tracetest.IntOr(t, d, "version", 5))
		r.ProducerID, r.ProducerEpoch = pid, epoch
		return r
	case "add":
		var tps []TopicPartition
		for _, v := range tracetest.Args(d, "partitions") {
			topic, p, _ := strings.Cut(v, ":")
			n, err := strconv.Atoi(p)
			if err != nil {
				d.Fatalf(t, "partitions: %q is not topic:partition", v)
			}
			tps = append(tps, TopicPartition{topic, int32(n)})
		}
		r := addReq(id, pid, epoch, tps...)
		if d.HasArg("verify") {
			r.Version = 4
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
			for _, rt := range r.Topics {
				tx.Topics = append(tx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: rt.Topic, Partitions: rt.Partitions})
			}
			r.Transactions = append(r.Transactions, tx)
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Topics = "", 0, 0, nil
		}
		return r
	case "add-offsets":
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.Version = 3
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, pid, epoch, tracetest.Arg(d, "group")
		return r
	case "end":
		return endReq(id, pid, epoch, d.HasArg("commit"))
	case "describe":
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = tracetest.Args(d, "ids")
		return r
	case "list":
		r := kmsg.NewPtrListTransactionsRequest()
		r.StateFilters = tracetest.Args(d, "states")
		return r
	}
	d.Fatalf(t, "unknown directive %s", d.Cmd)
	return nil
}

// recordString decodes a __transaction_state record for the trace.
func recordString(r Record) string {
	id, m, ok, err := decodeRecord(r)
	switch {
	case err != nil:
		return err.Error()
	case !ok:
		return "record of another key version"
	case m == nil:
		return id + " tombstone"
	}
	return fmt.Sprintf("%s: %v, producer %d epoch %d, timeout %v, partitions %s", id, m.state, m.producerID, m.epoch,
		time.Duration(m.timeoutMs)*time.Millisecond, partitions(m.partitions.sorted()))
}

func partitions(tps []TopicPartition) string {
	var out []string
	for _, tp := range tps {
		out = append(out, fmt.Sprintf("%s:%d", tp.Topic, tp.Partition))
	}
	return "[" + strings.Join(out, " ") + "]"
}
