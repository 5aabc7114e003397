// Command mktopic creates a topic with topic configs and waits until every
// partition has a leader and a full ISR, for benchmark scripts that need
// more than `weir perf produce --partitions` offers. Until the cluster has
// registered enough brokers for the replication factor, creating is
// retried.
//
//	go run ./bench/mktopic --bootstrap-server 127.0.0.1:9092 --topic t \
//	    --partitions 3 --replication-factor 3 --config min.insync.replicas=2
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type configFlag map[string]*string

func (c configFlag) String() string { return "" }

func (c configFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	c[k] = &v
	return nil
}

func main() {
	var (
		bootstrap  = flag.String("bootstrap-server", "127.0.0.1:9092", "brokers, host:port[,host:port]")
		topic      = flag.String("topic", "", "topic to create (required)")
		partitions = flag.Int("partitions", 1, "partitions")
		rf         = flag.Int("replication-factor", 1, "replicas of every partition")
		timeout    = flag.Duration("timeout", time.Minute, "give up after this long")
		configs    = configFlag{}
	)
	flag.Var(configs, "config", "topic config key=value (repeatable)")
	flag.Parse()
	if *topic == "" {
		fmt.Fprintln(os.Stderr, "mktopic: --topic is required")
		os.Exit(2)
	}
	if err := run(strings.Split(*bootstrap, ","), *topic, int32(*partitions), int16(*rf), configs, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "mktopic:", err)
		os.Exit(1)
	}
}

func run(seeds []string, topic string, partitions int32, rf int16, configs map[string]*string, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	var last error
	for {
		if ctx.Err() != nil {
			return fmt.Errorf("creating %s: %v", topic, last)
		}
		resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
		if err == nil {
			err = resp.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	for {
		if ctx.Err() != nil {
			return fmt.Errorf("%s not fully in sync: %v", topic, last)
		}
		last = inSync(ctx, adm, topic, partitions, rf)
		if last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// inSync checks that every partition of topic has a leader and rf replicas
// in its ISR.
func inSync(ctx context.Context, adm *kadm.Client, topic string, partitions int32, rf int16) error {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("metadata: %v", td.Err)
	}
	if len(td.Partitions) != int(partitions) {
		return fmt.Errorf("%d partitions, want %d", len(td.Partitions), partitions)
	}
	for _, p := range td.Partitions {
		if p.Leader < 0 || len(p.ISR) != int(rf) {
			return fmt.Errorf("partition %d: leader %d, ISR %v", p.Partition, p.Leader, p.ISR)
		}
	}
	return nil
}
