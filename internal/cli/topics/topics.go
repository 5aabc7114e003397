// Package topics is weir topics, like kafka-topics.sh.
package topics

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/config"
)

type topicsFlags struct {
	conn                                             tool.ConnFlags
	list, create, delete, alter, describe            bool
	topic, topicID                                   string
	configs                                          []string
	partitions                                       int32
	replicationFactor                                int
	replicaAssignment                                string
	underReplicated, unavailable, underMin, atMin    bool
	withOverrides, ifExists, ifNotExists, noInternal bool
	partitionLimit                                   int32
	force                                            bool
}

func NewCommand() *cobra.Command {
	f := &topicsFlags{}
	cmd := &cobra.Command{
		Use:   "topics (--list | --describe | --create | --alter | --delete) --bootstrap-server HOST:PORT [flags]",
		Short: "Create, delete, describe, or change a topic, like kafka-topics.sh",
		Long: `topics creates, deletes, describes, lists and adds partitions to topics. It
takes the flags of Apache Kafka's kafka-topics.sh and prints what it prints,
with its exit codes (0, or 1 with "Error while executing topic command : ..."
on stdout, or a usage error on stderr), so scripts written for Kafka keep
working, against weir or Kafka alike. Exactly one action is required.

  --list       topic names, one a line; --topic filters them by a regular
               expression (matched against the whole name)
  --describe   per topic a line
                 Topic: t<TAB>TopicId: ...<TAB>PartitionCount: 3<TAB>ReplicationFactor: 3<TAB>Configs: k=v,...
               (Configs are those not at their default) then per partition
                 <TAB>Topic: t<TAB>Partition: 0<TAB>Leader: 1<TAB>Replicas: 1,2,3<TAB>Isr: 1,2,3<TAB>Elr: <TAB>LastKnownElr: 
               with "Adding Replicas" and "Removing Replicas" while a
               reassignment moves the partition, "Leader: none" when no live
               broker leads it, and "Elr: N/A" where the broker cannot say
               (it lacks DescribeTopicPartitions). Topics are printed by name.
               --under-replicated-partitions, --under-min-isr-partitions,
               --at-min-isr-partitions and --unavailable-partitions print only
               those partitions (and no topic lines); --topics-with-overrides
               only the topic lines of topics with overridden configs.
  --create     a topic: --partitions and --replication-factor (the broker's
               defaults when left out) or --replica-assignment, and --config
               k=v per override
  --alter      raise the partition count to --partitions (with
               --replica-assignment for the replicas of the new partitions).
               Adding partitions changes which partition a key maps to: when
               the topic's latest records carry keys weir warns and, when
               stdin is a terminal, asks before going on (--force: without
               asking). Topic configs are changed with weir configs.
  --delete     the topics --topic matches

--topic is a regular expression for --list, --describe, --alter and --delete
(quote it, and escape dots as in "my\.topic" to match one topic only).
--if-exists makes --alter, --delete and --describe succeed when nothing
matches; --if-not-exists makes --create succeed when the topic exists.

` + tool.CommandConfigHelp,
		Example: `  # a topic of 6 partitions with 3 replicas each, compacted
  weir topics --bootstrap-server localhost:9092 --create --topic orders \
      --partitions 6 --replication-factor 3 --config cleanup.policy=compact

  # two partitions placed by hand: partition 0 on brokers 1 and 2, 1 on 2 and 3
  weir topics --bootstrap-server localhost:9092 --create --topic pinned --replica-assignment 1:2,2:3

  # every topic, internal ones left out
  weir topics --bootstrap-server localhost:9092 --list --exclude-internal

  # one topic, then the partitions of all topics that are under-replicated
  weir topics --bootstrap-server localhost:9092 --describe --topic orders
  weir topics --bootstrap-server localhost:9092 --describe --under-replicated-partitions

  # grow a topic to 12 partitions without being asked (keys will move)
  weir topics --bootstrap-server localhost:9092 --alter --topic orders --partitions 12 --force

  # delete every topic whose name starts with "tmp-"
  weir topics --bootstrap-server localhost:9092 --delete --topic 'tmp-.*'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTopics(cmd, f) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	f.conn.Add(fl)
	fl.BoolVar(&f.list, "list", false, "list all available topics")
	fl.BoolVar(&f.create, "create", false, "create a new topic")
	fl.BoolVar(&f.delete, "delete", false, "delete a topic")
	fl.BoolVar(&f.alter, "alter", false, "alter the number of partitions and replica assignment (topic configs: weir configs)")
	fl.BoolVar(&f.describe, "describe", false, "list details for the given topics")
	fl.StringVar(&f.topic, "topic", "", "the topic to create, alter, describe or delete; a regular expression except for --create")
	fl.StringVar(&f.topicID, "topic-id", "", "the topic id to describe")
	fl.StringArrayVar(&f.configs, "config", nil, "a topic configuration override name=value for --create (repeatable)")
	fl.Int32Var(&f.partitions, "partitions", 0, "the number of partitions for the topic being created or altered (the cluster default for --create when left out)")
	fl.IntVar(&f.replicationFactor, "replication-factor", 0, "the replication factor of each partition of the topic being created (the cluster default when left out)")
	fl.StringVar(&f.replicaAssignment, "replica-assignment", "", "manual partition-to-broker assignments, broker_id_for_part1_replica1:broker_id_for_part1_replica2,broker_id_for_part2_replica1:...")
	fl.BoolVar(&f.underReplicated, "under-replicated-partitions", false, "with --describe, only show under-replicated partitions")
	fl.BoolVar(&f.unavailable, "unavailable-partitions", false, "with --describe, only show partitions whose leader is not available")
	fl.BoolVar(&f.underMin, "under-min-isr-partitions", false, "with --describe, only show partitions whose ISR is smaller than min.insync.replicas")
	fl.BoolVar(&f.atMin, "at-min-isr-partitions", false, "with --describe, only show partitions whose ISR size equals min.insync.replicas")
	fl.BoolVar(&f.withOverrides, "topics-with-overrides", false, "with --describe, only show topics that have overridden configs")
	fl.BoolVar(&f.ifExists, "if-exists", false, "with --alter, --delete or --describe, act only if the topic exists")
	fl.BoolVar(&f.ifNotExists, "if-not-exists", false, "with --create, act only if the topic does not already exist")
	fl.BoolVar(&f.noInternal, "exclude-internal", false, "exclude internal topics when listing or describing topics")
	fl.Int32Var(&f.partitionLimit, "partition-size-limit-per-response", 2000, "the maximum number of partitions in one DescribeTopicPartitions response")
	fl.BoolVar(&f.force, "force", false, "with --alter, add partitions to a topic with keyed records without warning or asking (weir only)")
	return cmd
}

// checkTopicsArgs validates the flags as kafka-topics.sh does, in its
// order and with its messages.
func checkTopicsArgs(cmd *cobra.Command, f *topicsFlags) error {
	has := cmd.Flags().Changed
	if cmd.Flags().NFlag() == 0 {
		return tool.UsageError(cmd, "Create, delete, describe, or change a topic.")
	}
	actions := 0
	for _, a := range []string{"create", "list", "alter", "describe", "delete"} {
		if has(a) {
			actions++
		}
	}
	if actions != 1 {
		return tool.UsageError(cmd, "Command must include exactly one action: --list, --describe, --create, --alter or --delete")
	}
	if !has("bootstrap-server") {
		fmt.Fprintln(cmd.ErrOrStderr(), "--bootstrap-server must be specified")
		return tool.ExitCode(1)
	}
	if has("describe") && has("if-exists") && !has("topic") && !has("topic-id") {
		return tool.UsageError(cmd, "--topic or --topic-id is required to describe a topic")
	}
	if !has("list") && !has("describe") && !has("topic") {
		return tool.UsageError(cmd, `Missing required argument "[topic]"`)
	}
	if has("alter") {
		if has("config") {
			return tool.UsageError(cmd, `Option combination "[[bootstrap-server], [config]]" can't be used with option "[alter]" (To alter topic configurations, the kafka-configs tool can be used.)`)
		}
		if !has("partitions") {
			return tool.UsageError(cmd, `Missing required argument "[partitions]"`)
		}
	}
	actionsBut := func(allowed ...string) []string {
		var out []string
		for _, a := range []string{"alter", "create", "describe", "list", "delete"} {
			if !slices.Contains(allowed, a) {
				out = append(out, a)
			}
		}
		return out
	}
	reports := []string{"under-replicated-partitions", "under-min-isr-partitions", "at-min-isr-partitions", "unavailable-partitions"}
	type rule struct {
		used    string
		invalid []string
	}
	rules := []rule{
		{"config", actionsBut("alter", "create")},
		{"partitions", actionsBut("alter", "create")},
		{"replication-factor", actionsBut("create")},
		{"replica-assignment", actionsBut("alter", "create")},
	}
	if has("create") {
		rules = append(rules, rule{"replica-assignment", []string{"partitions", "replication-factor"}})
	}
	for _, r := range reports {
		rules = append(rules, rule{r, append(actionsBut("describe"), "topics-with-overrides")})
	}
	rules = append(rules,
		rule{"topics-with-overrides", append(actionsBut("describe"), reports...)},
		rule{"if-exists", actionsBut("alter", "delete", "describe")},
		rule{"if-not-exists", actionsBut("create")},
		rule{"exclude-internal", actionsBut("list", "describe")},
	)
	for _, r := range rules {
		if !has(r.used) {
			continue
		}
		for _, bad := range r.invalid {
			if has(bad) {
				return tool.UsageError(cmd, fmt.Sprintf(`Option "[%s]" can't be used with option "[%s]"`, r.used, bad))
			}
		}
	}
	return nil
}

