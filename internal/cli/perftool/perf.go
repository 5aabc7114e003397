// Package perftool is weir perf: the load generators of internal/perf as
// commands.
package perftool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure produce and consume throughput and latency against any Kafka-compatible cluster",
		Long: `perf holds load generators that mirror Apache Kafka's perf-test scripts, so
numbers from weir and from a Kafka cluster can be compared line for line.

  weir perf produce   like kafka-producer-perf-test.sh
  weir perf consume   like kafka-consumer-perf-test.sh (plus a --raw reader)

They talk the Kafka protocol through the franz-go client and work against any
broker, not only weir.`,
		Example: `  # 1 million 1 KiB records as fast as possible, leader acks
  weir perf produce --bootstrap-server 127.0.0.1:9092 --topic bench \
      --partitions 3 --num-records 1000000 --record-size 1024 \
      --throughput -1 --producer-props acks=1

  # read them back, counting batches straight off the wire
  weir perf consume --bootstrap-server 127.0.0.1:9092 --topic bench \
      --messages 1000000 --raw`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPerfProduceCommand(), newPerfConsumeCommand())
	var cpuProfile string
	var profFile *os.File
	cmd.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to this file")
	_ = cmd.PersistentFlags().MarkHidden("cpuprofile")
	cmd.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		profFile = f
		return pprof.StartCPUProfile(f)
	}
	cmd.PersistentPostRun = func(*cobra.Command, []string) {
		if profFile != nil {
			pprof.StopCPUProfile()
			profFile.Close()
		}
	}
	return cmd
}

// perfContext is the command's context, canceled on SIGINT or SIGTERM so a
// run can stop early and still print what it measured.
func perfContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// ensureTopic creates topic with the given partition count unless it
// exists. An existing topic with another partition count is an error, since
// the run would not measure what was asked for.
func ensureTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, replication int16, stderr io.Writer) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, replication, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		return nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("describe topic %s: %w", topic, err)
	}
	td, ok := details[topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("topic %s exists but cannot be described: %v", topic, td.Err)
	}
	if got := int32(len(td.Partitions)); got != partitions {
		return fmt.Errorf("topic %s already exists with %d partitions, not %d", topic, got, partitions)
	}
	fmt.Fprintf(stderr, "topic %s already exists with %d partitions\n", topic, partitions)
	return nil
}
