// Package logdirs is weir log-dirs, like kafka-log-dirs.sh.
package logdirs

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
)

type logDirsFlags struct {
	conn                  tool.ConnFlags
	describe              bool
	topicList, brokerList string
}

func NewCommand() *cobra.Command {
	f := &logDirsFlags{}
	cmd := &cobra.Command{
		Use:   "log-dirs --bootstrap-server HOST:PORT --describe [--broker-list 1,2] [--topic-list t1,t2]",
		Short: "Describe the brokers' log directories, like kafka-log-dirs.sh",
		Long: `log-dirs asks brokers for their log directories (DescribeLogDirs) and prints
what Apache Kafka's kafka-log-dirs.sh prints, against weir or Kafka alike:

  Querying brokers for log directories information
  Received log directory information from brokers 1,2,3
  {"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"orders-0","size":1024,"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/var/lib/weir"}]}],"version":1}

size is the bytes of the replica's segments; offsetLag is how far a
follower's log end is behind the high watermark (0 on leaders). Every broker
is asked unless --broker-list names some (a broker not in the cluster is an
error), and every topic is shown unless --topic-list names some. Maps are
printed in the order Kafka's tool prints them, so the output compares equal
byte for byte.

` + tool.CommandConfigHelp,
		Example: `  # every broker, every topic
  weir log-dirs --bootstrap-server localhost:9092 --describe

  # the replicas of two topics on brokers 1 and 2
  weir log-dirs --bootstrap-server localhost:9092 --describe --broker-list 1,2 --topic-list orders,payments`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLogDirs(cmd, f) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	f.conn.Add(fl)
	fl.BoolVar(&f.describe, "describe", false, "describe the log directories of the brokers (REQUIRED)")
	fl.StringVar(&f.topicList, "topic-list", "", `the topics to show, "topic1,topic2" (all if none)`)
	fl.StringVar(&f.brokerList, "broker-list", "", `the brokers to ask, "0,1,2" (all if none)`)
	return cmd
}

func runLogDirs(cmd *cobra.Command, f *logDirsFlags) error {
	fail := tool.FailTo(cmd.ErrOrStderr())
	has := cmd.Flags().Changed
	if cmd.Flags().NFlag() == 0 {
		return tool.UsageError(cmd, "This tool helps to query log directory usage on the specified brokers.")
	}
	for _, o := range []string{"bootstrap-server", "describe"} {
		if !has(o) {
			return tool.UsageError(cmd, fmt.Sprintf(`Missing required argument "[%s]"`, o))
		}
	}
	topics := map[string]bool{}
	for _, t := range tool.SplitList(f.topicList) {
		topics[t] = true
	}
	var asked []int32
	seen := map[int32]bool{}
	for _, s := range tool.SplitList(f.brokerList) {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return fail(fmt.Sprintf("For input string: %q", s))
		}
		if !seen[int32(id)] {
			seen[int32(id)] = true
			asked = append(asked, int32(id))
		}
	}
	tc, err := f.conn.Connect(cmd, "log-dirs-tool", "describeCluster")
	if err != nil {
		return fail(err.Error())
	}
	defer tc.Close()
	ctx, cancel := tc.Context(cmd)
	defer cancel()
	brokers, err := tc.Admin.BrokerMetadata(ctx)
	if err != nil {
		return fail(tool.DescribeErr(tool.KafkaError(err, nil)))
	}
	inCluster := map[int32]bool{}
	var cluster []int32
	for _, b := range brokers.Brokers {
		inCluster[b.NodeID] = true
		cluster = append(cluster, b.NodeID)
	}
	query := cluster
	if len(asked) > 0 {
		query = nil
		var missing []int32
		for _, id := range asked {
			if inCluster[id] {
				query = append(query, id)
			} else {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fail(fmt.Sprintf("ERROR: The given brokers do not exist from --broker-list: %s. Current existent brokers: %s",
				tool.JavaIntSet(missing), tool.JavaIntSet(cluster)))
		}
	}
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, "Querying brokers for log directories information")
	described := []tool.JSONObject{}
	tool.JavaOrder(query, func(i int32) int32 { return i })
	for _, id := range query {
		dirs, err := describeBrokerLogDirs(ctx, tc, id, topics)
		if err != nil {
			return fail(tool.DescribeErr(err))
		}
		described = append(described, tool.JavaHashMap(tool.JSONField{Key: "broker", Val: id}, tool.JSONField{Key: "logDirs", Val: dirs}))
	}
	fmt.Fprintf(out, "Received log directory information from brokers %s\n", tool.JavaIntSet(query))
	var b bytes.Buffer
	if err := tool.WriteJSON(&b, tool.JavaHashMap(tool.JSONField{Key: "version", Val: 1}, tool.JSONField{Key: "brokers", Val: described})); err != nil {
		return fail(err.Error())
	}
	fmt.Fprintln(out, b.String())
	return nil
}

// describeBrokerLogDirs asks one broker for all its log directories and
// returns them as Kafka's tool prints them, the partitions of topics
// limited to those in topics when it is not empty.
func describeBrokerLogDirs(ctx context.Context, tc *tool.Client, id int32, topics map[string]bool) ([]tool.JSONObject, error) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	resp, err := req.RequestWith(ctx, tc.Kgo.Broker(int(id)))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	type replica struct {
		topic string
		p     kmsg.DescribeLogDirsResponseDirTopicPartition
	}
	tpHash := func(r replica) int32 { return tool.JavaTopicPartitionHash(r.topic, r.p.Partition) }
	dirs := make([]tool.JSONObject, 0, len(resp.Dirs))
	for _, d := range resp.Dirs {
		var all []replica
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				all = append(all, replica{t.Topic, p})
			}
		}
		// The admin client's map of the response, then the tool's map of
		// the topics asked for.
		tool.JavaOrder(all, tpHash)
		var kept []replica
		for _, r := range all {
			if len(topics) == 0 || topics[r.topic] {
				kept = append(kept, r)
			}
		}
		tool.JavaOrder(kept, tpHash)
		partitions := make([]tool.JSONObject, 0, len(kept))
		for _, r := range kept {
			partitions = append(partitions, tool.JavaHashMap(
				tool.JSONField{Key: "partition", Val: fmt.Sprintf("%s-%d", r.topic, r.p.Partition)},
				tool.JSONField{Key: "size", Val: r.p.Size},
				tool.JSONField{Key: "offsetLag", Val: r.p.OffsetLag},
				tool.JSONField{Key: "isFuture", Val: r.p.IsFuture},
			))
		}
		var dirErr any
		if e := kerr.ErrorForCode(d.ErrorCode); e != nil {
			je, ok := tool.KafkaError(e, nil).(*tool.JavaError)
			if ok {
				dirErr = "org.apache.kafka.common.errors." + je.Class
			} else {
				dirErr = e.Error()
			}
		}
		dirs = append(dirs, tool.JavaHashMap(tool.JSONField{Key: "logDir", Val: d.Dir}, tool.JSONField{Key: "error", Val: dirErr}, tool.JSONField{Key: "partitions", Val: partitions}))
	}
	tool.JavaOrder(dirs, func(o tool.JSONObject) int32 {
		for _, f := range o {
			if f.Key == "logDir" {
				return tool.JavaStringHash(f.Val.(string))
			}
		}
		return 0
	})
	return dirs, nil
}
