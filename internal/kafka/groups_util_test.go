package kafka_test

// Shared helpers of the consumer group tests (groups_*_test.go): a node
// with the initial rebalance delay off, a producer that remembers what it
// wrote at which offset, a ledger of what a group consumed that checks
// "every record exactly once, in order per partition", and kgo group
// members that consume on their own goroutine.

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/servertest"
)

// grpNode starts a node whose groups rebalance without the initial delay.
func grpNode(t *testing.T, overrides map[string]string) *servertest.Node {
	t.Helper()
	o := map[string]string{"group.initial.rebalance.delay.ms": "0"}
	for k, v := range overrides {
		o[k] = v
	}
	return servertest.Start(t, servertest.Options{Overrides: o})
}

// grpFixedPortOverrides makes a node listen (and advertise) on one port
// that stays the same across Restart, so that running clients find the
// node again.
func grpFixedPortOverrides(t *testing.T) map[string]string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return map[string]string{
		"listeners":            "PLAINTEXT://" + addr + ",CONTROLLER://127.0.0.1:0",
		"advertised.listeners": "PLAINTEXT://" + addr,
	}
}

// grpWait polls cond until it holds or ctx ends, then fails the test
// naming what it waited for (and the last state described by cond).
func grpWait(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("deadline waiting for %s; last: %s", what, state)
		case <-tick.C:
		}
	}
}

// grpTopics is what was produced: topic -> partition -> value at each
// offset (offsets start at 0).
type grpTopics map[string]map[int32][]string

func (g grpTopics) total() int {
	n := 0
	for _, ps := range g {
		for _, vs := range ps {
			n += len(vs)
		}
	}
	return n
}

// grpProduce writes perPartition records to each of partitions partitions
// of topic and records them in into. Values name the topic, partition,
// tag and sequence number.
func grpProduce(t *testing.T, ctx context.Context, cl *kgo.Client, into grpTopics, topic string, partitions int32, perPartition int, tag string) {
	t.Helper()
	var recs []*kgo.Record
	for i := 0; i < perPartition; i++ {
		for p := int32(0); p < partitions; p++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s/%d/%s/%d", topic, p, tag, i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
	if into[topic] == nil {
		into[topic] = map[int32][]string{}
	}
	byPart := map[int32][]*kgo.Record{}
	for _, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for p, rs := range byPart {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
		for _, r := range rs {
			if r.Offset != int64(len(into[topic][p])) {
				t.Fatalf("%s-%d: record produced at offset %d, want %d", topic, p, r.Offset, len(into[topic][p]))
			}
			into[topic][p] = append(into[topic][p], string(r.Value))
		}
	}
}

// grpProducer is a producer that picks partitions by Record.Partition.
func grpProducer(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	return cliFranz(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
}

// grpConsumed is one record as a member received it.
type grpConsumed struct {
	member    string
	topic     string
	partition int32
	offset    int64
	value     string
}

// grpLedger collects what the members of a group consumed, in the order
// each received it.
type grpLedger struct {
	mu   sync.Mutex
	recs []grpConsumed
}

func (l *grpLedger) add(c grpConsumed) {
	l.mu.Lock()
	l.recs = append(l.recs, c)
	l.mu.Unlock()
}

func (l *grpLedger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

func (l *grpLedger) snapshot() []grpConsumed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]grpConsumed(nil), l.recs...)
}

// byMember counts the records each member received.
func (l *grpLedger) byMember() map[string]int {
	out := map[string]int{}
	for _, c := range l.snapshot() {
		out[c.member]++
	}
	return out
}

// check fails unless the group consumed every produced record exactly
// once (value at the right offset) and each member received each
// partition's records in offset order.
func (l *grpLedger) check(t *testing.T, want grpTopics) {
	t.Helper()
	type tp struct {
		topic string
		p     int32
	}
	seen := map[tp]map[int64]string{} // offset -> member
	last := map[string]map[tp]int64{}
	for _, c := range l.snapshot() {
		k := tp{c.topic, c.partition}
		vs := want[c.topic][c.partition]
		if c.offset < 0 || c.offset >= int64(len(vs)) {
			t.Fatalf("%s consumed %s-%d offset %d, which was never produced (%d records there)", c.member, c.topic, c.partition, c.offset, len(vs))
		}
		if vs[c.offset] != c.value {
			t.Fatalf("%s consumed %s-%d offset %d = %q, produced %q", c.member, c.topic, c.partition, c.offset, c.value, vs[c.offset])
		}
		if seen[k] == nil {
			seen[k] = map[int64]string{}
		}
		if prev, dup := seen[k][c.offset]; dup {
			t.Fatalf("%s-%d offset %d consumed twice: by %s and by %s", c.topic, c.partition, c.offset, prev, c.member)
		}
		seen[k][c.offset] = c.member
		if last[c.member] == nil {
			last[c.member] = map[tp]int64{}
		}
		if prev, ok := last[c.member][k]; ok && c.offset <= prev {
			t.Fatalf("%s received %s-%d offset %d after offset %d", c.member, c.topic, c.partition, c.offset, prev)
		}
		last[c.member][k] = c.offset
	}
	for topic, ps := range want {
		for p, vs := range ps {
			if got := len(seen[tp{topic, p}]); got != len(vs) {
				var missing []string
				for o := range vs {
					if _, ok := seen[tp{topic, p}][int64(o)]; !ok && len(missing) < 5 {
						missing = append(missing, strconv.Itoa(o))
					}
				}
				t.Fatalf("%s-%d: consumed %d of %d records (missing offsets %s ...)", topic, p, got, len(vs), strings.Join(missing, ","))
			}
		}
	}
}