func runTopics(cmd *cobra.Command, f *topicsFlags) error {
	if err := checkTopicsArgs(cmd, f); err != nil {
		return err
	}
	tc, err := f.conn.Connect(cmd, "weir-topics", tool.Either(cmd.Flags().Changed("create"), "createTopics", "listTopics"))
	var timedOut *tool.JavaError
	if errors.As(err, &timedOut) {
		fmt.Fprintln(cmd.OutOrStdout(), "Error while executing topic command : "+err.Error())
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
	has := cmd.Flags().Changed
	switch {
	case has("create"):
		err = createTopic(ctx, tc, cmd, f)
	case has("alter"):
		err = alterTopic(ctx, tc, cmd, f)
	case has("list"):
		var names []string
		if names, err = matchTopics(ctx, tc, f, has("topic")); err == nil {
			fmt.Fprintln(out, strings.Join(names, "\n"))
		}
	case has("describe"):
		err = describeTopics(ctx, tc, cmd, f)
	case has("delete"):
		err = deleteTopics(ctx, tc, cmd, f)
	}
	if err != nil {
		fmt.Fprintln(out, "Error while executing topic command : "+err.Error())
		return tool.ExitCode(1)
	}
	return nil
}

// internalTopics are Kafka's internal topics (Topic.isInternal).
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true}

