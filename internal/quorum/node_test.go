package quorum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"weir/internal/metadata"
	"weir/internal/record"
	"weir/internal/testwait"
	"weir/internal/vfs/vfstest"
)

// network delivers messages between in-process nodes; links can be cut.
type network struct {
	mu    sync.Mutex
	nodes map[int32]*Node
	cut   map[[2]int32]bool
}

func (nw *network) transport(from int32) Transport {
	return sendFunc(func(msgs []*pb.Message) { nw.send(from, msgs) })
}

type sendFunc func([]*pb.Message)

func (f sendFunc) Send(msgs []*pb.Message) { f(msgs) }

func (nw *network) send(from int32, msgs []*pb.Message) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, m := range msgs {
		to := nodeID(m.GetTo())
		if nw.cut[[2]int32{from, to}] || nw.cut[[2]int32{to, from}] {
			continue
		}
		if n := nw.nodes[to]; n != nil {
			n.Step(m)
		}
	}
}

func (nw *network) isolate(id int32, voters []int32) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, v := range voters {
		if v != id {
			nw.cut[[2]int32{id, v}] = true
		}
	}
}

func (nw *network) heal() {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.cut = map[[2]int32]bool{}
}

// member is a node with its filesystem and the image its subscriber built.
type member struct {
	id     int32
	fs     *vfstest.MemFS
	node   *Node
	cancel context.CancelFunc
	done   chan error

	mu  sync.Mutex
	img *metadata.Image
	// block, when set, holds the next delivery to the member's
	// subscriber until its release is closed.
	block atomic.Pointer[blocker]
}

// blocker holds a delivery: entered is closed when it starts.
type blocker struct{ entered, release chan struct{} }

func (m *member) image() *metadata.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.img
}

type cluster struct {
	t             *testing.T
	voters        []int32
	net           *network
	ms            map[int32]*member
	snapshotBytes int64
	// configure, when set, adjusts each member's Config before it opens.
	configure func(id int32, cfg *Config)
}

func newCluster(t *testing.T, n int, snapshotBytes int64) *cluster {
	c := &cluster{t: t, net: &network{nodes: map[int32]*Node{}, cut: map[[2]int32]bool{}}, ms: map[int32]*member{}, snapshotBytes: snapshotBytes}
	for i := 0; i < n; i++ {
		c.voters = append(c.voters, int32(i))
	}
	for _, id := range c.voters {
		c.start(&member{id: id, fs: vfstest.NewMem()})
	}
	t.Cleanup(func() {
		for _, m := range c.ms {
			c.stop(m)
		}
	})
	return c
}

