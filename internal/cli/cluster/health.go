package cluster

// weir cluster health: whether the cluster serves every partition, from a
// client's view of any Kafka cluster. No Kafka tool has it; a weir node's
// /v1/cluster/health answers the same report from its metadata image.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/clusterhealth"
	"weir/internal/metadata"
)

func newHealthCommand() *cobra.Command {
	var conn tool.ConnFlags
	var output string
	cmd := &cobra.Command{
		Use:   "health --bootstrap-server HOST:PORT [--output text|json]",
		Short: "Whether the cluster serves every partition: controller, brokers down, leaderless and under-replicated partitions",
		Long: `health reports whether the cluster is healthy (weir's own; no Kafka tool has
it), as a weir node's metrics listener answers at /v1/cluster/health:

  Healthy                      true when none of the reasons below holds
  Unhealthy reasons            no_elected_controller, nodes_down,
                               leaderless_partitions, under_replicated_partitions,
                               under_min_isr_partitions
  Controller ID                the active controller (DescribeQuorum), -1 if none
  All nodes, Nodes down        the registered brokers, and the fenced ones
                               (DescribeCluster with fenced brokers)
  Leaderless partitions        partitions without a leader: unavailable
  Under-replicated partitions  led, with an ISR smaller than the replicas
  Under-min-ISR partitions     an ISR below the topic's min.insync.replicas:
                               acks=all produces fail

Partitions are named topic-partition; each list names at most 100, its count
is whole. It works against any Kafka cluster (3.7 or later for fenced
brokers; an older one lists only the live brokers). The exit code is 0 when
healthy, 1 when not, 2 when the cluster could not be asked.

` + tool.CommandConfigHelp,
		Example: `  weir cluster health --bootstrap-server localhost:9092
  weir cluster health --bootstrap-server localhost:9092 --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return tool.UsageError(cmd, "--output must be text or json, not "+strconv.Quote(output))
			}
			if conn.BootstrapServer == "" {
				return tool.UsageError(cmd, "Missing required argument \"[bootstrap-server]\"")
			}
			fail := func(msg string) error {
				fmt.Fprintln(cmd.ErrOrStderr(), msg)
				return tool.ExitCode(2)
			}
			tc, err := conn.Connect(cmd, "weir-cluster-health", "describeCluster")
			if err != nil {
				return fail(err.Error())
			}
			defer tc.Close()
			ctx, cancel := tc.Context(cmd)
			defer cancel()
			in, err := healthInput(ctx, tc)
			if err != nil {
				return fail(tool.DescribeErr(err))
			}
			r := clusterhealth.Of(in)
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				err = enc.Encode(r)
			} else {
				err = r.WriteText(out)
			}
			if err != nil {
				return err
			}
			if !r.Healthy {
				return tool.ExitCode(1)
			}
			return nil
		},
	}
	conn.Add(cmd.Flags())
	cmd.Flags().StringVar(&output, "output", "text", "text, or json (the fields of /v1/cluster/health)")
	return cmd
}

// healthInput asks the cluster for what a health report is made of: the
// brokers with the fenced ones, every partition, each topic's
// min.insync.replicas and the active controller.
func healthInput(ctx context.Context, tc *tool.Client) (clusterhealth.Input, error) {
	in := clusterhealth.Input{Controller: -1}
	md, err := tc.Admin.Metadata(ctx)
	if err != nil {
		return in, tool.KafkaError(err, nil)
	}
	brokers, err := describeEndpoints(ctx, tc, false, true)
	var unsupported *unsupportedVersionError
	switch {
	case err == nil:
		for _, b := range brokers.Brokers {
			in.Brokers = append(in.Brokers, clusterhealth.Broker{ID: b.NodeID, Fenced: b.IsFenced})
		}
	case errors.As(err, &unsupported):
		for _, b := range md.Brokers {
			in.Brokers = append(in.Brokers, clusterhealth.Broker{ID: b.NodeID})
		}
	default:
		return in, err
	}
	minISR, err := topicMinISR(ctx, tc, md.Topics.Names())
	if err != nil {
		return in, err
	}
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			return in, tool.KafkaError(t.Err, nil)
		}
		for _, p := range t.Partitions.Sorted() {
			in.Partitions = append(in.Partitions, clusterhealth.Partition{
				Topic: t.Topic, Partition: p.Partition, Leader: p.Leader,
				Replicas: len(p.Replicas), ISR: len(p.ISR), MinISR: minISR[t.Topic],
			})
		}
	}
	in.Controller, err = activeController(ctx, tc, md.Controller)
	if err != nil {
		return in, err
	}
	return in, nil
}

// activeController is the metadata quorum's leader as DescribeQuorum
// answers it; on a cluster without that API (ZooKeeper-based Kafka), the
// controller Metadata names.
func activeController(ctx context.Context, tc *tool.Client, fromMetadata int32) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	if ok, err := tc.Supports(ctx, req.Key()); err != nil || !ok {
		return fromMetadata, err
	}
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = metadata.LogTopic
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp, err := req.RequestWith(ctx, tc.Kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
		return -1, errors.New("DescribeQuorum answered no partition of " + metadata.LogTopic)
	}
	if err != nil {
		return -1, tool.KafkaError(err, resp.ErrorMessage)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, tool.KafkaError(err, p.ErrorMessage)
	}
	return p.LeaderID, nil
}

// topicMinISR is each topic's min.insync.replicas, as DescribeConfigs
// answers it.
func topicMinISR(ctx context.Context, tc *tool.Client, topics []string) (map[string]int, error) {
	out := map[string]int{}
	if len(topics) == 0 {
		return out, nil
	}
	rcs, err := tc.Admin.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, tool.KafkaError(rc.Err, &rc.ErrMessage)
		}
		for _, c := range rc.Configs {
			if c.Key == "min.insync.replicas" {
				out[rc.Name], _ = strconv.Atoi(c.MaybeValue())
			}
		}
	}
	return out, nil
}
