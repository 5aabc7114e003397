package quorum

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"weir/internal/metadata"
	"weir/internal/record"
	"weir/internal/vfs"
)

// ErrNotLeader is returned by Append on a node that is not the active
// controller (NOT_CONTROLLER).
var ErrNotLeader = errors.New("quorum: not the leader")

// Transport delivers Raft messages to the other voters. Send must not
// block; it may drop messages (Raft retries).
type Transport interface {
	Send(msgs []*pb.Message)
}

// Config configures a Node.
type Config struct {
	NodeID      int32
	ClusterID   string  // frames from other clusters are refused
	Voters      []int32 // node ids of controller.quorum.voters
	MetadataDir string  // metadata.log.dir
	// SegmentBytes is metadata.log.segment.bytes.
	SegmentBytes int64
	// Tick is the Raft clock; an election takes ElectionTicks without a
	// leader (controller.quorum.election.timeout.ms), a heartbeat
	// HeartbeatTicks.
	Tick           time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// SnapshotBytes and SnapshotInterval are
	// metadata.log.max.record.bytes.between.snapshots and
	// metadata.log.max.snapshot.interval.ms.
	SnapshotBytes    int64
	SnapshotInterval time.Duration
	FS               vfs.FS
	Logger           *slog.Logger
	Transport        Transport
	// Now is the clock of snapshot intervals, voter liveness and batch
	// timestamps (nil: time.Now). Raft itself only sees Tick.
	Now func() time.Time
	// State returns the records that rebuild the state as applied so far;
	// it is called on the node's goroutine, between deliveries, when a
	// snapshot is due.
	State func() []metadata.Record
	// OnActive, if set, is called on a new goroutine each time this node
	// becomes the active controller (leader, with everything earlier
	// leaders committed applied).
	OnActive func()
	// OnCommit, if set, is told of each batch Append committed: the
	// records' count and the time from Append to the commit (Kafka's
	// raft-metrics commit-latency and append-records-rate).
	OnCommit func(latency time.Duration, records int)
	// OnElection, if set, is told how long the quorum went without a
	// known leader each time this node learns of a new one (Kafka's
	// raft-metrics election-latency). It is called on the node's
	// goroutine and must not block.
	OnElection func(latency time.Duration)
}

// Node is one voter of the quorum. See the package comment.
type Node struct {
	cfg  Config
	lg   *slog.Logger
	rl   *raftLog
	rn   *raft.RawNode
	subs []func(Committed) error

	recv   chan *pb.Message
	props  chan *proposal
	resign chan chan bool
	done   chan struct{}

	// Owned by the loop goroutine.
	// A proposal is unindexed from its Propose until the Ready that
	// holds its entry, then pending under the entry's Raft index until
	// that entry is applied.
	unindexed []*proposal
	pending   map[uint64]*proposal
	applied   uint64
	termStart uint64 // index of the first entry of the leader's term
	sinceSnap int64  // bytes applied since the last snapshot
	lastSnap  time.Time
	// lastGenerated is the unix ms of this node's last snapshot written
	// (its opening before one): Status.LastSnapshot.
	lastGenerated atomic.Int64
	// noLeaderSince is when this node last lost its leader (or opened),
	// zero while it knows one (OnElection).
	noLeaderSince time.Time
	lastHeard     map[uint64]time.Time // voter -> last response received
	lastCaughtUp  map[uint64]time.Time

	abandon   atomic.Bool // Run ends as a crash would: nothing written
	mu        sync.Mutex  // guards status, changed, commitCh and observers
	status    Status
	observers map[int32]VoterStatus
	changed   chan struct{} // closed and replaced when status changes
	commitCh  chan struct{} // closed and replaced when entries are applied
}

type proposal struct {
	data []byte
	done chan proposalResult
}

type proposalResult struct {
	lastOffset int64
	err        error
}

// Status is what DescribeQuorum reports.
type Status struct {
	Leader        int32 // node.id of the leader, -1 when unknown
	Term          uint64
	HighWatermark int64 // the offset after the last committed entry
	LogEndOffset  int64
	Active        bool // leader and caught up with its own term's first entry
	// Vote is the voter this node voted for in Term, -1 for none.
	Vote int32
	// LastSnapshot is when this node last wrote a snapshot (its opening
	// before it wrote one).
	LastSnapshot time.Time
	Voters       []VoterStatus
	// Observers are the brokers that fetch the log without voting, as the
	// leader has seen them.
	Observers []VoterStatus
}

