// Package reassign is weir reassign-partitions, like
// kafka-reassign-partitions.sh.
package reassign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"weir/internal/cli/tool"
)

type reassignFlags struct {
	conn                                     tool.ConnFlags
	bootstrapController                      string
	generate, execute, verify, cancel, list  bool
	topicsFile, reassignmentFile, brokerList string
	throttle, logDirThrottle, timeout        int64
	additional, preserveThrottles, noRack    bool
	wait                                     bool
}

// Throttle configs the tool sets and clears, as Kafka's.
var (
	brokerThrottles = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate", "replica.alter.log.dirs.io.max.bytes.per.second"}
	topicThrottles  = []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

// reassignRandom picks the start of an assignment, as Kafka's random one
// (tests fix it).
var reassignRandom = func(n int) int { return rand.IntN(n) }

func NewCommand() *cobra.Command {
	f := &reassignFlags{}
	cmd := &cobra.Command{
		Use:   "reassign-partitions --bootstrap-server HOST:PORT (--generate | --execute | --verify | --cancel | --list) ...",
		Short: "Move partitions' replicas between brokers, like kafka-reassign-partitions.sh",
		Long: `reassign-partitions moves replicas between brokers with the flags, JSON formats,
messages and exit codes of Apache Kafka's kafka-reassign-partitions.sh,
against weir or Kafka alike.

  --generate --topics-to-move-json-file F --broker-list 1,2,3
      proposes an assignment of the topics' partitions over the brokers, rack
      aware unless --disable-rack-aware, with Kafka's algorithm (its start is
      random, so each run may propose another one). F is
      {"version":1,"topics":[{"topic":"orders"}]}
  --execute --reassignment-json-file F [--throttle B/s] [--additional]
      prints the current assignment (save it to roll back) and starts the
      moves of F: {"version":1,"partitions":[{"topic":"orders","partition":0,
      "replicas":[1,2,3],"log_dirs":["any","any","any"]}]}. --throttle limits
      the replication of the moving replicas (leader/follower
      .replication.throttled.rate on the brokers that take part, the topics'
      throttled replicas lists); run --verify until done to remove it.
      As in Kafka, the limit holds on average over the quota's window
      (replication.quota.window.num x .size.seconds, 11 s): a move first
      runs at full speed for about 10 s x B bytes, then by turns at full
      speed and not at all.
      --wait (weir only: Kafka's tool returns at once) then waits until the
      moves are done, showing the bytes each moving replica has caught up
      with its partition's largest replica: progress bars redrawn every
      second on a terminal, plain lines every 10 seconds otherwise.
  --verify --reassignment-json-file F [--preserve-throttles]
      prints each partition's state and, once no reassignment is left in the
      cluster, removes the throttles
  --cancel --reassignment-json-file F [--preserve-throttles]
      stops the moves of F's partitions and removes the throttles
  --list
      prints the reassignments in progress

log_dirs other than "any" (moving a replica between a broker's log
directories) and --replica-alter-log-dirs-throttle need AlterReplicaLogDirs,
which weir does not serve: they fail against weir.

` + tool.CommandConfigHelp,
		Example: `  weir reassign-partitions --bootstrap-server localhost:9092 --generate --topics-to-move-json-file topics.json --broker-list 1,2,3
  weir reassign-partitions --bootstrap-server localhost:9092 --execute --reassignment-json-file plan.json --throttle 50000000
  weir reassign-partitions --bootstrap-server localhost:9092 --execute --reassignment-json-file plan.json --throttle 50000000 --wait
  weir reassign-partitions --bootstrap-server localhost:9092 --verify --reassignment-json-file plan.json
  weir reassign-partitions --bootstrap-server localhost:9092 --list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReassign(cmd, f) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	f.conn.Add(fl)
	fl.StringVar(&f.bootstrapController, "bootstrap-controller", "", "the controllers to connect to (--cancel only, as in Kafka)")
	fl.BoolVar(&f.generate, "generate", false, "propose an assignment of --topics-to-move-json-file's topics over --broker-list")
	fl.BoolVar(&f.execute, "execute", false, "start the reassignment of --reassignment-json-file")
	fl.BoolVar(&f.verify, "verify", false, "check the reassignment of --reassignment-json-file, removing throttles when done")
	fl.BoolVar(&f.cancel, "cancel", false, "cancel the reassignment of --reassignment-json-file")
	fl.BoolVar(&f.list, "list", false, "list the reassignments in progress")
	fl.StringVar(&f.reassignmentFile, "reassignment-json-file", "", "the reassignment JSON file")
	fl.StringVar(&f.topicsFile, "topics-to-move-json-file", "", "the JSON file of the topics to move")
	fl.StringVar(&f.brokerList, "broker-list", "", "the brokers to assign the topics over, 1,2,3")
	fl.BoolVar(&f.noRack, "disable-rack-aware", false, "ignore the brokers' racks")
	fl.Int64Var(&f.throttle, "throttle", -1, "the replication throttle of the moving replicas, bytes/s")
	fl.Int64Var(&f.logDirThrottle, "replica-alter-log-dirs-throttle", -1, "the throttle of moves between log directories, bytes/s")
	fl.Int64Var(&f.timeout, "timeout", 10000, "how long --execute waits for log directory moves to start, ms")
	fl.BoolVar(&f.additional, "additional", false, "--execute while other reassignments are in progress")
	fl.BoolVar(&f.preserveThrottles, "preserve-throttles", false, "--verify and --cancel leave the throttles in place")
	fl.BoolVar(&f.wait, "wait", false, "--execute waits for the moves to finish, showing each moving replica's progress (weir only)")
	return cmd
}

// topicPart is a topic partition, printed as Kafka's TopicPartition.
type topicPart struct {
	topic     string
	partition int32
}

func (p topicPart) String() string { return fmt.Sprintf("%s-%d", p.topic, p.partition) }

func compareTP(a, b topicPart) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return int(a.partition) - int(b.partition)
}

// reassignmentJSON prints an assignment as Kafka's formatAsReassignmentJson.
func reassignmentJSON(parts map[topicPart][]int32) string {
	list := []tool.JSONObject{}
	for _, p := range slices.SortedFunc(maps.Keys(parts), compareTP) {
		dirs := make([]string, len(parts[p]))
		for i := range dirs {
			dirs[i] = "any"
		}
		list = append(list, tool.JSONObject{{Key: "topic", Val: p.topic}, {Key: "partition", Val: p.partition}, {Key: "replicas", Val: parts[p]}, {Key: "log_dirs", Val: dirs}})
	}
	var b strings.Builder
	out, _ := tool.JSONObject{{Key: "version", Val: 1}, {Key: "partitions", Val: list}}.MarshalJSON()
	b.Write(out)
	return b.String()
}

// cliError is a failure printed on stdout as Kafka's tool prints it:
// terse ones as they are, others after "Error: ".
type cliError struct {
	msg   string
	terse bool
}

func (e *cliError) Error() string { return e.msg }

func failure(format string, args ...any) error { return &cliError{msg: fmt.Sprintf(format, args...)} }

// parseReassignment reads a reassignment JSON (version 1), in file order.
func parseReassignment(data []byte) ([]topicPart, map[topicPart][]int32, error) {
	var doc struct {
		Version    *int `json:"version"`
		Partitions []struct {
			Topic     *string   `json:"topic"`
			Partition *int32    `json:"partition"`
			Replicas  *[]int32  `json:"replicas"`
			LogDirs   *[]string `json:"log_dirs"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, failure("com.fasterxml.jackson.core.JsonParseException: %v", err)
	}
	if doc.Version != nil && *doc.Version != 1 {
		return nil, nil, failure("Not supported version field value %d", *doc.Version)
	}
	var order []topicPart
	parts := map[topicPart][]int32{}
	var dups []string
	for _, p := range doc.Partitions {
		switch {
		case p.Topic == nil:
			return nil, nil, failure("No such field exists: `topic`")
		case p.Partition == nil:
			return nil, nil, failure("No such field exists: `partition`")
		case p.Replicas == nil:
			return nil, nil, failure("No such field exists: `replicas`")
		}
		key := topicPart{*p.Topic, *p.Partition}
		if p.LogDirs != nil {
			if len(*p.LogDirs) != len(*p.Replicas) {
				return nil, nil, failure("Size of replicas list %s is different from size of log dirs list %s for partition %s",
					javaList(*p.Replicas), javaList(*p.LogDirs), key)
			}
			for _, d := range *p.LogDirs {
				if d != "any" {
					return nil, nil, failure("log_dirs %q of partition %s: moving replicas between log directories needs AlterReplicaLogDirs, which weir does not serve", d, key)
				}
			}
		}
		if _, ok := parts[key]; ok {
			dups = append(dups, key.String())
			continue
		}
		order = append(order, key)
		parts[key] = *p.Replicas
	}
	if len(dups) > 0 {
		return nil, nil, failure("Partition reassignment contains duplicate topic partitions: %s", strings.Join(dups, ","))
	}
	return order, parts, nil
}

// javaList prints a list as Java's List.toString.
func javaList[T any](l []T) string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func runReassign(cmd *cobra.Command, f *reassignFlags) error {
	fl := cmd.Flags()
	has := fl.Changed
	actions := []string{"generate", "execute", "verify", "cancel", "list"}
	var action string
	n := 0
	for _, a := range actions {
		if has(a) {
			action, n = a, n+1
		}
	}
	if n != 1 {
		return tool.UsageError(cmd, "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list")
	}
	bootstrap := "bootstrap-server"
	switch {
	case has("bootstrap-server") && has("bootstrap-controller"):
		return tool.UsageError(cmd, "Please don't specify both --bootstrap-server and --bootstrap-controller")
	case !has("bootstrap-server") && !has("bootstrap-controller"):
		return tool.UsageError(cmd, "Please specify either --bootstrap-server or --bootstrap-controller")
	case has("bootstrap-controller"):
		bootstrap = "bootstrap-controller"
	}
	required := map[string][]string{"verify": {"reassignment-json-file"}, "generate": {"topics-to-move-json-file", "broker-list"},
		"execute": {"reassignment-json-file"}, "cancel": {"reassignment-json-file"}}
	for _, r := range required[action] {
		if !has(r) {
			return tool.UsageError(cmd, fmt.Sprintf(`Missing required argument "[%s]"`, r))
		}
	}
	permitted := map[string][]string{
		"verify":   {"command-config", "preserve-throttles"},
		"generate": {"command-config", "disable-rack-aware"},
		"execute":  {"additional", "command-config", "throttle", "replica-alter-log-dirs-throttle", "timeout", "wait"},
		"cancel":   {"command-config", "preserve-throttles", "timeout"},
		"list":     {"command-config"},
	}
	var bad error
	fl.Visit(func(p *pflag.Flag) {
		name := p.Name
		if bad == nil && name != action && name != bootstrap && !slices.Contains(required[action], name) && !slices.Contains(permitted[action], name) {
			bad = tool.UsageError(cmd, fmt.Sprintf(`Option "[%s]" can't be used with action "[%s]"`, name, action))
		}
	})
	if bad != nil {
		return bad
	}
	out := cmd.OutOrStdout()
	if has("bootstrap-controller") {
		if action != "cancel" {
			fmt.Fprintln(out, "Error: The --bootstrap-controller option is not supported with these action.")
			return tool.ExitCode(1)
		}
		f.conn.BootstrapServer = f.bootstrapController
	}
	err := reassignAction(cmd, f, action)
	var ce *cliError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && ce.terse:
		fmt.Fprintln(out, ce.msg)
	default:
		fmt.Fprintln(out, "Error: "+tool.DescribeErr(err))
	}
	return tool.ExitCode(1)
}

