// Package txnadmin holds the client side of the transaction admin tools
// that more than one front end needs: the search for hanging
// transactions of `weir transactions find-hanging` and `weir doctor`,
// which the web console's transactions page shows too.
package txnadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scope is where FindHanging looks: the partitions of Topic (only
// Partition if OnePartition), or of every topic when Topic is "", hosted
// on Broker (any broker when negative; the producers are then asked of
// each partition's leader, else of Broker). SkipOffline leaves out
// partitions without a leader (which Kafka's tool fails on).
type Scope struct {
	Topic        string
	OnePartition bool
	Partition    int32
	Broker       int32
	SkipOffline  bool
}

// FindHanging is kafka-transactions.sh's find-hanging search: the open
// transactions (DescribeProducers) whose producer last wrote more than
// maxTimeout before now, then of those the ones no coordinator will end:
// ListTransactions does not know the producer, DescribeTransactions does
// not know its transactional id, or its transaction does not list the
// partition. Errors read as Kafka's tool prints them.
func FindHanging(ctx context.Context, cl *kgo.Client, adm *kadm.Client, sc Scope, maxTimeout time.Duration, now time.Time) ([]kadm.DescribedProducer, error) {
	topic, onePartition, partition, broker, skipOffline := sc.Topic, sc.OnePartition, sc.Partition, sc.Broker, sc.SkipOffline
	var topics []string
	if topic != "" {
		topics = []string{topic}
	} else {
		ls, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, fmt.Errorf("Failed to list topics: %w", err)
		}
		topics = ls.Names()
	}
	var tps kadm.TopicsSet
	if onePartition {
		tps.Add(topic, partition)
	} else {
		md, err := adm.Metadata(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("Failed to describe %d topics: %w", len(topics), err)
		}
		for _, t := range md.Topics.Sorted() {
			if t.Err != nil {
				return nil, fmt.Errorf("Failed to describe %d topics: %w", len(topics), t.Err)
			}
			for _, p := range t.Partitions.Sorted() {
				if (broker < 0 || slices.Contains(p.Replicas, broker)) && !(skipOffline && p.Leader < 0) {
					tps.Add(t.Topic, p.Partition)
				}
			}
		}
	}
	var producers []kadm.DescribedProducer
	if len(tps) > 0 {
		if broker >= 0 {
			req := kmsg.NewPtrDescribeProducersRequest()
			for _, t := range tps.IntoList() {
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic, rt.Partitions = t.Topic, t.Partitions
				req.Topics = append(req.Topics, rt)
			}
			kresp, err := cl.Broker(int(broker)).Request(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("Failed to describe producers for %d partitions on broker %d: %w", countPartitions(tps), broker, err)
			}
			for _, t := range kresp.(*kmsg.DescribeProducersResponse).Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return nil, fmt.Errorf("Failed to describe producers for %s-%d on broker %d: %w", t.Topic, p.Partition, broker, err)
					}
					for _, ap := range p.ActiveProducers {
						producers = append(producers, kadm.DescribedProducer{Leader: broker, Topic: t.Topic, Partition: p.Partition,
							ProducerID: ap.ProducerID, ProducerEpoch: int16(ap.ProducerEpoch), LastSequence: ap.LastSequence,
							LastTimestamp: ap.LastTimestamp, CoordinatorEpoch: ap.CoordinatorEpoch, CurrentTxnStartOffset: ap.CurrentTxnStartOffset})
					}
				}
			}
		} else {
			ds, err := adm.DescribeProducers(ctx, tps)
			if err != nil {
				return nil, fmt.Errorf("Failed to describe producers for %d partitions: %w", countPartitions(tps), err)
			}
			for _, p := range ds.SortedPartitions() {
				if p.Err != nil {
					return nil, fmt.Errorf("Failed to describe producers for %s-%d: %w", p.Topic, p.Partition, p.Err)
				}
			}
			producers = ds.SortedProducers()
		}
	}
	nowMs := now.UnixMilli()
	var candidates []kadm.DescribedProducer
	pids := map[int64]bool{}
	for _, p := range producers {
		if p.CurrentTxnStartOffset >= 0 && nowMs-p.LastTimestamp > maxTimeout.Milliseconds() {
			candidates = append(candidates, p)
			pids[p.ProducerID] = true
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	var pidList []int64
	for pid := range pids {
		pidList = append(pidList, pid)
	}
	slices.Sort(pidList)
	ls, err := adm.ListTransactions(ctx, pidList, nil)
	if err != nil {
		return nil, fmt.Errorf("Failed to list transactions for %d producers: %w", len(pidList), err)
	}
	txnOf := map[int64]string{}
	var ids []string
	for _, l := range ls.Sorted() {
		if pids[l.ProducerID] {
			txnOf[l.ProducerID] = l.TxnID
			ids = append(ids, l.TxnID)
		}
	}
	described := kadm.DescribedTransactions{}
	if len(ids) > 0 {
		if described, err = adm.DescribeTransactions(ctx, ids...); err != nil {
			return nil, fmt.Errorf("Failed to describe %d transactions: %w", len(ids), err)
		}
		for _, d := range described {
			if d.Err != nil && !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
				return nil, fmt.Errorf("Failed to describe %d transactions: %w", len(ids), d.Err)
			}
		}
	}
	var hanging []kadm.DescribedProducer
	for _, c := range candidates {
		id, ok := txnOf[c.ProducerID]
		d, found := described[id]
		if !ok || !found || d.Err != nil || !d.Topics.Lookup(c.Topic, c.Partition) {
			hanging = append(hanging, c)
		}
	}
	return hanging, nil
}

func countPartitions(s kadm.TopicsSet) int {
	n := 0
	s.Each(func(string, int32) { n++ })
	return n
}
