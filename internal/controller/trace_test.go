package controller

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/tracetest"
)

// TestElectionTraces runs the scripted traces of leader elections in
// testdata/elections/: a controller on an in-memory quorum with brokers
// 1-N, where each directive is an event or a request, and its output the
// records it committed (topics shown by name) and, when asked, the
// partitions. Run with -rewrite to regenerate the outputs. The directives:
//
//	cluster brokers=N [unclean]          registered, unfenced brokers (first directive);
//	                                     unclean sets unclean.leader.election.enable
//	create topic= assignment=(1 2 3,...) a topic with these replicas per partition
//	isr topic= partition= isr=(...)      the leader shrinks or expands the ISR (AlterPartition)
//	fence broker=  |  shutdown broker=   fenced, or controlled shutdown begun (heartbeats)
//	restart broker= [unclean]            registers again (after an unclean shutdown:
//	                                     previous epoch -1) and is unfenced
//	config topic= key=value              set a topic config (AlterConfigs)
//	feature name= level=                 UpdateFeatures (an upgrade)
//	elect preferred|unclean [topic= partitions=(...)]
//	                                     ElectLeaders; every partition without topic
//	partitions [topic=]                  leader, epochs, ISR and ELR of each partition
func TestElectionTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/elections", func(t *testing.T, path string) {
		s := &electionScript{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string { return s.run(t, d) })
	})
}

type electionScript struct {
	h   *harness
	out strings.Builder
}

func (s *electionScript) run(t *testing.T, d *datadriven.TestData) string {
	s.out.Reset()
	if d.Cmd == "cluster" {
		props := map[string]string{}
		if d.HasArg("unclean") {
			props["unclean.leader.election.enable"] = "true"
		}
		s.h = newCluster(t, int(tracetest.Int(t, d, "brokers")), props)
		return "ok\n"
	}
	if s.h == nil {
		d.Fatalf(t, "the first directive must be cluster")
	}
	h := s.h
	from := len(h.q.batches)
	switch d.Cmd {
	case "create":
		var assignment [][]int32
		for _, v := range tracetest.Args(d, "assignment") {
			assignment = append(assignment, brokerList(t, d, strings.Fields(v)))
		}
		_, errs, _ := h.create(false, manualReq(tracetest.Arg(d, "topic"), assignment...))
		if errs[0] != nil {
			fmt.Fprintf(&s.out, "error: %v\n", errs[0])
		}
	case "isr":
		topic, id := tracetest.Arg(d, "topic"), int32(tracetest.Int(t, d, "partition"))
		res := h.alterOne(h.part(topic, id).Leader, topic, h.isrEntry(topic, id, brokerList(t, d, tracetest.Args(d, "isr"))...))
		if res.ErrorCode != 0 {
			fmt.Fprintf(&s.out, "AlterPartition: %s\n", tracetest.Code(res.ErrorCode))
		}
	case "fence":
		h.fence(int32(tracetest.Int(t, d, "broker")))
	case "shutdown":
		id := int32(tracetest.Int(t, d, "broker"))
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset, hb.WantShutdown = id, h.epochs[id], math.MaxInt64, true
		resp, err := h.c.BrokerHeartbeat(hb, at(testNow))
		if err != nil {
			d.Fatalf(t, "heartbeat: %v", err)
		}
		fmt.Fprintf(&s.out, "heartbeat: should shut down %v\n", resp.ShouldShutdown)
	case "restart":
		id := int32(tracetest.Int(t, d, "broker"))
		prev := h.epochs[id]
		if d.HasArg("unclean") {
			prev = -1
		}
		h.reregister(id, prev)
	case "config":
		for _, a := range d.CmdArgs {
			if a.Key != "topic" {
				h.setTopicConfig(tracetest.Arg(d, "topic"), a.Key, a.Vals[0])
			}
		}
	case "feature":
		if err := h.updateFeature(tracetest.Arg(d, "name"), int16(tracetest.Int(t, d, "level")), upgrade); err != nil {
			fmt.Fprintf(&s.out, "UpdateFeatures: %v\n", err)
		}
	case "elect":
		typ := preferredElection
		if d.HasArg("unclean") {
			typ = uncleanElection
		}
		var partitions []int32
		for _, v := range tracetest.Args(d, "partitions") {
			n, _ := strconv.Atoi(v)
			partitions = append(partitions, int32(n))
		}
		res, err := h.c.ElectLeaders(electReq(typ, tracetest.Arg(d, "topic"), partitions...))
		if err != nil {
			d.Fatalf(t, "ElectLeaders: %v", err)
		}
		for _, tr := range res.Topics {
			for _, pr := range tr.Partitions {
				outcome := "OK"
				var te *TopicError
				if errors.As(pr.Err, &te) {
					outcome = te.Code.Message + ": " + te.Error()
				} else if pr.Err != nil {
					outcome = pr.Err.Error()
				}
				fmt.Fprintf(&s.out, "elect %s-%d: %s\n", tr.Topic, pr.Partition, outcome)
			}
		}
	case "partitions":
		img := h.c.Image()
		names := sortedTopicNames(img)
		for _, name := range names {
			if d.HasArg("topic") && name != tracetest.Arg(d, "topic") {
				continue
			}
			topic := img.Topics.Get(name)
			ids := slices.Sorted(func(yield func(int32) bool) {
				for id := range topic.Partitions {
					if !yield(id) {
						return
					}
				}
			})
			for _, id := range ids {
				p := topic.Partitions[id]
				fmt.Fprintf(&s.out, "%s-%d: leader %d (epoch %d, partition epoch %d), replicas %v, isr %v", name, id, p.Leader,
					p.LeaderEpoch, p.PartitionEpoch, p.Replicas, p.ISR)
				if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
					fmt.Fprintf(&s.out, ", elr %v, last known elr %v", p.ELR, p.LastKnownELR)
				}
				if p.LeaderRecoveryState == 1 {
					s.out.WriteString(", recovering")
				}
				s.out.WriteString("\n")
			}
		}
	default:
		d.Fatalf(t, "unknown directive %s", d.Cmd)
	}
	for _, r := range h.q.recordsSince(from) {
		s.out.WriteString(recordString(h.c.Image(), r) + "\n")
	}
	if s.out.Len() == 0 {
		return "ok\n"
	}
	return s.out.String()
}

