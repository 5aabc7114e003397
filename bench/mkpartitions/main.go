// Command mkpartitions creates many topics with CreateTopics requests of a
// fixed number of topics each (as an operator's script would), or checks
// that they are all served, for bench/partitions.sh.
//
//	go run ./bench/mkpartitions --bootstrap-server 127.0.0.1:9092 \
//	    --topics 1000 --partitions 100 --batch 50            # create
//	go run ./bench/mkpartitions --topics 1000 --partitions 100 --check
//
// Creating prints "created P partitions in S s"; --check waits until
// Metadata shows every partition of every topic with a leader and prints
// "served P partitions after S s". Both exit 1 on an error.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	var (
		bootstrap  = flag.String("bootstrap-server", "127.0.0.1:9092", "brokers, host:port[,host:port]")
		prefix     = flag.String("prefix", "scale", "topic names are PREFIX-N")
		topics     = flag.Int("topics", 100, "topics")
		partitions = flag.Int("partitions", 100, "partitions of each topic")
		batch      = flag.Int("batch", 50, "topics per CreateTopics request")
		check      = flag.Bool("check", false, "only wait until every partition has a leader")
		timeout    = flag.Duration("timeout", 10*time.Minute, "give up after this long")
	)
	flag.Parse()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*bootstrap, ",")...), kgo.RequestTimeoutOverhead(*timeout))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	names := make([]string, *topics)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", *prefix, i)
	}
	start := time.Now()
	total := *topics * *partitions
	if *check {
		if err := awaitServed(ctx, cl, names, *partitions); err != nil {
			fail(err)
		}
		fmt.Printf("served %d partitions after %.3f s\n", total, time.Since(start).Seconds())
		return
	}
	for i := 0; i < len(names); i += *batch {
		if err := create(ctx, cl, names[i:min(i+*batch, len(names))], int32(*partitions), timeout.Milliseconds()); err != nil {
			fail(err)
		}
	}
	fmt.Printf("created %d partitions in %.3f s\n", total, time.Since(start).Seconds())
}

func create(ctx context.Context, cl *kgo.Client, names []string, partitions int32, timeoutMs int64) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(min(timeoutMs, 1<<31-1))
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, partitions, 1
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
			return fmt.Errorf("creating %s: %w", t.Topic, err)
		}
	}
	return nil
}

// awaitServed waits until Metadata names every partition of every topic
// with a leader and no error.
func awaitServed(ctx context.Context, cl *kgo.Client, names []string, partitions int) error {
	var last error
	for {
		if last = served(ctx, cl, names, partitions); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not all partitions served: %v", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func served(ctx context.Context, cl *kgo.Client, names []string, partitions int) error {
	req := kmsg.NewPtrMetadataRequest()
	for _, n := range names {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != len(names) {
		return fmt.Errorf("%d topics in metadata, want %d", len(resp.Topics), len(names))
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("%s: %w", *t.Topic, err)
		}
		if len(t.Partitions) != partitions {
			return fmt.Errorf("%s: %d partitions, want %d", *t.Topic, len(t.Partitions), partitions)
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 {
				return fmt.Errorf("%s-%d: leader %d, %v", *t.Topic, p.Partition, p.Leader, err)
			}
		}
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mkpartitions:", err)
	os.Exit(1)
}
