package perftool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/tool"
	"weir/internal/perf"
)

type perfConsumeFlags struct {
	bootstrapServer   string
	topic             string
	messages          int64
	fetchSize         int32
	timeoutMs         int64
	group             string
	fromLatest        bool
	showDetailedStats bool
	reportingMs       int64
	hideHeader        bool
	consumerConfig    string
	printMetrics      bool
	raw               bool
	rawInflight       int
}

func newPerfConsumeCommand() *cobra.Command {
	var f perfConsumeFlags
	cmd := &cobra.Command{
		Use:   "consume --bootstrap-server HOST:PORT --topic TOPIC --messages N [flags]",
		Short: "Consume records and report throughput (like kafka-consumer-perf-test.sh)",
		Long: `consume reads --messages records from --topic and prints the header and CSV
row of Apache Kafka's kafka-consumer-perf-test.sh:

  start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec

MB is 1024*1024 bytes; times are yyyy-MM-dd HH:mm:ss:SSS. rebalance.time.ms
is the time spent joining --group (0 without a group) and the fetch.* columns
leave it out. With --show-detailed-stats a row is printed every
--reporting-interval instead (first column the time, second the thread id 0,
rates for the interval), and, as in Kafka, no summary row.

The run ends once --messages records were counted or when no records arrived
for --timeout ms; a run that ends short prints Kafka's WARNING line. It may
count a little past --messages, since it counts whole fetches.

Two readers:

  default  a normal franz-go consumer. Without --group it reads every
           partition directly; with --group it joins that consumer group.
           Bytes are key plus value lengths, as in Kafka's tool.

  --raw    a batch-counting reader that measures the broker rather than the
           client. It sends Fetch requests itself to each partition leader
           (one request for all of that leader's partitions, a new one as soon
           as the previous answer is counted; --raw-inflight splits a leader's
           partitions over more concurrent requests) and counts records and
           bytes from the record batch headers alone: nothing is
           decompressed, decoded or CRC-checked. Bytes are whole batch sizes
           (headers included), so MB figures run a little above the default
           reader's. No group is joined.

The default reader pays for every record: it decodes and allocates each one
(CRC checks are off, as Kafka's tool turns them off), so on a small machine it
rather than the broker can be the limit. --raw pays per fetch and per batch;
use it when the question is how fast the broker serves reads.

--fetch-size is the per-partition limit of a fetch (max.partition.fetch.bytes,
default 1 MiB). --consumer.config reads Kafka consumer properties: bootstrap.servers,
client.id, group.id, fetch.max.bytes, fetch.min.bytes, fetch.max.wait.ms,
max.partition.fetch.bytes, isolation.level, session.timeout.ms,
heartbeat.interval.ms, enable.auto.commit, auto.commit.interval.ms, and
security.protocol, ssl.* and sasl.* as for weir's other tools; the flags win
over the file.`,
		Example: `  # read 1M records with the decoding consumer
  weir perf consume --bootstrap-server 127.0.0.1:9092 --topic test --messages 1000000

  # the same, counting batches off the wire to measure the broker
  weir perf consume --bootstrap-server 127.0.0.1:9092 --topic test --messages 1000000 --raw

  # as a group member, with a row every second and no header
  weir perf consume --bootstrap-server 127.0.0.1:9092 --topic test --messages 1000000 \
      --group perf --show-detailed-stats --reporting-interval 1000 --hide-header`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPerfConsume(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.bootstrapServer, "bootstrap-server", "", "broker(s) to connect to, host:port[,host:port] (required unless bootstrap.servers is in --consumer.config)")
	fl.StringVar(&f.topic, "topic", "", "topic to consume from (required)")
	fl.Int64Var(&f.messages, "messages", 0, "number of records to consume (required)")
	fl.Int32Var(&f.fetchSize, "fetch-size", 1<<20, "bytes to fetch per partition in a single request")
	fl.Int64Var(&f.timeoutMs, "timeout", 10000, "give up after this many ms without records")
	fl.StringVar(&f.group, "group", "", "consumer group to join (default: none, read partitions directly)")
	fl.BoolVar(&f.fromLatest, "from-latest", false, "start at the end of the log rather than the beginning, when no offset is committed")
	fl.BoolVar(&f.showDetailedStats, "show-detailed-stats", false, "print a row every --reporting-interval instead of one summary row")
	fl.Int64Var(&f.reportingMs, "reporting-interval", 5000, "ms between rows of --show-detailed-stats")
	fl.BoolVar(&f.hideHeader, "hide-header", false, "do not print the header line")
	fl.StringVar(&f.consumerConfig, "consumer.config", "", "consumer properties file")
	fl.BoolVar(&f.printMetrics, "print-metrics", false, "print client metrics at the end")
	fl.BoolVar(&f.raw, "raw", false, "count records from record batch headers with hand-made Fetch requests (measures the broker, not the client)")
	fl.IntVar(&f.rawInflight, "raw-inflight", 1, "with --raw, concurrent fetch requests per partition leader (its partitions are split among them)")
	return cmd
}

func runPerfConsume(cmd *cobra.Command, f *perfConsumeFlags) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case f.topic == "":
		return errors.New("--topic is required")
	case f.messages <= 0:
		return errors.New("--messages must be greater than zero")
	case f.reportingMs <= 0:
		return errors.New("--reporting-interval must be greater than 0")
	case f.fetchSize <= 0:
		return errors.New("--fetch-size must be greater than 0")
	case f.timeoutMs < 0:
		return errors.New("--timeout must not be negative")
	case f.raw && f.group != "":
		return errors.New("--raw reads partitions directly and cannot join --group")
	case f.rawInflight < 1:
		return errors.New("--raw-inflight must be at least 1")
	}
	props := perf.Props{}
	if f.consumerConfig != "" {
		if err := perf.LoadPropsFile(props, f.consumerConfig); err != nil {
			return err
		}
	}
	if f.bootstrapServer != "" {
		props["bootstrap.servers"] = f.bootstrapServer
	}
	if cmd.Flags().Changed("fetch-size") || props["max.partition.fetch.bytes"] == "" {
		props["max.partition.fetch.bytes"] = fmt.Sprint(f.fetchSize)
	}
	if _, ok := props["client.id"]; !ok {
		props["client.id"] = "perf-consumer-client"
	}
	cc, err := perf.ConsumerOptions(props)
	if err != nil {
		return err
	}
	if !cc.Seeds {
		return errors.New("--bootstrap-server is required")
	}
	for _, w := range cc.Warnings {
		fmt.Fprintln(errOut, "warning:", w)
	}
	group := f.group
	if group == "" && !f.raw {
		group = cc.Group
	}

	if !f.hideHeader {
		fmt.Fprintln(out, perf.ConsumerHeader(f.showDetailedStats))
	}
	opts := append(cc.Opts, kgo.WithHooks(tool.NewUnreachableHook(errOut, tool.ConsumerPrefix(props["client.id"], group))))
	var metrics *perf.Metrics
	if f.printMetrics {
		metrics = perf.NewMetrics()
		opts = append(opts, kgo.WithHooks(metrics))
	}

	ctx, stop := perfContext(cmd)
	defer stop()
	run := perfConsumeRun{
		f:       f,
		out:     out,
		timeout: time.Duration(f.timeoutMs) * time.Millisecond,
		stats:   perf.NewConsumerStats(time.Now(), time.Duration(f.reportingMs)*time.Millisecond),
	}
	var cl *kgo.Client
	if f.raw {
		cl, err = run.raw(ctx, cc, opts)
	} else {
		cl, err = run.client(ctx, cc, group, opts)
	}
	if cl != nil {
		defer cl.Close()
	}
	if err != nil {
		return err
	}
	if run.stats.Messages < f.messages {
		fmt.Fprintf(out, "WARNING: Exiting before consuming the expected number of messages: timeout (%d ms) exceeded. "+
			"You can use the --timeout option to increase the timeout.\n", f.timeoutMs)
	}
	if !f.showDetailedStats {
		fmt.Fprintln(out, run.stats.Summary(run.end).Line())
	}
	if metrics != nil {
		metrics.Print(out, "consumer-metrics", props["client.id"])
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

type perfConsumeRun struct {
	f       *perfConsumeFlags
	out     io.Writer
	timeout time.Duration
	stats   *perf.ConsumerStats
	end     time.Time
}

func (r *perfConsumeRun) add(messages, bytes int64, now time.Time) {
	if p, ok := r.stats.Add(messages, bytes, now); ok && r.f.showDetailedStats {
		fmt.Fprintln(r.out, p.Line())
	}
}

// joinClock follows group joins the way Kafka's tool does: the time from
// losing the last partition (or from the start) until partitions are
// assigned again counts as rebalance time.
type joinClock struct {
	mu       sync.Mutex
	owned    int
	since    time.Time
	pending  time.Duration
	assigned bool
}

func (j *joinClock) assign(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.owned == 0 && n > 0 {
		j.pending += time.Since(j.since)
		j.assigned = true
	}
	j.owned += n
}

func (j *joinClock) revoke(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.owned = max(0, j.owned-n)
	if j.owned == 0 {
		j.since = time.Now()
	}
}

func (j *joinClock) take() time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	d := j.pending
	j.pending = 0
	return d
}

