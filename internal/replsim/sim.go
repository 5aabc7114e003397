package replsim

import (
	"container/heap"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand"
	"math/rand/v2"
	"strings"
	"time"

	"weir/internal/log"
)

// Node ids: the controller, the brokers 1..numBrokers, the clients.
const (
	controllerID = 0
	numBrokers   = 3
	clientID     = 100
)

// The simulated cluster's timing, scaled down from Kafka's defaults so a
// seed covers many sessions and lag periods.
const (
	lagTimeMax       = 400 * time.Millisecond // replica.lag.time.max.ms
	heartbeatEvery   = 50 * time.Millisecond  // broker.heartbeat.interval.ms
	sessionTimeout   = 300 * time.Millisecond // broker.session.timeout.ms
	fenceCheckEvery  = 50 * time.Millisecond
	fetchMaxWait     = 60 * time.Millisecond // replica.fetch.wait.max.ms
	fetchTimeout     = 250 * time.Millisecond
	fetchBackoff     = 30 * time.Millisecond // replica.fetch.backoff.ms
	metadataEvery    = 15 * time.Millisecond
	rpcTimeout       = 200 * time.Millisecond // registration, heartbeat, AlterPartition, metadata
	isrBackoff       = 30 * time.Millisecond
	produceTimeout   = 250 * time.Millisecond // the request's acks=all wait
	clientTimeout    = 400 * time.Millisecond // the client gives up on an answer
	clientBackoff    = 20 * time.Millisecond
	hwCheckpointTick = 100 * time.Millisecond // replica.high.watermark.checkpoint.interval.ms
	rpCheckpointTick = 300 * time.Millisecond // log.flush.offset.checkpoint.interval.ms
	healTimeout      = 30 * time.Second       // how long the healed cluster may take to quiesce
)

var simStart = time.UnixMilli(1_700_000_000_000)

var topic = log.TopicPartition{Topic: "sim", Partition: 0}

// Options configure one run.
type Options struct {
	Seed uint64
	// Trace, if set, receives one line per event and the nodes' logs.
	Trace func(string)
}

// params are what a seed chooses.
type params struct {
	chaos       bool // no failure guard; unclean.leader.election.enable=true
	chaosLength time.Duration
	drop, dup   float64 // per message
	delay       float64 // per message: an extra delay of up to maxDelay
	maxDelay    time.Duration
	faultEvery  time.Duration // mean time between injected faults
	flushOnAck  bool          // flush.messages=1
	smallIndex  bool          // segments roll every few batches
	deletes     bool          // DeleteRecords moves the log start up
	replicas    []int32
}

// event is one step of the simulation: fn runs at at on node (or on the
// simulation itself, node < 0), unless that node crashed since the event
// was scheduled (inc no longer matches) or is paused (the event waits).
type event struct {
	at    time.Time
	seq   uint64
	node  int32
	inc   uint64
	label string
	fn    func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Sim is one simulated cluster. See the package comment.
type Sim struct {
	opts  Options
	p     params
	rng   *rand.Rand
	now   time.Time
	queue eventQueue
	seq   uint64
	ids   uint64 // request ids
	steps int
	lg    *slog.Logger

	crashes int
	// proposals are the ISRs of AlterPartition requests still on their
	// way to the controller, by request id, with their copies in flight.
	proposals map[uint64]*proposal

	ctrl    *ctrlNode
	brokers [numBrokers + 1]*broker // 1-based
	clients []*producer
	chk     *checker

	// The phases: setup (no faults), chaos from chaosAt, healing from
	// healedAt (faults stopped).
	chaos    bool
	chaosAt  time.Time
	healing  bool
	healedAt time.Time
	cuts     map[[2]int32]time.Time
	recent   []string // the last events, for failure reports
	err      error
}

// Stats describe what a run went through.
type Stats struct {
	Steps     int
	SimTime   time.Duration
	Chaos     bool   // a chaos seed
	Outside   string // why durability stopped being checked, if it did
	Unclean   bool   // an unclean election happened
	Crashes   int
	Epochs    int32 // leader epochs the partition went through
	AckedAll  int   // batches acknowledged to the acks=all producer
	Truncated int   // follower truncations
}

// Run simulates one seed and returns the first invariant violation (or a
// failure to converge), nil when the seed passes.
func Run(opts Options) (st Stats, err error) {
	s := newSim(opts)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic at step %d (%s): %v%s", s.steps, s.now.Sub(simStart), r, s.recentEvents())
		}
		st = s.stats()
	}()
	if err := s.setup(); err != nil {
		return st, err
	}
	s.loop()
	if s.err != nil {
		return st, fmt.Errorf("%w%s", s.err, s.recentEvents())
	}
	return st, nil
}

func (s *Sim) stats() Stats {
	st := Stats{Steps: s.steps, SimTime: s.now.Sub(simStart), Chaos: s.p.chaos, Outside: s.chk.outside, Unclean: s.chk.unclean,
		Crashes: s.crashes, Truncated: s.chk.truncations}
	if p := s.ctrl.partition(); p != nil {
		st.Epochs = p.LeaderEpoch + 1
	}
	if len(s.clients) > 0 {
		st.AckedAll = len(s.clients[0].acked)
	}
	return st
}