func reassignAction(cmd *cobra.Command, f *reassignFlags, action string) error {
	readFile := func(path string) ([]byte, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, failure("java.nio.file.NoSuchFileException: %s", path)
		}
		return data, err
	}
	var data []byte
	if action != "list" {
		path := f.reassignmentFile
		if action == "generate" {
			path = f.topicsFile
		}
		var err error
		if data, err = readFile(path); err != nil {
			return err
		}
	}
	// Inputs are checked before connecting, as far as they can be.
	var brokers []int32
	var topics []string
	var order []topicPart
	var parts map[topicPart][]int32
	switch action {
	case "generate":
		seen := map[int32]bool{}
		var dups []int32
		for _, s := range strings.Split(f.brokerList, ",") {
			id, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return failure("For input string: %q", s)
			}
			if seen[int32(id)] && !slices.Contains(dups, int32(id)) {
				dups = append(dups, int32(id))
			}
			seen[int32(id)] = true
			brokers = append(brokers, int32(id))
		}
		if len(dups) > 0 {
			return failure("Broker list contains duplicate entries: [%s]", strings.ReplaceAll(tool.JavaIntSet(dups), ",", ", "))
		}
		var doc struct {
			Version *int `json:"version"`
			Topics  []struct {
				Topic *string `json:"topic"`
			} `json:"topics"`
		}
		if json.Unmarshal(data, &doc) != nil {
			return failure("The input string is not a valid JSON")
		}
		if doc.Version != nil && *doc.Version != 1 {
			return failure("Not supported version field value %d", *doc.Version)
		}
		var tdups []string
		for _, t := range doc.Topics {
			if t.Topic == nil {
				return failure("No such field exists: `topic`")
			}
			if slices.Contains(topics, *t.Topic) && !slices.Contains(tdups, *t.Topic) {
				tdups = append(tdups, *t.Topic)
			}
			topics = append(topics, *t.Topic)
		}
		if len(tdups) > 0 {
			return failure("List of topics to reassign contains duplicate entries: [%s]", strings.Join(tdups, ", "))
		}
	case "execute", "verify", "cancel":
		var err error
		if order, parts, err = parseReassignment(data); err != nil {
			return err
		}
		if action == "execute" {
			if len(order) == 0 {
				return failure("Partition reassignment list cannot be empty")
			}
			var dupMsgs []string
			for _, p := range order {
				if len(parts[p]) == 0 {
					return failure("Partition replica list cannot be empty")
				}
				seen := map[int32]bool{}
				var dups []int32
				for _, r := range parts[p] {
					if seen[r] && !slices.Contains(dups, r) {
						dups = append(dups, r)
					}
					seen[r] = true
				}
				if len(dups) > 0 {
					dupMsgs = append(dupMsgs, fmt.Sprintf("%s contains multiple entries for %s", p, tool.JavaIntSet(dups)))
				}
			}
			if len(dupMsgs) > 0 {
				return failure("Partition replica lists may not contain duplicate entries: %s", strings.Join(dupMsgs, ". "))
			}
			if f.logDirThrottle >= 0 {
				return failure("--replica-alter-log-dirs-throttle needs AlterReplicaLogDirs, which weir does not serve")
			}
		}
	}

	tc, err := f.conn.Connect(cmd, "reassign-partitions-tool", tool.Either(f.list, "listPartitionReassignments", "describeTopics"))
	if err != nil {
		return err
	}
	defer tc.Close()
	ctx, cancel := tc.Context(cmd)
	defer cancel()
	r := &reassigner{tc: tc, ctx: ctx, out: cmd.OutOrStdout()}
	switch action {
	case "generate":
		return r.generate(topics, brokers, !f.noRack)
	case "execute":
		if err := r.executeAssignment(parts, f.additional, f.throttle); err != nil || !f.wait {
			return err
		}
		parent := cmd.Context()
		if parent == nil {
			parent = context.Background()
		}
		return r.waitAssignment(parent, order, f.throttle >= 0)
	case "verify":
		return r.verifyAssignment(order, parts, f.preserveThrottles)
	case "cancel":
		return r.cancelAssignment(order, parts, f.preserveThrottles)
	default:
		text, err := r.listText()
		if err != nil {
			return err
		}
		fmt.Fprintln(r.out, text)
		return nil
	}
}
