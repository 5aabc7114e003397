package txn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Random runs of producers against the coordinator, with writes that time
// out (durable or not), markers that fail, producer restarts that fence,
// timeouts, and coordinator failovers that keep only what was durable.
// The partitions are a model that records how each transaction's open
// writes end. Invariants checked:
//
//   - every request is answered exactly once;
//   - a transaction whose producer was told its commit (abort) succeeded
//     is committed (aborted) at every partition it wrote to, never the
//     opposite, across failovers;
//   - a transaction ends the same way at all its partitions (atomicity);
//   - once everything is delivered and timeouts have passed, no partition
//     is left with an open transaction;
//   - a coordinator loaded from the log agrees with the live one.
func TestRandom(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for s := range seeds {
		seed := uint64(s + 1)
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandom(t, seed, 1500) })
	}
}

type randClient struct {
	id       string
	pid      int64
	epoch    int16
	inited   bool
	inTxn    bool
	ending   bool // an EndTxn of decision commit is owed
	commit   bool
	instance int
	busy     bool
}

type randPartition struct {
	open   map[int64]int   // producer id -> open transaction instance
	epoch  map[int64]int16 // the producer's epoch as the partition knows it
	cEpoch map[int64]int32 // coordinator epoch of the producer's last marker
}

type sentMarker struct {
	coord *Coordinator
	req   MarkerRequest
}

type randRun struct {
	t   *testing.T
	rng *rand.Rand
	cfg Config
	now time.Time

	coord    *Coordinator
	cEpoch   int32
	log      []Record
	writes   []Write
	markers  []sentMarker
	deadline time.Time
	needPIDs bool
	nextPID  int64

	tok     uint64
	waiting map[uint64]func(kmsg.Response)

	clients  []*randClient
	parts    map[TopicPartition]*randPartition
	nextInst int
	decided  map[int]bool                    // instance -> commit, as its producer was told
	wrote    map[int][]TopicPartition        // instance -> partitions it wrote to
	outcome  map[int]map[TopicPartition]bool // instance -> partition -> committed
}

var randTopics = []TopicPartition{{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}}

func runRandom(t *testing.T, seed uint64, steps int) {
	r := &randRun{t: t, rng: rand.New(rand.NewPCG(seed, 7)), now: t0, waiting: map[uint64]func(kmsg.Response){},
		parts: map[TopicPartition]*randPartition{}, decided: map[int]bool{}, wrote: map[int][]TopicPartition{},
		outcome: map[int]map[TopicPartition]bool{}, nextPID: 100}
	r.cfg = DefaultConfig()
	r.cfg.StatePartitions = 1
	r.cfg.AbortTimedOutInterval = time.Second
	r.cfg.RetryBackoff = 50 * time.Millisecond
	r.cfg.Stats = &Stats{}
	for _, tp := range randTopics {
		r.parts[tp] = &randPartition{open: map[int64]int{}, epoch: map[int64]int16{}, cEpoch: map[int64]int32{}}
	}
	for i := range 3 {
		r.clients = append(r.clients, &randClient{id: fmt.Sprintf("tx%d", i), instance: r.newInstance()})
	}
	r.failover()
	for range steps {
		r.step()
	}
	r.quiesce()
	r.checkEnd()
	commits, aborts, ended := 0, 0, 0
	for _, c := range r.decided {
		if c {
			commits++
		} else {
			aborts++
		}
	}
	for _, o := range r.outcome {
		ended += len(o)
	}
	t.Logf("%d commits and %d aborts told to producers, %d partition transactions ended, coordinator epoch %d",
		commits, aborts, ended, r.cEpoch)
	if commits == 0 || ended == 0 {
		t.Fatal("the run committed nothing")
	}
}

func (r *randRun) newInstance() int {
	r.nextInst++
	return r.nextInst
}

func (r *randRun) apply(coord *Coordinator, rd Ready) {
	for _, resp := range rd.Responses {
		cb, ok := r.waiting[resp.Token]
		if !ok {
			r.t.Fatalf("request %d answered twice or never asked", resp.Token)
		}
		delete(r.waiting, resp.Token)
		cb(resp.Body)
	}
	if coord != r.coord {
		return // an old coordinator's writes and markers go nowhere
	}
	r.writes = append(r.writes, rd.Writes...)
	for _, m := range rd.Markers {
		r.markers = append(r.markers, sentMarker{coord, m})
	}
	if rd.NeedProducerIDs {
		r.needPIDs = true
	}
	r.deadline = rd.Deadline
}