func newSim(opts Options) *Sim {
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	s := &Sim{opts: opts, rng: rng, now: simStart, cuts: map[[2]int32]time.Time{}, proposals: map[uint64]*proposal{}}
	s.lg = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))
	if opts.Trace != nil {
		s.lg = slog.New(slog.NewTextHandler(traceWriter{s}, &slog.HandlerOptions{Level: slog.LevelInfo,
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
	}
	s.p = s.chooseParams()
	s.chk = newChecker(s)
	return s
}

func (s *Sim) chooseParams() params {
	r := s.rng
	p := params{
		chaos:       r.IntN(100) < 15,
		chaosLength: time.Duration(1500+r.IntN(3000)) * time.Millisecond,
		drop:        []float64{0, 0.01, 0.05, 0.15}[r.IntN(4)],
		dup:         []float64{0, 0, 0.02, 0.1}[r.IntN(4)],
		delay:       []float64{0, 0.05, 0.2}[r.IntN(3)],
		maxDelay:    time.Duration(50+r.IntN(600)) * time.Millisecond,
		faultEvery:  time.Duration(80+r.IntN(400)) * time.Millisecond,
		flushOnAck:  r.IntN(5) == 0,
		smallIndex:  r.IntN(2) == 0,
		deletes:     r.IntN(3) == 0,
		replicas:    []int32{1, 2, 3},
	}
	r.Shuffle(len(p.replicas), func(i, j int) { p.replicas[i], p.replicas[j] = p.replicas[j], p.replicas[i] })
	return p
}

func (s *Sim) clock() time.Time { return s.now }

func (s *Sim) nextID() uint64 { s.ids++; return s.ids }

// mathRand returns a math/rand source seeded from the simulation, for
// vfstest's crash clones.
func (s *Sim) mathRand() *mrand.Rand { return mrand.New(mrand.NewSource(int64(s.rng.Uint64() >> 1))) }

func (s *Sim) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// after schedules fn on node after d; the event is dropped if the node
// crashes meanwhile.
func (s *Sim) after(d time.Duration, node int32, label string, fn func()) {
	s.seq++
	heap.Push(&s.queue, &event{at: s.now.Add(d), seq: s.seq, node: node, inc: s.incOf(node), label: label, fn: fn})
}

func (s *Sim) incOf(node int32) uint64 {
	if node >= 1 && node <= numBrokers {
		return s.brokers[node].inc
	}
	return 0
}

// send delivers a message from one node to another, through the seed's
// network faults: it may be lost, delayed (and so reordered) or
// duplicated. fn must tolerate running twice. It returns how many copies
// are on their way.
func (s *Sim) send(from, to int32, label string, fn func()) int {
	return s.sendWithin(from, to, label, s.p.maxDelay, fn)
}

// sendWithin is send with the extra delay bounded by maxDelay.
func (s *Sim) sendWithin(from, to int32, label string, maxDelay time.Duration, fn func()) int {
	if s.isCut(from, to) {
		s.tracef("  %s %d->%d lost (link cut)", label, from, to)
		return 0
	}
	if s.chaos && s.rng.Float64() < s.p.drop {
		s.tracef("  %s %d->%d dropped", label, from, to)
		return 0
	}
	s.after(s.latency(maxDelay), to, label, fn)
	if s.chaos && s.rng.Float64() < s.p.dup {
		s.after(s.latency(maxDelay), to, label+" (dup)", fn)
		return 2
	}
	return 1
}

// sendControl sends a registration or heartbeat message. Outside chaos
// seeds only a cut loses it: random loss of heartbeats would fence healthy
// brokers, an impairment the failure guard could not account for.
func (s *Sim) sendControl(from, to int32, label string, fn func()) {
	if s.p.chaos {
		s.send(from, to, label, fn)
		return
	}
	if s.isCut(from, to) {
		s.tracef("  %s %d->%d lost (link cut)", label, from, to)
		return
	}
	s.after(s.between(time.Millisecond, 4*time.Millisecond), to, label, fn)
}

func (s *Sim) latency(maxDelay time.Duration) time.Duration {
	d := s.between(time.Millisecond, 4*time.Millisecond)
	if s.chaos && s.rng.Float64() < s.p.delay {
		d += s.between(0, maxDelay)
	}
	return d
}

func (s *Sim) isCut(a, b int32) bool {
	if a > b {
		a, b = b, a
	}
	until, ok := s.cuts[[2]int32{a, b}]
	return ok && s.now.Before(until)
}

func (s *Sim) cut(a, b int32, d time.Duration) {
	if a > b {
		a, b = b, a
	}
	s.cuts[[2]int32{a, b}] = s.now.Add(d)
}

// loop runs events until the cluster quiesced after healing, or a check
// failed.
func (s *Sim) loop() {
	for s.err == nil {
		if len(s.queue) == 0 {
			s.fail("the event queue ran dry")
			return
		}
		e := heap.Pop(&s.queue).(*event)
		if e.node >= 1 && e.node <= numBrokers {
			b := s.brokers[e.node]
			if !b.up || b.inc != e.inc {
				continue
			}
			if b.pausedUntil.After(e.at) {
				e.at, e.seq = b.pausedUntil, s.seq+1
				s.seq++
				heap.Push(&s.queue, e)
				continue
			}
		}
		if e.at.After(s.now) {
			s.now = e.at
		}
		s.steps++
		s.record(e)
		e.fn()
		for _, b := range s.brokers[1:] {
			if b.up && !b.paused() {
				b.poll()
			}
		}
		s.chk.step()
		if s.err != nil {
			return
		}
		if s.chaos && s.now.Sub(s.chaosAt) >= s.p.chaosLength {
			s.heal()
		}
		if s.healing {
			if s.quiesced() {
				s.chk.final()
				return
			}
			if s.now.Sub(s.healedAt) > healTimeout {
				s.fail("the cluster did not quiesce within %v of healing: %s", healTimeout, s.describe())
				return
			}
		}
	}
}

func (s *Sim) record(e *event) {
	line := fmt.Sprintf("%8.3fs node %d: %s", s.now.Sub(simStart).Seconds(), e.node, e.label)
	if s.opts.Trace != nil {
		s.opts.Trace(line)
	}
	if len(s.recent) >= 40 {
		s.recent = s.recent[1:]
	}
	s.recent = append(s.recent, line)
}

func (s *Sim) recentEvents() string {
	return "\nlast events:\n  " + strings.Join(s.recent, "\n  ")
}

func (s *Sim) tracef(format string, args ...any) {
	if s.opts.Trace != nil {
		s.opts.Trace(fmt.Sprintf(format, args...))
	}
}

// fail records the first violation; the run stops after the current step.
func (s *Sim) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("step %d at %v: %s", s.steps, s.now.Sub(simStart), fmt.Sprintf(format, args...))
	}
}

