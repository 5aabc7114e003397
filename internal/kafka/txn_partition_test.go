package kafka_test

// The partition side of transactions over the wire: transactional produce
// checked with the coordinator (KIP-890, a fake here), WriteTxnMarkers,
// read_committed fetches and ListOffsets, DescribeProducers, and the
// errors Kafka answers for bad transactional input.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
	"weir/internal/log"
	"weir/internal/record"
	"weir/internal/servertest"
)

// fakeVerifier stands for the transaction coordinator's verify-only
// AddPartitionsToTxn.
type fakeVerifier struct {
	mu     sync.Mutex
	calls  []string
	answer func(txnID string, pid int64, epoch int16, parts []log.TopicPartition) (map[log.TopicPartition]int16, error)
}

func (f *fakeVerifier) VerifyTxn(_ context.Context, txnID string, pid int64, epoch int16, parts []log.TopicPartition) (map[log.TopicPartition]int16, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprint(txnID, parts))
	answer := f.answer
	f.mu.Unlock()
	if answer == nil {
		return map[log.TopicPartition]int16{}, nil
	}
	return answer(txnID, pid, epoch, parts)
}

func (f *fakeVerifier) set(answer func(string, int64, int16, []log.TopicPartition) (map[log.TopicPartition]int16, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = answer
}

func (f *fakeVerifier) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, prefix string) []byte {
	t.Helper()
	h := batchHeader()
	h.Attributes |= record.TransactionalAttributes
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	return buildBatch(t, h, testRecords(n, prefix))
}

// produceTxn sends a Produce v11 with a transactional id (nil: none).
func (w *wire) produceTxn(txnID *string, parts ...partData) *kmsg.ProduceResponse {
	w.t.Helper()
	req := produceRequest(11, -1, parts...)
	req.TransactionID = txnID
	return w.do(req).(*kmsg.ProduceResponse)
}

func (w *wire) writeMarker(pid int64, epoch int16, commit bool, coordEpoch int32, topic string, parts ...int32) []kmsg.WriteTxnMarkersResponseMarkerTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, parts
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := w.do(req).(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != pid || len(resp.Markers[0].Topics) != 1 {
		w.t.Fatalf("WriteTxnMarkers answered %+v", resp.Markers)
	}
	return resp.Markers[0].Topics[0].Partitions
}

func (w *wire) fetchIsolated(topic string, partition int32, offset int64, isolation int8) kmsg.FetchResponseTopicPartition {
	w.t.Helper()
	req := fetchRequest(0, 0, 64<<20, fetchPart{topic, partition, offset, 64 << 20})
	req.IsolationLevel = isolation
	parts := fetchParts(w.t, w.do(req).(*kmsg.FetchResponse))
	if len(parts) != 1 || parts[0].ErrorCode != 0 {
		w.t.Fatalf("fetch answered %+v", parts)
	}
	return parts[0]
}

func (w *wire) latestOffset(topic string, isolation int8) int64 {
	w.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := w.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	wantOK(w.t, "ListOffsets", p.ErrorCode)
	return p.Offset
}

// batchOffsets lists the base offsets and control flags of fetched bytes.
func batchOffsets(t testing.TB, data []byte) string {
	t.Helper()
	var out []string
	for len(data) > 0 {
		b, rest, err := record.Next(data)
		if err != nil {
			t.Fatal(err)
		}
		s := fmt.Sprint(b.BaseOffset())
		if b.Attributes().Control() {
			s += "c"
		}
		out = append(out, s)
		data = rest
	}
	return fmt.Sprint(out)
}

