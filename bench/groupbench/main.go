// Command groupbench measures a consumer group against any Kafka-compatible
// broker, with franz-go consumers configured alike in every mode:
//
//	plain      one consumer, no group, reads every partition of --topic
//	group      --members consumers of one new group read the topic together
//	rebalance  after group, in the same run: one member leaves and the time
//	           until the others own its partitions and consume from them is
//	           measured against the configured rebalance timeout
//
// Throughput is the bytes of record keys and values (as Kafka's
// consumer perf tool counts them) over the time from the first Fetch request
// any of the consumers sends to the last record of the topic. Every mode
// reads the topic from the beginning to the end offsets it finds at start.
//
// The rebalance: the leaving member stops polling, one marker record is
// produced to every partition, and once the staying members have read the
// markers of their own partitions the leaving member closes its client
// (which commits and sends LeaveGroup). The clock runs from the close until
// a staying member has read the marker of every partition the leaver owned:
// the staying members must notice the rebalance (through a heartbeat), rejoin,
// sync, fetch the committed offsets and fetch. The line gives the steps:
// rejoin_ms (first JoinGroup sent: the heartbeat that noticed), assigned_ms
// (the last moved partition handed to a staying member), consumed_ms (its
// marker read: the whole rebalance).
//
// Each mode prints one line starting with "RESULT" and key=value fields;
// bench/groups.sh collects them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type config struct {
	brokers          []string
	topic            string
	members          int
	group            string
	balancer         string
	fetchSize        int32
	heartbeat        time.Duration
	session          time.Duration
	rebalanceTimeout time.Duration
	timeout          time.Duration
	modes            []string
}

func main() {
	var c config
	var brokers, modes string
	flag.StringVar(&brokers, "bootstrap-server", "127.0.0.1:9092", "broker(s), host:port[,host:port]")
	flag.StringVar(&c.topic, "topic", "", "topic to read (required)")
	flag.IntVar(&c.members, "members", 3, "members of the group")
	flag.StringVar(&c.group, "group", "", "group id (default: groupbench-<time>, a new group)")
	flag.StringVar(&c.balancer, "balancer", "cooperative-sticky", "cooperative-sticky, sticky, range or roundrobin")
	fetchSize := flag.Int("fetch-size", 1<<20, "bytes to fetch per partition in one request (max.partition.fetch.bytes)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 3*time.Second, "heartbeat interval of the members")
	flag.DurationVar(&c.session, "session-timeout", 45*time.Second, "session timeout of the members")
	flag.DurationVar(&c.rebalanceTimeout, "rebalance-timeout", 60*time.Second, "rebalance timeout of the members")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.StringVar(&modes, "modes", "plain,group,rebalance", "what to measure, in order (rebalance right after group)")
	flag.Parse()
	c.brokers = strings.Split(brokers, ",")
	c.modes = strings.Split(modes, ",")
	c.fetchSize = int32(*fetchSize)
	if c.group == "" {
		c.group = fmt.Sprintf("groupbench-%d", time.Now().UnixNano())
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "groupbench:", err)
		os.Exit(1)
	}
}

func balancer(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	case "sticky":
		return kgo.StickyBalancer(), nil
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	}
	return nil, fmt.Errorf("unknown balancer %q", name)
}

func run(c config) error {
	if c.topic == "" {
		return errors.New("--topic is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var g *groupRun
	for _, mode := range c.modes {
		ends, err := endOffsets(ctx, c)
		if err != nil {
			return err
		}
		switch mode {
		case "plain":
			if g != nil {
				g.close() // an idle group would still share the machine
				g = nil
			}
			err = plain(ctx, c, ends)
		case "group":
			g, err = group(ctx, c, ends)
		case "rebalance":
			if g == nil {
				return errors.New("rebalance needs the group mode right before it")
			}
			err = g.rebalance(ctx, c)
		default:
			err = fmt.Errorf("unknown mode %q", mode)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
	}
	if g != nil {
		g.close()
	}
	return nil
}

// endOffsets returns the end offset of every partition of the topic.
func endOffsets(ctx context.Context, c config) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ls, err := kadm.NewClient(cl).ListEndOffsets(ctx, c.topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	ls.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[o.Partition] = o.Offset
		} else {
			err = o.Err
		}
	})
	if err != nil || len(out) == 0 {
		return nil, fmt.Errorf("end offsets of %s: %v (%d partitions)", c.topic, err, len(out))
	}
	return out, nil
}

