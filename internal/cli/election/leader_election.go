// Package election is weir leader-election, like kafka-leader-election.sh.
package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
)

type leaderElectionFlags struct {
	conn                  tool.ConnFlags
	adminConfig           string
	electionType          string
	topic, pathToJSONFile string
	partition             int32
	all                   bool
}

func NewCommand() *cobra.Command {
	f := &leaderElectionFlags{}
	cmd := &cobra.Command{
		Use:   "leader-election --bootstrap-server HOST:PORT --election-type (preferred | unclean) (--topic T --partition P | --all-topic-partitions | --path-to-json-file F)",
		Short: "Elect the preferred or an unclean leader of partitions, like kafka-leader-election.sh",
		Long: `leader-election asks the controller to elect leaders (ElectLeaders), with the flags
and output of Apache Kafka's kafka-leader-election.sh, against weir or Kafka
alike.

  --election-type preferred   move leadership back to each partition's
                              preferred replica (the first of its replicas)
                              where it is in the ISR and not leading
  --election-type unclean     give a partition without a live leader one of
                              its live replicas out of the ISR: records the
                              ISR had and the replica lacks are lost

Partitions are --topic T --partition P, every partition
(--all-topic-partitions), or a JSON file (--path-to-json-file):
  {"partitions": [{"topic": "foo", "partition": 1}, {"topic": "bar", "partition": 2}]}

It prints "Successfully completed leader election (PREFERRED) for partitions
t-0, ...", "Valid replica already elected for partitions ..." for those that
needed none, and "Error completing leader election (...) for partition: t-0:
..." per failure, then exits 1 with "N replica(s) could not be elected" on
stderr. --admin.config is the old name of --command-config.

` + tool.CommandConfigHelp,
		Example: `  # move leadership back to the preferred replicas, everywhere
  weir leader-election --bootstrap-server localhost:9092 --election-type preferred --all-topic-partitions

  # one partition
  weir leader-election --bootstrap-server localhost:9092 --election-type preferred --topic orders --partition 3

  # bring a partition whose ISR is gone back online, accepting data loss
  weir leader-election --bootstrap-server localhost:9092 --election-type unclean --topic orders --partition 3

  # the partitions listed in a file
  weir leader-election --bootstrap-server localhost:9092 --election-type preferred --path-to-json-file elect.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLeaderElection(cmd, f) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	f.conn.Add(fl)
	fl.StringVar(&f.adminConfig, "admin.config", "", "the old name of --command-config")
	fl.StringVar(&f.electionType, "election-type", "", `type of election: "preferred" or "unclean" (REQUIRED)`)
	fl.StringVar(&f.topic, "topic", "", "the topic of the partition to elect a leader for")
	fl.Int32Var(&f.partition, "partition", 0, "the partition to elect a leader for (REQUIRED with --topic)")
	fl.BoolVar(&f.all, "all-topic-partitions", false, "elect leaders for every eligible partition")
	fl.StringVar(&f.pathToJSONFile, "path-to-json-file", "", `a JSON file listing partitions: {"partitions": [{"topic": "foo", "partition": 1}]}`)
	return cmd
}

// electionPartitions reads --path-to-json-file.
func electionPartitions(path string) (map[string][]int32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("java.nio.file.NoSuchFileException: %s", path)
		}
		return nil, err
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil {
		return nil, errors.New("Replica election data is empty")
	}
	raw, ok := doc["partitions"]
	if !ok {
		return nil, errors.New(`Replica election data is missing "partitions" field`)
	}
	var list []struct {
		Topic     *string `json:"topic"`
		Partition *int32  `json:"partition"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("Replica election data is not a list of partitions: %v", err)
	}
	out := map[string][]int32{}
	seen := map[string]bool{}
	var dups []string
	for _, p := range list {
		if p.Topic == nil || p.Partition == nil {
			return nil, errors.New(`Replica election data needs "topic" and "partition" for every partition`)
		}
		name := fmt.Sprintf("%s-%d", *p.Topic, *p.Partition)
		if seen[name] {
			if !slices.Contains(dups, name) {
				dups = append(dups, name)
			}
			continue
		}
		seen[name] = true
		out[*p.Topic] = append(out[*p.Topic], *p.Partition)
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("Replica election data contains duplicate partitions: [%s]", strings.Join(dups, ", "))
	}
	return out, nil
}