func TestTransactionalProduceMarkersReadCommitted(t *testing.T) {
	fv := &fakeVerifier{}
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate, TxnVerifier: fv})
	w := dial(t, n.Addr)
	w.createTopic("tx", 1, nil)
	pid, epoch := w.initProducerID()
	id := "t1"

	resp := w.produceTxn(&id, partData{"tx", 0, txnBatch(t, pid, epoch, 0, 2, "a")})
	wantOK(t, "first transactional batch", producePart(t, resp, "tx", 0).ErrorCode)
	if calls := fv.takeCalls(); fmt.Sprint(calls) != "[t1[tx-0]]" {
		t.Fatalf("verifications %v", calls)
	}
	// The transaction is open here: no second check.
	resp = w.produceTxn(&id, partData{"tx", 0, txnBatch(t, pid, epoch, 2, 2, "b")})
	wantOK(t, "second transactional batch", producePart(t, resp, "tx", 0).ErrorCode)
	if calls := fv.takeCalls(); len(calls) != 0 {
		t.Fatalf("verified an open transaction: %v", calls)
	}
	w.produceOK("tx", 0, batchOf(t, 1, "plain")) // 4

	committed := w.fetchIsolated("tx", 0, 0, 1)
	if len(committed.RecordBatches) != 0 || committed.LastStableOffset != 0 || committed.HighWatermark != 5 ||
		committed.AbortedTransactions == nil || len(committed.AbortedTransactions) != 0 {
		t.Fatalf("read_committed with the transaction open: %+v", committed)
	}
	uncommitted := w.fetchIsolated("tx", 0, 0, 0)
	if got := batchOffsets(t, uncommitted.RecordBatches); got != "[0 2 4]" || uncommitted.LastStableOffset != 0 || uncommitted.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted: batches %s, LSO %d, aborted %v", got, uncommitted.LastStableOffset, uncommitted.AbortedTransactions)
	}
	if lc, lu := w.latestOffset("tx", 1), w.latestOffset("tx", 0); lc != 0 || lu != 5 {
		t.Fatalf("latest offsets: read_committed %d, read_uncommitted %d", lc, lu)
	}

	// The coordinator aborts: acks=all (one replica here) then the LSO
	// moves and read_committed consumers learn what to skip.
	for _, p := range w.writeMarker(pid, epoch, false, 3, "tx", 0) {
		wantOK(t, "abort marker", p.ErrorCode)
	}
	committed = w.fetchIsolated("tx", 0, 0, 1)
	if got := batchOffsets(t, committed.RecordBatches); got != "[0 2 4 5c]" || committed.LastStableOffset != 6 ||
		fmt.Sprint(committed.AbortedTransactions) != fmt.Sprint([]kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: pid, FirstOffset: 0}}) {
		t.Fatalf("read_committed after the abort: batches %s, LSO %d, aborted %+v", got, committed.LastStableOffset, committed.AbortedTransactions)
	}

	// Late or stale markers change nothing.
	before := w.logState(n, "tx", 0)
	wantCode(t, "marker from an older coordinator epoch", w.writeMarker(pid, epoch, true, 2, "tx", 0)[0].ErrorCode, kerr.TransactionCoordinatorFenced)
	wantCode(t, "marker of an older producer epoch", w.writeMarker(pid, epoch-1, true, 3, "tx", 0)[0].ErrorCode, kerr.InvalidProducerEpoch)
	wantCode(t, "marker for a partition not here", w.writeMarker(pid, epoch, true, 3, "tx", 7)[0].ErrorCode, kerr.UnknownTopicOrPartition)
	w.unchanged(n, "tx", 0, before)

	// The next transaction is checked again, then committed.
	resp = w.produceTxn(&id, partData{"tx", 0, txnBatch(t, pid, epoch, 4, 1, "c")}) // 6
	wantOK(t, "next transaction", producePart(t, resp, "tx", 0).ErrorCode)
	if calls := fv.takeCalls(); len(calls) != 1 {
		t.Fatalf("verifications of the next transaction: %v", calls)
	}
	wantOK(t, "commit marker", w.writeMarker(pid, epoch, true, 3, "tx", 0)[0].ErrorCode) // 7
	committed = w.fetchIsolated("tx", 0, 6, 1)
	if got := batchOffsets(t, committed.RecordBatches); got != "[6 7c]" || len(committed.AbortedTransactions) != 0 || committed.LastStableOffset != 8 {
		t.Fatalf("read_committed of the committed transaction: %s, aborted %v, LSO %d", got, committed.AbortedTransactions, committed.LastStableOffset)
	}

	// DescribeProducers shows the producer's state.
	dreq := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "tx", []int32{0, 9}
	dreq.Topics = append(dreq.Topics, dt)
	dresp := w.do(dreq).(*kmsg.DescribeProducersResponse)
	parts := dresp.Topics[0].Partitions
	if len(parts) != 2 || parts[0].ErrorCode != 0 || len(parts[0].ActiveProducers) != 1 {
		t.Fatalf("DescribeProducers: %+v", parts)
	}
	wantCode(t, "DescribeProducers of an unknown partition", parts[1].ErrorCode, kerr.UnknownTopicOrPartition)
	ap := parts[0].ActiveProducers[0]
	if ap.ProducerID != pid || ap.ProducerEpoch != int32(epoch) || ap.LastSequence != 4 || ap.CoordinatorEpoch != 3 || ap.CurrentTxnStartOffset != -1 {
		t.Fatalf("active producer %+v", ap)
	}
}