// grpMemberCfg configures a kgo group member.
type grpMemberCfg struct {
	group    string
	topics   []string
	balancer kgo.GroupBalancer
	// manual commits after every poll and in OnPartitionsRevoked;
	// otherwise kgo autocommits (greedily, every 100 ms, and in its
	// default revoke).
	manual     bool
	instanceID string
	session    time.Duration // 0: 6 s
	heartbeat  time.Duration // 0: 100 ms
	// outage: the broker goes away for a while. Fetch and commit errors
	// and lost partitions are then what a client sees of the outage, not
	// failures; they are kept for the log only.
	outage bool
	opts   []kgo.Opt
}

// grpMember is a kgo group member consuming on its own goroutine. It
// blocks rebalances while it handles a poll (BlockRebalanceOnPoll), so
// whatever it received is committed before its partitions move.
type grpMember struct {
	name string
	cl   *kgo.Client
	led  *grpLedger

	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	outage    bool
	assigned  map[string]map[int32]bool // by the callbacks (manual mode: exact)
	assigns   int                       // OnPartitionsAssigned calls
	revoked   []int32                   // partitions given to OnPartitionsRevoked (manual) or Lost
	errs      []string
	tolerated []string // with outage: what errs would have held
}

func grpStart(t *testing.T, addr, name string, led *grpLedger, c grpMemberCfg) *grpMember {
	t.Helper()
	m := &grpMember{name: name, led: led, done: make(chan struct{}), assigned: map[string]map[int32]bool{}, outage: c.outage}
	session, heartbeat := c.session, c.heartbeat
	if session == 0 {
		session = 6 * time.Second
	}
	if heartbeat == 0 {
		heartbeat = 100 * time.Millisecond
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.SessionTimeout(session),
		kgo.HeartbeatInterval(heartbeat),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.assigns++
			for topic, ps := range a {
				if m.assigned[topic] == nil {
					m.assigned[topic] = map[int32]bool{}
				}
				for _, p := range ps {
					m.assigned[topic][p] = true
				}
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.lose(l, true)
		}),
	}
	if c.balancer != nil {
		opts = append(opts, kgo.Balancers(c.balancer))
	}
	if c.instanceID != "" {
		opts = append(opts, kgo.InstanceID(c.instanceID))
	}
	if c.manual {
		opts = append(opts, kgo.DisableAutoCommit(),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					m.fail("commit on revoke: %v", err)
				}
				m.lose(r, false)
			}))
	} else {
		opts = append(opts, kgo.GreedyAutoCommit(), kgo.AutoCommitInterval(100*time.Millisecond))
	}
	opts = append(opts, c.opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx, c.manual)
	t.Cleanup(m.close)
	return m
}

func (m *grpMember) fail(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.outage {
		m.tolerated = append(m.tolerated, fmt.Sprintf(format, args...))
		return
	}
	m.errs = append(m.errs, fmt.Sprintf(format, args...))
}

func (m *grpMember) lose(l map[string][]int32, lost bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for topic, ps := range l {
		for _, p := range ps {
			delete(m.assigned[topic], p)
			m.revoked = append(m.revoked, p)
		}
	}
	if lost && len(l) > 0 {
		if m.outage {
			m.tolerated = append(m.tolerated, fmt.Sprintf("partitions lost: %v", l))
		} else {
			m.errs = append(m.errs, fmt.Sprintf("partitions lost: %v", l))
		}
	}
}

func (m *grpMember) run(ctx context.Context, manual bool) {
	defer close(m.done)
	for {
		fs := m.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			m.cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			m.fail("fetch %s-%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			m.led.add(grpConsumed{member: m.name, topic: r.Topic, partition: r.Partition, offset: r.Offset, value: string(r.Value)})
		})
		if manual && len(fs.Records()) > 0 {
			if err := m.cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				m.fail("commit: %v", err)
			}
		}
		m.cl.AllowRebalance()
	}
}

