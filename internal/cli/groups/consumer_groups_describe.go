package groups

// weir consumer-groups --describe and --delete.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/cli/tool"
)

// groupDesc is a consumer group as described by ConsumerGroupDescribe
// (KIP-848 groups) or DescribeGroups (classic groups).
type groupDesc struct {
	group, state, assignor      string
	coordinator                 kadm.BrokerDetail
	consumer                    bool // a KIP-848 group
	groupEpoch, assignmentEpoch int32
	Members                     []memberDesc
}

type memberDesc struct {
	id, instanceID, clientID, host string
	assignment, target             kadm.TopicsSet
	epoch                          int32
	classic                        bool // a classic member of a KIP-848 group
}

// DescribeConsumerGroups describes groups as Kafka's admin client does:
// ConsumerGroupDescribe first, DescribeGroups for the groups it does not
// know (classic groups); a dead group is GroupIdNotFoundException.
func DescribeConsumerGroups(ctx context.Context, tc *tool.Client, names []string) (map[string]groupDesc, error) {
	out := map[string]groupDesc{}
	classic := slices.Clone(names)
	if ok, err := tc.Supports(ctx, 69); err != nil {
		return nil, err
	} else if ok {
		classic = nil
		ds, err := tc.Admin.DescribeConsumerGroups(ctx, names...)
		if err != nil && len(ds) == 0 {
			return nil, shardError(err)
		}
		for _, name := range names {
			d, ok := ds[name]
			switch {
			case !ok || errors.Is(d.Err, kerr.GroupIDNotFound):
				classic = append(classic, name)
				continue
			case d.Err != nil:
				return nil, tool.KafkaError(d.Err, nil)
			}
			g := groupDesc{group: name, state: titleState(d.State), assignor: d.AssignorName, coordinator: d.Coordinator,
				consumer: true, groupEpoch: d.Epoch, assignmentEpoch: d.AssignmentEpoch}
			for _, m := range d.Members {
				md := memberDesc{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost, assignment: m.Assignment,
					target: m.TargetAssignment, epoch: m.MemberEpoch, classic: m.MemberType == 0}
				if m.InstanceID != nil {
					md.instanceID = *m.InstanceID
				}
				g.Members = append(g.Members, md)
			}
			out[name] = g
		}
	}
	if len(classic) == 0 {
		return out, nil
	}
	ds, err := tc.Admin.DescribeGroups(ctx, classic...)
	if err != nil && len(ds) == 0 {
		return nil, shardError(err)
	}
	for _, name := range classic {
		d, ok := ds[name]
		if !ok {
			return nil, shardError(err)
		}
		if d.Err != nil {
			return nil, tool.KafkaError(d.Err, &d.ErrMessage)
		}
		if d.State == "Dead" {
			return nil, &tool.JavaError{Class: "GroupIdNotFoundException", Msg: "Group " + name + " not found."}
		}
		g := groupDesc{group: name, state: titleState(d.State), assignor: d.Protocol, coordinator: d.Coordinator}
		for _, m := range d.Members {
			md := memberDesc{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost, assignment: kadm.TopicsSet{}}
			if m.InstanceID != nil {
				md.instanceID = *m.InstanceID
			}
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					md.assignment.Add(t.Topic, t.Partitions...)
				}
			}
			g.Members = append(g.Members, md)
		}
		out[name] = g
	}
	return out, nil
}

// shardError is the first error of a request sent to several brokers.
func shardError(err error) error {
	var se *kadm.ShardErrors
	if errors.As(err, &se) && len(se.Errs) > 0 {
		err = se.Errs[0].Err
	}
	return tool.KafkaError(err, nil)
}

// sortedPartitions lists a set's partitions by topic, then partition.
func sortedPartitions(s kadm.TopicsSet) []kadm.Partition {
	var out []kadm.Partition
	for _, t := range s.Sorted() {
		for _, p := range t.Partitions {
			out = append(out, kadm.Partition{Topic: t.Topic, Partition: p})
		}
	}
	return out
}

