// Package txntest makes transactional states for tests that are hard to
// reach with a well-behaved client (tests only).
package txntest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/record"
	"weir/internal/testwait"
)

// OpenHanging leaves a transaction open on topic-0 that no coordinator
// knows of: a producer initialized with txnID (through cl) writes a
// transactional batch (through leader, topic-0's leader) without adding
// the partition, as a client of before KIP-890 could after a timeout. The
// node must not verify (transaction.partition.verification.enable=false).
// It returns the batch's producer id and epoch.
func OpenHanging(t testing.TB, ctx context.Context, cl, leader kmsg.Requestor, txnID, topic string) (int64, int16) {
	t.Helper()
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &txnID, 60000
	var resp *kmsg.InitProducerIDResponse
	testwait.For(t, 30*time.Second, "InitProducerId of "+txnID, func() error {
		r, err := ip.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		if err == nil {
			resp = r
		}
		return err
	})
	h := record.NewBatchHeader()
	now := time.Now().UnixMilli()
	h.BaseTimestamp, h.MaxTimestamp = now, now
	h.Attributes |= record.TransactionalAttributes
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = resp.ProducerID, resp.ProducerEpoch, 0
	b, err := record.Build(h, []record.Record{{Value: []byte("hanging")}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.Version, pr.Acks, pr.TimeoutMillis, pr.TransactionID = 11, -1, 10000, &txnID
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = b
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	presp, err := pr.RequestWith(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(presp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	return resp.ProducerID, resp.ProducerEpoch
}
