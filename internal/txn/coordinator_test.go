package txn

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
)

// A commit: the decision is answered once PrepareCommit is durable, the
// markers go to every partition (the group's __consumer_offsets partition
// included) with the coordinator epoch, and CompleteCommit follows once
// they are written.
func TestCommit(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(7)
	pid, epoch := h.init("tx")
	if pid != 1000 || epoch != 0 {
		t.Fatalf("InitProducerId gave %d/%d, want 1000/0", pid, epoch)
	}
	h.add("tx", pid, epoch, tp("t1", 0), tp("t1", 2))
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.Version = 4
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx", pid, epoch, "g"
	wantCode(t, "AddOffsetsToTxn", h.answer(h.send(ao)).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	gp := tp(OffsetsTopic, coordinator.PartitionFor("g", 10))
	d := h.describe("tx")
	if d.State != "Ongoing" || d.StartTimestamp != t0.UnixMilli() || len(d.Topics) != 2 {
		t.Fatalf("ongoing transaction described as %+v", d)
	}

	h.holdMarkers = true
	h.now = h.now.Add(time.Second)
	wantCode(t, "EndTxn", h.end("tx", pid, epoch, true), nil)
	if got := h.state("tx"); got != "PrepareCommit" {
		t.Fatalf("state %s after EndTxn, want PrepareCommit while markers are pending", got)
	}
	if len(h.markers) != 1 {
		t.Fatalf("%d marker requests, want 1", len(h.markers))
	}
	m := h.markers[0]
	want := []TopicPartition{gp, tp("t1", 0), tp("t1", 2)}
	if !m.Commit || m.ProducerID != pid || m.ProducerEpoch != epoch || m.CoordinatorEpoch != 7 || !slices.Equal(m.Partitions, want) {
		t.Fatalf("marker request %+v, want a commit of %d/%d at coordinator epoch 7 to %v", m, pid, epoch, want)
	}
	// The producer's next transaction waits for the markers.
	wantCode(t, "AddPartitionsToTxn during markers", addCode(t, h.answer(h.send(addReq("tx", pid, epoch, tp("t2", 0))))), kerr.ConcurrentTransactions)
	wantCode(t, "EndTxn retry during markers", h.end("tx", pid, epoch, true), kerr.ConcurrentTransactions)

	h.flushMarkers()
	if got := h.state("tx"); got != "CompleteCommit" {
		t.Fatalf("state %s after markers, want CompleteCommit", got)
	}
	p := coordinator.PartitionFor("tx", 4)
	if got, want := h.logStates(p), []string{"Empty", "Ongoing", "Ongoing", "PrepareCommit", "CompleteCommit"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	wantCode(t, "EndTxn retry after completion", h.end("tx", pid, epoch, true), nil)
	wantCode(t, "EndTxn abort after commit", h.end("tx", pid, epoch, false), kerr.InvalidTxnState)
	// The next transaction starts anew.
	h.add("tx", pid, epoch, tp("t2", 0))
	if d := h.describe("tx"); d.State != "Ongoing" || len(d.Topics) != 1 || d.Topics[0].Topic != "t2" {
		t.Fatalf("second transaction described as %+v", d)
	}
}

func TestAbort(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(1)
	pid, epoch := h.init("tx")
	h.add("tx", pid, epoch, tp("t1", 1))
	h.holdMarkers = true
	wantCode(t, "EndTxn abort", h.end("tx", pid, epoch, false), nil)
	if m := h.markers[0]; m.Commit || !slices.Equal(m.Partitions, []TopicPartition{tp("t1", 1)}) {
		t.Fatalf("marker request %+v, want an abort of t1-1", m)
	}
	// The pending completion is checked before the state, as in Kafka.
	wantCode(t, "EndTxn commit while aborting", h.end("tx", pid, epoch, true), kerr.ConcurrentTransactions)
	wantCode(t, "EndTxn abort retry", h.end("tx", pid, epoch, false), kerr.ConcurrentTransactions)
	h.flushMarkers()
	if got := h.state("tx"); got != "CompleteAbort" {
		t.Fatalf("state %s, want CompleteAbort", got)
	}
	wantCode(t, "EndTxn abort after completion", h.end("tx", pid, epoch, false), nil)
	wantCode(t, "EndTxn commit after abort", h.end("tx", pid, epoch, true), kerr.InvalidTxnState)
	// A transaction with no partitions completes without markers.
	if codes := addCodes(h.answer(h.send(addReq("tx", pid, epoch)))); len(codes) != 0 || h.state("tx") != "Ongoing" {
		t.Fatalf("AddPartitionsToTxn without partitions answered %v, state %s", codes, h.state("tx"))
	}
	n := len(h.sent)
	wantCode(t, "EndTxn of an empty ongoing transaction", h.end("tx", pid, epoch, true), nil)
	if len(h.sent) != n || h.state("tx") != "CompleteCommit" {
		t.Fatalf("a transaction without partitions sent markers or did not complete (%s)", h.state("tx"))
	}
}

// A transaction older than its timeout is aborted at a bumped epoch: the
// producer is fenced.
func TestTimeoutAbort(t *testing.T) {
	cfg := testConfig()
	cfg.AbortTimedOutInterval = time.Second
	h := newHarness(t, cfg)
	h.lead(3)
	pid, epoch := h.initOK(initReq("tx", 5000))
	h.add("tx", pid, epoch, tp("t1", 0))
	h.advance(5 * time.Second)
	if got := h.state("tx"); got != "Ongoing" {
		t.Fatalf("state %s at the timeout, want Ongoing until it has passed", got)
	}
	n := len(h.sent)
	h.advance(time.Second)
	if got := h.state("tx"); got != "CompleteAbort" {
		t.Fatalf("state %s after the timeout, want CompleteAbort", got)
	}
	if len(h.sent) != n+1 {
		t.Fatalf("%d marker requests, want 1", len(h.sent)-n)
	}
	m := h.sent[n]
	if m.Commit || m.ProducerEpoch != epoch+1 || m.CoordinatorEpoch != 3 {
		t.Fatalf("timeout marker %+v, want an abort at epoch %d", m, epoch+1)
	}
	if d := h.describe("tx"); d.ProducerEpoch != epoch+1 {
		t.Fatalf("epoch %d after the timeout, want %d", d.ProducerEpoch, epoch+1)
	}
	wantCode(t, "EndTxn of the timed-out producer", h.end("tx", pid, epoch, true), kerr.ProducerFenced)
	old := endReq("tx", pid, epoch, true)
	old.Version = 1
	wantCode(t, "EndTxn v1 of the timed-out producer", h.answer(h.send(old)).(*kmsg.EndTxnResponse).ErrorCode, kerr.InvalidProducerEpoch)
	wantCode(t, "AddPartitions of the timed-out producer", addCode(t, h.answer(h.send(addReq("tx", pid, epoch, tp("t1", 1))))), kerr.ProducerFenced)
	a := addReq("tx", pid, epoch, tp("t1", 1))
	a.Version = 1
	wantCode(t, "AddPartitions v1 of the timed-out producer", addCode(t, h.answer(h.send(a))), kerr.InvalidProducerEpoch)
	// The same producer recovers with KIP-360: it names its epoch, which is
	// stale, so it is fenced; a new incarnation gets the next epoch.
	r := initReq("tx", 5000)
	r.ProducerID, r.ProducerEpoch = pid, epoch
	wantCode(t, "KIP-360 InitProducerId with the fenced epoch", h.answer(h.send(r)).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.ProducerFenced)
	if p2, e2 := h.init("tx"); p2 != pid || e2 != epoch+2 {
		t.Fatalf("new incarnation got %d/%d, want %d/%d", p2, e2, pid, epoch+2)
	}
}

// A new incarnation of a transactional id aborts the ongoing transaction
// of the old one (CONCURRENT_TRANSACTIONS until the abort is complete),
// then gets an epoch above the abort's; the old producer is fenced.
func TestFencingByNewIncarnation(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(2)
	pid, epoch := h.init("tx")
	h.add("tx", pid, epoch, tp("t1", 0), tp("t2", 0))
	h.holdMarkers = true
	resp := h.answer(h.send(initReq("tx", 60000))).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId of the new incarnation", resp.ErrorCode, kerr.ConcurrentTransactions)
	if resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Fatalf("fencing answer carries %d/%d, want -1/-1", resp.ProducerID, resp.ProducerEpoch)
	}
	if m := h.markers[0]; m.Commit || m.ProducerEpoch != epoch+1 || len(m.Partitions) != 2 {
		t.Fatalf("fencing marker %+v, want an abort of both partitions at epoch %d", m, epoch+1)
	}
	if got := h.state("tx"); got != "PrepareAbort" {
		t.Fatalf("state %s, want PrepareAbort", got)
	}
	// While the markers are pending: the zombie is fenced, the new
	// incarnation must wait.
	wantCode(t, "zombie EndTxn", h.end("tx", pid, epoch, true), kerr.ProducerFenced)
	wantCode(t, "retried InitProducerId", h.answer(h.send(initReq("tx", 60000))).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.ConcurrentTransactions)
	h.flushMarkers()
	p2, e2 := h.init("tx")
	if p2 != pid || e2 != epoch+2 {
		t.Fatalf("new incarnation got %d/%d, want %d/%d", p2, e2, pid, epoch+2)
	}
	wantCode(t, "zombie AddPartitions", addCode(t, h.answer(h.send(addReq("tx", pid, epoch, tp("t1", 0))))), kerr.ProducerFenced)
	p := coordinator.PartitionFor("tx", 4)
	if got, want := h.logStates(p), []string{"Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

// The coordinator fails over in the middle of a commit: PrepareCommit is
// durable, no marker is written. The new coordinator loads the records,
// resumes the markers at its own coordinator epoch and completes the
// commit; the old one's late results change nothing.
func TestFailoverMidCommit(t *testing.T) {
	h := newHarness(t, testConfig())
	p := coordinator.PartitionFor("tx", 4)
	h.lead(5)
	pid, epoch := h.init("tx")
	h.add("tx", pid, epoch, tp("t1", 0), tp("t1", 1))
	h.holdMarkers = true
	wantCode(t, "EndTxn", h.end("tx", pid, epoch, true), nil)
	stale := h.markers[0]
	h.markers = nil

	old := h.c
	h.apply(old.UnloadPartition(h.now, p))
	wantCode(t, "EndTxn at the old coordinator", h.end("tx", pid, epoch, true), kerr.NotCoordinator)
	h.apply(old.MarkersWritten(h.now, stale.ID, []MarkerResult{{Partition: tp("t1", 0)}, {Partition: tp("t1", 1)}}))

	// The new coordinator: loading, then loaded from the log.
	h.c = New(testConfig())
	h.c.SetTopics(map[string]int32{"t1": 3})
	h.apply(h.c.BeginLoad(h.now, p))
	wantCode(t, "EndTxn while loading", h.end("tx", pid, epoch, true), kerr.CoordinatorLoadInProgress)
	r, err := h.c.LoadPartition(h.now, p, 6, h.log[p])
	if err != nil {
		t.Fatal(err)
	}
	h.apply(r)
	if len(h.markers) != 1 {
		t.Fatalf("%d marker requests after the load, want 1", len(h.markers))
	}
	if m := h.markers[0]; !m.Commit || m.CoordinatorEpoch != 6 || m.ProducerEpoch != epoch ||
		!slices.Equal(m.Partitions, []TopicPartition{tp("t1", 0), tp("t1", 1)}) {
		t.Fatalf("resumed marker request %+v", m)
	}
	wantCode(t, "EndTxn retry during the resumed markers", h.end("tx", pid, epoch, true), kerr.ConcurrentTransactions)
	h.flushMarkers()
	if got := h.state("tx"); got != "CompleteCommit" {
		t.Fatalf("state %s, want CompleteCommit", got)
	}
	if got, want := h.logStates(p), []string{"Empty", "Ongoing", "PrepareCommit", "CompleteCommit"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	wantCode(t, "EndTxn after failover", h.end("tx", pid, epoch, true), nil)
	// And a reload of the completed log holds no prepared transaction.
	n := len(h.sent)
	h.c = New(testConfig())
	h.load(p, 7)
	if len(h.sent) != n || h.state("tx") != "CompleteCommit" {
		t.Fatalf("reloading a completed transaction sent markers or changed it (%s)", h.state("tx"))
	}
}

// Markers that fail with retriable errors are sent again after the
// backoff; a partition deleted meanwhile needs none; a fencing error stops
// the coordinator from sending more.
func TestMarkerRetries(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(1)
	pid, epoch := h.init("tx")
	h.add("tx", pid, epoch, tp("t1", 0), tp("t1", 1), tp("t2", 0))
	fail := map[TopicPartition]int{tp("t1", 0): 1}
	h.markerCode = func(m MarkerRequest, p TopicPartition) int16 {
		if fail[p] > 0 {
			fail[p]--
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}
	h.holdMarkers = true
	wantCode(t, "EndTxn", h.end("tx", pid, epoch, true), nil)
	m := h.markers[0]
	h.markers = nil
	// The leader of t1 answers; t2 was deleted.
	h.apply(h.c.MarkersWritten(h.now, m.ID, []MarkerResult{{Partition: tp("t1", 0), Code: kerr.NotLeaderForPartition.Code}, {Partition: tp("t1", 1)}}))
	h.apply(h.c.MarkersWritten(h.now, m.ID, []MarkerResult{{Partition: tp("t2", 0), Gone: true}}))
	if d := h.describe("tx"); d.State != "PrepareCommit" || len(d.Topics) != 1 || !slices.Equal(d.Topics[0].Partitions, []int32{0}) {
		t.Fatalf("described as %+v, want PrepareCommit with t1-0 left", d)
	}
	if len(h.markers) != 0 {
		t.Fatal("marker retried before the backoff")
	}
	h.holdMarkers = false
	h.advance(testConfig().RetryBackoff)
	if got := h.state("tx"); got != "PrepareCommit" {
		t.Fatalf("state %s after a failed retry, want PrepareCommit", got)
	}
	h.advance(testConfig().RetryBackoff)
	if got := h.state("tx"); got != "CompleteCommit" {
		t.Fatalf("state %s after retries, want CompleteCommit", got)
	}
	if n := len(h.sent); n != 3 {
		t.Fatalf("%d marker requests, want the first and two retries", n)
	}

	// A fenced coordinator stops.
	h.add("tx", pid, epoch, tp("t1", 0))
	h.markerCode = func(MarkerRequest, TopicPartition) int16 { return kerr.TransactionCoordinatorFenced.Code }
	wantCode(t, "EndTxn", h.end("tx", pid, epoch, false), nil)
	n := len(h.sent)
	h.advance(time.Second)
	if len(h.sent) != n || h.state("tx") != "PrepareAbort" {
		t.Fatalf("a fenced coordinator went on (%d more requests, state %s)", len(h.sent)-n, h.state("tx"))
	}
}

// KIP-360: a producer names its id and epoch to bump the epoch after an
// error; a retry of a bump gets the same answer; a stale epoch is fenced.
func TestInitProducerIDKIP360(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(1)
	pid, epoch := h.init("tx")
	with := func(p int64, e int16) *kmsg.InitProducerIDRequest {
		r := initReq("tx", 60000)
		r.ProducerID, r.ProducerEpoch = p, e
		return r
	}
	if p, e := h.initOK(with(pid, epoch)); p != pid || e != epoch+1 {
		t.Fatalf("bump gave %d/%d, want %d/%d", p, e, pid, epoch+1)
	}
	if p, e := h.initOK(with(pid, epoch)); p != pid || e != epoch+1 {
		t.Fatalf("retried bump gave %d/%d, want %d/%d again", p, e, pid, epoch+1)
	}
	wantCode(t, "stale epoch", h.answer(h.send(with(pid, epoch+5))).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.ProducerFenced)
	wantCode(t, "other producer id", h.answer(h.send(with(pid+1, epoch))).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.ProducerFenced)
	old := with(pid+1, epoch)
	old.Version = 3
	wantCode(t, "other producer id, v3", h.answer(h.send(old)).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.InvalidProducerEpoch)
	half := with(pid, -1)
	wantCode(t, "producer id without epoch", h.answer(h.send(half)).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.InvalidRequest)
}

// An exhausted epoch rotates the producer id.
func TestEpochExhaustion(t *testing.T) {
	h := newHarness(t, testConfig())
	p := coordinator.PartitionFor("tx", 4)
	h.log[p] = []Record{encodeTransit("tx", &transit{producerID: 77, epoch: 32766, timeoutMs: 60000, state: CompleteCommit,
		partitions: partitionSet{}, startMs: 1, updateMs: 2})}
	h.lead(1)
	pid, epoch := h.init("tx")
	if pid == 77 || epoch != 0 {
		t.Fatalf("exhausted epoch gave %d/%d, want a new producer id at epoch 0", pid, epoch)
	}
	// A KIP-360 retry of the rotation, naming the old id at the exhausted
	// epoch, is not fenced (the previous id is remembered).
	h2 := newHarness(t, testConfig())
	h2.log[p] = h.log[p][:1]
	h2.lead(1)
	r := initReq("tx", 60000)
	r.ProducerID, r.ProducerEpoch = 77, 32766
	p1, e1 := h2.initOK(r)
	if p1 == 77 || e1 != 0 {
		t.Fatalf("KIP-360 rotation gave %d/%d", p1, e1)
	}
	if p2, e2 := h2.initOK(r); p2 != p1 || e2 != 0 {
		t.Fatalf("retried rotation gave %d/%d, want %d/0", p2, e2, p1)
	}
}

// Error codes of InitProducerId as Kafka answers them.
func TestInitProducerIDErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	code := func(r *kmsg.InitProducerIDRequest) int16 {
		return h.answer(h.send(r)).(*kmsg.InitProducerIDResponse).ErrorCode
	}
	wantCode(t, "not led", code(initReq("tx", 60000)), kerr.NotCoordinator)
	h.apply(h.c.BeginLoad(h.now, coordinator.PartitionFor("tx", 4)))
	wantCode(t, "loading", code(initReq("tx", 60000)), kerr.CoordinatorLoadInProgress)
	h.lead(1)
	wantCode(t, "empty id", code(initReq("", 60000)), kerr.InvalidRequest)
	wantCode(t, "zero timeout", code(initReq("tx", 0)), kerr.InvalidTransactionTimeout)
	wantCode(t, "timeout above the max", code(initReq("tx", 900001)), kerr.InvalidTransactionTimeout)
	wantCode(t, "timeout at the max", code(initReq("tx", 900000)), nil)
	// Without a transactional id: a new producer id.
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version = 4
	resp := h.answer(h.send(r)).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID < 1000 || resp.ProducerEpoch != 0 {
		t.Fatalf("idempotent InitProducerId answered %+v", resp)
	}
	// A change being written: CONCURRENT_TRANSACTIONS.
	pid, epoch := h.init("tx2")
	h.holdWrites = true
	tok := h.send(addReq("tx2", pid, epoch, tp("t1", 0)))
	h.unanswered(tok)
	wantCode(t, "InitProducerId during a write", code(initReq("tx2", 60000)), kerr.ConcurrentTransactions)
	wantCode(t, "EndTxn during a write", h.end("tx2", pid, epoch, true), kerr.ConcurrentTransactions)
	h.flushWrites()
	wantCode(t, "AddPartitions once written", addCode(t, h.answer(tok)), nil)
}

// Producer ids come in blocks the driver fetches; InitProducerId waits
// for one, or gets COORDINATOR_LOAD_IN_PROGRESS if none can be had.
func TestProducerIDBlocks(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(1)
	h.holdPIDs = true
	tok := h.send(initReq("a", 60000))
	tok2 := h.send(initReq("b", 60000))
	h.unanswered(tok)
	if !h.needPIDs {
		t.Fatal("no producer ids asked for")
	}
	h.supplyPIDs(10)
	a := h.answer(tok).(*kmsg.InitProducerIDResponse)
	b := h.answer(tok2).(*kmsg.InitProducerIDResponse)
	if a.ProducerID != 1000 || b.ProducerID != 1001 {
		t.Fatalf("producer ids %d and %d, want 1000 and 1001", a.ProducerID, b.ProducerID)
	}
	// At 90% of the block, the next is asked for ahead of time.
	for i := range 7 {
		h.init(string(rune('c' + i)))
	}
	if !h.needPIDs {
		t.Fatal("next block not prefetched")
	}
	h.supplyPIDs(10)
	h.init("x")
	p, _ := h.init("y")
	if p != 1010 {
		t.Fatalf("first id of the second block is %d, want 1010", p)
	}
	// Failure answers the waiting requests.
	h.c.pids = nil
	tok = h.send(initReq("w", 60000))
	h.needPIDs = false
	h.apply(h.c.ProducerIDsFailed(h.now))
	wantCode(t, "no producer ids", h.answer(tok).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.CoordinatorLoadInProgress)
}

// Error codes of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn.
func TestRequestErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(1)
	pid, epoch := h.init("tx")
	add := func(version int16, id string, pid int64, epoch int16, tps ...TopicPartition) map[TopicPartition]int16 {
		r := addReq(id, pid, epoch, tps...)
		r.Version = version
		return addCodes(h.answer(h.send(r)))
	}
	one := func(codes map[TopicPartition]int16) int16 {
		for _, c := range codes {
			return c
		}
		return -1
	}
	wantCode(t, "unknown transactional id", one(add(3, "nope", pid, epoch, tp("t1", 0))), kerr.InvalidProducerIDMapping)
	wantCode(t, "other producer id", one(add(3, "tx", pid+1, epoch, tp("t1", 0))), kerr.InvalidProducerIDMapping)
	wantCode(t, "other epoch", one(add(3, "tx", pid, epoch+1, tp("t1", 0))), kerr.ProducerFenced)
	wantCode(t, "other epoch v1", one(add(1, "tx", pid, epoch+1, tp("t1", 0))), kerr.InvalidProducerEpoch)
	wantCode(t, "empty id", one(add(3, "", pid, epoch, tp("t1", 0))), kerr.InvalidRequest)
	codes := add(3, "tx", pid, epoch, tp("t1", 0), tp("t1", 3), tp("nope", 0))
	wantCode(t, "existing partition beside unknown ones", codes[tp("t1", 0)], kerr.OperationNotAttempted)
	wantCode(t, "partition beyond the topic", codes[tp("t1", 3)], kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", codes[tp("nope", 0)], kerr.UnknownTopicOrPartition)
	if h.state("tx") != "Empty" {
		t.Fatal("a refused AddPartitionsToTxn changed the transaction")
	}

	wantCode(t, "EndTxn of an Empty transaction", h.end("tx", pid, epoch, true), kerr.InvalidTxnState)
	wantCode(t, "EndTxn of an unknown id", h.end("nope", pid, epoch, true), kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn of another producer id", h.end("tx", pid+1, epoch, true), kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn of another epoch", h.end("tx", pid, epoch+1, true), kerr.ProducerFenced)
	wantCode(t, "EndTxn with an empty id", h.end("", pid, epoch, true), kerr.InvalidRequest)

	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.Version = 1
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx", pid, epoch+1, "g"
	wantCode(t, "AddOffsetsToTxn v1 of another epoch", h.answer(h.send(ao)).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.InvalidProducerEpoch)

	d := h.describe("nope")
	wantCode(t, "DescribeTransactions of an unknown id", d.ErrorCode, kerr.TransactionalIDNotFound)
	wantCode(t, "DescribeTransactions of an empty id", h.describe("").ErrorCode, kerr.InvalidRequest)

	// A write that fails is answered with Kafka's translation and leaves
	// nothing pending.
	h.holdWrites = true
	tok := h.send(addReq("tx", pid, epoch, tp("t1", 0)))
	w := h.writes[0]
	h.writes = nil
	h.persist(w, kerr.NotLeaderForPartition)
	wantCode(t, "AddPartitions whose write failed", addCode(t, h.answer(tok)), kerr.NotCoordinator)
	tok = h.send(addReq("tx", pid, epoch, tp("t1", 0)))
	w = h.writes[0]
	h.writes = nil
	h.persist(w, kerr.NotEnoughReplicas)
	wantCode(t, "AddPartitions whose write timed out", addCode(t, h.answer(tok)), kerr.CoordinatorNotAvailable)
	h.holdWrites = false
	h.add("tx", pid, epoch, tp("t1", 0))
}

// VerifyOnly (KIP-890): brokers ask whether partitions are in the
// transaction before they accept a transactional produce.
func TestVerifyOnly(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(1)
	pid, epoch := h.init("tx")
	h.add("tx", pid, epoch, tp("t1", 0))
	verify := func(id string, pid int64, epoch int16, tps ...TopicPartition) map[TopicPartition]int16 {
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.Version = 4
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
		for _, p := range tps {
			tx.Topics = append(tx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: p.Topic, Partitions: []int32{p.Partition}})
		}
		r.Transactions = append(r.Transactions, tx)
		n := len(h.log[coordinator.PartitionFor(id, 4)])
		codes := addCodes(h.answer(h.send(r)))
		if len(h.log[coordinator.PartitionFor(id, 4)]) != n {
			t.Fatal("VerifyOnly wrote")
		}
		return codes
	}
	codes := verify("tx", pid, epoch, tp("t1", 0), tp("t1", 1))
	wantCode(t, "partition in the transaction", codes[tp("t1", 0)], nil)
	wantCode(t, "partition not in the transaction", codes[tp("t1", 1)], kerr.TransactionAbortable)
	wantCode(t, "stale epoch", verify("tx", pid, epoch-1, tp("t1", 0))[tp("t1", 0)], kerr.ProducerFenced)
	wantCode(t, "unknown id", verify("nope", pid, epoch, tp("t1", 0))[tp("t1", 0)], kerr.InvalidProducerIDMapping)
	wantCode(t, "unknown partition", verify("tx", pid, epoch, tp("zz", 0))[tp("zz", 0)], kerr.UnknownTopicOrPartition)
	h.holdMarkers = true
	wantCode(t, "EndTxn", h.end("tx", pid, epoch, true), nil)
	wantCode(t, "prepared transaction", verify("tx", pid, epoch, tp("t1", 0))[tp("t1", 0)], kerr.ConcurrentTransactions)
	h.flushMarkers()
	// After the commit, a late produce to the old transaction's partition
	// is not in any transaction.
	wantCode(t, "completed transaction", verify("tx", pid, epoch, tp("t1", 0))[tp("t1", 0)], kerr.TransactionAbortable)

	// A batch of transactions, some of another coordinator: each answered
	// on its own, in one response.
	other := "other"
	for i := 0; coordinator.PartitionFor(other, 4) == coordinator.PartitionFor("tx", 4); i++ {
		other = fmt.Sprintf("other%d", i)
	}
	h.c.UnloadPartition(h.now, coordinator.PartitionFor(other, 4))
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = 4
	for _, id := range []string{"tx", other} {
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
		tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t2", Partitions: []int32{0}}}
		r.Transactions = append(r.Transactions, tx)
	}
	resp := h.answer(h.send(r)).(*kmsg.AddPartitionsToTxnResponse)
	if len(resp.Transactions) != 2 || resp.Transactions[0].TransactionalID != "tx" ||
		resp.Transactions[1].Topics[0].Partitions[0].ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("batched verification answered %+v", resp.Transactions)
	}
}

func TestListTransactions(t *testing.T) {
	h := newHarness(t, testConfig())
	h.lead(1)
	pa, ea := h.init("a")
	pb, _ := h.init("b")
	h.add("a", pa, ea, tp("t1", 0))
	h.now = h.now.Add(10 * time.Second)
	list := func(version int16, states []string, pids []int64, durationMs int64) *kmsg.ListTransactionsResponse {
		r := kmsg.NewPtrListTransactionsRequest()
		r.Version = version
		r.StateFilters, r.ProducerIDFilters, r.DurationFilterMillis = states, pids, durationMs
		return h.answer(h.send(r)).(*kmsg.ListTransactionsResponse)
	}
	ids := func(r *kmsg.ListTransactionsResponse) []string {
		var out []string
		for _, s := range r.TransactionStates {
			out = append(out, s.TransactionalID+":"+s.TransactionState)
		}
		return out
	}
	if got := ids(list(0, nil, nil, -1)); !slices.Equal(got, []string{"a:Ongoing", "b:Empty"}) {
		t.Fatalf("all: %v", got)
	}
	if got := ids(list(0, []string{"Ongoing"}, nil, -1)); !slices.Equal(got, []string{"a:Ongoing"}) {
		t.Fatalf("Ongoing: %v", got)
	}
	if got := ids(list(0, nil, []int64{pb}, -1)); !slices.Equal(got, []string{"b:Empty"}) {
		t.Fatalf("producer %d: %v", pb, got)
	}
	r := list(0, []string{"Bogus"}, nil, -1)
	if !slices.Equal(r.UnknownStateFilters, []string{"Bogus"}) || len(r.TransactionStates) != 2 {
		t.Fatalf("unknown state filter answered %+v", r)
	}
	if got := ids(list(1, []string{"Ongoing"}, nil, 20000)); len(got) != 0 {
		t.Fatalf("running longer than 20 s: %v", got)
	}
	if got := ids(list(1, []string{"Ongoing"}, nil, 5000)); !slices.Equal(got, []string{"a:Ongoing"}) {
		t.Fatalf("running longer than 5 s: %v", got)
	}
	h.apply(h.c.BeginLoad(h.now, 0))
	h.c.parts[0].loading = true
	wantCode(t, "ListTransactions while loading", list(0, nil, nil, -1).ErrorCode, kerr.CoordinatorLoadInProgress)
}

// Transactional ids unused for transactional.id.expiration.ms are removed
// with a tombstone; ongoing ones stay.
func TestExpiration(t *testing.T) {
	cfg := testConfig()
	cfg.IDExpiration = time.Hour
	cfg.RemoveExpiredInterval = time.Minute
	cfg.AbortTimedOutInterval = 3 * time.Hour
	h := newHarness(t, cfg)
	h.lead(1)
	h.init("idle")
	pid, epoch := h.initOK(initReq("busy", 900000))
	h.add("busy", pid, epoch, tp("t1", 0))
	h.advance(61 * time.Minute)
	wantCode(t, "expired id", h.describe("idle").ErrorCode, kerr.TransactionalIDNotFound)
	if h.state("busy") != "Ongoing" {
		t.Fatal("an ongoing transaction expired")
	}
	p := coordinator.PartitionFor("idle", 4)
	if got := h.logStates(p); got[len(got)-1] != "tombstone" {
		t.Fatalf("records %v, want a tombstone last", got)
	}
	// Reloaded, the tombstone removes the id.
	h.c = New(cfg)
	h.c.SetTopics(map[string]int32{"t1": 3})
	h.lead(2)
	wantCode(t, "expired id after reload", h.describe("idle").ErrorCode, kerr.TransactionalIDNotFound)
	if h.state("busy") != "Ongoing" {
		t.Fatal("ongoing transaction lost in the reload")
	}
	// A new InitProducerId of the expired id starts over with a new
	// producer id.
	if p, e := h.init("idle"); e != 0 || p == pid {
		t.Fatalf("expired id re-initialized as %d/%d", p, e)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	in := &transit{producerID: 5, epoch: 3, timeoutMs: 60000, state: Ongoing,
		partitions: partitionSet{tp("b", 1): {}, tp("a", 2): {}, tp("a", 0): {}}, startMs: 10, updateMs: 20}
	r := encodeTransit("id", in)
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		t.Fatal(err)
	}
	if v.Version != 0 || v.Topics[0].Topic != "a" || !slices.Equal(v.Topics[0].Partitions, []int32{0, 2}) || v.State != 1 {
		t.Fatalf("value %+v", v)
	}
	id, m, ok, err := decodeRecord(r)
	if err != nil || !ok || id != "id" || m.producerID != 5 || m.epoch != 3 || len(m.partitions) != 3 || m.startMs != 10 {
		t.Fatalf("decoded %q %+v %v %v", id, m, ok, err)
	}
	empty := encodeTransit("id", &transit{producerID: 5, state: Empty, partitions: partitionSet{}})
	v = kmsg.TxnMetadataValue{}
	if err := v.ReadFrom(empty.Value); err != nil || v.Topics != nil {
		t.Fatalf("Empty written with topics %v (%v)", v.Topics, err)
	}
	if _, _, _, err := decodeRecord(Record{Key: encodeKey("x"), Value: []byte{0, 0, 1}}); err == nil {
		t.Fatal("truncated value decoded")
	}
	if _, _, ok, err := decodeRecord(Record{Key: []byte{0, 9, 0, 0}}); ok || err != nil {
		t.Fatal("key of another version not skipped")
	}
}

func TestPartitionFor(t *testing.T) {
	// Values from Kafka: Utils.abs("my-txn".hashCode()) % 50.
	for _, c := range []struct {
		id   string
		want int32
	}{{"", 0}, {"a", 47}, {"my-transactional-id", javaMod("my-transactional-id")}} {
		if got := coordinator.PartitionFor(c.id, 50); got != c.want {
			t.Errorf("coordinator.PartitionFor(%q) = %d, want %d", c.id, got, c.want)
		}
	}
}

// javaMod computes the partition with int64 arithmetic, as a check of
// the int32 overflow in PartitionFor.
func javaMod(s string) int32 {
	var h int64
	for _, r := range s {
		h = (31*h + int64(r)) & 0xffffffff
	}
	v := int32(uint32(h))
	if v < 0 {
		v = -v
	}
	return v % 50
}

// Records that cannot be decoded (as a client could have produced into
// __transaction_state) are skipped and reported; the partition loads with
// the records around them and serves.
func TestLoadSkipsUnreadableRecords(t *testing.T) {
	h := newHarness(t, testConfig())
	p := coordinator.PartitionFor("tx", 4)
	h.lead(5)
	pid, epoch := h.init("tx")
	good := h.log[p]
	garbage := []Record{
		{Key: []byte{0}},                                 // too short for a version
		{Key: []byte{0, 0, 0, 9, 't'}},                   // a truncated key
		{Key: encodeKey("junk"), Value: []byte{0, 1, 2}}, // a truncated value
		{Key: encodeKey("junk"), Value: (&kmsg.TxnMetadataValue{Version: 7}).AppendTo(nil)}, // an unknown value version
	}
	h.log[p] = append(append(append([]Record{}, garbage[:2]...), good...), garbage[2:]...)
	h.c = New(testConfig())
	h.c.SetTopics(map[string]int32{"t1": 3})
	h.apply(h.c.BeginLoad(h.now, p))
	r, skipped := h.c.LoadPartition(h.now, p, 6, h.log[p])
	if len(skipped) != len(garbage) {
		t.Fatalf("skipped %d records (%v), want %d", len(skipped), skipped, len(garbage))
	}
	for _, err := range skipped {
		if !errors.Is(err, ErrBadRecord) {
			t.Fatalf("skip reported as %v", err)
		}
	}
	h.apply(r)
	if p2, e2 := h.init("tx"); p2 != pid || e2 != epoch+1 {
		t.Fatalf("after the load InitProducerId gave %d/%d, want %d/%d", p2, e2, pid, epoch+1)
	}
}