// VoterStatus is a voter's replication state, as the leader sees it.
type VoterStatus struct {
	NodeID       int32
	LogEndOffset int64 // -1 when unknown
	LastFetch    time.Time
	LastCaughtUp time.Time
}

// Open loads the node's log and state. Replay, then Run, start it.
func Open(cfg Config) (*Node, error) {
	if cfg.FS == nil {
		cfg.FS = vfs.OS
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 100 * time.Millisecond
	}
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = 10
	}
	if cfg.HeartbeatTicks <= 0 {
		cfg.HeartbeatTicks = 1
	}
	voters := append([]int32(nil), cfg.Voters...)
	sort.Slice(voters, func(i, j int) bool { return voters[i] < voters[j] })
	rl, err := openRaftLog(cfg.FS, cfg.MetadataDir, voters, cfg.SegmentBytes, cfg.Logger)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, lg: cfg.Logger, rl: rl, recv: make(chan *pb.Message, 1024), props: make(chan *proposal, 64), resign: make(chan chan bool),
		done: make(chan struct{}), pending: map[uint64]*proposal{}, lastHeard: map[uint64]time.Time{},
		lastCaughtUp: map[uint64]time.Time{}, lastSnap: cfg.Now(), noLeaderSince: cfg.Now()}
	n.lastGenerated.Store(n.lastSnap.UnixMilli())
	n.status.Leader = -1
	n.changed = make(chan struct{})
	n.commitCh = make(chan struct{})
	n.observers = map[int32]VoterStatus{}
	return n, nil
}

// Subscribe registers fn for every batch committed after Replay. Register
// before Replay.
func (n *Node) Subscribe(fn func(Committed) error) { n.subs = append(n.subs, fn) }

// Replay delivers the committed state found on disk to the subscribers:
// the snapshot (as one Snapshot batch) and the committed entries after it.
func (n *Node) Replay() error {
	s := n.rl.snap
	start := time.Now()
	if err := n.deliver(Committed{Records: s.Records, LastOffset: s.EndOffset - 1, Snapshot: true}); err != nil {
		return err
	}
	if s.EndOffset > 0 {
		n.lg.Info("applied metadata snapshot", "end_offset", s.EndOffset, "records", len(s.Records), "took", time.Since(start))
	}
	hs, _, _ := n.rl.mem.InitialState()
	n.applied = s.Index
	if hs.GetCommit() > s.Index {
		ents, err := n.rl.mem.Entries(s.Index+1, hs.GetCommit()+1, math.MaxUint64)
		if err != nil {
			return err
		}
		if err := n.apply(ents); err != nil {
			return err
		}
	}
	n.rl.setCommitted(n.applied)
	return nil
}

func (n *Node) deliver(c Committed) error {
	for _, fn := range n.subs {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// Run drives Raft until ctx is done. Replay must have been called.
func (n *Node) Run(ctx context.Context) error {
	defer close(n.done)
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        raftID(n.cfg.NodeID),
		ElectionTick:              n.cfg.ElectionTicks,
		HeartbeatTick:             n.cfg.HeartbeatTicks,
		Storage:                   n.rl.mem,
		Applied:                   n.applied,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		MaxUncommittedEntriesSize: 64 << 20,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		Logger:                    raftLogger{n.lg},
	})
	if err != nil {
		return err
	}
	n.rn = rn
	// A single voter elects itself at once rather than after a timeout.
	if len(n.cfg.Voters) == 1 {
		rn.Campaign()
	}
	tick := time.NewTicker(n.cfg.Tick)
	defer tick.Stop()
	defer n.failPending(ErrNotLeader)
	for {
		if err := n.handleReady(); err != nil {
			n.lg.Error("metadata quorum stopped", "err", err)
			return err
		}
		select {
		case <-ctx.Done():
			if n.abandon.Load() {
				return n.rl.log.Abandon()
			}
			return n.rl.close()
		case <-tick.C:
			rn.Tick()
		case m := <-n.recv:
			n.heard(m)
			n.lostLog(m)
			rn.Step(m)
		case p := <-n.props:
			n.propose(p)
		case started := <-n.resign:
			started <- n.transferLeadership()
		}
	}
}