func (r *randRun) send(body kmsg.Request, cb func(kmsg.Response)) {
	r.tok++
	r.waiting[r.tok] = cb
	r.apply(r.coord, r.coord.Handle(r.now, Request{Token: r.tok, Body: body}))
}

// failover moves the coordinator: a prefix of the pending writes becomes
// durable, the rest is lost, and a new coordinator loads the log.
func (r *randRun) failover() {
	if r.coord != nil {
		keep := r.rng.IntN(len(r.writes) + 1)
		for _, w := range r.writes[:keep] {
			r.log = append(r.log, w.Records...)
		}
		r.writes = nil
		old := r.coord
		r.apply(old, old.UnloadPartition(r.now, 0))
		// Its broker still answers what waits for producer ids: not the
		// coordinator any more.
		r.apply(old, old.ProducerIDsFailed(r.now))
	}
	r.cEpoch++
	r.coord = New(r.cfg)
	topics := map[string]int32{"a": 2, "b": 2}
	r.coord.SetTopics(topics)
	r.apply(r.coord, r.coord.BeginLoad(r.now, 0))
	rd, err := r.coord.LoadPartition(r.now, 0, r.cEpoch, r.log)
	if err != nil {
		r.t.Fatal(err)
	}
	r.needPIDs = r.needPIDs && r.coord.pidRequested // a new coordinator asks anew
	r.apply(r.coord, rd)
}

func (r *randRun) step() {
	switch n := r.rng.IntN(100); {
	case n < 40:
		r.clientStep(r.clients[r.rng.IntN(len(r.clients))])
	case n < 60:
		r.deliverWrite(true)
	case n < 78:
		r.deliverMarker(true)
	case n < 90:
		r.advance(time.Duration(r.rng.IntN(1500)) * time.Millisecond)
	case n < 99:
		r.supplyPIDs()
	default:
		r.failover()
	}
}

func (r *randRun) supplyPIDs() {
	if r.needPIDs {
		r.needPIDs = false
		first := r.nextPID
		r.nextPID += 3
		r.apply(r.coord, r.coord.SupplyProducerIDs(r.now, first, 3))
	}
}

func (r *randRun) advance(d time.Duration) {
	r.now = r.now.Add(d)
	for !r.deadline.IsZero() && !r.deadline.After(r.now) {
		r.apply(r.coord, r.coord.Tick(r.now))
	}
}

// deliverWrite completes the oldest pending write: durable, durable but
// reported as timed out, or (faulty only) refused before the append.
func (r *randRun) deliverWrite(faulty bool) {
	if len(r.writes) == 0 {
		return
	}
	w := r.writes[0]
	r.writes = r.writes[1:]
	var err error
	switch n := r.rng.IntN(10); {
	case !faulty || n < 7:
		r.log = append(r.log, w.Records...)
	case n < 9:
		r.log = append(r.log, w.Records...)
		err = kerr.RequestTimedOut
	default:
		err = kerr.NotEnoughReplicas
	}
	r.apply(r.coord, r.coord.Persisted(r.now, w.ID, err))
}

// deliverMarker answers a pending marker request (any of them: leaders
// answer in any order), as the partitions would.
func (r *randRun) deliverMarker(faulty bool) {
	if len(r.markers) == 0 {
		return
	}
	i := r.rng.IntN(len(r.markers))
	m := r.markers[i]
	r.markers = slices.Delete(r.markers, i, i+1)
	var results []MarkerResult
	for _, tp := range m.req.Partitions {
		code := int16(0)
		if faulty && r.rng.IntN(5) == 0 {
			code = kerr.NotLeaderForPartition.Code
		} else {
			code = r.writeMarker(tp, m.req)
		}
		results = append(results, MarkerResult{Partition: tp, Code: code})
	}
	r.apply(m.coord, m.coord.MarkersWritten(r.now, m.req.ID, results))
}