func countParts(m map[string][]int32) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

// client consumes with a regular franz-go consumer.
func (r *perfConsumeRun) client(ctx context.Context, cc perf.ConsumerConfig, group string, opts []kgo.Opt) (*kgo.Client, error) {
	reset := kgo.NewOffset().AtStart()
	if r.f.fromLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	opts = append(opts,
		kgo.ConsumeTopics(r.f.topic),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxBytes(cc.MaxBytes),
		kgo.FetchMinBytes(cc.MinBytes),
		kgo.FetchMaxWait(cc.MaxWait),
		kgo.FetchMaxPartitionBytes(cc.PartitionMaxBytes),
		kgo.DisableFetchCRCValidation(), // Kafka's tool sets check.crcs=false
	)
	if cc.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	join := &joinClock{since: r.stats.Start}
	if group != "" {
		opts = append(opts, cc.GroupOpts...)
		opts = append(opts,
			kgo.ConsumerGroup(group),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { join.assign(countParts(m)) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { join.revoke(countParts(m)) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { join.revoke(countParts(m)) }),
		)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for r.stats.Messages < r.f.messages && !r.stats.Idle(now, r.timeout) && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		now = time.Now()
		var fatal error
		fetches.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			if fatal == nil {
				fatal = fmt.Errorf("consume %s partition %d: %w", topic, partition, err)
			}
		})
		if fatal != nil {
			return cl, fatal
		}
		var msgs, bytes int64
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, rec := range p.Records {
				bytes += int64(len(rec.Key) + len(rec.Value))
			}
			msgs += int64(len(p.Records))
		})
		if d := join.take(); d > 0 {
			r.stats.AddJoin(d)
		}
		r.add(msgs, bytes, now)
	}
	r.end = now
	return cl, nil
}

