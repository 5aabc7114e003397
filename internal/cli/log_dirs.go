package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { subcommands = append(subcommands, newLogDirsCommand) }

type logDirsFlags struct {
	conn                  connFlags
	describe              bool
	topicList, brokerList string
}

func newLogDirsCommand() *cobra.Command {
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

` + commandConfigHelp,
		Example: `  # every broker, every topic
  weir log-dirs --bootstrap-server localhost:9092 --describe

  # the replicas of two topics on brokers 1 and 2
  weir log-dirs --bootstrap-server localhost:9092 --describe --broker-list 1,2 --topic-list orders,payments`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLogDirs(cmd, f) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	f.conn.add(fl)
	fl.BoolVar(&f.describe, "describe", false, "describe the log directories of the brokers (REQUIRED)")
	fl.StringVar(&f.topicList, "topic-list", "", `the topics to show, "topic1,topic2" (all if none)`)
	fl.StringVar(&f.brokerList, "broker-list", "", `the brokers to ask, "0,1,2" (all if none)`)
	return cmd
}

// splitList splits at commas, dropping empty items, as Kafka's tools.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// jsonObject is a JSON object whose keys print in the given order.
type jsonObject []jsonField

type jsonField struct {
	key string
	val any
}

// javaHashMap orders an object's keys as Java's HashMap of them iterates.
func javaHashMap(fields ...jsonField) jsonObject {
	javaOrder(fields, func(f jsonField) int32 { return javaStringHash(f.key) })
	return fields
}

func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeJSON(&b, f.key); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := writeJSON(&b, f.val); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeJSON encodes v as Jackson does: no HTML escaping, no newline.
func writeJSON(b *bytes.Buffer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return nil
}

// javaIntSet joins ids in the order of Java's HashSet of them.
func javaIntSet(ids []int32) string {
	javaOrder(ids, func(i int32) int32 { return i })
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func runLogDirs(cmd *cobra.Command, f *logDirsFlags) error {
	fail := failTo(cmd.ErrOrStderr())
	has := cmd.Flags().Changed
	if cmd.Flags().NFlag() == 0 {
		return usageError(cmd, "This tool helps to query log directory usage on the specified brokers.")
	}
	for _, o := range []string{"bootstrap-server", "describe"} {
		if !has(o) {
			return usageError(cmd, fmt.Sprintf(`Missing required argument "[%s]"`, o))
		}
	}
	topics := map[string]bool{}
	for _, t := range splitList(f.topicList) {
		topics[t] = true
	}
	var asked []int32
	seen := map[int32]bool{}
	for _, s := range splitList(f.brokerList) {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return fail(fmt.Sprintf("For input string: %q", s))
		}
		if !seen[int32(id)] {
			seen[int32(id)] = true
			asked = append(asked, int32(id))
		}
	}
	tc, err := f.conn.connect(cmd, "log-dirs-tool", "describeCluster")
	if err != nil {
		return fail(err.Error())
	}
	defer tc.close()
	ctx, cancel := tc.context(cmd)
	defer cancel()
	brokers, err := tc.adm.BrokerMetadata(ctx)
	if err != nil {
		return fail(describeErr(kafkaError(err, nil)))
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
				javaIntSet(missing), javaIntSet(cluster)))
		}
	}
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, "Querying brokers for log directories information")
	described := []jsonObject{}
	javaOrder(query, func(i int32) int32 { return i })
	for _, id := range query {
		dirs, err := describeBrokerLogDirs(ctx, tc, id, topics)
		if err != nil {
			return fail(describeErr(err))
		}
		described = append(described, javaHashMap(jsonField{"broker", id}, jsonField{"logDirs", dirs}))
	}
	fmt.Fprintf(out, "Received log directory information from brokers %s\n", javaIntSet(query))
	var b bytes.Buffer
	if err := writeJSON(&b, javaHashMap(jsonField{"version", 1}, jsonField{"brokers", described})); err != nil {
		return fail(err.Error())
	}
	fmt.Fprintln(out, b.String())
	return nil
}

// describeBrokerLogDirs asks one broker for all its log directories and
// returns them as Kafka's tool prints them, the partitions of topics
// limited to those in topics when it is not empty.
func describeBrokerLogDirs(ctx context.Context, tc *toolClient, id int32, topics map[string]bool) ([]jsonObject, error) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	resp, err := req.RequestWith(ctx, tc.cl.Broker(int(id)))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, kafkaError(err, nil)
	}
	type replica struct {
		topic string
		p     kmsg.DescribeLogDirsResponseDirTopicPartition
	}
	tpHash := func(r replica) int32 { return javaTopicPartitionHash(r.topic, r.p.Partition) }
	dirs := make([]jsonObject, 0, len(resp.Dirs))
	for _, d := range resp.Dirs {
		var all []replica
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				all = append(all, replica{t.Topic, p})
			}
		}
		// The admin client's map of the response, then the tool's map of
		// the topics asked for.
		javaOrder(all, tpHash)
		var kept []replica
		for _, r := range all {
			if len(topics) == 0 || topics[r.topic] {
				kept = append(kept, r)
			}
		}
		javaOrder(kept, tpHash)
		partitions := make([]jsonObject, 0, len(kept))
		for _, r := range kept {
			partitions = append(partitions, javaHashMap(
				jsonField{"partition", fmt.Sprintf("%s-%d", r.topic, r.p.Partition)},
				jsonField{"size", r.p.Size},
				jsonField{"offsetLag", r.p.OffsetLag},
				jsonField{"isFuture", r.p.IsFuture},
			))
		}
		var dirErr any
		if e := kerr.ErrorForCode(d.ErrorCode); e != nil {
			je, ok := kafkaError(e, nil).(*javaError)
			if ok {
				dirErr = "org.apache.kafka.common.errors." + je.class
			} else {
				dirErr = e.Error()
			}
		}
		dirs = append(dirs, javaHashMap(jsonField{"logDir", d.Dir}, jsonField{"error", dirErr}, jsonField{"partitions", partitions}))
	}
	javaOrder(dirs, func(o jsonObject) int32 {
		for _, f := range o {
			if f.key == "logDir" {
				return javaStringHash(f.val.(string))
			}
		}
		return 0
	})
	return dirs, nil
}
