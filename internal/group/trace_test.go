package group

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
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
// order: responses (#token Api {fields}), writes (with their records
// decoded), group state changes, and the state of the groups when asked.
// Time moves only by "advance". Run with -rewrite to regenerate the
// outputs. The directives:
//
//	init [initial-delay=D] [retention=D]      a coordinator leading every partition
//	                                          (implicit, with defaults, if left out)
//	topics t=N ...                            SetTopics: names and partition counts
//	join group= [client=] [member=] [instance=] [session=D] [rebalance=D]
//	     [protocols=(a,b)] [topics=(t,u)] [version=N]
//	sync group= member= gen= [instance=] [assign=(member=bytes,...)]
//	heartbeat group= member= gen= [instance=]
//	leave group= member=  |  leave group= members=(id or instance,...)
//	commit group= [member= gen=] offsets=(topic:partition=offset,...)
//	txn-commit group= producer= [epoch=] [member= gen=] offsets=(...)
//	marker group= producer= commit|abort      a marker in the group's partition
//	fetch group= [topics=(t,...)] [stable]    OffsetFetch of partitions 0-2
//	offset-delete group= topic= partitions=(0,...)
//	describe groups=(...)  |  list  |  delete groups=(...)
//	cg-heartbeat group= [member=] epoch= [instance=] [topics=(...)] [owned=(topic:0 1,...)]
//	             [assignor=] [rebalance=D]
//	cg-describe groups=(...)
//	advance D                                 move the clock, firing timers as they fall due
//	hold | release                            keep writes pending | persist them all
//	fail [code=NAME]                          fail the pending writes (NOT_LEADER_FOR_PARTITION)
//	unload partition=  |  reload partition=   lose leadership | load the partition's log again
//	state [group=]                            the groups, their members and offsets
func TestTraces(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &script{t: t}
		datadriven.RunTest(t, path, s.run)
	})
}

type script struct {
	t        *testing.T
	c        *Coordinator
	cfg      Config
	now      time.Time
	tok      uint64
	deadline time.Time
	hold     bool
	pending  []Write
	log      map[int32][]LogRecord
	// states are the classic groups' states as ListGroups last showed
	// them; flush prints what changed.
	states map[string]string
	out    strings.Builder
}

func (s *script) init(d *datadriven.TestData) {
	s.cfg = cgConfig()
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "initial-delay":
			s.cfg.InitialRebalanceDelay = tracetest.DurationOr(s.t, d, a.Key, 0)
		case "retention":
			s.cfg.OffsetsRetention = tracetest.DurationOr(s.t, d, a.Key, 0)
		default:
			d.Fatalf(s.t, "unknown argument %s", a.Key)
		}
	}
	s.c, s.now, s.log = New(s.cfg), t0, map[int32][]LogRecord{}
	s.states = map[string]string{}
	for p := range s.cfg.OffsetsTopicPartitions {
		rd, err := s.c.LoadPartition(s.now, p, nil)
		if err != nil {
			s.t.Fatal(err)
		}
		s.apply(rd)
	}
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	s.out.Reset()
	if d.Cmd == "init" {
		s.init(d)
		return s.flush()
	}
	if s.c == nil {
		s.init(&datadriven.TestData{})
	}
	switch d.Cmd {
	case "topics":
		topics := map[string]TopicInfo{}
		for _, a := range d.CmdArgs {
			n, _ := strconv.Atoi(a.Vals[0])
			topics[a.Key] = TopicInfo{ID: topicID(a.Key), Partitions: int32(n)}
		}
		s.apply(s.c.SetTopics(s.now, topics))
	case "advance":
		end := s.now.Add(advanceBy(t, d))
		ticked := time.Time{}
		for !s.deadline.IsZero() && !s.deadline.After(end) {
			s.now = maxTime(s.now, s.deadline)
			if !s.now.Equal(ticked) {
				fmt.Fprintf(&s.out, "tick at +%v\n", s.now.Sub(t0))
				ticked = s.now
			}
			s.apply(s.c.Tick(s.now))
		}
		s.now = end
	case "hold":
		s.hold = true
	case "release":
		s.hold = false
		s.persistPending()
	case "fail":
		code := kerr.NotLeaderForPartition
		if d.HasArg("code") {
			code = tracetest.ErrorNamed(t, d, tracetest.Arg(d, "code"))
		}
		ws := s.pending
		s.pending = nil
		for _, w := range ws {
			fmt.Fprintf(&s.out, "write %d failed: %s\n", w.ID, code.Message)
			s.apply(s.c.Persisted(s.now, w.ID, -1, code))
		}
	case "unload":
		s.apply(s.c.UnloadPartition(s.now, int32(tracetest.Int(t, d, "partition"))))
	case "reload":
		p := int32(tracetest.Int(t, d, "partition"))
		s.apply(s.c.BeginLoad(s.now, p))
		rd, skipped := s.c.LoadPartition(s.now, p, s.log[p])
		for _, err := range skipped {
			fmt.Fprintf(&s.out, "skipped: %v\n", err)
		}
		s.apply(rd)
	case "marker":
		g := tracetest.Arg(d, "group")
		p := s.c.PartitionFor(g)
		pid := int64(tracetest.Int(t, d, "producer"))
		commit := d.HasArg("commit")
		off := int64(len(s.log[p]))
		s.log[p] = append(s.log[p], LogRecord{Offset: off, Control: true, Transactional: true, ProducerID: pid,
			Record: Record{Key: controlKey(commit)}})
		s.apply(s.c.TxnMarker(s.now, p, pid, commit, off))
	case "state":
		s.state(d)
	default:
		s.send(d, s.request(t, d))
	}
	return s.flush()
}