// raw consumes with the batch-counting reader.
func (r *perfConsumeRun) raw(ctx context.Context, cc perf.ConsumerConfig, opts []kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	fr := perf.NewRawFetcher(cl, perf.RawFetchConfig{
		Topic:             r.f.topic,
		PartitionMaxBytes: cc.PartitionMaxBytes,
		MaxBytes:          cc.MaxBytes,
		MinBytes:          cc.MinBytes,
		MaxWait:           cc.MaxWait,
		ReadCommitted:     cc.ReadCommitted,
		FromLatest:        r.f.fromLatest,
		Streams:           r.f.rawInflight,
		Dial:              cc.Dial,
	})
	if err := fr.Prepare(ctx); err != nil {
		return cl, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fr.Run(runCtx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastRecs, lastBytes int64
	for {
		select {
		case <-fr.Progress():
			now := time.Now()
			recs, bytes := fr.Counts()
			r.add(recs-lastRecs, bytes-lastBytes, now)
			lastRecs, lastBytes = recs, bytes
			if recs >= r.f.messages {
				r.end = now
				cancel()
				return cl, <-done
			}
		case now := <-tick.C:
			if r.stats.Idle(now, r.timeout) {
				r.end = now
				cancel()
				return cl, <-done
			}
		case err := <-done:
			r.end = time.Now()
			if err != nil {
				return cl, err
			}
			return cl, nil
		}
	}
}