func TestTransactionalProduceRefused(t *testing.T) {
	fv := &fakeVerifier{}
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate, TxnVerifier: fv})
	w := dial(t, n.Addr)
	w.createTopic("tx", 2, nil)
	pid, epoch := w.initProducerID()
	id := "t1"
	tp := log.TopicPartition{Topic: "tx", Partition: 0}

	refused := func(what string, want *kerr.Error, msg string, txnID *string, parts ...partData) {
		t.Helper()
		before := w.logState(n, "tx", 0)
		resp := w.produceTxn(txnID, parts...)
		for _, p := range parts {
			got := producePart(t, resp, p.topic, p.partition)
			wantCode(t, what, got.ErrorCode, want)
			if msg != "" && str(got.ErrorMessage) != msg {
				t.Fatalf("%s: message %q, want %q", what, str(got.ErrorMessage), msg)
			}
		}
		w.unchanged(n, "tx", 0, before)
	}
	batch := partData{"tx", 0, txnBatch(t, pid, epoch, 0, 1, "x")}

	// The coordinator says the partition is not in the transaction.
	fv.set(func(string, int64, int16, []log.TopicPartition) (map[log.TopicPartition]int16, error) {
		return map[log.TopicPartition]int16{tp: kerr.InvalidTxnState.Code}, nil
	})
	refused("partition not in the transaction", kerr.InvalidTxnState, "Partition was not added to the transaction", &id, batch)
	// Coordinator trouble is retriable, as NOT_ENOUGH_REPLICAS.
	fv.set(func(string, int64, int16, []log.TopicPartition) (map[log.TopicPartition]int16, error) {
		return nil, kerr.CoordinatorNotAvailable
	})
	refused("no coordinator", kerr.NotEnoughReplicas,
		"Unable to verify the partition has been added to the transaction. Underlying error: COORDINATOR_NOT_AVAILABLE", &id, batch)
	fv.set(func(string, int64, int16, []log.TopicPartition) (map[log.TopicPartition]int16, error) {
		return nil, errors.New("connection reset")
	})
	refused("coordinator unreachable", kerr.NotEnoughReplicas, "", &id, batch)
	fv.set(func(string, int64, int16, []log.TopicPartition) (map[log.TopicPartition]int16, error) {
		return map[log.TopicPartition]int16{tp: kerr.ProducerFenced.Code}, nil
	})
	refused("fenced producer", kerr.InvalidProducerEpoch, "", &id, batch)

	// A marker that lands while the check is out voids it: the "yes" was
	// about the transaction that just ended.
	w2 := dial(t, n.Addr)
	fv.set(func(string, int64, int16, []log.TopicPartition) (map[log.TopicPartition]int16, error) {
		w2.writeMarker(pid, epoch, false, 0, "tx", 0)
		return map[log.TopicPartition]int16{}, nil
	})
	resp := w.produceTxn(&id, batch)
	wantCode(t, "append after a marker raced the check", producePart(t, resp, "tx", 0).ErrorCode, kerr.InvalidTxnState)
	fv.set(nil)
	fv.takeCalls()

	// Kafka's request-level refusals: a transactional batch needs the
	// transactional id, and one producer per request; every partition
	// of the request gets the error.
	plain := partData{"tx", 1, batchOf(t, 1, "p")}
	refused("transactional batch without a transactional id", kerr.TransactionalIDAuthorizationFailed, "", nil, batch, plain)
	other := partData{"tx", 1, txnBatch(t, pid+1, 0, 0, 1, "y")}
	refused("two producers in one request", kerr.InvalidProducerIDMapping, "", &id, batch, other)
	// Clients may not write control batches.
	refused("a client's control batch", kerr.InvalidRecord, "", &id, partData{"tx", 0, []byte(log.MarkerBatch(pid, epoch, log.Marker{Commit: true}, 1))})
	if calls := fv.takeCalls(); len(calls) != 0 {
		t.Fatalf("refused requests were verified: %v", calls)
	}
	// Without the check (transaction.partition.verification.enable=false)
	// the batch opens the transaction.
	n2 := servertest.Start(t, servertest.Options{Overrides: map[string]string{"auto.create.topics.enable": "false",
		"transaction.partition.verification.enable": "false"}, TxnVerifier: fv})
	w3 := dial(t, n2.Addr)
	w3.createTopic("tx", 1, nil)
	resp = w3.produceTxn(&id, batch)
	wantOK(t, "unverified transactional batch", producePart(t, resp, "tx", 0).ErrorCode)
	if calls := fv.takeCalls(); len(calls) != 0 {
		t.Fatalf("verified with verification off: %v", calls)
	}
}