// topicFilter compiles --topic as Kafka's IncludeList: commas are
// alternatives, spaces and surrounding quotes are dropped, and the
// expression must match the whole name.
func topicFilter(raw string) (*regexp.Regexp, error) {
	re := strings.TrimSpace(raw)
	re = strings.ReplaceAll(strings.ReplaceAll(re, ",", "|"), " ", "")
	re = strings.TrimRight(strings.TrimLeft(re, `"'`), `"'`)
	c, err := regexp.Compile("^(?:" + re + ")$")
	if err != nil {
		return nil, fmt.Errorf("%s is an invalid regex.", re)
	}
	return c, nil
}

// matchTopics lists the topics --topic matches (every topic when
// filter is false), sorted, internal ones left out with
// --exclude-internal.
func matchTopics(ctx context.Context, tc *tool.Client, f *topicsFlags, filter bool) ([]string, error) {
	md, err := tc.Admin.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	return filterTopics(md, f, filter)
}

func filterTopics(md kadm.Metadata, f *topicsFlags, filter bool) ([]string, error) {
	var re *regexp.Regexp
	if filter {
		var err error
		if re, err = topicFilter(f.topic); err != nil {
			return nil, err
		}
	}
	var names []string
	for _, name := range md.Topics.Names() {
		td := md.Topics[name]
		if f.noInternal && (td.IsInternal || internalTopics[name]) {
			continue
		}
		if re != nil && !re.MatchString(name) {
			continue
		}
		names = append(names, name)
	}
	return names, nil
}