// Resign hands the quorum's leadership to the most caught-up other voter
// that is reachable, as a controller shutting down cleanly does, so that
// the others need not wait for an election timeout. It returns once this
// node is no longer the leader, or when ctx ends; at once on a follower,
// a single voter, or a leader that no other voter has heard from lately.
func (n *Node) Resign(ctx context.Context) {
	// A single voter has no one to hand over to: it does not wait for
	// its loop, which may be busy delivering a large commit.
	if len(n.cfg.Voters) == 1 || !n.Status().Active {
		return
	}
	started := make(chan bool, 1)
	select {
	case n.resign <- started:
	case <-ctx.Done():
		return
	}
	select {
	case ok := <-started:
		if !ok {
			return
		}
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for n.Status().Active {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// transferLeadership starts the transfer Resign asks for and reports
// whether one is under way.
func (n *Node) transferLeadership() bool {
	st := n.rn.Status()
	if st.RaftState != raft.StateLeader {
		return false
	}
	if st.LeadTransferee != 0 {
		return true
	}
	var to, match uint64
	for id, pr := range st.Progress {
		if id != st.ID && pr.RecentActive && (to == 0 || pr.Match > match) {
			to, match = id, pr.Match
		}
	}
	if to == 0 {
		return false // no other voter to take over
	}
	n.lg.Info("resigning the metadata quorum leadership", "to", nodeID(to))
	n.rn.TransferLeader(to)
	return true
}

func (n *Node) propose(p *proposal) {
	st := n.rn.BasicStatus()
	if st.RaftState != raft.StateLeader || n.applied < n.termStart {
		p.done <- proposalResult{err: ErrNotLeader}
		return
	}
	if err := n.rn.Propose(p.data); err != nil {
		p.done <- proposalResult{err: fmt.Errorf("%w: %v", ErrNotLeader, err)}
		return
	}
	n.unindexed = append(n.unindexed, p)
}

// indexProposals files this leader's proposals whose entries ents (a
// Ready's new entries) hold under their Raft indexes.
func (n *Node) indexProposals(ents []*pb.Entry) {
	for _, e := range ents {
		for i, p := range n.unindexed {
			if bytes.Equal(p.data, e.GetData()) {
				n.pending[e.GetIndex()] = p
				n.unindexed = append(n.unindexed[:i], n.unindexed[i+1:]...)
				break
			}
		}
	}
}

func (n *Node) handleReady() error {
	for n.rn.HasReady() {
		rd := n.rn.Ready()
		if rd.SoftState != nil {
			n.leadershipChanged(rd.SoftState)
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			s, err := n.rl.applySnapshot(rd.Snapshot)
			if err != nil {
				return err
			}
			if err := n.deliver(Committed{Records: s.Records, LastOffset: s.EndOffset - 1, Snapshot: true}); err != nil {
				return err
			}
			n.applied, n.sinceSnap, n.lastSnap = s.Index, 0, n.cfg.Now()
		}
		n.indexProposals(rd.Entries)
		if err := n.rl.append(rd.Entries, n.leaderNode()); err != nil {
			return err
		}
		if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
			if err := n.rl.setHardState(rd.HardState); err != nil {
				return err
			}
		}
		n.cfg.Transport.Send(rd.Messages)
		for _, m := range rd.Messages {
			// The transport gives no delivery report; Raft probes the
			// follower again if the snapshot did not arrive.
			if m.GetType() == pb.MessageType_MsgSnap {
				n.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
			}
		}
		if err := n.apply(rd.CommittedEntries); err != nil {
			return err
		}
		if len(rd.CommittedEntries) > 0 {
			n.mu.Lock()
			close(n.commitCh)
			n.commitCh = make(chan struct{})
			n.mu.Unlock()
		}
		n.rn.Advance(rd)
		if err := n.maybeSnapshot(); err != nil {
			n.lg.Error("writing a metadata snapshot failed", "err", err)
		}
	}
	n.updateStatus()
	return nil
}

func (n *Node) leaderNode() int32 {
	if n.rn == nil {
		return -1
	}
	if lead := n.rn.BasicStatus().Lead; lead != 0 {
		return nodeID(lead)
	}
	return -1
}

// leadershipChanged notes the start of a leader's term: its first entry
// must be applied before it acts as the active controller, so that it has
// everything earlier leaders committed.
func (n *Node) leadershipChanged(ss *raft.SoftState) {
	if ss.RaftState == raft.StateLeader {
		last, _ := n.rl.mem.LastIndex()
		n.termStart = last + 1
		n.lg.Info("elected metadata quorum leader", "term", n.rn.BasicStatus().GetTerm())
		return
	}
	n.failPending(ErrNotLeader)
}

// apply delivers committed entries to the subscribers and completes the
// proposals they carry.
func (n *Node) apply(ents []*pb.Entry) error {
	for _, e := range ents {
		if e.GetIndex() <= n.applied {
			continue
		}
		n.applied = e.GetIndex()
		n.rl.setCommitted(n.applied)
		if len(e.GetData()) == 0 {
			continue
		}
		b, _, err := record.Next(e.GetData())
		if err != nil {
			return fmt.Errorf("committed entry %d: %w", e.GetIndex(), err)
		}
		c, err := DecodeBatch(b)
		if err != nil {
			return fmt.Errorf("committed entry %d: %w", e.GetIndex(), err)
		}
		c.LastOffset = n.rl.endOffset(e.GetIndex()) - 1
		if err := n.deliver(c); err != nil {
			return err
		}
		n.sinceSnap += int64(len(e.GetData()))
		if p := n.pending[e.GetIndex()]; p != nil {
			delete(n.pending, e.GetIndex())
			if bytes.Equal(p.data, e.GetData()) {
				p.done <- proposalResult{lastOffset: c.LastOffset}
			} else { // another leader's entry replaced it
				p.done <- proposalResult{err: ErrNotLeader}
			}
		}
	}
	return nil
}

func (n *Node) failPending(err error) {
	for id, p := range n.pending {
		p.done <- proposalResult{err: err}
		delete(n.pending, id)
	}
	for _, p := range n.unindexed {
		p.done <- proposalResult{err: err}
	}
	n.unindexed = nil
}

// maybeSnapshot writes a snapshot when enough was applied since the last.
func (n *Node) maybeSnapshot() error {
	due := n.cfg.SnapshotBytes > 0 && n.sinceSnap >= n.cfg.SnapshotBytes ||
		n.cfg.SnapshotInterval > 0 && n.sinceSnap > 0 && n.cfg.Now().Sub(n.lastSnap) >= n.cfg.SnapshotInterval
	if !due || n.cfg.State == nil || n.applied <= n.rl.snap.Index {
		return nil
	}
	term, err := n.rl.mem.Term(n.applied)
	if err != nil {
		return err
	}
	_, cs, _ := n.rl.mem.InitialState()
	start := time.Now()
	s := &snapshot{Index: n.applied, Term: term, EndOffset: n.rl.endOffset(n.applied), Records: n.cfg.State()}
	if ents, err := n.rl.mem.Entries(n.applied, n.applied+1, math.MaxUint64); err == nil && len(ents) == 1 {
		if b, _, err := record.Next(ents[0].GetData()); err == nil {
			s.LastTimestamp = b.MaxTimestamp()
		}
	}
	if err := n.rl.compact(s, cs, n.cfg.Now().UnixMilli()); err != nil {
		return err
	}
	n.sinceSnap, n.lastSnap = 0, n.cfg.Now()
	n.lastGenerated.Store(n.lastSnap.UnixMilli())
	n.lg.Info("wrote metadata snapshot", "index", s.Index, "end_offset", s.EndOffset, "records", len(s.Records), "took", time.Since(start))
	return nil
}

// lostLog handles a voter that lost entries it had acknowledged: a node
// restarted on a wiped (re-formatted) metadata log dir. etcd raft assumes
// this never happens, so both ends need help:
//
//   - The voter gets heartbeats committing up to the index the leader
//     knows it had, beyond its log, which etcd raft takes for corruption
//     (it panics): the commit is lowered to the voter's last index, which
//     is all a heartbeat may commit anyway.
//   - The leader never lowers a follower's match index, so it would keep
//     appending after entries the voter no longer has, and ignore the
//     voter's rejections as stale. Seeing a rejection whose hint (the
//     voter's log end) is below the match index, it hands leadership to
//     another voter: a new leader probes every follower from scratch and
//     sends the wiped one a snapshot or the whole log.
func (n *Node) lostLog(m *pb.Message) {
	switch {
	case m.GetType() == pb.MessageType_MsgHeartbeat:
		if last, _ := n.rl.mem.LastIndex(); m.GetCommit() > last {
			n.lg.Warn("the leader commits entries this voter no longer has: its metadata log was lost",
				"leader", nodeID(m.GetFrom()), "commit", m.GetCommit(), "last_index", last)
			m.Commit = proto.Uint64(last)
		}
	case m.GetType() == pb.MessageType_MsgAppResp && m.GetReject():
		st := n.rn.Status()
		pr, ok := st.Progress[m.GetFrom()]
		if st.RaftState != raft.StateLeader || st.LeadTransferee != 0 || !ok || m.GetRejectHint() >= pr.Match {
			return
		}
		var to, match uint64
		for id, p := range st.Progress {
			if id != st.ID && id != m.GetFrom() && (to == 0 || p.Match > match) {
				to, match = id, p.Match
			}
		}
		n.lg.Warn("a voter lost metadata log entries it had acknowledged; handing over leadership so that it is caught up afresh",
			"voter", nodeID(m.GetFrom()), "acknowledged", pr.Match, "log_end", m.GetRejectHint(), "transferee", nodeID(to))
		if to != 0 {
			n.rn.TransferLeader(to)
		}
	}
}

// Abandon makes Run end, when its context is done, without writing its
// state: in-process tests kill a node with it.
func (n *Node) Abandon() { n.abandon.Store(true) }

// Step hands the node a message from another voter.
func (n *Node) Step(m *pb.Message) {
	select {
	case n.recv <- m:
	case <-n.done:
	default:
		// The node is behind; Raft resends.
	}
}

// Receive steps the messages of a frame body sent by another voter's
// NetTransport.
func (n *Node) Receive(body []byte) error {
	msgs, err := DecodeFrameBody(body, n.cfg.ClusterID)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		n.Step(m)
	}
	return nil
}

func (n *Node) heard(m *pb.Message) {
	now := n.cfg.Now()
	from := m.GetFrom()
	n.lastHeard[from] = now
	last, _ := n.rl.mem.LastIndex()
	switch m.GetType() {
	case pb.MessageType_MsgAppResp:
		if !m.GetReject() && m.GetIndex() >= last {
			n.lastCaughtUp[from] = now
		}
	case pb.MessageType_MsgHeartbeatResp:
		// An idle follower that holds everything is caught up too.
		if pr, ok := n.rn.Status().Progress[from]; ok && pr.Match >= last {
			n.lastCaughtUp[from] = now
		}
	}
}

// ObserverFetched notes a fetch of the metadata log by an observer (a
// broker that is not a voter), for DescribeQuorum.
func (n *Node) ObserverFetched(id int32, offset int64) {
	now := n.cfg.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	o := n.observers[id]
	o.NodeID, o.LogEndOffset, o.LastFetch = id, offset, now
	if offset >= n.rl.log.HighWatermark() {
		o.LastCaughtUp = now
	}
	n.observers[id] = o
}

// Append proposes records as one batch and returns the offset of its last
// record once it is committed and delivered to the subscribers. Only the
// active controller may append (ErrNotLeader otherwise).
func (n *Node) Append(recs []metadata.Record) (int64, error) {
	if len(recs) == 0 {
		return n.EndOffset() - 1, nil
	}
	b, err := EncodeBatch(recs, n.cfg.Now().UnixMilli())
	if err != nil {
		return 0, err
	}
	p := &proposal{data: b, done: make(chan proposalResult, 1)}
	start := n.cfg.Now()
	select {
	case n.props <- p:
	case <-n.done:
		return 0, ErrNotLeader
	}
	select {
	case r := <-p.done:
		if r.err == nil && n.cfg.OnCommit != nil {
			n.cfg.OnCommit(n.cfg.Now().Sub(start), len(recs))
		}
		return r.lastOffset, r.err
	case <-n.done:
		// Stopped before answering: the batch may or may not commit.
		return 0, ErrNotLeader
	}
}

// EndOffset is the offset the next committed record will get (the high
// watermark).
func (n *Node) EndOffset() int64 { return n.rl.log.HighWatermark() }

// Status returns the quorum's state as this node sees it.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.status
	s.Voters = append([]VoterStatus(nil), n.status.Voters...)
	if s.Active {
		for _, o := range n.observers {
			s.Observers = append(s.Observers, o)
		}
		sort.Slice(s.Observers, func(i, j int) bool { return s.Observers[i].NodeID < s.Observers[j].NodeID })
	}
	return s
}