func (s *script) flush() string {
	s.printStates()
	if s.out.Len() == 0 {
		return "ok\n"
	}
	return s.out.String()
}

// printStates prints the classic groups whose state ListGroups shows
// changed since the last call: a group not listed before counts as Empty,
// one no longer listed as Dead.
func (s *script) printStates() {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	req.TypesFilter = []string{"classic"}
	rd := s.c.Handle(s.now, Request{Token: math.MaxUint64, Body: req})
	now := map[string]string{}
	for _, r := range rd.Responses {
		for _, g := range r.Body.(*kmsg.ListGroupsResponse).Groups {
			now[g.Group] = g.GroupState
		}
	}
	for _, id := range slices.Sorted(maps.Keys(now)) {
		was, ok := s.states[id]
		if !ok {
			was = "Empty"
		}
		if was != now[id] {
			fmt.Fprintf(&s.out, "%s: %s -> %s\n", id, was, now[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.states)) {
		if _, ok := now[id]; !ok {
			fmt.Fprintf(&s.out, "%s: %s -> Dead\n", id, s.states[id])
		}
	}
	s.states = now
}

func (s *script) send(d *datadriven.TestData, body kmsg.Request) {
	s.tok++
	req := Request{Token: s.tok, ClientID: "c", ClientHost: "/127.0.0.1", Body: body}
	if d.HasArg("client") {
		req.ClientID = tracetest.Arg(d, "client")
	}
	s.apply(s.c.Handle(s.now, req))
}

// apply renders one Ready and persists its writes unless held.
func (s *script) apply(rd Ready) {
	for _, r := range rd.Responses {
		name := strings.TrimSuffix(strings.TrimPrefix(reflect.TypeOf(r.Body).String(), "*kmsg."), "Response")
		body := readable(r.Body)
		if str, ok := body.(string); ok {
			fmt.Fprintf(&s.out, "#%d %s %s\n", r.Token, name, str)
		} else {
			fmt.Fprintf(&s.out, "#%d %s %s\n", r.Token, name, tracetest.Format(body))
		}
	}
	s.deadline = rd.Deadline
	for _, w := range rd.Writes {
		fmt.Fprintf(&s.out, "write %d to partition %d", w.ID, w.Partition)
		if w.Transactional {
			fmt.Fprintf(&s.out, " (transactional, producer %d epoch %d)", w.ProducerID, w.ProducerEpoch)
		}
		s.out.WriteString("\n")
		for _, r := range w.Records {
			fmt.Fprintf(&s.out, "  %s\n", recordString(r))
		}
		s.pending = append(s.pending, w)
	}
	if !s.hold {
		s.persistPending()
	}
}

func (s *script) persistPending() {
	for len(s.pending) > 0 {
		w := s.pending[0]
		s.pending = s.pending[1:]
		base := int64(len(s.log[w.Partition]))
		for i, r := range w.Records {
			s.log[w.Partition] = append(s.log[w.Partition], LogRecord{Record: r, Offset: base + int64(i),
				Transactional: w.Transactional, ProducerID: w.ProducerID})
		}
		s.apply(s.c.Persisted(s.now, w.ID, base, nil))
	}
}

// readable replaces the subscription bytes of a JoinGroup response by the
// topics they subscribe to, and shows an OffsetFetch response as
// topic:partition=offset.
func readable(body kmsg.Response) any {
	if r, ok := body.(*kmsg.OffsetFetchResponse); ok {
		var parts []string
		if r.ErrorCode != 0 {
			parts = append(parts, tracetest.Code(r.ErrorCode))
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				s := fmt.Sprintf("%s:%d=%d", t.Topic, p.Partition, p.Offset)
				if p.ErrorCode != 0 {
					s += " " + tracetest.Code(p.ErrorCode)
				}
				parts = append(parts, s)
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	r, ok := body.(*kmsg.JoinGroupResponse)
	if !ok {
		return body
	}
	c := *r
	c.Members = slices.Clone(r.Members)
	for i, m := range c.Members {
		if topics, ok := subscriptionTopics(m.ProtocolMetadata); ok {
			c.Members[i].ProtocolMetadata = []byte("topics " + strings.Join(topics, ","))
		}
	}
	return &c
}

// request builds the request a directive names.
func (s *script) request(t *testing.T, d *datadriven.TestData) kmsg.Request {
	g := tracetest.Arg(d, "group")
	switch d.Cmd {
	case "join":
		r := kmsg.NewPtrJoinGroupRequest()
		r.Version = int16(tracetest.IntOr(t, d, "version", 7))
		r.Group, r.MemberID, r.InstanceID = g, tracetest.Arg(d, "member"), tracetest.OptArg(d, "instance")
		r.SessionTimeoutMillis = int32(tracetest.DurationOr(t, d, "session", 10*time.Second).Milliseconds())
		r.RebalanceTimeoutMillis = int32(tracetest.DurationOr(t, d, "rebalance", 20*time.Second).Milliseconds())
		r.ProtocolType = consumerProtocolType
		topics := []string{"t"}
		if a, ok := d.Arg("topics"); ok {
			topics = a.Vals
		}
		protocols := []string{"range"}
		if a, ok := d.Arg("protocols"); ok {
			protocols = a.Vals
		}
		for _, p := range protocols {
			r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: subscription(topics...)})
		}
		return r
	case "sync":
		r := kmsg.NewPtrSyncGroupRequest()
		r.Version = 5
		r.Group, r.MemberID, r.Generation, r.InstanceID = g, tracetest.Arg(d, "member"), int32(tracetest.Int(t, d, "gen")), tracetest.OptArg(d, "instance")
		r.ProtocolType, r.Protocol = tracetest.OptArg(d, "protocol-type"), tracetest.OptArg(d, "protocol")
		if a, ok := d.Arg("assign"); ok {
			for _, v := range a.Vals {
				id, bytes, _ := strings.Cut(v, "=")
				r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(bytes)})
			}
		}
		return r
	case "heartbeat":
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version = 4
		r.Group, r.MemberID, r.Generation, r.InstanceID = g, tracetest.Arg(d, "member"), int32(tracetest.Int(t, d, "gen")), tracetest.OptArg(d, "instance")
		return r
	case "leave":
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group = g
		if a, ok := d.Arg("members"); ok {
			r.Version = 5
			for _, id := range a.Vals {
				m := kmsg.NewLeaveGroupRequestMember()
				if strings.HasPrefix(id, "instance:") {
					m.InstanceID = kmsg.StringPtr(strings.TrimPrefix(id, "instance:"))
				} else {
					m.MemberID = id
				}
				r.Members = append(r.Members, m)
			}
		} else {
			r.Version = 2
			r.MemberID = tracetest.Arg(d, "member")
		}
		return r
	case "commit":
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = 8
		r.Group, r.MemberID, r.Generation = g, tracetest.Arg(d, "member"), int32(tracetest.IntOr(t, d, "gen", -1))
		for _, o := range offsetsArg(t, d) {
			if n := len(r.Topics); n == 0 || r.Topics[n-1].Topic != o.topic {
				r.Topics = append(r.Topics, kmsg.OffsetCommitRequestTopic{Topic: o.topic})
			}
			rt := &r.Topics[len(r.Topics)-1]
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = o.partition, o.offset
			rt.Partitions = append(rt.Partitions, rp)
		}
		return r
	case "txn-commit":
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.Version = 3
		r.TransactionalID, r.Group = "tx", g
		r.ProducerID, r.ProducerEpoch = int64(tracetest.Int(t, d, "producer")), int16(tracetest.IntOr(t, d, "epoch", 0))
		r.MemberID, r.Generation = tracetest.Arg(d, "member"), int32(tracetest.IntOr(t, d, "gen", -1))
		for _, o := range offsetsArg(t, d) {
			if n := len(r.Topics); n == 0 || r.Topics[n-1].Topic != o.topic {
				r.Topics = append(r.Topics, kmsg.TxnOffsetCommitRequestTopic{Topic: o.topic})
			}
			rt := &r.Topics[len(r.Topics)-1]
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = o.partition, o.offset
			rt.Partitions = append(rt.Partitions, rp)
		}
		return r
	case "fetch":
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 7
		r.Group, r.RequireStable = g, d.HasArg("stable")
		if a, ok := d.Arg("topics"); ok {
			for _, topic := range a.Vals {
				r.Topics = append(r.Topics, kmsg.OffsetFetchRequestTopic{Topic: topic, Partitions: []int32{0, 1, 2}})
			}
		}
		return r
	case "offset-delete":
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = g
		rt := kmsg.OffsetDeleteRequestTopic{Topic: tracetest.Arg(d, "topic")}
		a, _ := d.Arg("partitions")
		for _, v := range a.Vals {
			p, _ := strconv.Atoi(v)
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: int32(p)})
		}
		r.Topics = append(r.Topics, rt)
		return r
	case "describe":
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version = 5
		a, _ := d.Arg("groups")
		r.Groups = a.Vals
		return r
	case "list":
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = 5
		return r
	case "delete":
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version = 2
		a, _ := d.Arg("groups")
		r.Groups = a.Vals
		return r
	case "cg-heartbeat":
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version = 1
		r.Group, r.MemberID, r.MemberEpoch = g, tracetest.Arg(d, "member"), int32(tracetest.Int(t, d, "epoch"))
		r.InstanceID, r.ServerAssignor = tracetest.OptArg(d, "instance"), tracetest.OptArg(d, "assignor")
		if a, ok := d.Arg("topics"); ok {
			r.SubscribedTopicNames = a.Vals
		}
		if d.HasArg("rebalance") {
			r.RebalanceTimeoutMillis = int32(tracetest.DurationOr(t, d, "rebalance", 0).Milliseconds())
		} else if r.MemberEpoch == 0 {
			r.RebalanceTimeoutMillis = 10_000
		}
		if r.MemberEpoch == 0 {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		if a, ok := d.Arg("owned"); ok {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			for _, v := range a.Vals {
				if v == "" {
					continue
				}
				topic, ps, _ := strings.Cut(v, ":")
				rt := kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: topicID(topic), Partitions: []int32{}}
				for _, f := range strings.Fields(ps) {
					p, _ := strconv.Atoi(f)
					rt.Partitions = append(rt.Partitions, int32(p))
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return r
	case "cg-describe":
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		a, _ := d.Arg("groups")
		r.Groups = a.Vals
		return r
	}
	d.Fatalf(t, "unknown directive %s", d.Cmd)
	return nil
}

// state renders the groups (or one), with their members and offsets.
func (s *script) state(d *datadriven.TestData) {
	for _, g := range s.c.groups.sortedGroups(nil) {
		if d.HasArg("group") && g.id != tracetest.Arg(d, "group") {
			continue
		}
		if cg := g.consumer; cg != nil {
			fmt.Fprintf(&s.out, "%s: consumer group, %s, epoch %d, assignment epoch %d\n", g.id, cg.state(), cg.epoch, cg.assignmentEpoch)
			for _, id := range sortedIDs(cg.members) {
				m := cg.members[id]
				fmt.Fprintf(&s.out, "  member %s: epoch %d, %s, topics %v, assigned %s", id, m.epoch, memberStateNames[m.state], m.topics,
					tracetest.Format(m.assigned))
				if len(m.pending) > 0 {
					fmt.Fprintf(&s.out, ", revoking %s", tracetest.Format(m.pending))
				}
				fmt.Fprintf(&s.out, ", target %s\n", tracetest.Format(cg.target[id]))
			}
		} else {
			fmt.Fprintf(&s.out, "%s: %v, generation %d", g.id, g.state, g.generation)
			if g.protocol != "" {
				fmt.Fprintf(&s.out, ", protocol %s, leader %s", g.protocol, g.leader)
			}
			s.out.WriteString("\n")
			for _, m := range g.members {
				fmt.Fprintf(&s.out, "  member %s", m.id)
				if m.instanceID != nil {
					fmt.Fprintf(&s.out, " (instance %s)", *m.instanceID)
				}
				fmt.Fprintf(&s.out, ": assignment %q\n", m.assignment)
			}
		}
		offs := s.c.offsets.byGroup[g.id]
		for _, tp := range offs.sorted() {
			fmt.Fprintf(&s.out, "  offset %s:%d = %d\n", tp.topic, tp.partition, offs.committed[tp].offset)
		}
		var txn map[int64]map[topicPartition]*txnOffset
		if offs != nil {
			txn = offs.txn
		}
		for _, pid := range sortedPIDs(txn) {
			for _, tp := range sortTopicPartitions(txn[pid]) {
				if o := txn[pid][tp].durable; o != nil {
					fmt.Fprintf(&s.out, "  pending offset %s:%d = %d (producer %d)\n", tp.topic, tp.partition, o.offset, pid)
				}
			}
		}
	}
}

func sortedPIDs[V any](m map[int64]V) []int64 {
	var ids []int64
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// recordString decodes a __consumer_offsets record for the trace.
func recordString(r Record) string {
	version := int16(r.Key[0])<<8 | int16(r.Key[1])
	switch {
	case version <= 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return "bad offset key: " + err.Error()
		}
		head := fmt.Sprintf("offset %s %s:%d", k.Group, k.Topic, k.Partition)
		if r.Value == nil {
			return head + " tombstone"
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			return head + " bad value: " + err.Error()
		}
		return fmt.Sprintf("%s = %d", head, v.Offset)
	case version == groupMetadataKeyVersion:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return "bad group key: " + err.Error()
		}
		if r.Value == nil {
			return "group " + k.Group + " tombstone"
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			return "group " + k.Group + " bad value: " + err.Error()
		}
		var members []string
		for _, m := range v.Members {
			members = append(members, fmt.Sprintf("%s=%q", m.MemberID, m.Assignment))
		}
		return fmt.Sprintf("group %s generation %d protocol %q leader %q members [%s]", k.Group, v.Generation,
			deref(v.Protocol), deref(v.Leader), strings.Join(members, " "))
	case isConsumerGroupKey(version):
		rec, err := decodeCGRecord(r)
		if err != nil {
			return "bad consumer group record: " + err.Error()
		}
		head := fmt.Sprintf("%s %s", cgRecordNames[rec.kind], rec.group)
		if rec.member != "" {
			head += " " + rec.member
		}
		if rec.value == nil {
			return head + " tombstone"
		}
		return head + " " + tracetest.Format(rec.value)
	}
	return fmt.Sprintf("record with key version %d", version)
}