// ensureTopicExists fails when --topic matched nothing and the command
// needs a topic, with Kafka 4.4's message.
func ensureTopicExists(found []string, f *topicsFlags, require bool) error {
	if f.topic != "" && require && len(found) == 0 {
		return fmt.Errorf("Topic '%s' does not exist as expected", f.topic)
	}
	return nil
}

// topicConfigs parses --config k=v overrides and checks their names, as
// kafka-topics.sh does before asking the broker.
func topicConfigs(f *topicsFlags) (map[string]*string, error) {
	configs := map[string]*string{}
	var pairs [][]string
	for _, c := range f.configs {
		pairs = append(pairs, tool.JavaSplit(c, tool.EqualsRE))
	}
	for _, p := range pairs {
		if len(p) != 2 {
			return nil, errors.New(`requirement failed: Invalid topic config: all configs to be added must be in the format "key=val".`)
		}
	}
	for _, p := range pairs {
		k, v := strings.TrimSpace(p[0]), strings.TrimSpace(p[1])
		if _, ok := config.TopicDef(k); !ok {
			return nil, fmt.Errorf("Unknown topic config name: %s", k)
		}
		configs[k] = &v
	}
	return configs, nil
}

// parseReplicaAssignment parses --replica-assignment: partitions split by
// commas, their replicas by colons.
func parseReplicaAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for i, part := range tool.JavaSplit(s, regexp.MustCompile(",")) {
		var brokers []int32
		for _, b := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("For input string: %q", strings.TrimSpace(b))
			}
			brokers = append(brokers, int32(n))
		}
		var dups []string
		seen := map[int32]int{}
		for _, b := range brokers {
			seen[b]++
		}
		sorted := slices.Clone(brokers)
		slices.Sort(sorted)
		for j, b := range sorted {
			if seen[b] > 1 && (j == 0 || sorted[j-1] != b) {
				dups = append(dups, tool.Itoa(int64(b)))
			}
		}
		if len(dups) > 0 {
			return nil, fmt.Errorf("Partition replica lists may not contain duplicate entries: %s", strings.Join(dups, ","))
		}
		if len(out) > 0 && len(brokers) != len(out[0]) {
			strs := make([]string, len(brokers))
			for j, b := range brokers {
				strs[j] = tool.Itoa(int64(b))
			}
			return nil, fmt.Errorf("Partition %d has different replication factor: [%s]", i, strings.Join(strs, ", "))
		}
		out = append(out, brokers)
	}
	return out, nil
}