func (n *Node) updateStatus() {
	st := n.rn.Status()
	s := Status{Leader: -1, Vote: -1, Term: st.GetTerm(), HighWatermark: n.rl.log.HighWatermark(), LogEndOffset: n.rl.log.LogEndOffset(),
		LastSnapshot: time.UnixMilli(n.lastGenerated.Load())}
	if st.Lead != 0 {
		s.Leader = nodeID(st.Lead)
	}
	if v := st.GetVote(); v != 0 {
		s.Vote = nodeID(v)
	}
	switch now := n.cfg.Now(); {
	case s.Leader < 0 && n.noLeaderSince.IsZero():
		n.noLeaderSince = now
	case s.Leader >= 0 && !n.noLeaderSince.IsZero():
		if n.cfg.OnElection != nil {
			n.cfg.OnElection(now.Sub(n.noLeaderSince))
		}
		n.noLeaderSince = time.Time{}
	}
	s.Active = st.RaftState == raft.StateLeader && n.applied >= n.termStart
	for _, v := range n.cfg.Voters {
		vs := VoterStatus{NodeID: v, LogEndOffset: -1}
		id := raftID(v)
		switch {
		case v == n.cfg.NodeID:
			vs.LogEndOffset, vs.LastFetch, vs.LastCaughtUp = s.LogEndOffset, n.cfg.Now(), n.cfg.Now()
		case st.RaftState == raft.StateLeader:
			if pr, ok := st.Progress[id]; ok && pr.Match >= n.rl.first-1 {
				vs.LogEndOffset = n.rl.endOffset(pr.Match)
			}
			vs.LastFetch, vs.LastCaughtUp = n.lastHeard[id], n.lastCaughtUp[id]
		}
		s.Voters = append(s.Voters, vs)
	}
	n.mu.Lock()
	if s.Active != n.status.Active || s.Leader != n.status.Leader || s.Term != n.status.Term {
		close(n.changed)
		n.changed = make(chan struct{})
	}
	became := s.Active && !n.status.Active
	n.status = s
	n.mu.Unlock()
	// After the status is stored: OnActive sees this node active.
	if became && n.cfg.OnActive != nil {
		go n.cfg.OnActive()
	}
}