// tally counts what all consumers of one measurement read, per partition.
type tally struct {
	mu       sync.Mutex
	want     map[int32]int64 // records to read per partition
	got      map[int32]int64
	bytes    int64
	records  int64
	total    int64
	last     time.Time
	done     chan struct{}
	first    atomic.Int64 // unix ns of the first Fetch request written
	leaveAt  atomic.Int64 // unix ns of the leave (rebalance); 0 before
	rejoinAt atomic.Int64 // unix ns of the first JoinGroup after the leave
	markerOn atomic.Bool  // rebalance: watch for marker records
	markers  chan marker
}

type marker struct {
	member    int
	partition int32
	at        time.Time
}

func newTally(ends map[int32]int64) *tally {
	t := &tally{want: ends, got: map[int32]int64{}, done: make(chan struct{}), markers: make(chan marker, 64)}
	for _, n := range ends {
		t.total += n
	}
	return t
}

// OnBrokerWrite notes the first Fetch request, and the first JoinGroup
// after a leave (kgo.HookBrokerWrite).
func (t *tally) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	switch {
	case err != nil:
	case key == 1:
		t.first.CompareAndSwap(0, time.Now().UnixNano())
	case key == 11 && t.leaveAt.Load() != 0:
		t.rejoinAt.CompareAndSwap(0, time.Now().UnixNano())
	}
}

func (t *tally) add(fs kgo.Fetches, member int) {
	var recs, bytes int64
	per := map[int32]int64{}
	watch := t.markerOn.Load()
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		for _, r := range p.Records {
			bytes += int64(len(r.Key) + len(r.Value))
			if watch && strings.HasPrefix(string(r.Value), "groupbench-marker") {
				t.markers <- marker{member: member, partition: r.Partition, at: time.Now()}
			}
		}
		per[p.Partition] += int64(len(p.Records))
		recs += int64(len(p.Records))
	})
	if recs == 0 {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	before := t.records
	t.records += recs
	t.bytes += bytes
	for p, n := range per {
		t.got[p] += n
	}
	if before < t.total && t.records >= t.total {
		t.last = now
		close(t.done)
	}
}

// result checks that every partition was read exactly once and returns the
// bytes and the time from the first fetch to the last record.
func (t *tally) result() (records, bytes int64, took time.Duration, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, n := range t.want {
		if t.got[p] != n {
			err = errors.Join(err, fmt.Errorf("partition %d: read %d records, it holds %d (a rebalance during the run re-reads)", p, t.got[p], n))
		}
	}
	return t.records, t.bytes, t.last.Sub(time.Unix(0, t.first.Load())), err
}

func (c config) consumerOpts(t *tally) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.ConsumeTopics(c.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(50 << 20),
		kgo.FetchMaxPartitionBytes(c.fetchSize),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.DisableFetchCRCValidation(), // as Kafka's consumer perf tool
		kgo.WithHooks(t),
	}
}

// poll reads until ctx ends or the client closes.
func poll(ctx context.Context, cl *kgo.Client, t *tally, member int) error {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		var err error
		fs.EachError(func(topic string, p int32, e error) {
			if !errors.Is(e, context.Canceled) && err == nil {
				err = fmt.Errorf("%s-%d: %w", topic, p, e)
			}
		})
		if err != nil {
			return err
		}
		t.add(fs, member)
	}
}

func mbps(bytes int64, d time.Duration) float64 {
	return float64(bytes) / (1 << 20) / d.Seconds()
}