func createTopic(ctx context.Context, tc *tool.Client, cmd *cobra.Command, f *topicsFlags) error {
	var assignment [][]int32
	if f.replicaAssignment != "" {
		var err error
		if assignment, err = parseReplicaAssignment(f.replicaAssignment); err != nil {
			return err
		}
	}
	configs, err := topicConfigs(f)
	if err != nil {
		return err
	}
	if strings.ContainsAny(f.topic, "._") {
		fmt.Fprintln(cmd.OutOrStdout(), "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.")
	}
	has := cmd.Flags().Changed
	if has("replication-factor") && (f.replicationFactor > 32767 || f.replicationFactor < 1) {
		return errors.New("The replication factor must be between 1 and 32767 inclusive")
	}
	if has("partitions") && f.partitions < 1 {
		return errors.New("The partitions must be greater than 0")
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(tc.RequestTimeout.Milliseconds())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = f.topic, -1, -1
	if len(assignment) > 0 {
		for i, replicas := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
	} else {
		if has("partitions") {
			rt.NumPartitions = f.partitions
		}
		if has("replication-factor") {
			rt.ReplicationFactor = int16(f.replicationFactor)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, configs[k]
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, tc.Kgo)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("the broker answered %d topics for one", len(resp.Topics))
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		if errors.Is(err, kerr.TopicAlreadyExists) && f.ifNotExists {
			return nil
		}
		return tool.KafkaError(err, t.ErrorMessage)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Created topic %s.\n", f.topic)
	return nil
}

func deleteTopics(ctx context.Context, tc *tool.Client, cmd *cobra.Command, f *topicsFlags) error {
	names, err := matchTopics(ctx, tc, f, true)
	if err != nil {
		return err
	}
	if err := ensureTopicExists(names, f, !f.ifExists); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	rs, err := tc.Admin.DeleteTopics(ctx, names...)
	if err != nil {
		return err
	}
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			return tool.KafkaError(r.Err, &r.ErrMessage)
		}
	}
	return nil
}

// keyedWarning is printed before adding partitions to a topic whose
// records carry keys.
const keyedWarning = "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the messages will be affected"

func alterTopic(ctx context.Context, tc *tool.Client, cmd *cobra.Command, f *topicsFlags) error {
	var assignment [][]int32
	if f.replicaAssignment != "" {
		var err error
		if assignment, err = parseReplicaAssignment(f.replicaAssignment); err != nil {
			return err
		}
	}
	md, err := tc.Admin.Metadata(ctx)
	if err != nil {
		return err
	}
	names, err := filterTopics(md, f, true)
	if err != nil {
		return err
	}
	if err := ensureTopicExists(names, f, !f.ifExists); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	for _, name := range names {
		td := md.Topics[name]
		if int(f.partitions) <= len(td.Partitions) || f.force {
			continue
		}
		keyed, err := hasKeyedRecords(ctx, tc, td)
		if err != nil {
			return err
		}
		if !keyed {
			continue
		}
		out := cmd.OutOrStdout()
		fmt.Fprintln(out, keyedWarning)
		fmt.Fprintf(out, "Topic '%s' has records with keys: with %d partitions instead of %d, a key may map to another partition than the one that holds its earlier records, and its records stop being in order.\n",
			name, f.partitions, len(td.Partitions))
		if !tool.StdinIsTerminal(cmd.InOrStdin()) {
			continue // no one to ask: go ahead, as Kafka's tool does
		}
		fmt.Fprintf(out, "Add the partitions anyway? (y/N) ")
		answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return fmt.Errorf("Not adding partitions to '%s'", name)
		}
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(tc.RequestTimeout.Milliseconds())
	for _, name := range names {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, f.partitions
		if len(assignment) > 0 {
			for _, replicas := range assignment[min(len(md.Topics[name].Partitions), len(assignment)):] {
				a := kmsg.NewCreatePartitionsRequestTopicAssignment()
				a.Replicas = replicas
				rt.Assignment = append(rt.Assignment, a)
			}
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, tc.Kgo)
	if err != nil {
		return err
	}
	slices.SortFunc(resp.Topics, func(a, b kmsg.CreatePartitionsResponseTopic) int { return strings.Compare(a.Topic, b.Topic) })
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return tool.KafkaError(err, t.ErrorMessage)
		}
	}
	return nil
}