// writeMarker is the partition's side of a marker, with Kafka's fencing.
func (r *randRun) writeMarker(tp TopicPartition, m MarkerRequest) int16 {
	p := r.parts[tp]
	if m.CoordinatorEpoch < p.cEpoch[m.ProducerID] {
		return kerr.TransactionCoordinatorFenced.Code
	}
	if e, ok := p.epoch[m.ProducerID]; ok && m.ProducerEpoch < e {
		return kerr.InvalidProducerEpoch.Code
	}
	p.cEpoch[m.ProducerID], p.epoch[m.ProducerID] = m.CoordinatorEpoch, m.ProducerEpoch
	inst, open := p.open[m.ProducerID]
	if !open {
		return 0
	}
	delete(p.open, m.ProducerID)
	if r.outcome[inst] == nil {
		r.outcome[inst] = map[TopicPartition]bool{}
	}
	r.outcome[inst][tp] = m.Commit
	if want, ok := r.decided[inst]; ok && want != m.Commit {
		r.t.Fatalf("transaction %d was %s to its producer, but %s at %v", inst, word(want), word(m.Commit), tp)
	}
	for other, c := range r.outcome[inst] {
		if c != m.Commit {
			r.t.Fatalf("transaction %d is %s at %v and %s at %v", inst, word(c), other, word(m.Commit), tp)
		}
	}
	return 0
}

func word(commit bool) string {
	if commit {
		return "committed"
	}
	return "aborted"
}

// retriable reports whether a client retries after code (as Kafka's
// producers do); other errors make it initialize again.
func retriable(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.ConcurrentTransactions.Code:
		return true
	}
	return false
}

func (r *randRun) clientStep(c *randClient) {
	if c.busy {
		return
	}
	// Now and then a producer restarts: a new incarnation.
	if c.inited && r.rng.IntN(30) == 0 {
		c.inited, c.inTxn, c.ending = false, false, false
		c.instance = r.newInstance()
	}
	c.busy = true
	switch {
	case !c.inited:
		req := initReq(c.id, 5000)
		r.send(req, func(resp kmsg.Response) {
			c.busy = false
			ir := resp.(*kmsg.InitProducerIDResponse)
			if ir.ErrorCode == 0 {
				c.inited, c.pid, c.epoch = true, ir.ProducerID, ir.ProducerEpoch
				c.inTxn, c.ending = false, false
				c.instance = r.newInstance()
			}
		})
	case c.ending || (c.inTxn && r.rng.IntN(3) == 0):
		if !c.ending {
			c.ending, c.commit = true, r.rng.IntN(3) != 0
		}
		inst, commit := c.instance, c.commit
		r.send(endReq(c.id, c.pid, c.epoch, commit), func(resp kmsg.Response) {
			c.busy = false
			code := resp.(*kmsg.EndTxnResponse).ErrorCode
			switch {
			case code == 0:
				if d, ok := r.decided[inst]; ok && d != commit {
					r.t.Fatalf("transaction %d told %s, then %s", inst, word(d), word(commit))
				}
				r.decided[inst] = commit
				for _, tp := range r.wrote[inst] {
					if c, ok := r.outcome[inst][tp]; ok && c != commit {
						r.t.Fatalf("transaction %d %s at %v, then told %s", inst, word(c), tp, word(commit))
					}
				}
				c.inTxn, c.ending = false, false
				c.instance = r.newInstance()
			case retriable(code):
			default:
				c.inited = false
			}
		})
	default:
		tps := []TopicPartition{randTopics[r.rng.IntN(4)]}
		if r.rng.IntN(2) == 0 {
			tps = append(tps, randTopics[r.rng.IntN(4)])
		}
		pid, epoch, inst := c.pid, c.epoch, c.instance
		r.send(addReq(c.id, pid, epoch, tps...), func(resp kmsg.Response) {
			c.busy = false
			code := addCode(r.t, resp)
			switch {
			case code == 0:
				c.inTxn = true
				for _, tp := range tps {
					r.produce(tp, pid, epoch, inst)
				}
			case retriable(code):
			default:
				c.inited = false
			}
		})
	}
}