// WaitActive blocks until this node is the active controller, or ctx ends.
func (n *Node) WaitActive(ctx context.Context) error {
	for {
		n.mu.Lock()
		active, ch := n.status.Active, n.changed
		n.mu.Unlock()
		if active {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			return ErrNotLeader
		}
	}
}

// raftLogger sends etcd raft's logging to slog.
type raftLogger struct{ lg *slog.Logger }

func (l raftLogger) Debug(v ...any)              { l.lg.Debug(fmt.Sprint(v...)) }
func (l raftLogger) Debugf(f string, v ...any)   { l.lg.Debug(fmt.Sprintf(f, v...)) }
func (l raftLogger) Info(v ...any)               { l.lg.Debug(fmt.Sprint(v...)) }
func (l raftLogger) Infof(f string, v ...any)    { l.lg.Debug(fmt.Sprintf(f, v...)) }
func (l raftLogger) Warning(v ...any)            { l.lg.Warn(fmt.Sprint(v...)) }
func (l raftLogger) Warningf(f string, v ...any) { l.lg.Warn(fmt.Sprintf(f, v...)) }
func (l raftLogger) Error(v ...any)              { l.lg.Error(fmt.Sprint(v...)) }
func (l raftLogger) Errorf(f string, v ...any)   { l.lg.Error(fmt.Sprintf(f, v...)) }
func (l raftLogger) Fatal(v ...any)              { l.lg.Error(fmt.Sprint(v...)); panic(fmt.Sprint(v...)) }
func (l raftLogger) Fatalf(f string, v ...any)   { l.Fatal(fmt.Sprintf(f, v...)) }
func (l raftLogger) Panic(v ...any)              { panic(fmt.Sprint(v...)) }
func (l raftLogger) Panicf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