func runLeaderElection(cmd *cobra.Command, f *leaderElectionFlags) error {
	fail := tool.FailTo(cmd.ErrOrStderr())
	has := cmd.Flags().Changed
	if cmd.Flags().NFlag() == 0 {
		return tool.UsageError(cmd, "This tool attempts to elect a new leader for a set of topic partitions. The type of elections supported are preferred replicas and unclean replicas.")
	}
	var missing []string
	if !has("bootstrap-server") {
		missing = append(missing, "bootstrap-server")
	}
	if !has("election-type") {
		missing = append(missing, "election-type")
	}
	if len(missing) > 0 {
		return fail("Missing required option(s): " + strings.Join(missing, ", "))
	}
	var electionType int8
	switch strings.ToLower(f.electionType) {
	case "preferred":
		electionType = 0
	case "unclean":
		electionType = 1
	default:
		return fail(fmt.Sprintf("Cannot parse argument '%s' of option election-type", f.electionType))
	}
	name := strings.ToUpper(f.electionType)
	n := 0
	for _, o := range []string{"topic", "all-topic-partitions", "path-to-json-file"} {
		if has(o) {
			n++
		}
	}
	switch {
	case n != 1:
		return fail("One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file")
	case has("topic") && !has("partition"):
		return fail("Missing required option(s): partition")
	case !has("topic") && has("partition"):
		return fail("Option partition is only allowed if topic is used")
	case has("admin.config") && has("command-config"):
		return fail("Only one of --command-config and --admin.config can be specified")
	}
	if has("admin.config") {
		f.conn.CommandConfig = f.adminConfig
	}
	var partitions map[string][]int32
	switch {
	case has("topic"):
		partitions = map[string][]int32{f.topic: {f.partition}}
	case has("path-to-json-file"):
		var err error
		if partitions, err = electionPartitions(f.pathToJSONFile); err != nil {
			return fail(err.Error())
		}
	}
	tc, err := f.conn.Connect(cmd, "weir-leader-election", "electLeaders")
	if err != nil {
		return fail(err.Error())
	}
	defer tc.Close()
	ctx, cancel := tc.Context(cmd)
	defer cancel()
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType, req.TimeoutMillis = electionType, int32(tc.RequestTimeout.Milliseconds())
	for _, t := range slices.Sorted(maps.Keys(partitions)) {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = t, partitions[t]
		req.Topics = append(req.Topics, rt)
	}
	out := cmd.OutOrStdout()
	resp, err := req.RequestWith(ctx, tc.Kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	switch {
	case errors.Is(err, kerr.ClusterAuthorizationFailed):
		fmt.Fprintln(out, "Not authorized to perform leader election")
		return fail("Not authorized to perform leader election")
	case errors.Is(err, kerr.RequestTimedOut) || errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintln(out, "Timeout waiting for election results")
		return fail("Timeout waiting for election results")
	case err != nil:
		return fail(tool.DescribeErr(tool.KafkaError(err, nil)))
	}
	type result struct {
		name string
		err  error
	}
	var results []result
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			r := result{name: fmt.Sprintf("%s-%d", t.Topic, p.Partition)}
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				r.err = tool.KafkaError(e, p.ErrorMessage)
			}
			results = append(results, r)
		}
	}
	slices.SortFunc(results, func(a, b result) int { return strings.Compare(a.name, b.name) })
	var ok, noop []string
	var failed []result
	for _, r := range results {
		var je *tool.JavaError
		switch {
		case r.err == nil:
			ok = append(ok, r.name)
		case errors.As(r.err, &je) && je.Class == "ElectionNotNeededException":
			noop = append(noop, r.name)
		default:
			failed = append(failed, r)
		}
	}
	var b strings.Builder
	if len(ok) > 0 {
		fmt.Fprintf(&b, "Successfully completed leader election (%s) for partitions %s\n", name, strings.Join(ok, ", "))
	}
	if len(noop) > 0 {
		fmt.Fprintf(&b, "Valid replica already elected for partitions %s\n", strings.Join(noop, ", "))
	}
	for _, r := range failed {
		fmt.Fprintf(&b, "Error completing leader election (%s) for partition: %s: %s\n", name, r.name, tool.DescribeErr(r.err))
	}
	fmt.Fprint(out, b.String())
	if len(failed) > 0 {
		return fail(fmt.Sprintf("%d replica(s) could not be elected", len(failed)))
	}
	return nil
}
