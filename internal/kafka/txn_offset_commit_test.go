package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	n := grpNode(t, nil)
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
