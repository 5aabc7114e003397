package groups

// weir consumer-groups --reset-offsets and --delete-offsets.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/cli/tool"
)

// parseTopicPartitions parses "topic:0,1,2".
func parseTopicPartitions(arg string) ([]kadm.Partition, error) {
	parts := tool.JavaSplit(arg, regexp.MustCompile(":"))
	if len(parts) != 2 {
		return nil, &groupsUsage{fmt.Sprintf("Invalid topic arg '%s', expected topic name and partitions", arg)}
	}
	var out []kadm.Partition
	for _, p := range tool.JavaSplit(parts[1], tool.CommaRE) {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return nil, &groupsUsage{fmt.Sprintf("Invalid partition '%s' specified in topic arg '%s''", p, arg)}
		}
		out = append(out, kadm.Partition{Topic: parts[0], Partition: int32(n)})
	}
	return out, nil
}

// topicPartitions resolves --topic arguments: the partitions named, and
// every partition of the topics named alone.
func topicPartitions(ctx context.Context, tc *tool.Client, args []string) ([]kadm.Partition, error) {
	var out, whole []kadm.Partition
	var topics []string
	for _, a := range args {
		if strings.Contains(a, ":") {
			ps, err := parseTopicPartitions(a)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		} else {
			topics = append(topics, a)
		}
	}
	if len(topics) > 0 {
		md, err := tc.Admin.Metadata(ctx, topics...)
		if err != nil {
			return nil, err
		}
		for _, t := range topics {
			td, ok := md.Topics[t]
			if !ok {
				return nil, tool.KafkaError(kerr.UnknownTopicOrPartition, nil)
			}
			if td.Err != nil {
				return nil, tool.KafkaError(td.Err, nil)
			}
			for _, p := range td.Partitions.Sorted() {
				whole = append(whole, kadm.Partition{Topic: t, Partition: p.Partition})
			}
		}
	}
	return append(out, whole...), nil
}

// offsetsOf lists the start, end or by-time offsets of partitions.
func offsetsOf(ctx context.Context, tc *tool.Client, ps []kadm.Partition, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	topics := map[string]bool{}
	var ts []string
	for _, p := range ps {
		if !topics[p.Topic] {
			topics[p.Topic] = true
			ts = append(ts, p.Topic)
		}
	}
	if len(ts) == 0 {
		return kadm.ListedOffsets{}, nil
	}
	listed, err := list(ctx, ts...)
	if err != nil {
		return nil, shardError(err)
	}
	return listed, nil
}

// tp names a partition as Kafka's TopicPartition prints it.
func tp(p kadm.Partition) string { return p.Topic + "-" + tool.Itoa(int64(p.Partition)) }

// logOffset is one partition's start or end offset, or a usage error.
func logOffset(listed kadm.ListedOffsets, p kadm.Partition, what string) (int64, error) {
	o, ok := listed.Lookup(p.Topic, p.Partition)
	if !ok || o.Err != nil {
		return 0, &groupsUsage{fmt.Sprintf("Error getting %s offset of topic partition: %s", what, tp(p))}
	}
	return o.Offset, nil
}

// clampOffsets moves offsets out of the log's range to its start or end,
// with Kafka's warnings.
func clampOffsets(ctx context.Context, tc *tool.Client, f *consumerGroupsFlags, want map[kadm.Partition]int64) (map[kadm.Partition]int64, error) {
	ps := slices.Collect(maps.Keys(want))
	starts, err := offsetsOf(ctx, tc, ps, tc.Admin.ListStartOffsets)
	if err != nil {
		return nil, err
	}
	ends, err := offsetsOf(ctx, tc, ps, tc.Admin.ListEndOffsets)
	if err != nil {
		return nil, err
	}
	out := map[kadm.Partition]int64{}
	for _, p := range sortPartitions(ps) {
		o := want[p]
		e, ok := ends.Lookup(p.Topic, p.Partition)
		if !ok {
			return nil, fmt.Errorf("Unexpected non-existing offset value for topic partition %s", tp(p))
		}
		s, _ := starts.Lookup(p.Topic, p.Partition)
		switch {
		case e.Err == nil && o > e.Offset:
			fmt.Fprintf(f.stderr, "WARN New offset (%d) is higher than latest offset for topic partition %s. Value will be set to %d\n", o, tp(p), e.Offset)
			o = e.Offset
		case s.Err == nil && o < s.Offset:
			fmt.Fprintf(f.stderr, "WARN New offset (%d) is lower than earliest offset for topic partition %s. Value will be set to %d\n", o, tp(p), s.Offset)
			o = s.Offset
		}
		out[p] = o
	}
	return out, nil
}

