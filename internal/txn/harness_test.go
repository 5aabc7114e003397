package txn

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a Coordinator as the Service does, with a fake clock, an
// in-memory __transaction_state and partition leaders that answer markers
// as told.
type harness struct {
	t   *testing.T
	c   *Coordinator
	now time.Time
	tok uint64

	resps map[uint64]kmsg.Response
	// log holds what was persisted, per partition.
	log map[int32][]Record
	// holdWrites keeps writes in writes instead of persisting them.
	holdWrites bool
	writes     []Write
	// holdMarkers keeps marker requests in markers; otherwise each
	// partition is answered markerCode (0 by default).
	holdMarkers bool
	markers     []MarkerRequest
	markerCode  func(MarkerRequest, TopicPartition) int16
	sent        []MarkerRequest // every marker request, in order
	// holdPIDs leaves NeedProducerIDs unanswered.
	holdPIDs bool
	needPIDs bool
	nextPID  int64
	deadline time.Time
}

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func testConfig() Config {
	c := DefaultConfig()
	c.StatePartitions = 4
	c.OffsetsPartitions = 10
	return c
}

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, c: New(cfg), now: t0, resps: map[uint64]kmsg.Response{}, log: map[int32][]Record{}, nextPID: 1000}
	h.c.SetTopics(map[string]int32{"t1": 3, "t2": 1, OffsetsTopic: cfg.OffsetsPartitions})
	return h
}

// lead loads every partition of __transaction_state at epoch.
func (h *harness) lead(epoch int32) {
	for p := range h.c.cfg.StatePartitions {
		h.load(p, epoch)
	}
}

func (h *harness) load(p, epoch int32) {
	h.apply(h.c.BeginLoad(h.now, p))
	r, err := h.c.LoadPartition(h.now, p, epoch, h.log[p])
	if err != nil {
		h.t.Fatalf("loading partition %d: %v", p, err)
	}
	h.apply(r)
}

func (h *harness) apply(r Ready) {
	for _, resp := range r.Responses {
		if _, dup := h.resps[resp.Token]; dup {
			h.t.Fatalf("request %d answered twice", resp.Token)
		}
		h.resps[resp.Token] = resp.Body
	}
	h.deadline = r.Deadline
	if r.NeedProducerIDs {
		if h.needPIDs {
			h.t.Fatal("NeedProducerIDs set twice")
		}
		h.needPIDs = true
	}
	for _, w := range r.Writes {
		if h.holdWrites {
			h.writes = append(h.writes, w)
			continue
		}
		h.persist(w, nil)
	}
	for _, m := range r.Markers {
		h.sent = append(h.sent, m)
		if h.holdMarkers {
			h.markers = append(h.markers, m)
			continue
		}
		h.answerMarkers(m)
	}
	if h.needPIDs && !h.holdPIDs {
		h.supplyPIDs(10)
	}
}

func (h *harness) supplyPIDs(n int32) {
	h.needPIDs = false
	first := h.nextPID
	h.nextPID += int64(n)
	h.apply(h.c.SupplyProducerIDs(h.now, first, n))
}

func (h *harness) persist(w Write, err error) {
	if err == nil {
		h.log[w.Partition] = append(h.log[w.Partition], w.Records...)
	}
	h.apply(h.c.Persisted(h.now, w.ID, err))
}

// flushWrites persists the held writes.
func (h *harness) flushWrites() {
	for len(h.writes) > 0 {
		w := h.writes[0]
		h.writes = h.writes[1:]
		h.persist(w, nil)
	}
}

func (h *harness) answerMarkers(m MarkerRequest) {
	var rs []MarkerResult
	for _, tp := range m.Partitions {
		code := int16(0)
		if h.markerCode != nil {
			code = h.markerCode(m, tp)
		}
		rs = append(rs, MarkerResult{Partition: tp, Code: code})
	}
	h.apply(h.c.MarkersWritten(h.now, m.ID, rs))
}

// flushMarkers answers the held marker requests.
func (h *harness) flushMarkers() {
	for len(h.markers) > 0 {
		m := h.markers[0]
		h.markers = h.markers[1:]
		h.answerMarkers(m)
	}
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	for !h.deadline.IsZero() && !h.deadline.After(h.now) {
		h.apply(h.c.Tick(h.now))
	}
}