func (c *cluster) start(m *member) {
	c.t.Helper()
	m.img = metadata.Empty()
	cfg := Config{NodeID: m.id, Voters: c.voters, MetadataDir: "/meta", SegmentBytes: 1 << 20,
		Tick: 5 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 1, SnapshotBytes: c.snapshotBytes,
		FS: m.fs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: c.net.transport(m.id),
		State: func() []metadata.Record { return imageRecords(m.image()) }}
	if c.configure != nil {
		c.configure(m.id, &cfg)
	}
	node, err := Open(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	node.Subscribe(func(b Committed) error {
		if bl := m.block.Swap(nil); bl != nil {
			close(bl.entered)
			<-bl.release
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		base := m.img
		if b.Snapshot {
			base = metadata.Empty()
		}
		img, _, err := base.Apply(b.Records, b.LastOffset)
		if err != nil {
			return err
		}
		m.img = img
		return nil
	})
	if err := node.Replay(); err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.node, m.cancel, m.done = node, cancel, make(chan error, 1)
	c.net.mu.Lock()
	c.net.nodes[m.id] = node
	c.net.mu.Unlock()
	go func() { m.done <- node.Run(ctx) }()
	c.ms[m.id] = m
}

func (c *cluster) stop(m *member) {
	if m.cancel == nil {
		return
	}
	c.net.mu.Lock()
	delete(c.net.nodes, m.id)
	c.net.mu.Unlock()
	m.cancel()
	<-m.done
	m.cancel = nil
}

// imageRecords is the state of an image as records (topics only, which is
// what these tests create).
func imageRecords(img *metadata.Image) []metadata.Record {
	var out []metadata.Record
	for _, t := range img.Topics.All() {
		out = append(out, &metadata.TopicRecord{Name: t.Name, TopicId: t.ID})
	}
	return out
}

// leader waits until some node is the active leader and returns it.
func (c *cluster) leader() *member {
	c.t.Helper()
	var l *member
	testwait.Until(c.t, 10*time.Second, "a leader", func() bool {
		for _, m := range c.ms {
			if m.cancel != nil && m.node.Status().Active {
				l = m
				return true
			}
		}
		return false
	})
	return l
}

// createTopic appends a TopicRecord through the current leader, retrying
// while leadership moves.
func (c *cluster) createTopic(name string) int64 {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		off, err := c.leader().node.Append([]metadata.Record{&metadata.TopicRecord{Name: name, TopicId: metadata.Uuid{byte(len(name)), name[0], name[len(name)-1]}}})
		if err == nil {
			return off
		}
		if !errors.Is(err, ErrNotLeader) {
			c.t.Fatal(err)
		}
	}
	c.t.Fatalf("could not create %s", name)
	return 0
}

// waitTopics waits until every running member's image has all names.
func (c *cluster) waitTopics(names ...string) {
	c.t.Helper()
	for _, m := range c.ms {
		if m.cancel == nil {
			continue
		}
		for _, n := range names {
			testwait.Until(c.t, 10*time.Second, fmt.Sprintf("node %d to see topic %s", m.id, n), func() bool { return m.image().Topics.Get(n) != nil })
		}
	}
}

func TestSingleVoterCommitsAndRestarts(t *testing.T) {
	c := newCluster(t, 1, 0)
	c.createTopic("a")
	c.createTopic("b")
	c.waitTopics("a", "b")
	m := c.ms[0]
	c.stop(m)
	c.start(&member{id: 0, fs: m.fs})
	if c.ms[0].image().Topics.Get("b") == nil {
		t.Fatal("topic b lost across a restart")
	}
	c.createTopic("c")
	c.waitTopics("a", "b", "c")
}

func TestLeaderFailoverLosesNothingCommitted(t *testing.T) {
	c := newCluster(t, 3, 0)
	for i := 0; i < 20; i++ {
		c.createTopic(fmt.Sprintf("t%d", i))
	}
	old := c.leader()
	c.stop(old)
	c.createTopic("after")
	var names []string
	for i := 0; i < 20; i++ {
		names = append(names, fmt.Sprintf("t%d", i))
	}
	c.waitTopics(append(names, "after")...)
	c.start(&member{id: old.id, fs: old.fs})
	c.waitTopics(append(names, "after")...)
}

func TestMinorityRefusesWrites(t *testing.T) {
	c := newCluster(t, 3, 0)
	c.createTopic("x")
	l := c.leader()
	for _, m := range c.ms {
		if m != l {
			c.stop(m)
		}
	}
	// check-quorum makes the leader step down; nothing can commit.
	testwait.Until(t, 10*time.Second, "the isolated leader to step down", func() bool { return !l.node.Status().Active })
	if _, err := l.node.Append([]metadata.Record{&metadata.TopicRecord{Name: "y"}}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append without a quorum: %v", err)
	}
	if l.image().Topics.Get("x") == nil {
		t.Fatal("the survivor lost its state")
	}
}

func TestSnapshotsCompactAndCatchUpALaggingFollower(t *testing.T) {
	c := newCluster(t, 3, 200)
	lagger := c.ms[2]
	c.net.isolate(2, c.voters)
	var names []string
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("s%d", i)
		names = append(names, name)
		c.createTopic(name)
	}
	l := c.leader()
	files, _ := listSnapshots(l.fs, "/meta/"+DirName)
	if len(files) == 0 {
		t.Fatal("no snapshot written")
	}
	c.net.heal()
	c.waitTopics(names...)
	// Restart from snapshot plus log equals the live image.
	want := l.image()
	c.stop(l)
	c.start(&member{id: l.id, fs: l.fs})
	got := c.ms[l.id].image()
	if got.Topics.Len() != want.Topics.Len() {
		t.Fatalf("after restart %d topics, live image had %d", got.Topics.Len(), want.Topics.Len())
	}
	if files, _ := listSnapshots(lagger.fs, "/meta/"+DirName); len(files) == 0 {
		t.Fatal("the lagging follower caught up without installing a snapshot")
	}
}