type traceWriter struct{ s *Sim }

func (w traceWriter) Write(p []byte) (int, error) {
	w.s.opts.Trace("    | " + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// heal stops injecting faults and undoes the lasting ones: links come
// back and crashed brokers restart (pauses run out). Producers finish the
// batch they have and stop.
func (s *Sim) heal() {
	s.chaos, s.healing, s.healedAt = false, true, s.now
	s.tracef("== healing")
	s.cuts = map[[2]int32]time.Time{}
	for _, b := range s.brokers[1:] {
		if !b.up {
			b.start()
		}
	}
}

// isLeader reports whether broker id leads the partition in epoch as the
// controller has it now.
func (s *Sim) isLeader(id, epoch int32) bool {
	st := s.ctrl.partition()
	return st != nil && st.Leader == id && st.LeaderEpoch == epoch
}

// quiesced reports whether the healed cluster settled: every broker live
// and unfenced, all replicas in the ISR with the same log end, which the
// leader's high watermark covers, and no producer with a batch in flight.
func (s *Sim) quiesced() bool {
	for _, c := range s.clients {
		if c.cur != nil {
			return false
		}
	}
	st := s.ctrl.partition()
	if st == nil || st.Leader < 0 || len(st.ISR) != numBrokers {
		return false
	}
	lb := s.brokers[st.Leader]
	lp := lb.part()
	if lp == nil || !lp.IsLeader() || lp.State().LeaderEpoch != st.LeaderEpoch || len(lp.State().ISR) != numBrokers {
		return false
	}
	leo := lp.Log().LogEndOffset()
	if lp.HighWatermark() != leo {
		return false
	}
	for _, b := range s.brokers[1:] {
		p := b.part()
		if !b.up || !b.live || b.fenced || p == nil || p.Log().LogEndOffset() != leo || p.HighWatermark() != leo {
			return false
		}
		if p.State().LeaderEpoch != st.LeaderEpoch {
			return false
		}
	}
	return true
}

// describe summarizes the cluster for a failure report.
func (s *Sim) describe() string {
	var sb strings.Builder
	if st := s.ctrl.partition(); st != nil {
		fmt.Fprintf(&sb, "controller: leader %d epoch %d partition epoch %d ISR %v recovering %d", st.Leader, st.LeaderEpoch,
			st.PartitionEpoch, st.ISR, st.LeaderRecoveryState)
	}
	for _, b := range s.brokers[1:] {
		fmt.Fprintf(&sb, "; broker %d: up %v live %v fenced %v epoch %d", b.id, b.up, b.live, b.fenced, b.epoch)
		if p := b.part(); p != nil {
			st := p.State()
			fmt.Fprintf(&sb, " leader %d/%d ISR %v LEO %d HW %d", st.Leader, st.LeaderEpoch, st.ISR,
				p.Log().LogEndOffset(), p.HighWatermark())
		}
	}
	for _, c := range s.clients {
		if c.cur != nil {
			fmt.Fprintf(&sb, "; %s has batch %d in flight (%d attempts)", c.name, c.cur.idx, c.cur.attempts)
		}
	}
	return sb.String()
}