// send handles a request and returns its token.
func (h *harness) send(body kmsg.Request) uint64 {
	h.tok++
	h.apply(h.c.Handle(h.now, Request{Token: h.tok, Body: body}))
	return h.tok
}

// answer returns the response to token, failing if there is none yet.
func (h *harness) answer(tok uint64) kmsg.Response {
	h.t.Helper()
	r, ok := h.resps[tok]
	if !ok {
		h.t.Fatalf("request %d not answered", tok)
	}
	return r
}

func (h *harness) unanswered(tok uint64) {
	h.t.Helper()
	if r, ok := h.resps[tok]; ok {
		h.t.Fatalf("request %d answered early: %+v", tok, r)
	}
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(w))
	}
}

// Request builders (newest versions unless a test sets Version).

func initReq(id string, timeoutMs int32) *kmsg.InitProducerIDRequest {
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version = 5
	r.TransactionalID = &id
	r.TransactionTimeoutMillis = timeoutMs
	return r
}

func (h *harness) init(id string) (int64, int16) {
	h.t.Helper()
	return h.initOK(initReq(id, 60000))
}

func (h *harness) initOK(r *kmsg.InitProducerIDRequest) (int64, int16) {
	h.t.Helper()
	resp := h.answer(h.send(r)).(*kmsg.InitProducerIDResponse)
	wantCode(h.t, "InitProducerId", resp.ErrorCode, nil)
	return resp.ProducerID, resp.ProducerEpoch
}

func addReq(id string, pid int64, epoch int16, tps ...TopicPartition) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = 3
	r.TransactionalID, r.ProducerID, r.ProducerEpoch = id, pid, epoch
	for _, tp := range tps {
		i := slices.IndexFunc(r.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) bool { return t.Topic == tp.Topic })
		if i < 0 {
			r.Topics = append(r.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: tp.Topic})
			i = len(r.Topics) - 1
		}
		r.Topics[i].Partitions = append(r.Topics[i].Partitions, tp.Partition)
	}
	return r
}

// addCodes returns the code of each partition of a v0-3 answer.
func addCodes(resp kmsg.Response) map[TopicPartition]int16 {
	out := map[TopicPartition]int16{}
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out[TopicPartition{t.Topic, p.Partition}] = p.ErrorCode
		}
	}
	for _, tx := range r.Transactions {
		for _, t := range tx.Topics {
			for _, p := range t.Partitions {
				out[TopicPartition{t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	return out
}

// addCode is the single code of an AddPartitionsToTxn answer.
func addCode(t *testing.T, resp kmsg.Response) int16 {
	t.Helper()
	codes := addCodes(resp)
	var code int16 = -999
	for _, c := range codes {
		if code != -999 && c != code {
			t.Fatalf("partitions answered differently: %v", codes)
		}
		code = c
	}
	return code
}

func (h *harness) add(id string, pid int64, epoch int16, tps ...TopicPartition) {
	h.t.Helper()
	wantCode(h.t, "AddPartitionsToTxn", addCode(h.t, h.answer(h.send(addReq(id, pid, epoch, tps...)))), nil)
}

func endReq(id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnRequest {
	r := kmsg.NewPtrEndTxnRequest()
	r.Version = 4
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = id, pid, epoch, commit
	return r
}

func (h *harness) end(id string, pid int64, epoch int16, commit bool) int16 {
	h.t.Helper()
	return h.answer(h.send(endReq(id, pid, epoch, commit))).(*kmsg.EndTxnResponse).ErrorCode
}

func (h *harness) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	h.t.Helper()
	r := kmsg.NewPtrDescribeTransactionsRequest()
	r.TransactionalIDs = []string{id}
	return h.answer(h.send(r)).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

func (h *harness) state(id string) string {
	h.t.Helper()
	d := h.describe(id)
	wantCode(h.t, "DescribeTransactions "+id, d.ErrorCode, nil)
	return d.State
}

// logStates decodes the records of partition p: the state of each.
func (h *harness) logStates(p int32) []string {
	var out []string
	for _, r := range h.log[p] {
		_, m, _, err := decodeRecord(r)
		if err != nil {
			h.t.Fatal(err)
		}
		if m == nil {
			out = append(out, "tombstone")
			continue
		}
		out = append(out, m.state.String())
	}
	return out
}

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }
