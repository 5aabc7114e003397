// Package groups is weir consumer-groups, like kafka-consumer-groups.sh.
package groups

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/cli/tool"
)

// noValue marks --state and --type given without a value.
const noValue = "\x00"

type consumerGroupsFlags struct {
	conn                                                tool.ConnFlags
	list, describe, delete, resetOffsets, deleteOffsets bool
	groups, topics                                      []string
	allGroups, allTopics                                bool
	members, verbose, offsets                           bool
	state, typ                                          string
	timeoutMs                                           int64
	dryRun, execute, export                             bool
	toOffset, shiftBy                                   int64
	toDatetime, byDuration, fromFile                    string
	toEarliest, toLatest, toCurrent                     bool
	stderr                                              io.Writer
	changed                                             func(string) bool
}

func NewCommand() *cobra.Command {
	f := &consumerGroupsFlags{}
	cmd := &cobra.Command{
		Use:   "consumer-groups (--list | --describe | --delete | --reset-offsets | --delete-offsets) --bootstrap-server HOST:PORT [flags]",
		Short: "List, describe, delete consumer groups and reset their offsets, like kafka-consumer-groups.sh",
		Long: `consumer-groups lists consumer groups, shows their members, committed offsets and
lag, deletes them, deletes their offsets and resets them. It takes the flags
of Apache Kafka's kafka-consumer-groups.sh and prints its tables, against weir
or Kafka alike, for classic groups and KIP-848 consumer groups.

  --list [--state [S,...]] [--type [T,...]]
        group names; with --state or --type a table with those columns, and
        only groups in the states (Stable, Empty, PreparingRebalance,
        CompletingRebalance, Assigning, Reconciling, Dead) or of the types
        (Classic, Consumer, Share, Streams) given
  --describe (--group G ... | --all-groups) [--offsets | --members | --state] [--verbose]
        --offsets (the default): per partition CURRENT-OFFSET (committed),
        LOG-END-OFFSET, LAG (their difference; "-" without a commit) and the
        member it is assigned to; --verbose adds LEADER-EPOCH.
        --members: per member its partition count; --verbose adds the member
        epoch, assignment, target epoch and target assignment (KIP-848
        groups; "-" for classic ones).
        --state: coordinator, assignor, state and member count; --verbose
        adds the group and target assignment epochs.
  --delete (--group G ... | --all-groups)
        empty groups and their offsets
  --delete-offsets --group G --topic T[:P,...] ...
        the committed offsets of topics (or of some of their partitions)
  --reset-offsets (--group G ... | --all-groups) (--topic T[:P,...] ... | --all-topics) SCENARIO [--dry-run | --execute] [--export]
        new committed offsets for inactive groups; scenarios: --to-earliest,
        --to-latest, --to-current, --to-offset N, --shift-by N,
        --to-datetime YYYY-MM-DDTHH:mm:SS.sss[zone], --by-duration PnDTnHnMnS,
        --from-file CSV (as --export writes it: topic,partition,offset, or
        group,topic,partition,offset for several groups). Offsets out of the
        log's range are moved to its start or end. Without --execute nothing
        is changed (a dry run).

Exit codes: 0, or 1 when the command fails (Kafka's script exits 0 after
printing "Error: ..." for failures other than usage errors; weir's exits 1 so
that scripts can tell).

` + tool.CommandConfigHelp,
		Example: `  # every group, then with state and type
  weir consumer-groups --bootstrap-server localhost:9092 --list
  weir consumer-groups --bootstrap-server localhost:9092 --list --state --type

  # the lag of a group, its members and their partitions
  weir consumer-groups --bootstrap-server localhost:9092 --describe --group billing
  weir consumer-groups --bootstrap-server localhost:9092 --describe --group billing --members --verbose

  # replay a topic from the start (the group must be inactive), first as a dry run
  weir consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing --topic orders --to-earliest
  weir consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing --topic orders --to-earliest --execute

  # skip the last hour's records on partitions 0 and 1, saving the plan to a file first
  weir consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing \
      --topic orders:0,1 --by-duration PT1H --export > plan.csv
  weir consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing --from-file plan.csv --execute

  # forget a topic's offsets, then the whole group
  weir consumer-groups --bootstrap-server localhost:9092 --delete-offsets --group billing --topic orders
  weir consumer-groups --bootstrap-server localhost:9092 --delete --group billing`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runConsumerGroups(cmd, f, args) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	f.conn.Add(fl)
	fl.BoolVar(&f.list, "list", false, "list all consumer groups")
	fl.BoolVar(&f.describe, "describe", false, "describe consumer group and list offset lag (number of messages not yet processed) related to given group")
	fl.BoolVar(&f.delete, "delete", false, "delete groups (--group g1 --group g2, or --all-groups)")
	fl.BoolVar(&f.resetOffsets, "reset-offsets", false, "reset offsets of consumer groups, whose members must be inactive")
	fl.BoolVar(&f.deleteOffsets, "delete-offsets", false, "delete offsets of one consumer group, for one or more topics")
	fl.StringArrayVar(&f.groups, "group", nil, "the consumer group to act on (repeatable)")
	fl.BoolVar(&f.allGroups, "all-groups", false, "apply to all consumer groups")
	fl.StringArrayVar(&f.topics, "topic", nil, "a topic, or topic:p1,p2 for some of its partitions (repeatable)")
	fl.BoolVar(&f.allTopics, "all-topics", false, "with --reset-offsets, every topic the group has offsets for")
	fl.BoolVar(&f.offsets, "offsets", false, "with --describe, the group's partitions with their offsets and lag (the default)")
	fl.BoolVar(&f.members, "members", false, "with --describe, the group's members")
	fl.StringVar(&f.state, "state", "", "with --describe, the group's state; with --list, the states of groups, or only groups in these states (comma-separated)")
	fl.Lookup("state").NoOptDefVal = noValue
	fl.StringVar(&f.typ, "type", "", "with --list, the types of groups, or only groups of these types (comma-separated)")
	fl.Lookup("type").NoOptDefVal = noValue
	fl.BoolVar(&f.verbose, "verbose", false, "with --describe, more columns")
	fl.Int64Var(&f.timeoutMs, "timeout", 5000, "the timeout of each request, in ms")
	fl.BoolVar(&f.dryRun, "dry-run", false, "with --reset-offsets, only show the new offsets (the default)")
	fl.BoolVar(&f.execute, "execute", false, "with --reset-offsets, commit the new offsets")
	fl.BoolVar(&f.export, "export", false, "with --reset-offsets, print the new offsets as CSV")
	fl.Int64Var(&f.toOffset, "to-offset", 0, "reset offsets to a specific offset")
	fl.Int64Var(&f.shiftBy, "shift-by", 0, "reset offsets shifting the current offset by n, positive or negative")
	fl.StringVar(&f.toDatetime, "to-datetime", "", "reset offsets to the first offset at or after a time, YYYY-MM-DDTHH:mm:SS.sss")
	fl.StringVar(&f.byDuration, "by-duration", "", "reset offsets to the first offset at or after now minus a duration, PnDTnHnMnS")
	fl.StringVar(&f.fromFile, "from-file", "", "reset offsets to the values of a CSV file")
	fl.BoolVar(&f.toEarliest, "to-earliest", false, "reset offsets to the log start")
	fl.BoolVar(&f.toLatest, "to-latest", false, "reset offsets to the log end")
	fl.BoolVar(&f.toCurrent, "to-current", false, "reset offsets to the committed offset (the log end where none)")
	return cmd
}

var resetScenarios = []string{"to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest", "to-latest", "to-current", "from-file"}

// checkConsumerGroupsArgs validates the flags as kafka-consumer-groups.sh
// does, in its order and with its messages.
func checkConsumerGroupsArgs(cmd *cobra.Command, f *consumerGroupsFlags, args []string) error {
	has := cmd.Flags().Changed
	if cmd.Flags().NFlag() == 0 {
		return tool.UsageError(cmd, "This tool helps to list all consumer groups, describe a consumer group, delete consumer group info, or reset consumer group offsets.")
	}
	// --state and --type take an optional value: "--list --state stable"
	// gives it as the next argument.
	if len(args) == 1 && (f.state == noValue || f.typ == noValue) {
		if f.state == noValue {
			f.state = args[0]
		} else {
			f.typ = args[0]
		}
		args = nil
	}
	if len(args) > 0 {
		return tool.UsageError(cmd, fmt.Sprintf("Found non-option arguments: %v", args))
	}
	for _, o := range []struct{ opt, needs string }{{"members", "describe"}, {"verbose", "describe"}, {"offsets", "describe"}, {"type", "list"}} {
		if has(o.opt) && !has(o.needs) {
			return tool.UsageError(cmd, fmt.Sprintf("Option(s) [%s] are unavailable given other options on the command line", o.opt))
		}
	}
	if has("state") && !has("describe") && !has("list") {
		return tool.UsageError(cmd, "Option(s) [state] are unavailable given other options on the command line")
	}
	if !has("bootstrap-server") {
		return tool.UsageError(cmd, `Missing required argument "[bootstrap-server]"`)
	}
	scope := "[group], [all-groups]"
	if has("describe") {
		if !has("group") && !has("all-groups") {
			return tool.UsageError(cmd, "Option [describe] takes one of these options: "+scope)
		}
		n := 0
		for _, o := range []string{"members", "offsets", "state"} {
			if has(o) {
				n++
			}
		}
		if n > 1 {
			return tool.UsageError(cmd, "Option [describe] takes at most one of these options: [members], [offsets], [state]")
		}
		if has("state") && f.state != noValue {
			return tool.UsageError(cmd, "Option [describe] does not take a value for [state]")
		}
	}
	if has("delete") {
		if !has("group") && !has("all-groups") {
			return tool.UsageError(cmd, "Option [delete] takes one of these options: "+scope)
		}
		if has("topic") {
			return tool.UsageError(cmd, "The consumer does not support topic-specific offset deletion from a consumer group.")
		}
	}
	if has("delete-offsets") && (!has("group") || !has("topic")) {
		return tool.UsageError(cmd, "Option [delete-offsets] takes the following options: [group], [topic]")
	}
	if has("reset-offsets") {
		if has("dry-run") && has("execute") {
			return tool.UsageError(cmd, "Option [reset-offsets] only accepts one of [execute] and [dry-run]")
		}
		if !has("dry-run") && !has("execute") {
			fmt.Fprintln(cmd.ErrOrStderr(), "WARN: No action will be performed as the --execute option is missing.In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting.")
		}
		if !has("group") && !has("all-groups") {
			return tool.UsageError(cmd, "Option [reset-offsets] takes one of these options: "+scope)
		}
		for _, s := range resetScenarios {
			if !has(s) {
				continue
			}
			for _, other := range resetScenarios {
				if other != s && has(other) {
					return tool.UsageError(cmd, fmt.Sprintf(`Option "[%s]" can't be used with option "[%s]"`, s, other))
				}
			}
		}
	}
	if has("group") {
		for _, bad := range []string{"all-groups", "list"} {
			if has(bad) {
				return tool.UsageError(cmd, fmt.Sprintf(`Option "[group]" can't be used with option "[%s]"`, bad))
			}
		}
	}
	if has("topic") {
		for _, bad := range []string{"list", "describe"} {
			if has(bad) {
				return tool.UsageError(cmd, fmt.Sprintf(`Option "[topic]" can't be used with option "[%s]"`, bad))
			}
		}
	}
	actions := 0
	for _, a := range []string{"list", "describe", "delete", "reset-offsets", "delete-offsets"} {
		if has(a) {
			actions++
		}
	}
	if actions != 1 {
		return tool.UsageError(cmd, "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets")
	}
	return nil
}

// groupsUsage is a failure Kafka's tool reports as a usage error (an
// IllegalArgumentException while running).
type groupsUsage struct{ msg string }

func (e *groupsUsage) Error() string { return e.msg }

// groupsFailed ends a command that has printed its errors.
var groupsFailed = errors.New("failed")

func runConsumerGroups(cmd *cobra.Command, f *consumerGroupsFlags, args []string) error {
	if err := checkConsumerGroupsArgs(cmd, f, args); err != nil {
		return err
	}
	f.stderr, f.changed = cmd.ErrOrStderr(), cmd.Flags().Changed
	tc, err := f.conn.Connect(cmd, "weir-consumer-groups", tool.Either(cmd.Flags().Changed("list"), "findAllBrokers", "describeConsumerGroups"))
	var timedOut *tool.JavaError
	if errors.As(err, &timedOut) {
		printGroupsError(cmd.OutOrStdout(), "Executing consumer group command failed due to "+tool.DescribeErr(err))
		return tool.ExitCode(1)
	}
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), err)
		return tool.ExitCode(1)
	}
	defer tc.Close()
	ctx, cancel := tc.Context(cmd)
	defer cancel()
	out := cmd.OutOrStdout()
	switch {
	case f.list:
		err = listGroups(ctx, tc, out, f)
	case f.describe:
		err = describeGroups(ctx, tc, out, f)
	case f.delete:
		err = deleteGroups(ctx, tc, out, f)
	case f.resetOffsets:
		err = resetOffsets(ctx, tc, out, f)
	case f.deleteOffsets:
		err = deleteGroupOffsets(ctx, tc, out, f)
	}
	var usage *groupsUsage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, groupsFailed):
		return tool.ExitCode(1)
	case errors.As(err, &usage):
		return tool.UsageError(cmd, usage.msg)
	}
	printGroupsError(out, "Executing consumer group command failed due to "+tool.DescribeErr(err))
	return tool.ExitCode(1)
}