// stop ends the poll loop; the member stays in the group.
func (m *grpMember) stop() {
	m.cancel()
	<-m.done
}

// close stops polling and closes the client, which leaves the group
// (after committing) unless the member is static.
func (m *grpMember) close() {
	if m.cl == nil {
		return
	}
	m.stop()
	m.cl.CloseAllowingRebalance()
	m.cl = nil
}

// errors returns what went wrong in the member so far.
func (m *grpMember) errors() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.errs...)
}

func (m *grpMember) revokedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.revoked)
}

// grpCheckMembers fails the test if any member reported an error, and
// logs what members in an outage saw.
func grpCheckMembers(t *testing.T, ms ...*grpMember) {
	t.Helper()
	for _, m := range ms {
		if errs := m.errors(); len(errs) > 0 {
			t.Fatalf("member %s: %s", m.name, strings.Join(errs, "; "))
		}
		m.mu.Lock()
		if len(m.tolerated) > 0 {
			t.Logf("member %s during the outage: %s", m.name, strings.Join(m.tolerated, "; "))
		}
		m.mu.Unlock()
	}
}

// grpAssignment is one member's assigned partitions as DescribeGroups
// shows them: topic -> sorted partitions.
type grpAssignment map[string][]int32

func (a grpAssignment) String() string {
	var parts []string
	for topic, ps := range a {
		parts = append(parts, fmt.Sprintf("%s%v", topic, ps))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func (a grpAssignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// grpDescribe describes one group and returns it with each member's
// assignment by client id.
func grpDescribe(t *testing.T, ctx context.Context, adm *kadm.Client, group string) (kadm.DescribedGroup, map[string]grpAssignment) {
	t.Helper()
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describing %s: %v", group, err)
	}
	d := ds[group]
	out := map[string]grpAssignment{}
	for _, m := range d.Members {
		a := grpAssignment{}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range ca.Topics {
				ps := append([]int32(nil), tp.Partitions...)
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				a[tp.Topic] = append(a[tp.Topic], ps...)
			}
		}
		out[m.ClientID] = a
	}
	return d, out
}

// grpStable waits until the group is Stable with exactly the members
// named (by client id), each owning at least one partition and together
// owning every partition of want exactly once. It returns the assignments.
func grpStable(t *testing.T, ctx context.Context, adm *kadm.Client, group string, want map[string]int32, members ...string) map[string]grpAssignment {
	t.Helper()
	var as map[string]grpAssignment
	grpWait(t, ctx, fmt.Sprintf("group %s Stable with members %v owning every partition", group, members), func() (bool, string) {
		var d kadm.DescribedGroup
		d, as = grpDescribe(t, ctx, adm, group)
		state := fmt.Sprintf("state %s, err %v, assignments %v", d.State, d.Err, as)
		if d.Err != nil || d.State != "Stable" || len(as) != len(members) {
			return false, state
		}
		owned := map[string]map[int32]int{}
		for _, name := range members {
			a, ok := as[name]
			if !ok || a.count() == 0 {
				return false, state
			}
			for topic, ps := range a {
				if owned[topic] == nil {
					owned[topic] = map[int32]int{}
				}
				for _, p := range ps {
					owned[topic][p]++
				}
			}
		}
		for topic, n := range want {
			for p := int32(0); p < n; p++ {
				if owned[topic][p] != 1 {
					return false, state
				}
			}
		}
		return true, state
	})
	return as
}

// grpCommitted waits until the group's committed offsets for topic are the
// end offsets want (partition -> offset).
func grpCommitted(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	grpWait(t, ctx, fmt.Sprintf("group %s to commit %v on %s", group, want, topic), func() (bool, string) {
		os, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		got := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil {
				got[o.Partition] = o.At
			}
		})
		if len(got) != len(want) {
			return false, fmt.Sprint(got)
		}
		for p, o := range want {
			if got[p] != o {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
}

// grpEnds is produced-count per partition of one topic.
func grpEnds(produced grpTopics, topic string) map[int32]int64 {
	out := map[int32]int64{}
	for p, vs := range produced[topic] {
		out[p] = int64(len(vs))
	}
	return out
}

// grpConsumedAll waits until the ledger holds n records.
func grpConsumedAll(t *testing.T, ctx context.Context, led *grpLedger, n int, ms ...*grpMember) {
	t.Helper()
	grpWait(t, ctx, fmt.Sprintf("%d records consumed", n), func() (bool, string) {
		for _, m := range ms {
			if errs := m.errors(); len(errs) > 0 {
				t.Fatalf("member %s: %s", m.name, strings.Join(errs, "; "))
			}
		}
		got := led.len()
		if got > n {
			t.Fatalf("consumed %d records, produced %d", got, n)
		}
		return got == n, fmt.Sprintf("%d consumed, by member %v", got, led.byMember())
	})
}