func wait(ctx context.Context, t *tally, errs <-chan error) error {
	select {
	case <-t.done:
		return nil
	case err := <-errs:
		return err
	case <-ctx.Done():
		t.mu.Lock()
		defer t.mu.Unlock()
		return fmt.Errorf("read %d of %d records: %w", t.records, t.total, ctx.Err())
	}
}

func plain(ctx context.Context, c config, ends map[int32]int64) error {
	t := newTally(ends)
	cl, err := kgo.NewClient(c.consumerOpts(t)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, 1)
	go func() { errs <- poll(pctx, cl, t, 0) }()
	if err := wait(ctx, t, errs); err != nil {
		return err
	}
	recs, bytes, took, err := t.result()
	if err != nil {
		return err
	}
	fmt.Printf("RESULT mode=plain consumers=1 records=%d bytes=%d seconds=%.3f mb_s=%.1f\n", recs, bytes, took.Seconds(), mbps(bytes, took))
	return nil
}

// member is one consumer of the group run.
type member struct {
	id     int
	cl     *kgo.Client
	stop   context.CancelFunc
	exited chan struct{} // closed when its poll loop returns
	mu     sync.Mutex
	owned  map[int32]bool
	gained map[int32]time.Time // partitions assigned after the leave began
	leave  *atomic.Int64       // unix ns of the leave; 0 before
}

type groupRun struct {
	t       *tally
	members []*member
	errs    chan error // poll loops that failed
}

func group(ctx context.Context, c config, ends map[int32]int64) (*groupRun, error) {
	bal, err := balancer(c.balancer)
	if err != nil {
		return nil, err
	}
	g := &groupRun{t: newTally(ends), errs: make(chan error, c.members)}
	start := time.Now()
	joined := make(chan time.Duration, c.members)
	for i := range c.members {
		m := &member{id: i, exited: make(chan struct{}), owned: map[int32]bool{}, gained: map[int32]time.Time{}, leave: &g.t.leaveAt}
		var once sync.Once
		opts := append(c.consumerOpts(g.t),
			kgo.ClientID(fmt.Sprintf("groupbench-%d", i)),
			kgo.ConsumerGroup(c.group),
			kgo.Balancers(bal),
			kgo.HeartbeatInterval(c.heartbeat),
			kgo.SessionTimeout(c.session),
			kgo.RebalanceTimeout(c.rebalanceTimeout),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				m.mu.Lock()
				for _, p := range a[c.topic] {
					m.owned[p] = true
					if at := m.leave.Load(); at != 0 {
						m.gained[p] = time.Now()
					}
				}
				m.mu.Unlock()
				once.Do(func() { joined <- time.Since(start) })
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					fmt.Fprintf(os.Stderr, "groupbench: member %d: commit on revoke: %v\n", m.id, err)
				}
				m.lose(r[c.topic])
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.lose(l[c.topic]) }),
		)
		if m.cl, err = kgo.NewClient(opts...); err != nil {
			return nil, err
		}
		g.members = append(g.members, m)
	}
	for _, m := range g.members {
		pctx, stop := context.WithCancel(ctx)
		m.stop = stop
		go func() {
			defer close(m.exited)
			if err := poll(pctx, m.cl, g.t, m.id); err != nil {
				g.errs <- fmt.Errorf("member %d: %w", m.id, err)
			}
		}()
	}
	if err := wait(ctx, g.t, g.errs); err != nil {
		g.close()
		return nil, err
	}
	recs, bytes, took, err := g.t.result()
	if err != nil {
		g.close()
		return nil, err
	}
	var joins []string
	for len(joined) > 0 {
		joins = append(joins, fmt.Sprintf("%.0f", (<-joined).Seconds()*1000))
	}
	fmt.Printf("RESULT mode=group consumers=%d balancer=%s records=%d bytes=%d seconds=%.3f mb_s=%.1f assignment=%s join_ms=%s\n",
		c.members, c.balancer, recs, bytes, took.Seconds(), mbps(bytes, took), assignment(g.members), strings.Join(joins, "/"))
	return g, nil
}

