// Package doctor is weir doctor (no Kafka equivalent): risky settings and
// unhealthy state, each with the command that fixes it.
package doctor

// weir doctor (no Kafka equivalent): the risky settings and states that
// the seeds' incidents came from, each found with the command that fixes
// it. It is a plain Kafka client and works against Apache Kafka as well.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/cli/tool"
)

type doctorFlags struct {
	conn               tool.ConnFlags
	output             string
	lagInterval        time.Duration
	maxTxnTimeoutMin   int
	imbalanceRatio     float64
	imbalanceMinBytes  int64
	producerMaxRequest int64
	sampleTopics       int
	sampleRecords      int64
	sampleBytes        int32
	sampleTimeout      time.Duration
}

// finding is one problem: which check found it, on what, what is wrong and
// the command that fixes it.
type finding struct {
	Check   string `json:"check"`
	Subject string `json:"subject"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

func NewCommand() *cobra.Command {
	var f doctorFlags
	cmd := &cobra.Command{
		Use:   "doctor --bootstrap-server HOST:PORT [options]",
		Short: "Report risky settings and unhealthy state of a cluster, each with the command that fixes it",
		Long: `doctor connects to a cluster (weir or Apache Kafka: it is a plain Kafka client)
and reports the settings and states that data loss and outages usually come
from, each with the command that fixes it. Checks:

  min-insync-replicas      a replicated topic with min.insync.replicas=1: acks=all
                           then waits for the leader only, and a write is lost
                           with it
  unclean-leader-election  unclean.leader.election.enable=true on a replicated
                           topic: an out-of-sync replica may become leader and
                           drop acknowledged writes
  max-message-bytes        a topic whose max.message.bytes is above the brokers'
                           replica.fetch.max.bytes, or above what producers send
                           by default (max.request.size,
                           --producer-max-request-size; 12 bytes of log overhead
                           allowed, as between Kafka's own defaults)
  single-replica           on a cluster of two brokers or more, a partition with
                           one replica (internal topics too): the data is lost
                           with that broker's disk
  partitions-grown         a topic whose keyed records sit where Kafka's default
                           partitioner (murmur2 of the key) puts them over fewer
                           partitions than the topic has: partitions were added,
                           and per-key order broke there
  auto-leader-rebalance    a broker with auto.leader.rebalance.enable=false:
                           leaders stay where failures moved them
  offline-partition        a partition with no leader
  under-replicated         a partition with fewer in-sync replicas than replicas
  at-min-isr               a partition with exactly min.insync.replicas in sync:
                           one more failure stops acks=all writes
  single-rack              where brokers are in two racks or more, a partition
                           whose replicas are all in one
  preferred-leader         a partition whose preferred leader is in sync but does
                           not lead
  leader-imbalance         a broker leading more than --imbalance-ratio times the
                           brokers' mean number of partitions
  bytes-imbalance          a broker holding more than --imbalance-ratio times the
                           brokers' mean bytes, and at least
                           --imbalance-min-bytes more than the mean
  group-lag-growing        a consumer group whose lag grew over --lag-interval
                           while its committed offsets did not move
  group-no-commits         a consumer group with members and no committed offset
  hanging-transaction      a transaction open on a partition for longer than
                           --max-transaction-timeout that no coordinator will end
                           (kafka-transactions.sh find-hanging)

A topic setting a topic does not override (min.insync.replicas,
unclean.leader.election.enable, max.message.bytes, whose broker key is
message.max.bytes) comes from the brokers: the topics it puts at risk are
one finding whose subject is the broker setting, and whose fix changes it
(the cluster-wide dynamic default); topics with their own value have a
finding each.

partitions-grown reads a sample of each topic's latest records: the
last --sample-records of each partition, at most --sample-bytes of record
batches per topic (shared by its partitions) and --sample-timeout per topic,
in the first --sample-topics topics by name that have two partitions or
more (internal topics, keyed by other hashes, are not sampled). A topic is
reported when at least 5 distinct keys sit in partitions the default
partitioner does not give them with the current count, and smaller counts
(at most 3 of them) explain every such key; keys placed by another
partitioner are not reported.

Findings of a partition check are grouped by topic. Exit code: 0 when there
is no finding, 1 when there are findings, 2 when the cluster could not be
examined (bad flags, or the cluster did not answer). --output json prints {"findings": [{"check", "subject", "problem",
"fix"}]} for monitoring.

` + tool.CommandConfigHelp,
		Example: `  # examine a cluster
  weir doctor --bootstrap-server localhost:9092

  # for monitoring: JSON, and a shorter look at consumer lag
  weir doctor --bootstrap-server localhost:9092 --output json --lag-interval 5s

  # skip the lag sampling, and flag brokers at 1.5 times the mean
  weir doctor --bootstrap-server localhost:9092 --lag-interval 0 --imbalance-ratio 1.5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fail := func(err error) error {
				fmt.Fprintln(cmd.ErrOrStderr(), "Error:", err)
				return tool.ExitCode(2)
			}
			// Bad flags exit 2 as well: 1 means findings.
			usage := func(msg string) error {
				tool.UsageError(cmd, msg)
				return tool.ExitCode(2)
			}
			switch {
			case f.conn.BootstrapServer == "":
				return usage("Missing required argument \"[bootstrap-server]\"")
			case f.output != "text" && f.output != "json":
				return usage("--output must be text or json, not " + strconv.Quote(f.output))
			case f.imbalanceRatio <= 1:
				return usage("--imbalance-ratio must be above 1")
			case f.lagInterval < 0 || f.maxTxnTimeoutMin < 0 || f.imbalanceMinBytes < 0 || f.producerMaxRequest <= 0:
				return usage("--lag-interval, --max-transaction-timeout and --imbalance-min-bytes cannot be negative, --producer-max-request-size must be positive")
			case f.sampleTopics < 0 || f.sampleRecords < 0 || f.sampleBytes < 0 || f.sampleTimeout < 0:
				return usage("--sample-topics, --sample-records, --sample-bytes and --sample-timeout cannot be negative")
			}
			tc, err := f.conn.Connect(cmd, "weir-doctor", "describeCluster")
			if err != nil {
				return fail(err)
			}
			defer tc.Close()
			ctx, cancel := tc.Context(cmd)
			defer cancel()
			d := &doctor{f: &f, tc: tc}
			findings, err := d.examine(ctx)
			if err != nil {
				return fail(err)
			}
			if err := printFindings(cmd.OutOrStdout(), f.output, findings); err != nil {
				return fail(err)
			}
			if len(findings) > 0 {
				return tool.ExitCode(1)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	f.conn.Add(fs)
	fs.StringVar(&f.output, "output", "text", "text or json")
	fs.DurationVar(&f.lagInterval, "lag-interval", 10*time.Second, "time between the two samples of consumer lag (0: no group-lag-growing check)")
	fs.IntVar(&f.maxTxnTimeoutMin, "max-transaction-timeout", 15, "minutes after which an open transaction no coordinator knows is hanging")
	fs.Float64Var(&f.imbalanceRatio, "imbalance-ratio", 2, "how many times the brokers' mean a broker's leaders or bytes may reach")
	fs.Int64Var(&f.imbalanceMinBytes, "imbalance-min-bytes", 1<<30, "bytes above the mean below which a broker is not reported")
	fs.Int64Var(&f.producerMaxRequest, "producer-max-request-size", 1048576, "the producers' max.request.size")
	fs.IntVar(&f.sampleTopics, "sample-topics", 100, "how many topics partitions-grown samples at most (0: no partitions-grown check)")
	fs.Int64Var(&f.sampleRecords, "sample-records", 500, "how many of each partition's latest records partitions-grown reads at most")
	fs.Int32Var(&f.sampleBytes, "sample-bytes", 1<<20, "bytes of record batches partitions-grown reads per topic at most")
	fs.DurationVar(&f.sampleTimeout, "sample-timeout", 5*time.Second, "how long partitions-grown reads a topic's records at most")
	return cmd
}

func printFindings(w io.Writer, format string, findings []finding) error {
	if format == "json" {
		return json.NewEncoder(w).Encode(struct {
			Findings []finding `json:"findings"`
		}{append([]finding{}, findings...)})
	}
	if len(findings) == 0 {
		_, err := fmt.Fprintln(w, "No findings.")
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d finding%s:\n", len(findings), tool.Plural(len(findings)))
	for _, x := range findings {
		fmt.Fprintf(&b, "\n[%s] %s\n  %s\n  fix: %s\n", x.Check, x.Subject, x.Problem, x.Fix)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// doctor is one examination.
type doctor struct {
	f       *doctorFlags
	tc      *tool.Client
	md      kadm.Metadata
	brokers []int32 // live brokers, ascending
	configs map[string]map[string]string
	// sources are the topics' configs with their sources and synonyms;
	// brokerConfigs the live brokers' own.
	sources       map[string]map[string]kadm.Config
	brokerConfigs map[int32]map[string]kadm.Config
	findings      []finding
}

// tool is the start of a weir command line for a fix.
func (d *doctor) tool(name string) string {
	s := "weir " + name + " --bootstrap-server " + d.f.conn.BootstrapServer
	if d.f.conn.CommandConfig != "" {
		s += " --command-config " + d.f.conn.CommandConfig
	}
	return s
}

func (d *doctor) add(check, subject, problem, fix string) {
	d.findings = append(d.findings, finding{check, subject, problem, fix})
}

func (d *doctor) examine(ctx context.Context) ([]finding, error) {
	var err error
	if d.md, err = d.tc.Admin.Metadata(ctx); err != nil {
		return nil, fmt.Errorf("describing the cluster: %w", err)
	}
	for _, b := range d.md.Brokers {
		d.brokers = append(d.brokers, b.NodeID)
	}
	slices.Sort(d.brokers)
	if err := d.loadConfigs(ctx); err != nil {
		return nil, err
	}
	if err := d.loadBrokerConfigs(ctx); err != nil {
		return nil, err
	}
	for _, step := range []func(context.Context) error{d.topicChecks, d.brokerChecks, d.partitionChecks, d.keyChecks, d.imbalanceChecks, d.groupChecks, d.transactionChecks} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return d.findings, nil
}

// topics are the topics with partitions, by name.
func (d *doctor) topics() []kadm.TopicDetail {
	var out []kadm.TopicDetail
	for _, t := range d.md.Topics.Sorted() {
		if t.Err == nil {
			out = append(out, t)
		}
	}
	return out
}

func (d *doctor) loadConfigs(ctx context.Context) error {
	d.configs = map[string]map[string]string{}
	d.sources = map[string]map[string]kadm.Config{}
	var names []string
	for _, t := range d.topics() {
		names = append(names, t.Topic)
	}
	if len(names) == 0 {
		return nil
	}
	rcs, err := d.tc.Admin.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return fmt.Errorf("describing topic configs: %w", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("describing the configs of %s: %w", rc.Name, rc.Err)
		}
		d.configs[rc.Name] = configMap(rc)
		d.sources[rc.Name] = configsByKey(rc)
	}
	return nil
}

// loadBrokerConfigs describes the live brokers' configs.
func (d *doctor) loadBrokerConfigs(ctx context.Context) error {
	d.brokerConfigs = map[int32]map[string]kadm.Config{}
	if len(d.brokers) == 0 {
		return nil
	}
	rcs, err := d.tc.Admin.DescribeBrokerConfigs(ctx, d.brokers...)
	if err != nil {
		return fmt.Errorf("describing broker configs: %w", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("describing the configs of broker %s: %w", rc.Name, rc.Err)
		}
		id, err := strconv.ParseInt(rc.Name, 10, 32)
		if err != nil {
			return fmt.Errorf("describing broker configs: an answer for broker %q", rc.Name)
		}
		d.brokerConfigs[int32(id)] = configsByKey(rc)
	}
	return nil
}

func configsByKey(rc kadm.ResourceConfig) map[string]kadm.Config {
	m := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		m[c.Key] = c
	}
	return m
}

func configMap(rc kadm.ResourceConfig) map[string]string {
	m := map[string]string{}
	for _, c := range rc.Configs {
		if c.Value != nil {
			m[c.Key] = *c.Value
		}
	}
	return m
}

func (d *doctor) intConfig(topic, key string, def int64) int64 {
	if v, err := strconv.ParseInt(d.configs[topic][key], 10, 64); err == nil {
		return v
	}
	return def
}

func replicationOf(t kadm.TopicDetail) int {
	rf := 0
	for _, p := range t.Partitions {
		rf = max(rf, len(p.Replicas))
	}
	return rf
}