// A transactional offset commit counts once WriteTxnMarkers commits it on
// the group's __consumer_offsets partition, and never when it aborts.
func TestTxnMarkersReachTheGroupCoordinator(t *testing.T) {
	n := grpNode(t, noTxnVerify) // no transaction coordinator in the loop
	w := dial(t, n.Addr)
	w.createTopic("txo", 1, nil)
	pid, epoch := w.initProducerID()
	fetchOffset := func(group string) (int64, int16) {
		t.Helper()
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Version, of.Group = 7, group
		ot := kmsg.NewOffsetFetchRequestTopic()
		ot.Topic, ot.Partitions = "txo", []int32{0}
		of.Topics = append(of.Topics, ot)
		resp := w.do(of).(*kmsg.OffsetFetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
			t.Fatalf("OffsetFetch: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	for _, commit := range []bool{false, true} {
		g := fmt.Sprintf("g-commit-%v", commit)
		w.awaitCoordinator(g)
		r := txnOffsetCommit(0, g, pid, map[string][]int32{"txo": {0}}, 42)
		r.ProducerEpoch = epoch
		if code := txnCodes(w.do(r).(*kmsg.TxnOffsetCommitResponse))["txo/0"]; code != 0 {
			t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
		}
		if off, _ := fetchOffset(g); off != -1 {
			t.Fatalf("offset %d visible before the marker", off)
		}
		p := coordinator.PartitionFor(g, 50)
		wantOK(t, "marker", w.writeMarker(pid, epoch, commit, 0, "__consumer_offsets", p)[0].ErrorCode)
		want := int64(-1)
		if commit {
			want = 42
		}
		if off, code := fetchOffset(g); off != want || code != 0 {
			t.Fatalf("commit=%v: offset %d (%v), want %d", commit, off, kerr.ErrorForCode(code), want)
		}
	}
}
