// Package txns is weir transactions, like kafka-transactions.sh.
package txns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/txnadmin"
)

// txnClientOpts are added to the command's client (tests).
var txnClientOpts []kgo.Opt

type transactionsFlags struct {
	conn tool.ConnFlags
}

func NewCommand() *cobra.Command {
	var f transactionsFlags
	cmd := &cobra.Command{
		Use:   "transactions",
		Short: "Inspect transactions and abort hanging ones, like kafka-transactions.sh",
		Long: `transactions analyzes the transactional state of producers in the cluster, and
detects and recovers from hanging transactions: a partition whose transaction
stays open because its coordinator will never write its marker (the
producer's transactional id is gone, or the transaction was started by a
client without the coordinator knowing). It sends the same requests as Apache
Kafka's kafka-transactions.sh and prints the same tables (columns padded and
ended by a tab), so it works against weir and Kafka alike.

  list                 every transactional id, from every broker's coordinator
                       (ListTransactions): TransactionalId, Coordinator,
                       ProducerId, TransactionState
  describe             one transactional id (DescribeTransactions): its
                       coordinator, producer id and epoch, state, timeout, the
                       start time and duration of the current transaction
                       ("None" when there is none) and its partitions (those
                       without a marker yet, once prepared)
  describe-producers   the active producers of a partition (DescribeProducers):
                       epoch, the coordinator epoch of their last marker,
                       last sequence and timestamp, and the first offset of
                       their open transaction ("None" when none is open)
  find-hanging         open transactions older than --max-transaction-timeout
                       whose coordinator does not list the partition
  abort                abort a hanging transaction: an ABORT marker is written
                       to the partition by its leader (WriteTxnMarkers), for
                       the producer whose transaction starts at --start-offset,
                       or for the producer given by id, epoch and coordinator
                       epoch

Transaction states are Kafka's: Empty, Ongoing, PrepareCommit, PrepareAbort,
CompleteCommit, CompleteAbort, PrepareEpochFence, Dead.

` + tool.CommandConfigHelp,
		Example: `  weir transactions --bootstrap-server localhost:9092 list
  weir transactions --bootstrap-server localhost:9092 describe --transactional-id my-app-1
  weir transactions --bootstrap-server localhost:9092 describe-producers --topic orders --partition 0
  weir transactions --bootstrap-server localhost:9092 find-hanging --topic orders
  weir transactions --bootstrap-server localhost:9092 abort --topic orders --partition 0 --start-offset 1520`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	f.conn.Add(cmd.PersistentFlags())
	cmd.AddCommand(newTxnListCommand(&f), newTxnDescribeCommand(&f), newTxnDescribeProducersCommand(&f),
		newTxnFindHangingCommand(&f), newTxnAbortCommand(&f))
	return cmd
}

// txnCalls are the first Kafka admin call of each subcommand.
var txnCalls = map[string]string{"list": "listTransactions", "describe": "describeTransactions",
	"describe-producers": "describeProducers", "abort": "describeProducers", "find-hanging": "findAllBrokers"}

// txnRun dials the cluster and runs fn with a bounded context.
func txnRun(cmd *cobra.Command, f *transactionsFlags, fn func(ctx context.Context, cl *kgo.Client, adm *kadm.Client, out io.Writer) error) error {
	if f.conn.BootstrapServer == "" {
		return errors.New("--bootstrap-server is required")
	}
	tc, err := f.conn.Connect(cmd, "weir-transactions", txnCalls[cmd.Name()], txnClientOpts...)
	if err != nil {
		return err
	}
	defer tc.Close()
	ctx, cancel := tc.Context(cmd)
	defer cancel()
	return fn(ctx, tc.Kgo, tc.Admin, cmd.OutOrStdout())
}

func newTxnListCommand(f *transactionsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List transactions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return txnRun(cmd, f, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client, out io.Writer) error {
				ls, err := adm.ListTransactions(ctx, nil, nil)
				if err != nil {
					return fmt.Errorf("Failed to list transactions: %w", err)
				}
				all := ls.Sorted()
				slices.SortStableFunc(all, func(a, b kadm.ListedTransaction) int { return int(a.Coordinator) - int(b.Coordinator) })
				rows := make([][]string, 0, len(all))
				for _, l := range all {
					rows = append(rows, []string{l.TxnID, tool.Itoa(int64(l.Coordinator)), tool.Itoa(l.ProducerID), l.State})
				}
				return printTable(out, []string{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"}, rows)
			})
		},
	}
}