// printGroupsError prints an error as the consumer groups tool does.
func printGroupsError(out io.Writer, msg string) { fmt.Fprintln(out, "\nError: "+msg) }

// Group states and types, as Kafka's enums print them.
var (
	groupStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"}
	groupTypes  = []string{"Consumer", "Classic", "Share", "Streams"}
)

// parseEnumList parses a comma-separated list case-insensitively; what
// and whats name the list in Kafka's message.
func parseEnumList(in string, valid []string, what, whats string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(in, ",") {
		i := slices.IndexFunc(valid, func(v string) bool { return strings.EqualFold(v, strings.TrimSpace(s)) })
		if i < 0 {
			return nil, &groupsUsage{fmt.Sprintf("Invalid %s list '%s'. Valid %s are: %s", what, in, whats, strings.Join(valid, ", "))}
		}
		out = append(out, valid[i])
	}
	return out, nil
}

// titleType is a group type as Kafka's GroupType prints it.
func titleType(t string) string {
	for _, v := range groupTypes {
		if strings.EqualFold(v, t) {
			return v
		}
	}
	return "Unknown"
}

func titleState(s string) string {
	for _, v := range groupStates {
		if strings.EqualFold(v, s) {
			return v
		}
	}
	return "Unknown"
}

// consumerGroups lists the groups of the consumer protocol (classic ones
// with protocol type "consumer" or none, and KIP-848 ones), sorted.
func consumerGroups(ctx context.Context, tc *tool.Client, types, states []string) ([]kadm.ListedGroup, error) {
	var lower []string
	for _, t := range types {
		lower = append(lower, strings.ToLower(t))
	}
	ls, err := tc.Admin.ListGroupsByType(ctx, lower, states...)
	if err != nil {
		var se *kadm.ShardErrors
		if errors.As(err, &se) && len(se.Errs) > 0 {
			err = se.Errs[0].Err
		}
		return nil, tool.KafkaError(err, nil)
	}
	var out []kadm.ListedGroup
	for _, l := range ls.Sorted() {
		if l.ProtocolType == "consumer" || l.ProtocolType == "" {
			out = append(out, l)
		}
	}
	return out, nil
}

