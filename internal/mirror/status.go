package mirror

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Status writes what the processes running cfg's flows are doing, read from
// the clusters: per flow and mirrored topic its partitions, its lag (source
// records after the stored positions), the age of its latest checkpoint and
// the processes holding its partitions; then the processes and their tasks.
func Status(ctx context.Context, cfg *Config, w io.Writer, extra ...kgo.Opt) error {
	topics := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(topics, "FLOW\tTOPIC\tREMOTE\tPARTITIONS\tLAG\tLAST-CHECKPOINT\tPROCESSES")
	var procs [][]string
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, fc := range cfg.Flows {
		f, err := newFlow(fc, cfg.Clusters, quiet, extra)
		if err != nil {
			return err
		}
		err = f.status(ctx, topics, &procs)
		f.close()
		if err != nil {
			return fmt.Errorf("flow %s: %w", fc.Name(), err)
		}
	}
	if err := topics.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	pw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(pw, "PROCESS\tFLOW\tMEMBER\tHOST\tTASKS")
	for i, p := range procs {
		fmt.Fprintf(pw, "%d\t%s\n", i+1, strings.Join(p, "\t"))
	}
	return pw.Flush()
}

func (f *flow) status(ctx context.Context, w io.Writer, procs *[][]string) error {
	// The processes of the flow and the tasks they hold.
	owner := map[int32]string{}
	groups, err := f.dstAdm.DescribeGroups(ctx, f.cfg.GroupID())
	if err != nil {
		return fmt.Errorf("describing group %s: %w", f.cfg.GroupID(), err)
	}
	g := groups[f.cfg.GroupID()]
	for _, m := range g.Members {
		var tasks []int32
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				if t.Topic == f.cfg.TasksTopic() {
					tasks = append(tasks, t.Partitions...)
				}
			}
		}
		slices.Sort(tasks)
		*procs = append(*procs, []string{f.cfg.Name(), m.MemberID, m.ClientHost, joinInts(tasks)})
		for _, t := range tasks {
			owner[t] = strconv.Itoa(len(*procs))
		}
	}

	names, err := f.mirroredTopics(ctx)
	if err != nil || len(names) == 0 {
		return err
	}
	details, err := f.srcAdm.ListTopics(ctx, names...)
	if err != nil {
		return err
	}
	starts, err := f.srcAdm.ListStartOffsets(ctx, names...)
	if err != nil {
		return err
	}
	ends, err := f.srcAdm.ListEndOffsets(ctx, names...)
	if err != nil {
		return err
	}
	positions, err := f.loadPositions(ctx)
	if err != nil {
		return err
	}
	// The latest checkpoint of each remote topic.
	latest := map[string]time.Time{}
	cpTopic := f.cfg.Policy.CheckpointsTopic(f.cfg.Source)
	if have, err := f.dstAdm.ListTopics(ctx, cpTopic); err != nil {
		return err
	} else if have.Has(cpTopic) {
		if _, err := readTopic(ctx, f.dst, f.dstAdm, cpTopic, nil, func(r *kgo.Record) {
			if cp, err := DecodeCheckpoint(r.Key, r.Value); err == nil && r.Timestamp.After(latest[cp.Topic]) {
				latest[cp.Topic] = r.Timestamp
			}
		}); err != nil {
			return err
		}
	}
	for _, t := range names {
		d := details[t]
		var lag int64
		held := map[string]bool{}
		for p := range int32(len(d.Partitions)) {
			end, _ := ends.Lookup(t, p)
			from, _ := starts.Lookup(t, p)
			next := from.Offset
			if pos, ok := positions[topicPartition{t, p}]; ok {
				next = max(pos+1, next)
			}
			lag += max(end.Offset-next, 0)
			if o, ok := owner[f.cfg.TaskOf(t, p)]; ok {
				held[o] = true
			} else {
				held["none"] = true
			}
		}
		remote := f.cfg.Policy.FormatRemoteTopic(f.cfg.Source, t)
		age := "-"
		if at, ok := latest[remote]; ok {
			age = time.Since(at).Round(time.Second).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", f.cfg.Name(), t, remote, len(d.Partitions), lag, age,
			strings.Join(slices.Sorted(mapKeys(held)), ","))
	}
	return nil
}

func joinInts(v []int32) string {
	if len(v) == 0 {
		return "-"
	}
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(int(n))
	}
	return strings.Join(s, ",")
}