func newTxnDescribeCommand(f *transactionsFlags) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "describe --transactional-id ID",
		Short: "Describe the state of an active transactional-id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				return errors.New("Missing required argument --transactional-id")
			}
			return txnRun(cmd, f, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client, out io.Writer) error {
				ds, err := adm.DescribeTransactions(ctx, id)
				if err == nil {
					err = ds[id].Err
				}
				if err != nil {
					return fmt.Errorf("Failed to describe transaction state of transactional-id `%s`: %w", id, err)
				}
				d := ds[id]
				start, duration := "None", "None"
				if d.StartTimestamp >= 0 {
					start, duration = tool.Itoa(d.StartTimestamp), tool.Itoa(time.Now().UnixMilli()-d.StartTimestamp)
				}
				var tps []string
				for _, p := range d.Topics.Sorted() {
					for _, part := range p.Partitions {
						tps = append(tps, p.Topic+"-"+tool.Itoa(int64(part)))
					}
				}
				return printTable(out, []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
					"TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"},
					[][]string{{tool.Itoa(int64(d.Coordinator)), id, tool.Itoa(d.ProducerID), tool.Itoa(int64(d.ProducerEpoch)), d.State,
						tool.Itoa(int64(d.TimeoutMillis)), start, duration, strings.Join(tps, ",")}})
			})
		},
	}
	cmd.Flags().StringVar(&id, "transactional-id", "", "transactional id (required)")
	return cmd
}

// partitionFlags are --topic and --partition, both required.
type partitionFlags struct {
	topic     string
	partition int32
}

func (p *partitionFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.topic, "topic", "", "topic name (required)")
	cmd.Flags().Int32Var(&p.partition, "partition", -1, "partition number (required)")
}

func (p *partitionFlags) check(cmd *cobra.Command) error {
	if p.topic == "" {
		return errors.New("Missing required argument --topic")
	}
	if !cmd.Flags().Changed("partition") {
		return errors.New("Missing required argument --partition")
	}
	return nil
}

func (p *partitionFlags) String() string { return p.topic + "-" + tool.Itoa(int64(p.partition)) }

