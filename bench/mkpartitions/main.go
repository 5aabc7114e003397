// Command mkpartitions creates many topics with CreateTopics requests of a
// fixed number of topics each (as an operator's script would), or checks
// that they are all served, for bench/partitions.sh and
// bench/partitions-failover.sh.
//
//	go run ./bench/mkpartitions --bootstrap-server 127.0.0.1:9092 \
//	    --topics 1000 --partitions 100 --batch 50            # create
//	go run ./bench/mkpartitions --topics 1000 --partitions 100 --check
//	go run ./bench/mkpartitions --topics 1 --partitions 10000 # grown past 5,000
//	go run ./bench/mkpartitions --leaders                    # leaders per broker
//	go run ./bench/mkpartitions --metadata-all 5             # time Metadata
//
// Creating prints "created P partitions in S s"; --check waits until
// Metadata shows every partition of every topic with a leader (not
// --not-led-by, with at least --isr replicas in its ISR, with --offsets
// answering ListOffsets from its leader without an error) and prints
// "served P partitions after S s"; --leaders prints "leaders B=N ..." for
// every partition of the cluster; --metadata-all N sends N Metadata
// requests for all topics, one at a time, and prints "metadata of P
// partitions: median S s, max S s". All exit 1 on an error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
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
		rf         = flag.Int("replication-factor", 1, "replicas of each partition")
		notLedBy   = flag.Int("not-led-by", -1, "with --check: a partition led by this broker is not served yet")
		isr        = flag.Int("isr", 0, "with --check: a partition with fewer ISR members is not served yet")
		interval   = flag.Duration("interval", 100*time.Millisecond, "with --check: how often to ask")
		offsets    = flag.Bool("offsets", false, "with --check: a partition whose leader fails ListOffsets (its log not open yet) is not served yet")
		leaders    = flag.Bool("leaders", false, "only print how many partitions each broker leads")
		metaAll    = flag.Int("metadata-all", 0, "only time this many Metadata requests for all topics")
		configs    configList
	)
	flag.Var(&configs, "config", "topic config KEY=VALUE for the topics created (repeatable)")
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
	switch {
	case *leaders:
		counts, n, err := leaderCounts(ctx, cl)
		if err != nil {
			fail(err)
		}
		fmt.Printf("leaders%s (%d partitions)\n", counts, n)
		return
	case *metaAll > 0:
		if err := timeMetadata(ctx, cl, *metaAll); err != nil {
			fail(err)
		}
		return
	}
	if *check {
		want := want{partitions: *partitions, notLedBy: int32(*notLedBy), isr: *isr}
		if err := awaitServed(ctx, cl, names, want, *interval); err != nil {
			fail(err)
		}
		if *offsets {
			if err := awaitOffsets(ctx, cl, names, *interval); err != nil {
				fail(err)
			}
		}
		fmt.Printf("served %d partitions after %.3f s\n", total, time.Since(start).Seconds())
		return
	}
	// A retriable error (the active controller changed, a request timed
	// out) sends a request again, as a client's retries would: topics
	// created meanwhile answer TOPIC_ALREADY_EXISTS, partitions added
	// INVALID_PARTITIONS, which grow checks against Metadata.
	retry := func(op func() error) {
		for {
			err := op()
			if err == nil {
				return
			}
			if !kerr.IsRetriable(err) && !errors.Is(err, kerr.NotController) || ctx.Err() != nil {
				fail(err)
			}
			fmt.Fprintln(os.Stderr, "mkpartitions: retrying:", err)
		}
	}
	// A request adds at most 10,000 partitions and commits at most 10,000
	// records (Kafka's limits, a topic's record among them): a larger
	// topic is created with growStep partitions and grown by
	// CreatePartitions of growStep at a time.
	first := min(*partitions, growStep)
	for i := 0; i < len(names); i += *batch {
		retry(func() error {
			return create(ctx, cl, names[i:min(i+*batch, len(names))], int32(first), int16(*rf), configs, timeout.Milliseconds())
		})
	}
	for n := first + growStep; n-growStep < *partitions; n += growStep {
		retry(func() error { return grow(ctx, cl, names, int32(min(n, *partitions)), timeout.Milliseconds()) })
	}
	fmt.Printf("created %d partitions in %.3f s\n", total, time.Since(start).Seconds())
}

// configList is the repeatable --config flag.
type configList []string

func (c *configList) String() string { return strings.Join(*c, ",") }