func listGroups(ctx context.Context, tc *tool.Client, out io.Writer, f *consumerGroupsFlags) error {
	withState, withType := f.state != "", f.typ != ""
	var states, types []string
	var err error
	if withState && f.state != noValue {
		if states, err = parseEnumList(f.state, groupStates, "state", "states"); err != nil {
			return err
		}
	}
	if withType && f.typ != noValue {
		if types, err = parseEnumList(f.typ, groupTypes, "types", "types"); err != nil {
			return err
		}
	}
	groups, err := consumerGroups(ctx, tc, types, states)
	if err != nil {
		return err
	}
	var b strings.Builder
	if !withState && !withType {
		for _, g := range groups {
			b.WriteString(g.Group + "\n")
		}
		_, err := io.WriteString(out, b.String())
		return err
	}
	width := 15
	for _, g := range groups {
		width = max(width, len(g.Group))
	}
	width += 10
	row := func(cells ...string) {
		fmt.Fprintf(&b, "%-*s", width, cells[0])
		for _, c := range cells[1:] {
			fmt.Fprintf(&b, " %-20s", c)
		}
		b.WriteString("\n")
	}
	header := []string{"GROUP"}
	if withType {
		header = append(header, "TYPE")
	}
	if withState {
		header = append(header, "STATE")
	}
	row(header...)
	for _, g := range groups {
		cells := []string{g.Group}
		if withType {
			cells = append(cells, titleType(g.GroupType))
		}
		if withState {
			cells = append(cells, titleState(g.State))
		}
		row(cells...)
	}
	_, err = io.WriteString(out, b.String())
	return err
}