// describeProducers asks the partition's leader (or broker, if >= 0)
// for its active producers.
func describeProducers(ctx context.Context, cl *kgo.Client, topic string, partition, broker int32) ([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, error) {
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	var kresp kmsg.Response
	var err error
	if broker >= 0 {
		kresp, err = cl.Broker(int(broker)).Request(ctx, req)
	} else {
		kresp, err = cl.Request(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	for _, t := range kresp.(*kmsg.DescribeProducersResponse).Topics {
		for _, p := range t.Partitions {
			if t.Topic == topic && p.Partition == partition {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, err
				}
				return p.ActiveProducers, nil
			}
		}
	}
	return nil, errors.New("the broker did not answer for the partition")
}

func newTxnDescribeProducersCommand(f *transactionsFlags) *cobra.Command {
	var p partitionFlags
	var broker int32
	cmd := &cobra.Command{
		Use:   "describe-producers --topic TOPIC --partition N [--broker-id ID]",
		Short: "Describe the states of active producers for a topic partition",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.check(cmd); err != nil {
				return err
			}
			if !cmd.Flags().Changed("broker-id") {
				broker = -1
			}
			return txnRun(cmd, f, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client, out io.Writer) error {
				ps, err := describeProducers(ctx, cl, p.topic, p.partition, broker)
				if err != nil {
					where := "leader"
					if broker >= 0 {
						where = "broker " + tool.Itoa(int64(broker))
					}
					return fmt.Errorf("Failed to describe producers for partition %s on %s: %w", p.String(), where, err)
				}
				var rows [][]string
				for _, ap := range ps {
					start := "None"
					if ap.CurrentTxnStartOffset >= 0 {
						start = tool.Itoa(ap.CurrentTxnStartOffset)
					}
					rows = append(rows, []string{tool.Itoa(ap.ProducerID), tool.Itoa(int64(ap.ProducerEpoch)), tool.Itoa(int64(ap.CoordinatorEpoch)),
						tool.Itoa(int64(ap.LastSequence)), tool.Itoa(ap.LastTimestamp), start})
				}
				return printTable(out, []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
					"LastTimestamp", "CurrentTransactionStartOffset"}, rows)
			})
		},
	}
	p.add(cmd)
	cmd.Flags().Int32Var(&broker, "broker-id", -1, "describe the producer state on this replica rather than the leader")
	return cmd
}

