package links

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"weir/internal/cli/tool"
	"weir/internal/link"
)

type mirrorsOpts struct {
	create, describe, pause, resume, promote, failover bool
	mirrorTopic, sourceTopic, link, topics             string
	replicationFactor                                  int16
}

func NewMirrorsCommand() *cobra.Command {
	var conn tool.ConnFlags
	var o mirrorsOpts
	cmd := &cobra.Command{
		Use:   "mirrors --bootstrap-server DEST [--command-config FILE] (--create --mirror-topic T --link L | --describe | --pause | --resume | --promote | --failover --topics T[,T])",
		Short: "Create, describe, pause, resume, promote and fail over mirror topics, like Confluent's kafka-mirrors",
		Long: `mirrors manages the mirror topics of the destination cluster named by
--bootstrap-server. A mirror topic copies its source topic through a
cluster link (see "weir cluster-links") with the same offsets, bytes and
leader epochs, and is read-only until it is promoted or failed over.

  --create --mirror-topic T --link L [--source-topic S] [--replication-factor N]
        a mirror of source topic S (T by default) with the source's
        partition count; N defaults to default.replication.factor
  --describe [--link L] [--topics T,...]
        per mirror topic its link, source and state, and per partition
        the mirror's and the source's high watermarks and the lag
  --pause | --resume --topics T,...
        stop copying (the topic stays read-only), and start again
  --promote --topics T,...
        wait until each mirror has everything its source had committed
        when asked and, when the link syncs consumer offsets, until the
        offsets are synced; then stop mirroring: the topic becomes
        writable
  --failover --topics T,...
        stop mirroring at once (the source may be gone): the topic
        becomes writable at what the mirror holds

The tool speaks weir's own admin API (Kafka has none for mirrors) and
reads offsets with ListOffsets from both clusters (the source's through
the link, with the link's client settings).

` + tool.CommandConfigHelp + `

The client properties are the tool's own, to reach the destination.
`,
		Example: `  weir mirrors --bootstrap-server dest:9092 --create --mirror-topic orders --link dr
  weir mirrors --bootstrap-server dest:9092 --describe --topics orders
  weir mirrors --bootstrap-server dest:9092 --promote --topics orders`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMirrors(cmd, &conn, &o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&conn.BootstrapServer, "bootstrap-server", "", "REQUIRED: the destination cluster, host:port[,host:port]")
	fl.StringVar(&conn.CommandConfig, "command-config", "", "the client properties file to reach the destination (see --help)")
	fl.BoolVar(&o.create, "create", false, "create a mirror topic")
	fl.BoolVar(&o.describe, "describe", false, "describe mirror topics")
	fl.BoolVar(&o.pause, "pause", false, "pause mirror topics")
	fl.BoolVar(&o.resume, "resume", false, "resume paused mirror topics")
	fl.BoolVar(&o.promote, "promote", false, "promote mirror topics once caught up with their source")
	fl.BoolVar(&o.failover, "failover", false, "stop mirror topics at once and make them writable")
	fl.StringVar(&o.mirrorTopic, "mirror-topic", "", "with --create: the mirror topic's name")
	fl.StringVar(&o.sourceTopic, "source-topic", "", "with --create: the source topic (default: --mirror-topic)")
	fl.StringVar(&o.link, "link", "", "the cluster link")
	fl.StringVar(&o.topics, "topics", "", "comma-separated mirror topics")
	fl.Int16Var(&o.replicationFactor, "replication-factor", -1, "with --create: the mirror topic's replication factor")
	return cmd
}

func runMirrors(cmd *cobra.Command, conn *tool.ConnFlags, o *mirrorsOpts) error {
	fail := tool.FailTo(cmd.ErrOrStderr())
	n := 0
	for _, b := range []bool{o.create, o.describe, o.pause, o.resume, o.promote, o.failover} {
		if b {
			n++
		}
	}
	topics := tool.SeedList(o.topics)
	switch {
	case n != 1:
		return tool.UsageError(cmd, "Exactly one of --create, --describe, --pause, --resume, --promote or --failover must be given.")
	case conn.BootstrapServer == "":
		return tool.UsageError(cmd, "Missing required argument \"[bootstrap-server]\"")
	case o.create && (o.mirrorTopic == "" || o.link == ""):
		return tool.UsageError(cmd, "--create needs --mirror-topic and --link.")
	case !o.create && !o.describe && len(topics) == 0:
		return tool.UsageError(cmd, "--topics is required.")
	}
	lc, err := linkConnect(conn, cmd, "weir-mirrors", "describeMirrors")
	if err != nil {
		return fail(err.Error())
	}
	defer lc.conn.Close()
	ctx, cancel := lc.conn.Context(cmd)
	defer cancel()
	out := cmd.OutOrStdout()
	switch {
	case o.create:
		resp, err := lc.Admin(ctx, &link.AdminRequest{Op: "create-mirror", Topics: []string{o.mirrorTopic}, Link: o.link,
			SourceTopic: o.sourceTopic, ReplicationFactor: o.replicationFactor})
		if err == nil {
			err = link.TopicResults(resp)
		}
		if err != nil {
			return fail(err.Error())
		}
		fmt.Fprintf(out, "Created topic %s.\n", o.mirrorTopic)
		return nil
	case o.describe:
		return lc.describeMirrors(ctx, cmd, o.link, topics)
	case o.pause, o.resume:
		op, done := "pause-mirrors", "paused"
		if o.resume {
			op, done = "resume-mirrors", "resumed"
		}
		resp, err := lc.Admin(ctx, &link.AdminRequest{Op: op, Topics: topics})
		if err == nil {
			err = link.TopicResults(resp)
		}
		if err != nil {
			return fail(err.Error())
		}
		for _, t := range topics {
			fmt.Fprintf(out, "Mirror topic %s %s.\n", t, done)
		}
		return nil
	}
	state, done := link.StateFailedOver, "failed over"
	if o.promote {
		state, done = link.StatePromoted, "promoted"
	}
	if err := lc.StopMirrors(ctx, topics, state); err != nil {
		return fail(err.Error())
	}
	for _, t := range topics {
		fmt.Fprintf(out, "Mirror topic %s %s: it is writable now.\n", t, done)
	}
	return nil
}

func (l *linkClient) describeMirrors(ctx context.Context, cmd *cobra.Command, linkName string, topics []string) error {
	fail := tool.FailTo(cmd.ErrOrStderr())
	out := cmd.OutOrStdout()
	mirrors, err := l.ListMirrors(ctx, linkName, topics)
	if err != nil {
		return fail(err.Error())
	}
	for _, m := range mirrors {
		fmt.Fprintf(out, "Topic: %s\tLinkName: %s\tSourceTopic: %s\tState: %s\tPartitionCount: %d\n", m.Topic, m.Link, m.SourceTopic, m.State, m.Partitions)
		for _, p := range l.Lags(ctx, m) {
			line := fmt.Sprintf("\tTopic: %s\tPartition: %d", m.Topic, p.Partition)
			if p.MirrorHW < 0 {
				line += "\tMirrorHighWatermark: unavailable"
			} else {
				line += fmt.Sprintf("\tMirrorHighWatermark: %d", p.MirrorHW)
			}
			if p.SourceHW < 0 {
				line += "\tSourceHighWatermark: unavailable"
			} else {
				line += fmt.Sprintf("\tSourceHighWatermark: %d", p.SourceHW)
			}
			if p.Lag >= 0 {
				line += fmt.Sprintf("\tLag: %d", p.Lag)
			}
			fmt.Fprintln(out, line)
		}
	}
	return nil
}