// produce is the producer's transactional write to tp, once the partition
// is in its transaction: it opens the transaction there (a write of a
// fenced epoch is refused, as the partition does).
func (r *randRun) produce(tp TopicPartition, pid int64, epoch int16, inst int) {
	p := r.parts[tp]
	if e, ok := p.epoch[pid]; ok && epoch < e {
		return
	}
	p.epoch[pid] = epoch
	if open, ok := p.open[pid]; ok {
		if open != inst {
			r.t.Fatalf("%v: transaction %d writes while transaction %d of producer %d is open", tp, inst, open, pid)
		}
		return
	}
	p.open[pid] = inst
	r.wrote[inst] = append(r.wrote[inst], tp)
}

// quiesce stops the faults and delivers everything until nothing is
// pending, past every transaction's timeout; then every producer
// initializes once more, so that each transactional id's last record was
// written without fault (a write reported as timed out may be durable
// while the coordinator, as Kafka's, kept its state from before it).
func (r *randRun) quiesce() {
	drain := func() {
		for range 50 {
			r.supplyPIDs()
			for len(r.writes) > 0 {
				r.deliverWrite(false)
			}
			for len(r.markers) > 0 {
				r.deliverMarker(false)
			}
			r.advance(time.Second)
		}
	}
	drain()
	for _, c := range r.clients {
		for i := 0; ; i++ {
			if i == 20 {
				r.t.Fatalf("%s cannot initialize", c.id)
			}
			c.busy, c.inited = false, false
			r.clientStep(c)
			drain()
			if c.inited {
				break
			}
		}
	}
	if len(r.writes) > 0 || len(r.markers) > 0 {
		r.t.Fatalf("not quiescent: %d writes and %d markers pending", len(r.writes), len(r.markers))
	}
}

func (r *randRun) checkEnd() {
	for tok := range r.waiting {
		// Only requests parked for producer ids may wait, and none should.
		r.t.Fatalf("request %d never answered", tok)
	}
	for tp, p := range r.parts {
		for pid, inst := range p.open {
			r.t.Errorf("%v: transaction %d of producer %d still open", tp, inst, pid)
		}
	}
	for inst, commit := range r.decided {
		for _, tp := range r.wrote[inst] {
			if c, ok := r.outcome[inst][tp]; !ok || c != commit {
				r.t.Errorf("transaction %d %s to its producer, at %v: ended %v (%s)", inst, word(commit), tp, ok, word(c))
			}
		}
	}
	checkStats(r.t, r.coord)
	// A coordinator loaded from the log agrees with the live one.
	cfg := r.cfg
	cfg.Stats = nil
	fresh := New(cfg)
	fresh.BeginLoad(r.now, 0)
	if _, err := fresh.LoadPartition(r.now, 0, r.cEpoch+1, r.log); err != nil {
		r.t.Fatal(err)
	}
	for _, c := range r.clients {
		live, loaded := r.coord.txns[c.id], fresh.txns[c.id]
		if live == nil || loaded == nil {
			if live != loaded {
				r.t.Errorf("%s: live %v, loaded %v", c.id, live, loaded)
			}
			continue
		}
		if live.pending != nil {
			r.t.Errorf("%s: a transition still pending after quiescence", c.id)
		}
		if live.state != loaded.state || live.producerID != loaded.producerID || live.epoch != loaded.epoch ||
			len(live.partitions) != len(loaded.partitions) {
			r.t.Errorf("%s: live %s %d/%d %v, loaded %s %d/%d %v", c.id, live.state, live.producerID, live.epoch,
				live.partitions.sorted(), loaded.state, loaded.producerID, loaded.epoch, loaded.partitions.sorted())
		}
	}
}

// checkStats fails unless the state gauges, kept incrementally, count the
// transactional ids c serves.
func checkStats(t *testing.T, c *Coordinator) {
	t.Helper()
	want := map[string]int64{}
	for _, m := range c.txns {
		want[m.state.String()]++
	}
	for name, n := range c.cfg.Stats.Snapshot().States {
		if n != want[name] {
			t.Fatalf("transactions by state %v, the coordinator has %v", c.cfg.Stats.Snapshot().States, want)
		}
	}
}