func newTxnAbortCommand(f *transactionsFlags) *cobra.Command {
	var p partitionFlags
	var startOffset, producerID int64
	var producerEpoch int16
	var coordinatorEpoch int32
	cmd := &cobra.Command{
		Use:   "abort --topic TOPIC --partition N (--start-offset OFFSET | --producer-id ID --producer-epoch E --coordinator-epoch C)",
		Short: "Abort a hanging transaction (requires administrative privileges)",
		Long: `abort writes an ABORT marker to one partition for a producer whose transaction
is open there, as the coordinator would have. Name the transaction by its
first offset (--start-offset, as describe-producers and find-hanging show it):
the producer, its epoch and the coordinator epoch of its last marker are then
taken from the partition's leader. Or give all three with --producer-id,
--producer-epoch and --coordinator-epoch (a negative coordinator epoch is
sent as 0, which no coordinator epoch is below).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.check(cmd); err != nil {
				return err
			}
			fl := cmd.Flags()
			byOffset := fl.Changed("start-offset")
			if !byOffset && !fl.Changed("producer-id") {
				return errors.New("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
			}
			if !byOffset {
				if !fl.Changed("producer-epoch") {
					return errors.New("Missing required argument --producer-epoch")
				}
				if !fl.Changed("coordinator-epoch") {
					return errors.New("Missing required argument --coordinator-epoch")
				}
			}
			return txnRun(cmd, f, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client, _ io.Writer) error {
				if byOffset {
					ps, err := describeProducers(ctx, cl, p.topic, p.partition, -1)
					if err != nil {
						return fmt.Errorf("Failed to validate producer state for partition %s: %w", p.String(), err)
					}
					i := slices.IndexFunc(ps, func(ap kmsg.DescribeProducersResponseTopicPartitionActiveProducer) bool {
						return ap.CurrentTxnStartOffset >= 0 && ap.CurrentTxnStartOffset == startOffset
					})
					if i < 0 {
						return fmt.Errorf("Could not find any open transactions starting at offset %d on partition %s", startOffset, p.String())
					}
					producerID, producerEpoch, coordinatorEpoch = ps[i].ProducerID, int16(ps[i].ProducerEpoch), ps[i].CoordinatorEpoch
				}
				coordinatorEpoch = max(coordinatorEpoch, 0)
				spec := fmt.Sprintf("AbortTransactionSpec(topicPartition=%s, producerId=%d, producerEpoch=%d, coordinatorEpoch=%d)",
					p.String(), producerID, producerEpoch, coordinatorEpoch)
				var ts kadm.TopicsSet
				ts.Add(p.topic, p.partition)
				rs, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: producerID, ProducerEpoch: producerEpoch,
					CoordinatorEpoch: coordinatorEpoch, Topics: ts})
				if err == nil {
					err = errors.New("the leader did not answer for the partition")
					for _, r := range rs.SortedPartitions() {
						if r.Topic == p.topic && r.Partition == p.partition {
							err = r.Err
						}
					}
				}
				if err != nil {
					return fmt.Errorf("Failed to abort transaction %s: %w", spec, err)
				}
				return nil
			})
		},
	}
	p.add(cmd)
	fl := cmd.Flags()
	fl.Int64Var(&startOffset, "start-offset", -1, "start offset of the transaction to abort (brokers on 3.0 and above)")
	fl.Int64Var(&producerID, "producer-id", -1, "producer id (with --producer-epoch and --coordinator-epoch, for older brokers)")
	fl.Int16Var(&producerEpoch, "producer-epoch", -1, "producer epoch")
	fl.Int32Var(&coordinatorEpoch, "coordinator-epoch", -1, "coordinator epoch")
	return cmd
}

// printTable writes a table as kafka-transactions.sh does: each column
// padded to its widest cell, every cell followed by a tab.
func printTable(out io.Writer, headers []string, rows [][]string) error {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = len(h)
	}
	for _, r := range rows {
		for i := range headers {
			widths[i] = max(widths[i], len(r[i]))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-len(c)))
			b.WriteByte('\t')
		}
		b.WriteByte('\n')
	}
	line(headers)
	for _, r := range rows {
		line(r)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func newTxnFindHangingCommand(f *transactionsFlags) *cobra.Command {
	var topic string
	var partition, broker int32
	var maxTimeoutMin int
	cmd := &cobra.Command{
		Use:   "find-hanging (--topic TOPIC [--partition N] | --broker-id ID) [--max-transaction-timeout MIN]",
		Short: "Find hanging transactions",
		Long: `find-hanging lists the transactions open on partitions (of --topic, or hosted
on --broker-id) whose producer last wrote longer ago than
--max-transaction-timeout minutes and whose coordinator either does not know
the producer or does not list the partition in its transaction: no
coordinator will end them, so they hold back read_committed consumers until
aborted (see abort).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			hasBroker := fl.Changed("broker-id")
			if topic == "" && !hasBroker {
				return errors.New("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
			}
			if fl.Changed("partition") && topic == "" {
				return errors.New("The --partition argument requires --topic to be provided")
			}
			if !hasBroker {
				broker = -1
			}
			return txnRun(cmd, f, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client, out io.Writer) error {
				hanging, err := txnadmin.FindHanging(ctx, cl, adm, txnadmin.Scope{Topic: topic, OnePartition: fl.Changed("partition"),
					Partition: partition, Broker: broker}, time.Duration(maxTimeoutMin)*time.Minute, time.Now())
				if err != nil {
					return err
				}
				now := time.Now().UnixMilli()
				var rows [][]string
				for _, h := range hanging {
					rows = append(rows, []string{h.Topic, tool.Itoa(int64(h.Partition)), tool.Itoa(h.ProducerID), tool.Itoa(int64(h.ProducerEpoch)),
						tool.Itoa(int64(h.CoordinatorEpoch)), tool.Itoa(h.CurrentTxnStartOffset), tool.Itoa(h.LastTimestamp),
						tool.Itoa((now - h.LastTimestamp) / 60000)})
				}
				return printTable(out, []string{"Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
					"StartOffset", "LastTimestamp", "Duration(min)"}, rows)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&topic, "topic", "", "topic name to limit the search to")
	fl.Int32Var(&partition, "partition", -1, "partition number (with --topic)")
	fl.Int32Var(&broker, "broker-id", -1, "broker id to search for hanging transactions")
	fl.IntVar(&maxTimeoutMin, "max-transaction-timeout", 15, "maximum transaction timeout in minutes, to limit the scope of the search")
	return cmd
}