func (c *configList) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("%q is not KEY=VALUE", v)
	}
	*c = append(*c, v)
	return nil
}

func create(ctx context.Context, cl *kgo.Client, names []string, partitions int32, rf int16, configs []string, timeoutMs int64) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(min(timeoutMs, 1<<31-1))
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, partitions, rf
		for _, kv := range configs {
			k, v, _ := strings.Cut(kv, "=")
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			t.Configs = append(t.Configs, c)
		}
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

// growStep is the most partitions a topic is created with or grown by in
// one request.
const growStep = 5000

// grow adds partitions to each of names up to total, one topic per
// request; a topic that has them already is left alone.
func grow(ctx context.Context, cl *kgo.Client, names []string, total int32, timeoutMs int64) error {
	for _, n := range names {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = int32(min(timeoutMs, 1<<31-1))
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = n, total
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			err := kerr.ErrorForCode(t.ErrorCode)
			if err == kerr.InvalidPartitions {
				err = hasPartitions(ctx, cl, t.Topic, total, err)
			}
			if err != nil {
				return fmt.Errorf("adding partitions to %s: %w", t.Topic, err)
			}
		}
	}
	return nil
}

// hasPartitions is nil when topic has at least total partitions (a retry
// of a request that added them), else err.
func hasPartitions(ctx context.Context, cl *kgo.Client, topic string, total int32, err error) error {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, merr := req.RequestWith(ctx, cl)
	if merr != nil {
		return merr
	}
	if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) >= int(total) {
		return nil
	}
	return err
}

// want is what --check waits for.
type want struct {
	partitions int
	notLedBy   int32 // -1: any leader
	isr        int
}

// awaitServed asks for Metadata every interval until it names every
// partition of every topic with a leader (as w asks) and no error.
func awaitServed(ctx context.Context, cl *kgo.Client, names []string, w want, every time.Duration) error {
	var last error
	for {
		if last = served(ctx, cl, names, w); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not all partitions served: %v", last)
		case <-time.After(every):
		}
	}
}

func served(ctx context.Context, cl *kgo.Client, names []string, w want) error {
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
		if len(t.Partitions) != w.partitions {
			return fmt.Errorf("%s: %d partitions, want %d", *t.Topic, len(t.Partitions), w.partitions)
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 || p.Leader == w.notLedBy {
				return fmt.Errorf("%s-%d: leader %d, %v", *t.Topic, p.Partition, p.Leader, err)
			}
			if len(p.ISR) < w.isr {
				return fmt.Errorf("%s-%d: ISR %v", *t.Topic, p.Partition, p.ISR)
			}
		}
	}
	return nil
}

// leaderCounts returns " B=N" for each broker leading N partitions (-1:
// none) and the number of partitions.
func leaderCounts(ctx context.Context, cl *kgo.Client) (string, int, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return "", 0, err
	}
	counts := map[int32]int{}
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			counts[p.Leader]++
			n++
		}
	}
	var out strings.Builder
	for _, b := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&out, " %d=%d", b, counts[b])
	}
	return out.String(), n, nil
}

// timeMetadata sends n Metadata requests for all topics, one at a time.
func timeMetadata(ctx context.Context, cl *kgo.Client, n int) error {
	var took []float64
	parts := 0
	for range n {
		start := time.Now()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		took = append(took, time.Since(start).Seconds())
		parts = 0
		for _, t := range resp.Topics {
			parts += len(t.Partitions)
		}
	}
	slices.Sort(took)
	fmt.Printf("metadata of %d partitions: median %.3f s, max %.3f s\n", parts, took[len(took)/2], took[len(took)-1])
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mkpartitions:", err)
	os.Exit(1)
}

// awaitOffsets asks every interval until the leader of every partition of
// every topic answers ListOffsets (latest) without an error.
func awaitOffsets(ctx context.Context, cl *kgo.Client, names []string, every time.Duration) error {
	var last error
	for {
		if last = listOffsets(ctx, cl, names); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not all partitions answer ListOffsets: %v", last)
		case <-time.After(every):
		}
	}
}

func listOffsets(ctx context.Context, cl *kgo.Client, names []string) error {
	meta := kmsg.NewPtrMetadataRequest()
	for _, n := range names {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		meta.Topics = append(meta.Topics, t)
	}
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, mt := range mresp.Topics {
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = *mt.Topic
		for _, mp := range mt.Partitions {
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Partition, p.Timestamp, p.CurrentLeaderEpoch = mp.Partition, -1, -1
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}
