package links

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

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
	defer lc.Close()
	ctx, cancel := lc.Context(cmd)
	defer cancel()
	out := cmd.OutOrStdout()
	switch {
	case o.create:
		resp, err := lc.admin(ctx, &link.AdminRequest{Op: "create-mirror", Topics: []string{o.mirrorTopic}, Link: o.link,
			SourceTopic: o.sourceTopic, ReplicationFactor: o.replicationFactor})
		if err == nil {
			err = topicResults(resp)
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
		resp, err := lc.admin(ctx, &link.AdminRequest{Op: op, Topics: topics})
		if err == nil {
			err = topicResults(resp)
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
	if err := lc.stopMirrors(ctx, topics, state); err != nil {
		return fail(err.Error())
	}
	for _, t := range topics {
		fmt.Fprintf(out, "Mirror topic %s %s: it is writable now.\n", t, done)
	}
	return nil
}

// topicResults is the first failed topic of a per-topic answer.
func topicResults(resp *link.AdminResponse) error {
	var errs []string
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			errs = append(errs, adminError(r.ErrorCode, r.ErrorMessage).Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// listMirrors returns the descriptions of mirror topics.
func (l *linkClient) listMirrors(ctx context.Context, linkName string, topics []string) ([]link.MirrorInfo, error) {
	resp, err := l.admin(ctx, &link.AdminRequest{Op: "list-mirrors", Link: linkName, Topics: topics})
	if err == nil {
		err = topicResults(resp)
	}
	if err != nil {
		return nil, err
	}
	return resp.Mirrors, nil
}

// sourceOffsets asks the destination to read the high watermarks of a
// mirror's source topic through its link (the link has the source's
// address and security settings).
func (l *linkClient) sourceOffsets(ctx context.Context, m link.MirrorInfo) (map[int32]int64, error) {
	if m.Link == "" {
		return nil, fmt.Errorf("the link of mirror topic %s is deleted", m.Topic)
	}
	resp, err := l.admin(ctx, &link.AdminRequest{Op: "source-offsets", Link: m.Link, Topics: []string{m.SourceTopic}})
	if err != nil {
		return nil, err
	}
	return resp.Offsets[m.SourceTopic], nil
}

// endOffsets are the high watermarks of the destination's topics.
func (l *linkClient) endOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
	lo, err := l.Admin.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = lo.Error()
	}
	return lo, err
}

func (l *linkClient) describeMirrors(ctx context.Context, cmd *cobra.Command, linkName string, topics []string) error {
	fail := tool.FailTo(cmd.ErrOrStderr())
	out := cmd.OutOrStdout()
	mirrors, err := l.listMirrors(ctx, linkName, topics)
	if err != nil {
		return fail(err.Error())
	}
	for _, m := range mirrors {
		fmt.Fprintf(out, "Topic: %s\tLinkName: %s\tSourceTopic: %s\tState: %s\tPartitionCount: %d\n", m.Topic, m.Link, m.SourceTopic, m.State, m.Partitions)
		dst, derr := l.endOffsets(ctx, m.Topic)
		var src map[int32]int64
		serr := errors.New("stopped")
		if m.State == "ACTIVE" || m.State == "PAUSED" {
			src, serr = l.sourceOffsets(ctx, m)
		}
		for p := range m.Partitions {
			line := fmt.Sprintf("\tTopic: %s\tPartition: %d", m.Topic, p)
			d, dok := dst.Lookup(m.Topic, p)
			s, sok := src[p]
			switch {
			case derr != nil || !dok:
				line += "\tMirrorHighWatermark: unavailable"
			default:
				line += fmt.Sprintf("\tMirrorHighWatermark: %d", d.Offset)
			}
			switch {
			case serr != nil || !sok:
				line += "\tSourceHighWatermark: unavailable"
			default:
				line += fmt.Sprintf("\tSourceHighWatermark: %d", s)
			}
			if derr == nil && serr == nil && dok && sok {
				line += fmt.Sprintf("\tLag: %d", max(0, s-d.Offset))
			}
			fmt.Fprintln(out, line)
		}
	}
	return nil
}

// stopMirrors promotes or fails over mirror topics: for a promotion it
// waits until each mirror's high watermark reaches its source's as of
// now, and for one consumer offset sync of their links; then it pauses them, asks each partition's leader, once it has
// applied the pause, for the latest epoch in its log, and has the
// controller stop them with those epochs (see StopMirror in
// internal/controller). A leadership that moved in between is read again.
func (l *linkClient) stopMirrors(ctx context.Context, topics []string, state string) error {
	mirrors, err := l.listMirrors(ctx, "", topics)
	if err != nil {
		return err
	}
	if state == link.StatePromoted {
		for _, m := range mirrors {
			target, err := l.sourceOffsets(ctx, m)
			if err != nil {
				return fmt.Errorf("mirror topic %s: cannot read the source's offsets (use --failover if the source is gone): %v", m.Topic, err)
			}
			if err := l.awaitMirror(ctx, m, target); err != nil {
				return err
			}
		}
		// The consumer offsets as of now, for the groups moving over.
		synced := map[string]bool{}
		for _, m := range mirrors {
			if !synced[m.Link] {
				synced[m.Link] = true
				if _, err := l.admin(ctx, &link.AdminRequest{Op: "sync-offsets", Link: m.Link}); err != nil {
					return err
				}
			}
		}
	}
	paused, err := l.admin(ctx, &link.AdminRequest{Op: "pause-mirrors", Topics: topics})
	if err == nil {
		err = topicResults(paused)
	}
	if err != nil {
		return err
	}
	for {
		epochs, leaders, err := l.mirrorEpochs(ctx, mirrors, paused.MetadataOffset)
		if err == nil {
			var resp *link.AdminResponse
			resp, err = l.admin(ctx, &link.AdminRequest{Op: "stop-mirrors", Topics: topics, State: state,
				Epochs: epochs, LeaderEpochs: leaders})
			if err == nil {
				if err = topicResults(resp); err == nil {
					return nil
				}
			}
			if !strings.Contains(err.Error(), "read it again") {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the mirrors are paused, but their leaders' epochs could not be read (retry, or --resume): %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// mirrorEpochs asks the leader of every partition of mirrors for the
// latest epoch in its log and its leader epoch, once it has applied the
// metadata at offset.
func (l *linkClient) mirrorEpochs(ctx context.Context, mirrors []link.MirrorInfo, offset int64) (map[string]map[int32]int32, map[string]map[int32]int32, error) {
	var topics []string
	for _, m := range mirrors {
		topics = append(topics, m.Topic)
	}
	md, err := l.Admin.Metadata(ctx, topics...)
	if err != nil {
		return nil, nil, err
	}
	addrs := map[int32]string{}
	for _, b := range md.Brokers {
		addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	epochs, leaders := map[string]map[int32]int32{}, map[string]map[int32]int32{}
	asked := map[int32]bool{}
	for _, m := range mirrors {
		for p := range m.Partitions {
			pd, ok := md.Topics[m.Topic].Partitions[p]
			if !ok || pd.Leader < 0 {
				return nil, nil, fmt.Errorf("%s-%d has no leader", m.Topic, p)
			}
			if asked[pd.Leader] {
				continue
			}
			asked[pd.Leader] = true
			resp, err := l.adminAt(ctx, addrs[pd.Leader], &link.AdminRequest{Op: "mirror-epochs", Topics: topics, MinOffset: offset})
			if err != nil {
				return nil, nil, err
			}
			for t, es := range resp.Epochs {
				if epochs[t] == nil {
					epochs[t], leaders[t] = map[int32]int32{}, map[int32]int32{}
				}
				for part, e := range es {
					epochs[t][part], leaders[t][part] = e, resp.LeaderEpochs[t][part]
				}
			}
		}
	}
	for _, m := range mirrors {
		for p := range m.Partitions {
			if _, ok := epochs[m.Topic][p]; !ok {
				return nil, nil, fmt.Errorf("the leader of %s-%d moved: read it again", m.Topic, p)
			}
		}
	}
	return epochs, leaders, nil
}

// awaitMirror waits until every partition of mirror m has reached the
// source's high watermark in target.
func (l *linkClient) awaitMirror(ctx context.Context, m link.MirrorInfo, target map[int32]int64) error {
	for {
		lo, err := l.endOffsets(ctx, m.Topic)
		behind := err != nil
		if err == nil {
			for p, s := range target {
				if d, ok := lo.Lookup(m.Topic, p); !ok || d.Offset < s {
					behind = true
				}
			}
		}
		if !behind {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mirror topic %s did not catch up with its source in time: %v", m.Topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