// TestNodeClock checks that the node reads time only from Config.Now:
// the voter and observer times it reports come from the clock it is
// given.
func TestNodeClock(t *testing.T) {
	at := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	nw := &network{nodes: map[int32]*Node{}, cut: map[[2]int32]bool{}}
	node, err := Open(Config{NodeID: 0, Voters: []int32{0}, MetadataDir: "/meta", SegmentBytes: 1 << 20,
		Tick: 5 * time.Millisecond, FS: vfstest.NewMem(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Transport: nw.transport(0), State: func() []metadata.Record { return nil }, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Replay(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testwait.Until(t, 10*time.Second, "the single voter to become active", func() bool { return node.Status().Active })
	node.ObserverFetched(7, node.EndOffset())
	s := node.Status()
	if len(s.Voters) != 1 || !s.Voters[0].LastFetch.Equal(at) || !s.Voters[0].LastCaughtUp.Equal(at) {
		t.Errorf("voters %+v, want their times at %v", s.Voters, at)
	}
	if len(s.Observers) != 1 || !s.Observers[0].LastFetch.Equal(at) || !s.Observers[0].LastCaughtUp.Equal(at) {
		t.Errorf("observers %+v, want their times at %v", s.Observers, at)
	}
}

// The metadata log's batches carry no producer (id -1, as Kafka's), and
// identical proposals are told apart by their Raft indexes.
func TestProposalsCompleteByIndex(t *testing.T) {
	c := newCluster(t, 1, 0)
	c.createTopic("a")
	node := c.ms[0].node
	same := []metadata.Record{&metadata.NoOpRecord{}}
	offs := make(chan int64, 4)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off, err := node.Append(same)
			if err != nil {
				t.Error(err)
			}
			offs <- off
		}()
	}
	wg.Wait()
	close(offs)
	seen := map[int64]bool{}
	for off := range offs {
		if seen[off] {
			t.Fatalf("two proposals completed at offset %d", off)
		}
		seen[off] = true
	}
	end := node.EndOffset()
	data, err := node.rl.log.ReadBytes(0, 1<<20, end)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for len(data) > 0 {
		b, rest, err := record.Next(data)
		if err != nil {
			break
		}
		if b.ProducerID() != -1 || b.ProducerEpoch() != -1 || b.BaseSequence() != -1 {
			t.Fatalf("batch at %d: producer id %d epoch %d sequence %d, want -1", b.BaseOffset(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
		}
		data = rest
		n++
	}
	if n < 6 {
		t.Fatalf("read %d batches below %d, want at least 6", n, end)
	}
}

// OnActive runs once the node reports itself active, so what it does as
// the active controller (bootstrapping the log, the first fencing check)
// is not refused as coming from a node that is not.
func TestOnActiveSeesTheNodeActive(t *testing.T) {
	nw := &network{nodes: map[int32]*Node{}, cut: map[[2]int32]bool{}}
	opened := make(chan *Node, 1)
	active := make(chan bool, 1)
	node, err := Open(Config{NodeID: 0, Voters: []int32{0}, MetadataDir: "/meta", SegmentBytes: 1 << 20,
		Tick: 5 * time.Millisecond, FS: vfstest.NewMem(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Transport: nw.transport(0), State: func() []metadata.Record { return nil },
		OnActive: func() {
			n := <-opened
			active <- n.Status().Active
		}})
	if err != nil {
		t.Fatal(err)
	}
	opened <- node
	if err := node.Replay(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case a := <-active:
		if !a {
			t.Fatal("OnActive ran while the node reported itself not active")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnActive did not run")
	}
}

// A single voter resigns at once, even while its loop is busy delivering
// a commit: there is no one to hand the leadership to, and a clean
// shutdown must not wait for the loop (it waited up to two election
// timeouts after a controlled shutdown had moved 100,000 leaders).
func TestSingleVoterResignsAtOnceWhileItsLoopDelivers(t *testing.T) {
	c := newCluster(t, 1, 0)
	m := c.leader()
	bl := &blocker{entered: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(bl.release) }) }
	defer release()
	m.block.Store(bl)
	appended := make(chan error, 1)
	go func() {
		_, err := m.node.Append([]metadata.Record{&metadata.TopicRecord{Name: "busy", TopicId: metadata.Uuid{1}}})
		appended <- err
	}()
	<-bl.entered
	resigned := make(chan struct{})
	go func() {
		m.node.Resign(context.Background())
		close(resigned)
	}()
	testwait.Until(t, 30*time.Second, "Resign to return while the loop delivers", func() bool {
		select {
		case <-resigned:
			return true
		default:
			return false
		}
	})
	release()
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
}