// keyedSample is how many of each partition's latest records are looked at
// for keys.
const keyedSample = 16

// hasKeyedRecords reports whether any of the latest records of the topic's
// partitions carries a key.
func hasKeyedRecords(ctx context.Context, tc *tool.Client, td kadm.TopicDetail) (bool, error) {
	keyed := false
	err := SampleRecords(ctx, tc, td, keyedSample, 1<<20, func(r *kgo.Record) bool {
		keyed = r.Key != nil
		return keyed
	})
	return keyed, err
}

// SampleRecords hands visit the latest records of each partition of td,
// at most perPartition of each (from the high watermark back, or from the
// log start if that is nearer) and about maxBytes of record batches in
// all (a broker returns a first batch larger than that whole), until visit
// returns true. Each leader is asked for its partitions' records with one
// Fetch per round, a round reading on where the last one stopped, each
// partition's share of the bytes left being equal.
func SampleRecords(ctx context.Context, tc *tool.Client, td kadm.TopicDetail, perPartition int64, maxBytes int32, visit func(*kgo.Record) bool) error {
	starts, err := tc.Admin.ListStartOffsets(ctx, td.Topic)
	if err != nil {
		return err
	}
	ends, err := tc.Admin.ListEndOffsets(ctx, td.Topic)
	if err != nil {
		return err
	}
	from, end, leaders := map[int32]int64{}, map[int32]int64{}, map[int32]int32{}
	for _, p := range td.Partitions.Sorted() {
		s, _ := starts.Lookup(td.Topic, p.Partition)
		e, _ := ends.Lookup(td.Topic, p.Partition)
		if s.Err != nil || e.Err != nil {
			return errors.Join(s.Err, e.Err)
		}
		if e.Offset > s.Offset && p.Leader >= 0 {
			from[p.Partition], end[p.Partition], leaders[p.Partition] = max(s.Offset, e.Offset-perPartition), e.Offset, p.Leader
		}
	}
	budget := maxBytes
	for len(from) > 0 && budget > 0 {
		byLeader := map[int32][]int32{}
		for _, p := range slices.Sorted(maps.Keys(from)) {
			byLeader[leaders[p]] = append(byLeader[leaders[p]], p)
		}
		share := max(budget/int32(len(from)), 1)
		for _, leader := range slices.Sorted(maps.Keys(byLeader)) {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 0, 0, max(budget, 1), -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = td.Topic, td.ID
			for _, p := range byLeader[leader] {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, from[p], share
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			kresp, err := tc.Kgo.Broker(int(leader)).Request(ctx, req)
			if err != nil {
				return err
			}
			resp := kresp.(*kmsg.FetchResponse)
			asked := map[int32]bool{}
			for _, p := range byLeader[leader] {
				asked[p] = true
			}
			for _, t := range resp.Topics {
				for i := range t.Partitions {
					rp := &t.Partitions[i]
					at, ok := from[rp.Partition]
					if !ok || !asked[rp.Partition] {
						continue
					}
					delete(asked, rp.Partition)
					fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
						Offset: at, IsolationLevel: kgo.ReadUncommitted(), Topic: td.Topic, Partition: rp.Partition,
					}, rp, kgo.DefaultDecompressor(), nil)
					if fp.Err != nil {
						return fp.Err
					}
					budget -= int32(min(len(rp.RecordBatches), math.MaxInt32))
					for _, r := range fp.Records {
						if visit(r) {
							return nil
						}
					}
					// No progress (nothing returned, or a batch above the
					// partition's share) ends the partition's sample.
					if next <= at || next >= end[rp.Partition] {
						delete(from, rp.Partition)
					} else {
						from[rp.Partition] = next
					}
				}
			}
			for p := range asked { // not in the answer: no more of it
				delete(from, p)
			}
		}
	}
	return nil
}
