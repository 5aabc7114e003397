// Package mirror is weir mirror: MirrorMaker 2 (internal/mirror) run from
// its mm2.properties, and its status.
package mirror

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/tool"
	"weir/internal/mirror"
)

func NewCommand() *cobra.Command {
	var configFile, logLevel string
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Mirror topics between Kafka clusters, as MirrorMaker 2",
		Long: `mirror copies topics between Kafka clusters (weir or Apache Kafka) with
MirrorMaker 2's properties file, topic names and internal records, without a
Connect cluster.

It reads MM2's keys and defaults: clusters, <alias>.bootstrap.servers,
A->B.enabled, A->B.-prefixed overrides, topics and topics.exclude,
replication.policy.class (DefaultReplicationPolicy with
replication.policy.separator, or IdentityReplicationPolicy), the
replication factors, offset-syncs.topic.location, offset.lag.max,
emit.heartbeats.*, emit.checkpoints.*, groups and groups.exclude,
refresh.topics.*, sync.group.offsets.*, sync.topic.configs.*,
config.properties.exclude, use.defaults.from, sync.topic.acls.*.

Each enabled flow A->B copies every matching topic of A to its remote topic
on B (A.topic by default), partition N to partition N with keys, values,
headers and timestamps. Remote topics are created with their source's
configs and grown with it; new topics are found at each poll of A's
metadata (every 2 seconds), not only at refresh.topics.interval.seconds.
Topic configs are synced with IncrementalAlterConfigs (read-only,
sensitive, static broker and excluded configs left alone; a config at its
default on A is deleted on B), and literal topic ACLs of mirrored topics
are created on B (ALLOW WRITE dropped, ALLOW ALL made ALLOW READ; nothing
deleted; a source without an authorizer is skipped).

It writes MM2's offset syncs, heartbeats and checkpoints (A's groups'
offsets translated as MM2 3.5+ does, listed anew at each checkpoint
interval; with sync.group.offsets.enabled also committed as the groups'
offsets on B when they are empty or absent there, only forwards), and keeps
its positions on the target in mm2-offsets.<source>.internal, so a restart
resumes where it stopped (at least once: records copied after the last
stored position are copied again).

Several processes with the same file share each flow: its source
partitions are split into tasks.max tasks (default 1: one process copies,
the others stand by), held through the consumer group
weir-mirror.A->B on B (the tasks are the partitions of mm2-tasks.A.internal
there). A process that dies is replaced by the others after
session.timeout.ms (10000; heartbeat.interval.ms 3000, Connect's worker
keys), which resume from the stored positions. New topics move no task. The
process holding task 0 also writes the heartbeats and checkpoints and syncs
group offsets, topic configs and ACLs.

Copying is at least once: a process that dies copies again the records
after its last stored position. With exactly.once.support=required (or the
target's exactly.once.source.support=enabled) it is exactly once for
read_committed consumers: A is read read_committed, and each batch's records
and positions of a task are written in one transaction (transactional id
weir-mirror.A->B.<task>); a process taking a task over fences the former
holder.

Each cluster is reached with its <alias>. client properties, security
included, set for the whole cluster (not per consumer, producer or admin):
<alias>.security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), PEM or
PKCS12 stores (<alias>.ssl.truststore.location or .certificates, and
<alias>.ssl.keystore.* for a client certificate),
<alias>.ssl.endpoint.identification.algorithm, <alias>.ssl.enabled.protocols,
<alias>.sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and
<alias>.sasl.jaas.config. Other ssl. and sasl. settings are refused.

With weir.metrics.listener (host:port or http://host:port) each process
serves MM2's metrics on /metrics, plus the lag in records per partition.
weir mirror status prints what the processes of a file are doing.

SIGTERM or SIGINT stops the mirror after the batch in flight.`,
		Example: `  weir mirror --config mm2.properties
  weir mirror status --config mm2.properties`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile == "" {
				return tool.UsageError(cmd, "Missing required option: --config")
			}
			lg, err := tool.NewLogger(logLevel)
			if err != nil {
				return err
			}
			props, err := tool.LoadProperties(configFile)
			if err != nil {
				return err
			}
			cfg, warns, err := mirror.Parse(props)
			if err != nil {
				return fmt.Errorf("%s: %w", configFile, err)
			}
			for _, w := range warns {
				lg.Warn(w)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return mirror.Run(ctx, cfg, lg, kgo.WithHooks(tool.NewUnreachableWarner(func(msg string) { lg.Warn(msg) })))
		},
	}
	cmd.Flags().StringVarP(&configFile, "config", "c", "", "REQUIRED: the MirrorMaker 2 properties file (mm2.properties)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	cmd.AddCommand(newMirrorStatusCommand())
	return cmd
}

func newMirrorStatusCommand() *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print what the mirror processes of a properties file are doing",
		Long: `status reads the clusters of an mm2.properties file and prints, per enabled
flow and mirrored topic, its partitions, its lag (source records after the
positions the mirror stored), the age of its latest checkpoint and the
processes holding its partitions (numbers of the second table); then each
process of each flow with the tasks it holds.`,
		Example: `  weir mirror status --config mm2.properties`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile == "" {
				return tool.UsageError(cmd, "Missing required option: --config")
			}
			props, err := tool.LoadProperties(configFile)
			if err != nil {
				return err
			}
			cfg, _, err := mirror.Parse(props)
			if err != nil {
				return fmt.Errorf("%s: %w", configFile, err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return mirror.Status(ctx, cfg, cmd.OutOrStdout(), kgo.WithHooks(tool.NewUnreachableHook(cmd.ErrOrStderr(), "")))
		},
	}
	cmd.Flags().StringVarP(&configFile, "config", "c", "", "REQUIRED: the MirrorMaker 2 properties file (mm2.properties)")
	return cmd
}