func sortPartitions(ps []kadm.Partition) []kadm.Partition {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b kadm.Partition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return ps
}

// committedOffsets are a group's committed offsets.
func committedOffsets(ctx context.Context, tc *tool.Client, group string) (map[kadm.Partition]int64, error) {
	listed, err := tc.Admin.FetchOffsets(ctx, group)
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	if err := listed.Error(); err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	out := map[kadm.Partition]int64{}
	listed.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			out[kadm.Partition{Topic: o.Topic, Partition: o.Partition}] = o.At
		}
	})
	return out, nil
}

// parseDateTime parses --to-datetime as Kafka's Utils.getDateTime:
// yyyy-MM-ddTHH:mm:ss[.SSS] with an optional zone (Z, +hh:mm, +hhmm),
// local time without one.
func parseDateTime(s string) (int64, error) {
	if len(strings.Split(s, "T")) != 2 {
		return 0, fmt.Errorf("Error parsing timestamp. It does not contain a 'T' according to ISO8601 format")
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("Unparseable date: %q", s)
}

var durationRE = regexp.MustCompile(`^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration parses Java's Duration.parse format, PnDTnHnMn.nS.
func parseISODuration(s string) (time.Duration, error) {
	m := durationRE.FindStringSubmatch(strings.ToUpper(s))
	if m == nil || m[3] == "T" || (m[2] == "" && m[3] == "") {
		return 0, fmt.Errorf("Text cannot be parsed to a Duration")
	}
	num := func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }
	d := time.Duration(num(m[2]))*24*time.Hour + time.Duration(num(m[4]))*time.Hour +
		time.Duration(num(m[5]))*time.Minute + time.Duration(num(m[6]))*time.Second
	if m[7] != "" {
		frac := (m[7] + "000000000")[:9]
		ns := time.Duration(num(frac))
		if strings.HasPrefix(m[6], "-") {
			ns = -ns
		}
		d += ns
	}
	if m[1] == "-" {
		d = -d
	}
	return d, nil
}

// offsetsByTime are the first offsets at or after ms, the log end where
// none is (with Kafka's warning).
func offsetsByTime(ctx context.Context, tc *tool.Client, out io.Writer, ps []kadm.Partition, ms int64) (map[kadm.Partition]int64, error) {
	listed, err := offsetsOf(ctx, tc, ps, func(ctx context.Context, ts ...string) (kadm.ListedOffsets, error) {
		return tc.Admin.ListOffsetsAfterMilli(ctx, ms, ts...)
	})
	if err != nil {
		return nil, err
	}
	res := map[kadm.Partition]int64{}
	for _, p := range ps {
		o, ok := listed.Lookup(p.Topic, p.Partition)
		if !ok || o.Err != nil {
			return nil, &groupsUsage{"Error getting offset by timestamp of topic partition: " + tp(p)}
		}
		if o.Timestamp < 0 {
			fmt.Fprintf(out, "\nWarn: Partition %d from topic %s is empty. Falling back to latest known offset.\n", p.Partition, p.Topic)
		}
		res[p] = o.Offset
	}
	return res, nil
}

// resetPlan reads a --from-file CSV: topic,partition,offset for one group,
// or group,topic,partition,offset.
func resetPlan(f *consumerGroupsFlags) (map[string]map[kadm.Partition]int64, error) {
	data, err := os.ReadFile(f.fromFile)
	if err != nil {
		return nil, err
	}
	lines := tool.JavaSplit(string(data), regexp.MustCompile("\n"))
	plan := map[string]map[kadm.Partition]int64{}
	oneGroup := len(f.groups) == 1 && len(strings.Split(lines[0], ",")) == 3
	for _, l := range lines {
		cells := strings.Split(strings.TrimSuffix(l, "\r"), ",")
		group := ""
		if oneGroup {
			group = f.groups[0]
		} else if len(cells) == 4 {
			group, cells = cells[0], cells[1:]
		}
		if len(cells) != 3 {
			return nil, fmt.Errorf("Invalid CSV line in %s: %q", f.fromFile, l)
		}
		p, err1 := strconv.ParseInt(cells[1], 10, 32)
		o, err2 := strconv.ParseInt(cells[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("Invalid CSV line in %s: %q", f.fromFile, l)
		}
		if plan[group] == nil {
			plan[group] = map[kadm.Partition]int64{}
		}
		plan[group][kadm.Partition{Topic: cells[0], Partition: int32(p)}] = o
	}
	return plan, nil
}

// prepareOffsets computes a group's new offsets for the scenario.
func prepareOffsets(ctx context.Context, tc *tool.Client, out io.Writer, f *consumerGroupsFlags, has func(string) bool,
	group string, ps []kadm.Partition) (map[kadm.Partition]int64, error) {
	res := map[kadm.Partition]int64{}
	switch {
	case has("to-offset"):
		for _, p := range ps {
			res[p] = f.toOffset
		}
		return clampOffsets(ctx, tc, f, res)
	case has("to-earliest"), has("to-latest"):
		list, what := tc.Admin.ListStartOffsets, "starting"
		if has("to-latest") {
			list, what = tc.Admin.ListEndOffsets, "ending"
		}
		listed, err := offsetsOf(ctx, tc, ps, list)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if res[p], err = logOffset(listed, p, what); err != nil {
				return nil, err
			}
		}
		return res, nil
	case has("shift-by"):
		current, err := committedOffsets(ctx, tc, group)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			c, ok := current[p]
			if !ok {
				return nil, &groupsUsage{fmt.Sprintf("Cannot shift offset for partition %s since there is no current committed offset", tp(p))}
			}
			res[p] = c + f.shiftBy
		}
		return clampOffsets(ctx, tc, f, res)
	case has("to-datetime"):
		ms, err := parseDateTime(f.toDatetime)
		if err != nil {
			return nil, err
		}
		return offsetsByTime(ctx, tc, out, ps, ms)
	case has("by-duration"):
		d, err := parseISODuration(f.byDuration)
		if err != nil {
			return nil, err
		}
		return offsetsByTime(ctx, tc, out, ps, time.Now().Add(-d).UnixMilli())
	case has("from-file"):
		plan, err := resetPlan(f)
		if err != nil {
			return nil, err
		}
		forGroup, ok := plan[group]
		if !ok {
			printGroupsError(out, "No reset plan for group "+group+" found")
			return res, nil
		}
		return clampOffsets(ctx, tc, f, forGroup)
	case has("to-current"):
		current, err := committedOffsets(ctx, tc, group)
		if err != nil {
			return nil, err
		}
		var missing []kadm.Partition
		for _, p := range ps {
			if c, ok := current[p]; ok {
				res[p] = c
			} else {
				missing = append(missing, p)
			}
		}
		ends, err := offsetsOf(ctx, tc, missing, tc.Admin.ListEndOffsets)
		if err != nil {
			return nil, err
		}
		for _, p := range missing {
			if res[p], err = logOffset(ends, p, "ending"); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	var opts []string
	for _, s := range resetScenarios {
		opts = append(opts, "["+s+"]")
	}
	return nil, &groupsUsage{fmt.Sprintf("Option '[reset-offsets]' requires one of the following scenarios: [%s]", strings.Join(opts, ", "))}
}

func resetOffsets(ctx context.Context, tc *tool.Client, out io.Writer, f *consumerGroupsFlags) error {
	has := f.changed
	names, err := groupIDs(ctx, tc, f)
	if err != nil {
		return err
	}
	var b strings.Builder
	result := map[string]map[kadm.Partition]int64{}
	failed := false
	for _, group := range slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(names))))) {
		state := "Dead"
		descs, err := DescribeConsumerGroups(ctx, tc, []string{group})
		var je *tool.JavaError
		switch {
		case err == nil:
			state = descs[group].state
		case errors.As(err, &je) && je.Class == "GroupIdNotFoundException":
		default:
			io.WriteString(out, b.String())
			return err
		}
		if state != "Empty" && state != "Dead" {
			printGroupsError(&b, fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", group, state))
			result[group] = map[kadm.Partition]int64{}
			failed = true
			continue
		}
		var ps []kadm.Partition
		switch {
		case f.allTopics:
			current, err := committedOffsets(ctx, tc, group)
			if err != nil {
				io.WriteString(out, b.String())
				return err
			}
			for p := range current {
				ps = append(ps, p)
			}
			ps = sortPartitions(ps)
		case len(f.topics) > 0:
			if ps, err = topicPartitions(ctx, tc, f.topics); err != nil {
				io.WriteString(out, b.String())
				return err
			}
		case !has("from-file"):
			io.WriteString(out, b.String())
			return &groupsUsage{"One of the reset scopes should be defined: --all-topics, --topic."}
		}
		prepared, err := prepareOffsets(ctx, tc, &b, f, has, group, ps)
		if err != nil {
			io.WriteString(out, b.String())
			return err
		}
		if f.execute && len(prepared) > 0 {
			var commit kadm.Offsets
			for p, o := range prepared {
				commit.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: o, LeaderEpoch: -1})
			}
			rs, err := tc.Admin.CommitOffsets(ctx, group, commit)
			if err == nil {
				err = rs.Error()
			}
			if err != nil {
				io.WriteString(out, b.String())
				return tool.KafkaError(err, nil)
			}
		}
		result[group] = prepared
	}
	groups := slices.Sorted(maps.Keys(result))
	if f.export {
		for _, g := range groups {
			for _, p := range sortPartitions(keys(result[g])) {
				if len(f.groups) == 1 {
					fmt.Fprintf(&b, "%s,%d,%d\n", p.Topic, p.Partition, result[g][p])
				} else {
					fmt.Fprintf(&b, "%s,%s,%d,%d\n", g, p.Topic, p.Partition, result[g][p])
				}
			}
		}
		b.WriteString("\n")
	} else {
		// Kafka 4.4's layout: columns as wide as their longest cell (15 at
		// least), groups and partitions in the order of Java's HashMaps of
		// them.
		gw, tw := 15, 15
		for _, g := range groups {
			gw = max(gw, len(g))
			for p := range result[g] {
				tw = max(tw, len(p.Topic))
			}
		}
		row := func(g, t, p, o string) {
			fmt.Fprintf(&b, "\n%s %s %s %s", tool.PadRight(g, gw), tool.PadRight(t, tw), tool.PadRight(p, 10), o)
		}
		if len(result) > 0 {
			row("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
		}
		tool.JavaOrder(groups, tool.JavaStringHash)
		for _, g := range groups {
			parts := sortPartitions(keys(result[g]))
			tool.JavaOrder(parts, func(p kadm.Partition) int32 { return tool.JavaTopicPartitionHash(p.Topic, p.Partition) })
			for _, p := range parts {
				row(g, p.Topic, tool.Itoa(int64(p.Partition)), tool.Itoa(result[g][p]))
			}
		}
		b.WriteString("\n")
	}
	io.WriteString(out, b.String())
	if failed {
		return groupsFailed
	}
	return nil
}

func keys(m map[kadm.Partition]int64) []kadm.Partition {
	out := make([]kadm.Partition, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	return out
}

func deleteGroupOffsets(ctx context.Context, tc *tool.Client, out io.Writer, f *consumerGroupsFlags) error {
	group := f.groups[0]
	type result struct {
		p   kadm.Partition
		err error
	}
	var results []result
	var ps []kadm.Partition
	for _, a := range f.topics {
		if strings.Contains(a, ":") {
			more, err := parseTopicPartitions(a)
			if err != nil {
				return err
			}
			ps = append(ps, more...)
			continue
		}
		md, err := tc.Admin.Metadata(ctx, a)
		if err != nil {
			return err
		}
		td, ok := md.Topics[a]
		switch {
		case !ok:
			results = append(results, result{kadm.Partition{Topic: a, Partition: -1}, tool.KafkaError(kerr.UnknownTopicOrPartition, nil)})
		case td.Err != nil:
			results = append(results, result{kadm.Partition{Topic: a, Partition: -1}, tool.KafkaError(td.Err, nil)})
		default:
			for _, p := range td.Partitions.Sorted() {
				ps = append(ps, kadm.Partition{Topic: a, Partition: p.Partition})
			}
		}
	}
	var set kadm.TopicsSet
	for _, p := range ps {
		set.Add(p.Topic, p.Partition)
	}
	var topErr error
	rs, err := tc.Admin.DeleteOffsets(ctx, group, set)
	if err != nil {
		topErr = err
	}
	for _, p := range ps {
		var perr error
		if topErr != nil {
			perr = tool.KafkaError(topErr, nil)
		} else if e, ok := rs.Lookup(p.Topic, p.Partition); ok && e != nil {
			perr = tool.KafkaError(e, nil)
			if topErr == nil {
				topErr = e
			}
		}
		results = append(results, result{p, perr})
	}
	var b strings.Builder
	var ke *kerr.Error
	errors.As(topErr, &ke)
	switch {
	case topErr == nil:
		fmt.Fprintf(&b, "Request succeed for deleting offsets with topic %s group %s\n", strings.Join(f.topics, ", "), group)
	case ke == kerr.InvalidGroupID:
		printGroupsError(&b, "'"+group+"' is not valid.")
	case ke == kerr.GroupIDNotFound:
		printGroupsError(&b, "'"+group+"' does not exist.")
	case ke == kerr.GroupAuthorizationFailed:
		printGroupsError(&b, "Access to '"+group+"' is not authorized.")
	case ke == kerr.NonEmptyGroup:
		printGroupsError(&b, "Deleting offsets of a consumer group '"+group+"' is forbidden if the group is not empty.")
	case ke == kerr.GroupSubscribedToTopic, ke == kerr.TopicAuthorizationFailed, ke == kerr.UnknownTopicOrPartition:
		printGroupsError(&b, "Encounter some partition level error, see the follow-up details:")
	case ke != nil:
		printGroupsError(&b, "Encounter some unknown error: "+ke.Message)
	default:
		printGroupsError(&b, "Encounter some unknown error: "+topErr.Error())
	}
	slices.SortFunc(results, func(a, b result) int {
		return strings.Compare(a.p.Topic+tool.Itoa(int64(a.p.Partition)), b.p.Topic+tool.Itoa(int64(b.p.Partition)))
	})
	row := func(t, p, s string) {
		fmt.Fprintf(&b, "\n%s %s %s", tool.PadRight(t, 30), tool.PadRight(p, 15), tool.PadRight(s, 15))
	}
	row("TOPIC", "PARTITION", "STATUS")
	anyFailed := topErr != nil
	for _, r := range results {
		p, status := tool.Itoa(int64(r.p.Partition)), "Successful"
		if r.p.Partition < 0 {
			p = "Not Provided"
		}
		if r.err != nil {
			status = "Error: :" + tool.DescribeErr(r.err)
			anyFailed = true
		}
		row(r.p.Topic, p, status)
	}
	b.WriteString("\n")
	io.WriteString(out, b.String())
	if anyFailed {
		return groupsFailed
	}
	return nil
}
