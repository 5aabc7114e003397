package fetcher

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
	"weir/internal/partition"
	"weir/internal/record"
	"weir/internal/tracetest"
)

// TestTraces runs the scripted traces in testdata/: three replicas (brokers
// 1, 2 and 3) of one partition on in-memory disks, whose followers fetch
// from the leader with Apply. A fetch directive shows the follower's
// position, the leader's answer and the follower's log afterwards. Run
// with -rewrite to regenerate the outputs. The directives:
//
//	elect leader= epoch= [isr=(...)]     every replica applies the new state
//	                                     (replicas 1, 2, 3; ISR: all by default)
//	produce broker= pid= seq= [n=1]      an idempotent batch of n records
//	                                     appended by that replica as leader
//	delete-records broker= offset=       DeleteRecords on the leader
//	fetch broker=                        one fetch of the follower from its
//	                                     leader, answered and applied
//	apply broker= [err=NAME] [diverging=epoch:end] [hw=] [log-start=] [leader-end=]
//	                                     Apply of a made-up answer
//	log broker=                          the replica's log: offsets, epochs,
//	                                     batches, producers
func TestTraces(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &script{replicas: map[int32]*partition.Partition{}}
		for id := int32(1); id <= 3; id++ {
			s.replicas[id] = replica(t, id)
		}
		datadriven.RunTest(t, path, s.run)
	})
}

type script struct {
	replicas       map[int32]*partition.Partition
	partitionEpoch int32
	out            strings.Builder
}