func brokerList(t *testing.T, d *datadriven.TestData, vals []string) []int32 {
	var out []int32
	for _, v := range vals {
		n, err := strconv.Atoi(v)
		if err != nil {
			d.Fatalf(t, "broker id %q: %v", v, err)
		}
		out = append(out, int32(n))
	}
	return out
}

// recordString renders a committed record; topics by name, partition
// changes by what they change.
func recordString(img *metadata.Image, r metadata.Record) string {
	name := strings.TrimPrefix(reflect.TypeOf(r).String(), "*metadata.")
	switch r := r.(type) {
	case *metadata.PartitionChangeRecord:
		var b strings.Builder
		topic := "?"
		if t := img.TopicsByID.Get(r.TopicId); t != nil {
			topic = t.Name
		}
		fmt.Fprintf(&b, "PartitionChange %s-%d:", topic, r.PartitionId)
		if r.Leader != -2 {
			fmt.Fprintf(&b, " leader %d", r.Leader)
		}
		if r.Isr != nil {
			fmt.Fprintf(&b, " isr %v", r.Isr)
		}
		if r.EligibleLeaderReplicas != nil {
			fmt.Fprintf(&b, " elr %v", r.EligibleLeaderReplicas)
		}
		if r.LastKnownElr != nil {
			fmt.Fprintf(&b, " last known elr %v", r.LastKnownElr)
		}
		if r.Replicas != nil {
			fmt.Fprintf(&b, " replicas %v", r.Replicas)
		}
		if r.LeaderRecoveryState != -1 {
			fmt.Fprintf(&b, " recovery state %d", r.LeaderRecoveryState)
		}
		return b.String()
	case *metadata.TopicRecord:
		return "Topic " + r.Name
	case *metadata.PartitionRecord:
		topic := "?"
		if t := img.TopicsByID.Get(r.TopicId); t != nil {
			topic = t.Name
		}
		return fmt.Sprintf("Partition %s-%d: leader %d, replicas %v, isr %v", topic, r.PartitionId, r.Leader, r.Replicas, r.Isr)
	case *metadata.RegisterBrokerRecord:
		return fmt.Sprintf("RegisterBroker %d epoch %d", r.BrokerId, r.BrokerEpoch)
	case *metadata.BrokerRegistrationChangeRecord:
		return fmt.Sprintf("BrokerRegistrationChange %d: fenced %d, in controlled shutdown %d", r.BrokerId, r.Fenced, r.InControlledShutdown)
	}
	return strings.TrimSuffix(name, "Record") + " " + tracetest.Format(r)
}