var memberStateNames = map[int8]string{memberStable: "Stable", memberUnrevoked: "UnrevokedPartitions",
	memberUnreleased: "UnreleasedPartitions"}

var cgRecordNames = map[int16]string{
	cgMetadataKey: "group-epoch", cgPartitionMetadataKey: "subscription-metadata", cgMemberMetadataKey: "member",
	cgTargetMetadataKey: "target-epoch", cgTargetMemberKey: "target", cgCurrentMemberKey: "current", cgRegexKey: "regex",
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// controlKey is the key of a COMMIT or ABORT control record.
func controlKey(commit bool) []byte {
	if commit {
		return []byte{0, 0, 0, 1}
	}
	return []byte{0, 0, 0, 0}
}

type offsetArg struct {
	topic     string
	partition int32
	offset    int64
}

// offsetsArg parses offsets=(topic:partition=offset,...).
func offsetsArg(t *testing.T, d *datadriven.TestData) []offsetArg {
	a, _ := d.Arg("offsets")
	var out []offsetArg
	for _, v := range a.Vals {
		tp, o, ok1 := strings.Cut(v, "=")
		topic, p, ok2 := strings.Cut(tp, ":")
		pn, err1 := strconv.Atoi(p)
		on, err2 := strconv.ParseInt(o, 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			d.Fatalf(t, "offsets: %q is not topic:partition=offset", v)
		}
		out = append(out, offsetArg{topic, int32(pn), on})
	}
	return out
}

// advanceBy is the duration of "advance D".
func advanceBy(t *testing.T, d *datadriven.TestData) time.Duration {
	if len(d.CmdArgs) != 1 {
		d.Fatalf(t, "advance takes one duration")
	}
	v, err := time.ParseDuration(d.CmdArgs[0].Key)
	if err != nil {
		d.Fatalf(t, "advance: %v", err)
	}
	return v
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