// groupIDs are the groups --group or --all-groups name.
func groupIDs(ctx context.Context, tc *tool.Client, f *consumerGroupsFlags) ([]string, error) {
	if !f.allGroups {
		return f.groups, nil
	}
	gs, err := consumerGroups(ctx, tc, nil, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range gs {
		out = append(out, g.Group)
	}
	return out, nil
}

// printableState reports whether a group's rows are printed, and prints
// what Kafka's tool says of a group with no rows or in a rebalance.
func printableState(out, stderr io.Writer, g groupDesc, rows int) bool {
	switch g.state {
	case "Dead":
		printGroupsError(out, "Consumer group '"+g.group+"' does not exist.")
	case "Empty":
		fmt.Fprintln(stderr, "\nConsumer group '"+g.group+"' has no active members.")
	case "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling":
		fmt.Fprintln(stderr, "\nWarning: Consumer group '"+g.group+"' is rebalancing.")
	}
	return g.state != "Dead" && rows > 0
}

func optional(v int64, ok bool) string {
	if !ok {
		return missingColumn
	}
	return tool.Itoa(v)
}

// missingColumn fills a cell with no value, as Kafka's tool does.
const missingColumn = "-"

func describeGroups(ctx context.Context, tc *tool.Client, out io.Writer, f *consumerGroupsFlags) error {
	names, err := groupIDs(ctx, tc, f)
	if err != nil {
		return err
	}
	descs, err := DescribeConsumerGroups(ctx, tc, names)
	if err != nil {
		return err
	}
	sorted := slices.Sorted(maps.Keys(descs))
	var b strings.Builder
	defer func() { io.WriteString(out, b.String()) }()
	switch {
	case f.members:
		for _, n := range sorted {
			printMembers(&b, f.stderr, descs[n], f.verbose)
		}
	case f.state != "":
		for _, n := range sorted {
			g := descs[n]
			if !printableState(&b, f.stderr, g, 1) {
				continue
			}
			coordinator := fmt.Sprintf("%s:%d  (%d)", g.coordinator.Host, g.coordinator.Port, g.coordinator.NodeID)
			assignor := g.assignor
			if assignor == "" {
				assignor = missingColumn
			}
			cells := [][2]string{{"GROUP", g.group}, {"COORDINATOR (ID)", coordinator}, {"ASSIGNMENT-STRATEGY", assignor}, {"STATE", g.state}}
			widths := []int{max(15, len(g.group)), max(25, len(coordinator)), 20, 20}
			if f.verbose {
				epoch, target := missingColumn, missingColumn
				if g.consumer {
					epoch, target = tool.Itoa(int64(g.groupEpoch)), tool.Itoa(int64(g.assignmentEpoch))
				}
				cells = append(cells, [2]string{"GROUP-EPOCH", epoch}, [2]string{"TARGET-ASSIGNMENT-EPOCH", target})
				widths = append(widths, 15, 25)
			}
			cells = append(cells, [2]string{"#MEMBERS", tool.Itoa(int64(len(g.Members)))})
			for row := 0; row < 2; row++ {
				b.WriteString("\n")
				for i, c := range cells {
					if i < len(widths) {
						b.WriteString(tool.PadRight(c[row], widths[i]) + " ")
					} else {
						b.WriteString(c[row])
					}
				}
			}
			b.WriteString("\n")
		}
	default:
		for _, n := range sorted {
			if err := printOffsets(ctx, tc, &b, f.stderr, descs[n], f.verbose); err != nil {
				return err
			}
		}
	}
	return nil
}

// offsetRow is one row of --describe --offsets.
type offsetRow struct {
	topic, partition, offset, leo, lag, epoch, consumerID, host, clientID string
}

func printOffsets(ctx context.Context, tc *tool.Client, b *strings.Builder, stderr io.Writer, g groupDesc, verbose bool) error {
	committed, err := tc.Admin.FetchOffsets(ctx, g.group)
	if err != nil {
		return tool.KafkaError(err, nil)
	}
	if err := committed.Error(); err != nil {
		return tool.KafkaError(err, nil)
	}
	type assigned struct {
		p kadm.Partition
		m *memberDesc
	}
	var parts []assigned
	members := slices.Clone(g.Members)
	slices.SortStableFunc(members, func(a, b memberDesc) int {
		return len(sortedPartitions(b.assignment)) - len(sortedPartitions(a.assignment))
	})
	seen := map[kadm.Partition]bool{}
	for i := range members {
		ps := sortedPartitions(members[i].assignment)
		slices.SortStableFunc(ps, func(a, b kadm.Partition) int { return int(a.Partition - b.Partition) })
		for _, p := range ps {
			parts = append(parts, assigned{p, &members[i]})
			seen[p] = true
		}
	}
	var unassigned []kadm.Partition
	committed.Each(func(o kadm.OffsetResponse) {
		p := kadm.Partition{Topic: o.Topic, Partition: o.Partition}
		if !seen[p] {
			unassigned = append(unassigned, p)
		}
	})
	slices.SortFunc(unassigned, func(a, b kadm.Partition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	for _, p := range unassigned {
		parts = append(parts, assigned{p, nil})
	}
	topics := map[string]bool{}
	for _, a := range parts {
		topics[a.p.Topic] = true
	}
	ends := kadm.ListedOffsets{}
	if len(topics) > 0 {
		var ts []string
		for t := range topics {
			ts = append(ts, t)
		}
		if ends, err = tc.Admin.ListEndOffsets(ctx, ts...); err != nil {
			return shardError(err)
		}
	}
	var rows []offsetRow
	for _, a := range parts {
		r := offsetRow{topic: a.p.Topic, partition: tool.Itoa(int64(a.p.Partition)), consumerID: missingColumn, host: missingColumn,
			clientID: missingColumn, offset: missingColumn, leo: missingColumn, lag: missingColumn, epoch: missingColumn}
		if a.m != nil {
			r.consumerID, r.host, r.clientID = a.m.id, a.m.host, a.m.clientID
		}
		o, hasOffset := committed.Lookup(a.p.Topic, a.p.Partition)
		hasOffset = hasOffset && o.Err == nil && o.At >= 0
		if hasOffset {
			r.offset = tool.Itoa(o.At)
			if o.LeaderEpoch >= 0 {
				r.epoch = tool.Itoa(int64(o.LeaderEpoch))
			}
		}
		e, hasEnd := ends.Lookup(a.p.Topic, a.p.Partition)
		hasEnd = hasEnd && e.Err == nil
		if hasEnd {
			r.leo = tool.Itoa(e.Offset)
		}
		if hasOffset && hasEnd {
			r.lag = tool.Itoa(e.Offset - o.At)
		}
		rows = append(rows, r)
	}
	if !printableState(b, stderr, g, len(rows)) {
		return nil
	}
	gw, tw, cw, hw := max(15, len(g.group)), 15, 15, 15
	for _, r := range rows {
		tw, cw, hw = max(tw, len(r.topic)), max(cw, len(r.consumerID)), max(hw, len(r.host))
	}
	line := func(group string, r offsetRow) {
		b.WriteString("\n" + tool.PadRight(group, gw) + " " + tool.PadRight(r.topic, tw) + " " + tool.PadRight(r.partition, 10) + " ")
		if verbose {
			b.WriteString(tool.PadRight(r.epoch, 15) + " ")
		}
		b.WriteString(tool.PadRight(r.offset, 15) + " " + tool.PadRight(r.leo, 15) + " " + tool.PadRight(r.lag, 15) + " " +
			tool.PadRight(r.consumerID, cw) + " " + tool.PadRight(r.host, hw) + " " + r.clientID)
	}
	line("GROUP", offsetRow{topic: "TOPIC", partition: "PARTITION", epoch: "LEADER-EPOCH", offset: "CURRENT-OFFSET", leo: "LOG-END-OFFSET",
		lag: "LAG", consumerID: "CONSUMER-ID", host: "HOST", clientID: "CLIENT-ID"})
	for _, r := range rows {
		line(g.group, r)
	}
	b.WriteString("\n")
	return nil
}

// assignmentString prints an assignment as "t1:0,1;t2:0", "-" when empty.
func assignmentString(s kadm.TopicsSet) string {
	var parts []string
	for _, t := range s.Sorted() {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		strs := make([]string, len(ps))
		for i, p := range ps {
			strs[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, t.Topic+":"+strings.Join(strs, ","))
	}
	if len(parts) == 0 {
		return missingColumn
	}
	return strings.Join(parts, ";")
}

// printMembers prints a group's members as Kafka's tool: the header even
// when there is no member to show (with the default widths then).
func printMembers(b *strings.Builder, stderr io.Writer, g groupDesc, verbose bool) {
	printable := printableState(b, stderr, g, len(g.Members))
	gw, cw, iw, hw, clw := 15, 15, 17, 15, 15
	aw, tw := 20, 20
	withInstance, hasClassic, hasConsumer := false, false, false
	if printable {
		gw = max(gw, len(g.group))
		for _, m := range g.Members {
			cw, iw, hw, clw = max(cw, len(m.id)), max(iw, len(m.instanceID)), max(hw, len(m.host)), max(clw, len(m.clientID))
			withInstance = withInstance || m.instanceID != ""
			hasClassic = hasClassic || (g.consumer && m.classic)
			hasConsumer = hasConsumer || (g.consumer && !m.classic)
			aw, tw = max(aw, len(assignmentString(m.assignment))), max(tw, len(assignmentString(m.target)))
		}
	}
	withUpgraded := hasClassic && hasConsumer
	// line prints the cells of a row: the member's, each padded and
	// followed by a space, then with --verbose the epochs and assignments
	// (the last padded, without a space) and UPGRADED.
	line := func(cells, verboseCells []string) {
		widths := []int{gw, cw, hw, clw, 15}
		if withInstance {
			widths = []int{gw, cw, iw, hw, clw, 15}
		}
		for i, c := range cells {
			b.WriteString(tool.PadRight(c, widths[i]) + " ")
		}
		if verbose {
			vw := []int{15, aw, 15, tw}
			for i, c := range verboseCells[:4] {
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString(tool.PadRight(c, vw[i]))
			}
			if withUpgraded {
				b.WriteString(" " + verboseCells[4])
			}
		}
		b.WriteString("\n")
	}
	header := []string{"GROUP", "CONSUMER-ID"}
	if withInstance {
		header = append(header, "GROUP-INSTANCE-ID")
	}
	header = append(header, "HOST", "CLIENT-ID", "#PARTITIONS")
	b.WriteString("\n")
	line(header, []string{"CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT", "UPGRADED"})
	if !printable {
		return
	}
	for _, m := range g.Members {
		cells := []string{g.group, m.id}
		if withInstance {
			cells = append(cells, m.instanceID)
		}
		cells = append(cells, m.host, m.clientID, tool.Itoa(int64(len(sortedPartitions(m.assignment)))))
		epoch, target, targetEpoch := missingColumn, missingColumn, missingColumn
		if g.consumer {
			epoch, target, targetEpoch = tool.Itoa(int64(m.epoch)), assignmentString(m.target), tool.Itoa(int64(g.assignmentEpoch))
		}
		line(cells, []string{epoch, assignmentString(m.assignment), targetEpoch, target, strconv.FormatBool(!m.classic)})
	}
}

func deleteGroups(ctx context.Context, tc *tool.Client, out io.Writer, f *consumerGroupsFlags) error {
	names, err := groupIDs(ctx, tc, f)
	if err != nil {
		return err
	}
	rs, err := tc.Admin.DeleteGroups(ctx, names...)
	if err != nil && len(rs) == 0 {
		return shardError(err)
	}
	var ok, failed []string
	var b strings.Builder
	for _, r := range rs.Sorted() {
		if r.Err == nil {
			ok = append(ok, r.Group)
		} else {
			failed = append(failed, fmt.Sprintf("* Group '%s' could not be deleted due to: %s", r.Group, tool.DescribeErr(tool.KafkaError(r.Err, &r.ErrMessage))))
		}
	}
	if len(failed) == 0 {
		fmt.Fprintf(&b, "Deletion of requested consumer groups ('%s') was successful.\n", strings.Join(ok, ", "))
		_, err := io.WriteString(out, b.String())
		return err
	}
	printGroupsError(&b, "Deletion of some consumer groups failed:")
	for _, l := range failed {
		b.WriteString(l + "\n")
	}
	if len(ok) > 0 {
		fmt.Fprintf(&b, "\nThese consumer groups were deleted successfully: '%s', '\n", strings.Join(ok, "'"))
	}
	io.WriteString(out, b.String())
	return groupsFailed
}
