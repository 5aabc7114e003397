package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/coordinator"
)

// noTxnVerify lets TxnOffsetCommit write without the KIP-890 check, for
// tests that play the transaction coordinator themselves.
var noTxnVerify = map[string]string{"transaction.partition.verification.enable": "false"}

// txnOffsetCommit builds a TxnOffsetCommit of producer pid (epoch 0)
// committing offset off for each topic's partitions.
func txnOffsetCommit(version int16, group string, pid int64, parts map[string][]int32, off int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version, r.TransactionalID, r.Group, r.ProducerID = version, "tx", group, pid
	for _, topic := range []string{"txo", "nope"} {
		ps, ok := parts[topic]
		if !ok {
			continue
		}
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = topic
		for _, p := range ps {
			tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			tp.Partition, tp.Offset = p, off
			t.Partitions = append(t.Partitions, tp)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// txnCodes flattens a TxnOffsetCommit response into "topic/partition" ->
// code.
func txnCodes(resp *kmsg.TxnOffsetCommitResponse) map[string]int16 {
	out := make(map[string]int16)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%s/%d", t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

// awaitCoordinator looks the group up until its coordinator has loaded
// (a fresh node creates __consumer_offsets on the first lookup).
func (w *wire) awaitCoordinator(group string) {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKey = 3, group
		fr := w.do(fc).(*kmsg.FindCoordinatorResponse)
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Version, of.Group = 7, group
		if fr.ErrorCode == 0 && w.do(of).(*kmsg.OffsetFetchResponse).ErrorCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("coordinator of %s not ready: %v", group, kerr.ErrorForCode(fr.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TxnOffsetCommit: ApiVersions advertises v0-v4; partitions the broker
// does not know answer UNKNOWN_TOPIC_OR_PARTITION while the others get the
// coordinator's answer.
func TestTxnOffsetCommitRouting(t *testing.T) {
	n := grpNode(t, noTxnVerify)
	w := dial(t, n.Addr)
	av := w.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	found := false
	for _, k := range av.ApiKeys {
		found = found || k.ApiKey == 28 && k.MinVersion == 0 && k.MaxVersion == 4
	}
	if !found {
		t.Fatal("ApiVersions does not list TxnOffsetCommit v0-4")
	}
	w.createTopic("txo", 2, nil)
	w.awaitCoordinator("g-txo")

	r := txnOffsetCommit(3, "g-txo", 1, map[string][]int32{"txo": {0, 7}, "nope": {0}}, 5)
	r.Generation, r.MemberID = 3, "m"
	got := txnCodes(w.do(r).(*kmsg.TxnOffsetCommitResponse))
	wantCode(t, "unknown group with a generation", got["txo/0"], kerr.IllegalGeneration)
	wantCode(t, "unknown partition", got["txo/7"], kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", got["nope/0"], kerr.UnknownTopicOrPartition)

	r = txnOffsetCommit(0, "", 1, map[string][]int32{"txo": {0}}, 5)
	wantCode(t, "empty group id", txnCodes(w.do(r).(*kmsg.TxnOffsetCommitResponse))["txo/0"], kerr.InvalidGroupID)

	// Only unknown partitions: answered without the coordinator.
	r = txnOffsetCommit(4, "g-txo", 1, map[string][]int32{"nope": {1}}, 5)
	wantCode(t, "only unknown", txnCodes(w.do(r).(*kmsg.TxnOffsetCommitResponse))["nope/1"], kerr.UnknownTopicOrPartition)
}

// offsetsPartitionOf is the __consumer_offsets partition of a group, from
// the topic's partition count in Metadata.
func (w *wire) offsetsPartitionOf(groupID string) int32 {
	w.t.Helper()
	mr := kmsg.NewPtrMetadataRequest()
	mr.Version = 12
	topic := "__consumer_offsets"
	mr.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	resp := w.do(mr).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 {
		w.t.Fatalf("no %s in Metadata", topic)
	}
	return coordinator.PartitionFor(groupID, int32(len(resp.Topics[0].Partitions)))
}

// txnMarker sends WriteTxnMarkers for one producer and __consumer_offsets
// partition, as a transaction coordinator does, and returns its code.
func (w *wire) txnMarker(pid int64, epoch int16, commit bool, p int32) int16 {
	w.t.Helper()
	r := kmsg.NewPtrWriteTxnMarkersRequest()
	r.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, 0
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "__consumer_offsets", Partitions: []int32{p}}}
	r.Markers = append(r.Markers, m)
	resp := w.do(r).(*kmsg.WriteTxnMarkersResponse)
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// fetchTxo is an OffsetFetch v7 of txo/0: the offset and the code.
func (w *wire) fetchTxo(group string, stable bool) (int64, int16) {
	w.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version, r.Group, r.RequireStable = 7, group, stable
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "txo", Partitions: []int32{0}}}
	resp := w.do(r).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("OffsetFetch of %s: %v %+v", group, kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// A transactional commit is invisible, and unstable for require_stable
// fetches, until WriteTxnMarkers writes its producer's COMMIT to the
// group's __consumer_offsets partition; an ABORT drops it; a stale
// producer epoch is fenced; and a restart replays all of it from the log.
func TestTxnOffsetCommitMarkers(t *testing.T) {
	n := grpNode(t, noTxnVerify)
	w := dial(t, n.Addr)
	w.createTopic("txo", 2, nil)
	const g, pid = "g-txm", int64(4000)
	w.awaitCoordinator(g)
	p := w.offsetsPartitionOf(g)

	commit := func(epoch int16, off int64) int16 {
		r := txnOffsetCommit(3, g, pid, map[string][]int32{"txo": {0}}, off)
		r.ProducerEpoch = epoch
		return txnCodes(w.do(r).(*kmsg.TxnOffsetCommitResponse))["txo/0"]
	}
	wantOK(t, "txn commit", commit(0, 5))
	if off, code := w.fetchTxo(g, false); off != -1 || code != 0 {
		t.Fatalf("pending offset visible: %d %v", off, kerr.ErrorForCode(code))
	}
	if _, code := w.fetchTxo(g, true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable while pending: %v", kerr.ErrorForCode(code))
	}
	wantOK(t, "commit marker", w.txnMarker(pid, 0, true, p))
	if off, code := w.fetchTxo(g, true); off != 5 || code != 0 {
		t.Fatalf("after COMMIT: %d %v", off, kerr.ErrorForCode(code))
	}

	wantOK(t, "second txn commit", commit(0, 9))
	wantOK(t, "abort marker", w.txnMarker(pid, 0, false, p))
	if off, code := w.fetchTxo(g, true); off != 5 || code != 0 {
		t.Fatalf("after ABORT: %d %v", off, kerr.ErrorForCode(code))
	}

	// A new epoch (as InitProducerId gives) fences the old one.
	wantOK(t, "new epoch", commit(1, 11))
	wantCode(t, "stale epoch", commit(0, 12), kerr.InvalidProducerEpoch)

	// Pending across a restart: the load replays the transactional batches
	// and markers, and the commit marker still applies afterwards.
	n.Restart()
	w = dial(t, n.Addr)
	w.awaitCoordinator(g)
	if off, code := w.fetchTxo(g, true); off != -1 || code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("after restart, pending: %d %v", off, kerr.ErrorForCode(code))
	}
	if off, _ := w.fetchTxo(g, false); off != 5 {
		t.Fatalf("after restart, committed: %d", off)
	}
	wantOK(t, "commit marker after restart", w.txnMarker(pid, 1, true, p))
	if off, code := w.fetchTxo(g, true); off != 11 || code != 0 {
		t.Fatalf("after restart and COMMIT: %d %v", off, kerr.ErrorForCode(code))
	}
}

// txnDo sends a request of the transaction APIs until its code (read by
// code) is not a retriable one, and returns it.
func (w *wire) txnDo(req kmsg.Request, code func(kmsg.Response) int16) kmsg.Response {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := w.do(req)
		switch code(resp) {
		case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code,
			kerr.ConcurrentTransactions.Code:
			if time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		return resp
	}
}

// With the KIP-890 check, a TxnOffsetCommit needs its group's partition in
// the transaction (AddOffsetsToTxn); then EndTxn's markers commit or abort
// it. The real transaction coordinator is in the loop.
func TestTxnOffsetCommitVerified(t *testing.T) {
	n := grpNode(t, nil)
	w := dial(t, n.Addr)
	w.createTopic("txo", 1, nil)
	const g, txnID = "g-txv", "txv"
	w.awaitCoordinator(g)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorType, fc.CoordinatorKey = 3, 1, txnID
	w.txnDo(fc, func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).ErrorCode })
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version, ip.TransactionalID, ip.TransactionTimeoutMillis = 4, kmsg.StringPtr(txnID), 60000
	ipr := w.txnDo(ip, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }).(*kmsg.InitProducerIDResponse)
	wantOK(t, "InitProducerId", ipr.ErrorCode)
	pid, epoch := ipr.ProducerID, ipr.ProducerEpoch

	commit := func(off int64) int16 {
		r := txnOffsetCommit(3, g, pid, map[string][]int32{"txo": {0}}, off)
		r.TransactionalID, r.ProducerEpoch = txnID, epoch
		return txnCodes(w.txnDo(r, func(r kmsg.Response) int16 {
			return txnCodes(r.(*kmsg.TxnOffsetCommitResponse))["txo/0"]
		}).(*kmsg.TxnOffsetCommitResponse))["txo/0"]
	}
	wantCode(t, "commit outside the transaction", commit(3), kerr.InvalidTxnState)

	for _, c := range []struct {
		commit bool
		off    int64
		want   int64
	}{{false, 5, -1}, {true, 7, 7}} {
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.Version, ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = 3, txnID, pid, epoch, g
		wantOK(t, "AddOffsetsToTxn", w.txnDo(ao, func(r kmsg.Response) int16 {
			return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode
		}).(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
		wantOK(t, "TxnOffsetCommit", commit(c.off))
		if _, code := w.fetchTxo(g, true); code != kerr.UnstableOffsetCommit.Code {
			t.Fatalf("require_stable in the transaction: %v", kerr.ErrorForCode(code))
		}
		et := kmsg.NewPtrEndTxnRequest()
		et.Version, et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = 3, txnID, pid, epoch, c.commit
		wantOK(t, "EndTxn", w.txnDo(et, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }).(*kmsg.EndTxnResponse).ErrorCode)
		// The markers are written after EndTxn answers.
		deadline := time.Now().Add(20 * time.Second)
		for {
			off, code := w.fetchTxo(g, true)
			if code == 0 && off == c.want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("commit=%v: offset %d (%v), want %d", c.commit, off, kerr.ErrorForCode(code), c.want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The transaction is over: a late commit cannot reopen it.
	wantCode(t, "late commit", commit(9), kerr.InvalidTxnState)
	if off, code := w.fetchTxo(g, true); off != 7 || code != 0 {
		t.Fatalf("after a late commit: %d %v", off, kerr.ErrorForCode(code))
	}
}