func (s *script) replica(t *testing.T, d *datadriven.TestData) *partition.Partition {
	id := int32(tracetest.Int(t, d, "broker"))
	p := s.replicas[id]
	if p == nil {
		d.Fatalf(t, "no broker %d", id)
	}
	return p
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	s.out.Reset()
	switch d.Cmd {
	case "elect":
		st := partition.State{Leader: int32(tracetest.Int(t, d, "leader")), LeaderEpoch: int32(tracetest.Int(t, d, "epoch")),
			PartitionEpoch: s.partitionEpoch, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
		s.partitionEpoch++
		if d.HasArg("isr") {
			st.ISR = nil
			for _, v := range tracetest.Args(d, "isr") {
				n, _ := strconv.Atoi(v)
				st.ISR = append(st.ISR, int32(n))
			}
		}
		for id := int32(1); id <= 3; id++ {
			if err := s.replicas[id].Apply(st); err != nil {
				fmt.Fprintf(&s.out, "broker %d: %v\n", id, err)
			}
		}
	case "produce":
		p := s.replica(t, d)
		b := idem(t, tracetest.Int(t, d, "pid"), int32(tracetest.Int(t, d, "seq")), int(tracetest.IntOr(t, d, "n", 1)))
		var scratch []byte
		if _, err := p.Append(b, partition.AcksLeader, &scratch); err != nil {
			fmt.Fprintf(&s.out, "append: %v\n", err)
		}
		s.log(p)
	case "delete-records":
		p := s.replica(t, d)
		if _, err := p.DeleteRecords(tracetest.Int(t, d, "offset")); err != nil {
			fmt.Fprintf(&s.out, "delete records: %v\n", err)
		}
		s.log(p)
	case "fetch":
		p := s.replica(t, d)
		pos, ok := p.FetchPosition()
		if !ok {
			return "not following\n"
		}
		fmt.Fprintf(&s.out, "position %s\n", positionString(pos))
		a := s.answer(t, int32(tracetest.Int(t, d, "broker")), pos)
		fmt.Fprintf(&s.out, "answer %s\n", answerString(a))
		s.applied(p, Apply(p, pos, a, func() (int64, error) { return s.leaderEnd(pos) }))
	case "apply":
		p := s.replica(t, d)
		pos, ok := p.FetchPosition()
		if !ok {
			return "not following\n"
		}
		a := Answer{DivergingEpoch: -1, DivergingEndOffset: -1, HighWatermark: tracetest.IntOr(t, d, "hw", -1),
			LogStartOffset: tracetest.IntOr(t, d, "log-start", -1)}
		if d.HasArg("err") {
			a.Err = tracetest.ErrorNamed(t, d, tracetest.Arg(d, "err"))
		}
		if v := tracetest.Arg(d, "diverging"); v != "" {
			e, end, _ := strings.Cut(v, ":")
			epoch, err1 := strconv.Atoi(e)
			off, err2 := strconv.ParseInt(end, 10, 64)
			if err1 != nil || err2 != nil {
				d.Fatalf(t, "diverging=%s is not epoch:end", v)
			}
			a.DivergingEpoch, a.DivergingEndOffset = int32(epoch), off
		}
		leaderEnd := func() (int64, error) { return 0, errors.New("no leader end given") }
		if d.HasArg("leader-end") {
			end := tracetest.Int(t, d, "leader-end")
			leaderEnd = func() (int64, error) { return end, nil }
		}
		fmt.Fprintf(&s.out, "position %s\n", positionString(pos))
		fmt.Fprintf(&s.out, "answer %s\n", answerString(a))
		s.applied(p, Apply(p, pos, a, leaderEnd))
	case "log":
		s.log(s.replica(t, d))
	default:
		d.Fatalf(t, "unknown directive %s", d.Cmd)
	}
	if s.out.Len() == 0 {
		return "ok\n"
	}
	return s.out.String()
}

func (s *script) applied(p *partition.Partition, err error) {
	if err != nil {
		fmt.Fprintf(&s.out, "apply: %s\n", errString(err))
	}
	s.log(p)
}

// answer is the leader's answer to a fetch from pos, as kafka/01_fetch.go
// gives it.
func (s *script) answer(t *testing.T, self int32, pos partition.FetchPosition) Answer {
	res, err := s.replicas[pos.Leader].ReadForFollower(partition.FollowerFetch{ReplicaID: self, BrokerEpoch: -1,
		FetchOffset: pos.FetchOffset, LogStartOffset: pos.LogStartOffset, LastFetchedEpoch: pos.LastFetchedEpoch,
		CurrentLeaderEpoch: pos.LeaderEpoch, MaxBytes: 1 << 20, MinOne: true})
	a := Answer{DivergingEpoch: res.DivergingEpoch, DivergingEndOffset: res.DivergingEndOffset,
		HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset}
	if err != nil {
		a.Err = err
		if errors.Is(err, log.ErrOffsetOutOfRange) {
			a.Err = kerr.OffsetOutOfRange
		}
		return a
	}
	if res.Slice.Size > 0 {
		a.Records = make([]byte, res.Slice.Size)
		if _, err := res.Slice.File.ReadAt(a.Records, res.Slice.Pos); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	}
	return a
}

func (s *script) leaderEnd(pos partition.FetchPosition) (int64, error) {
	end, _, err := s.replicas[pos.Leader].LogEndForReplica(pos.LeaderEpoch)
	return end, err
}

func positionString(pos partition.FetchPosition) string {
	return fmt.Sprintf("offset %d, last fetched epoch %d, log start %d (leader %d epoch %d)", pos.FetchOffset,
		pos.LastFetchedEpoch, pos.LogStartOffset, pos.Leader, pos.LeaderEpoch)
}

// errString is a Kafka error's name, or the error.
func errString(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func answerString(a Answer) string {
	var b strings.Builder
	if a.Err != nil {
		fmt.Fprintf(&b, "error %s, ", errString(a.Err))
	}
	if a.DivergingEndOffset >= 0 {
		fmt.Fprintf(&b, "diverging at epoch %d end %d, ", a.DivergingEpoch, a.DivergingEndOffset)
	}
	fmt.Fprintf(&b, "high watermark %d, log start %d", a.HighWatermark, a.LogStartOffset)
	if len(a.Records) > 0 {
		fmt.Fprintf(&b, ", batches %s", batchesString(a.Records))
	}
	return b.String()
}

// batchesString renders batches as [first-last epoch E producer P seq S].
func batchesString(buf []byte) string {
	var out []string
	for len(buf) > 0 {
		b, rest, err := record.Next(buf)
		if err != nil {
			out = append(out, "bad batch: "+err.Error())
			break
		}
		buf = rest
		out = append(out, fmt.Sprintf("[%d-%d epoch %d producer %d seq %d]", b.BaseOffset(), b.LastOffset(), b.LeaderEpoch(),
			b.ProducerID(), b.BaseSequence()))
	}
	return strings.Join(out, " ")
}

// log renders a replica's log.
func (s *script) log(p *partition.Partition) {
	l := p.Log()
	var self int32
	for id, q := range s.replicas {
		if q == p {
			self = id
		}
	}
	fmt.Fprintf(&s.out, "broker %d: log [%d, %d) high watermark %d, epochs", self, l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	for _, e := range l.Epochs() {
		fmt.Fprintf(&s.out, " %d@%d", e.Epoch, e.StartOffset)
	}
	s.out.WriteString("\n")
	var all []byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		sl, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil || sl.Size == 0 {
			fmt.Fprintf(&s.out, "  read at %d: %v\n", off, err)
			break
		}
		buf := make([]byte, sl.Size)
		if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil && err != io.EOF {
			fmt.Fprintf(&s.out, "  read at %d: %v\n", off, err)
			break
		}
		all = append(all, buf...)
		b, _, _ := record.Next(buf[len(buf)-lastBatchSize(buf):])
		off = b.NextOffset()
	}
	if len(all) > 0 {
		fmt.Fprintf(&s.out, "  batches %s\n", batchesString(all))
	}
	var producers []string
	for _, pi := range l.ActiveProducers() {
		producers = append(producers, fmt.Sprintf("%d@seq %d", pi.ProducerID, pi.LastSequence))
	}
	if producers != nil {
		fmt.Fprintf(&s.out, "  producers %s\n", strings.Join(producers, ", "))
	}
}

// lastBatchSize is the size of the last whole batch of buf.
func lastBatchSize(buf []byte) int {
	last := 0
	for len(buf) > 0 {
		b, rest, err := record.Next(buf)
		if err != nil {
			break
		}
		last, buf = b.Size(), rest
	}
	return last
}