func (m *member) lose(ps []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		delete(m.owned, p)
	}
}

func (m *member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.owned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// assignment is "member:partitions" for every member.
func assignment(ms []*member) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%d:%v", m.id, m.partitions()))
	}
	return strings.Join(parts, ",")
}

func (g *groupRun) close() {
	for _, m := range g.members {
		m.stop()
		<-m.exited
		if m.cl != nil {
			m.cl.Close()
			m.cl = nil
		}
	}
}

func (g *groupRun) rebalance(ctx context.Context, c config) error {
	leaver := g.members[len(g.members)-1]
	moved := leaver.partitions()
	if len(moved) == 0 {
		return errors.New("the leaving member owns no partition")
	}
	// The leaver stops polling: the markers on its partitions stay unread
	// until a new owner reads them.
	leaver.stop()
	<-leaver.exited
	g.t.markerOn.Store(true)

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer prod.Close()
	var recs []*kgo.Record
	for p := range g.t.want {
		recs = append(recs, &kgo.Record{Topic: c.topic, Partition: p, Value: []byte(fmt.Sprintf("groupbench-marker-%d", p))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	movedSet := map[int32]bool{}
	for _, p := range moved {
		movedSet[p] = true
	}
	ownMarkers := len(g.t.want) - len(moved)
	for seen := 0; seen < ownMarkers; {
		select {
		case m := <-g.t.markers:
			if movedSet[m.partition] {
				return fmt.Errorf("marker of partition %d read before the leave", m.partition)
			}
			seen++
		case err := <-g.errs:
			return err
		case <-ctx.Done():
			return fmt.Errorf("waiting for the staying members to read their markers: %w", ctx.Err())
		}
	}

	leaveAt := time.Now()
	g.t.leaveAt.Store(leaveAt.UnixNano())
	closed := make(chan time.Duration, 1)
	go func() {
		leaver.cl.Close() // commits, then LeaveGroup
		closed <- time.Since(leaveAt)
	}()
	consumed := map[int32]time.Duration{}
	deadline := time.NewTimer(c.rebalanceTimeout + 30*time.Second)
	defer deadline.Stop()
	for len(consumed) < len(moved) {
		select {
		case m := <-g.t.markers:
			if !movedSet[m.partition] {
				continue
			}
			if _, ok := consumed[m.partition]; !ok {
				consumed[m.partition] = m.at.Sub(leaveAt)
			}
		case err := <-g.errs:
			return err
		case <-deadline.C:
			return fmt.Errorf("the moved partitions %v were not read again within %v of the leave", moved, c.rebalanceTimeout+30*time.Second)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	closeTook := <-closed
	leaver.cl = nil
	stayers := g.members[:len(g.members)-1]
	var assigned, read time.Duration
	for _, m := range stayers {
		m.mu.Lock()
		for p, at := range m.gained {
			if movedSet[p] {
				assigned = max(assigned, at.Sub(leaveAt))
			}
		}
		m.mu.Unlock()
	}
	for _, d := range consumed {
		read = max(read, d)
	}
	rejoin := time.Duration(-1)
	if at := g.t.rejoinAt.Load(); at != 0 {
		rejoin = time.Unix(0, at).Sub(leaveAt)
	}
	within := "yes"
	if read > c.rebalanceTimeout {
		within = "no"
	}
	fmt.Printf("RESULT mode=rebalance balancer=%s moved=%v leave_ms=%.0f rejoin_ms=%.0f assigned_ms=%.0f consumed_ms=%.0f heartbeat_ms=%d rebalance_timeout_ms=%d within=%s assignment=%s\n",
		c.balancer, moved, ms(closeTook), ms(rejoin), ms(assigned), ms(read), c.heartbeat.Milliseconds(), c.rebalanceTimeout.Milliseconds(), within,
		assignment(stayers))
	if within != "yes" {
		return fmt.Errorf("the rebalance took %v, longer than the rebalance timeout %v", read, c.rebalanceTimeout)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
