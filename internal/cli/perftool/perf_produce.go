package perftool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/tool"
	"weir/internal/perf"
)

type perfProduceFlags struct {
	topic            string
	numRecords       int64
	recordSize       int
	payloadFile      string
	payloadDelimiter string
	payloadMonotonic bool
	throughput       float64
	producerProps    []string
	producerConfig   string
	bootstrapServer  string
	printMetrics     bool
	partitions       int32
	replication      int16
}

func newPerfProduceCommand() *cobra.Command {
	var f perfProduceFlags
	cmd := &cobra.Command{
		Use:   "produce --topic TOPIC --num-records N (--record-size BYTES | --payload-file FILE | --payload-monotonic) [flags]",
		Short: "Produce records as fast as asked and report throughput and latency (like kafka-producer-perf-test.sh)",
		Long: `produce sends --num-records records to --topic and reports what it measured in
the exact format of Apache Kafka's kafka-producer-perf-test.sh:

  every 5 seconds
    N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency.
  and once at the end
    N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency,
    P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.

MB is 1024*1024 bytes and counts record values only. Latency is per record,
from the produce call to the broker's acknowledgement; it is kept in a
fixed-size histogram with microsecond resolution, so the averages and maxima
show fractions of a millisecond, while the percentiles are whole milliseconds
(truncated) as Kafka prints them.

Values are exactly one of: --record-size random upper-case letters (cut from
a 4 MiB random buffer, so records differ), a random line of --payload-file, or
the record number (--payload-monotonic). Records carry no key, so the client
spreads them with a sticky partitioner as Kafka's producer does, unless
partitioner.class says otherwise.

Client settings use Kafka producer property names, given with
--producer-props NAME=VALUE [NAME=VALUE ...] (as in Kafka, or repeat the flag)
and/or --producer.config FILE (props win over the file, --bootstrap-server
wins over both). They are mapped onto the franz-go
client:

  bootstrap.servers        seed brokers (or use --bootstrap-server)
  acks                     all|-1 (default), 1, 0
  enable.idempotence       default true; turned off on its own when acks is
                           not all, and an error if asked for with acks 0/1
  max.in.flight.requests.per.connection
                           default 5 (Kafka's); at most 5 when idempotent
  linger.ms                franz-go default 10
  batch.size               largest batch in bytes (franz-go default ~1 MB)
  buffer.memory            bytes buffered before produce calls block
                           (default 33554432, as Kafka; no limit on records)
  compression.type         none (default), gzip, snappy, lz4, zstd, plus
                           compression.{gzip,lz4,zstd}.level
  partitioner.class        org.apache.kafka.clients.producer.RoundRobinPartitioner
                           (each record to the next partition, as keyed
                           records spread), UniformStickyPartitioner or
                           internals.DefaultPartitioner (sticky); default
                           Kafka's built-in sticky partitioner
  max.request.size, request.timeout.ms, delivery.timeout.ms, retries,
  retry.backoff.ms, client.id (default perf-producer-client),
  metadata.max.age.ms, connections.max.idle.ms,
  socket.connection.setup.timeout.ms

Serializer properties are ignored; unknown properties are reported on stderr
and ignored; transactional.id is refused. security.protocol, ssl.* and sasl.*
are as for weir's other tools (PEM stores; PLAIN or SCRAM). Topics are created
by the broker if it auto-creates them, or up front with --partitions.

The command exits non-zero if any record failed, after printing the summary.`,
		Example: `  # Kafka's classic: 50M 100-byte records, unthrottled, all acks
  weir perf produce --topic test --num-records 50000000 --record-size 100 \
      --throughput -1 --producer-props bootstrap.servers=127.0.0.1:9092

  # 1 KiB records at 100k records/sec, leader acks, lz4, topic made with 3 partitions
  weir perf produce --bootstrap-server 127.0.0.1:9092 --topic t --partitions 3 \
      --num-records 2000000 --record-size 1024 --throughput 100000 \
      --producer-props acks=1 linger.ms=5 compression.type=lz4

  # settings from a file, payloads from a file, client metrics at the end
  weir perf produce --topic t --num-records 100000 --payload-file lines.txt \
      --throughput -1 --producer.config producer.properties --print-metrics`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				// Kafka takes --producer-props a=1 b=2: the later pairs
				// arrive here as positional arguments.
				if !cmd.Flags().Changed("producer-props") {
					return fmt.Errorf("unexpected arguments %q", args)
				}
				f.producerProps = append(f.producerProps, args...)
			}
			return runPerfProduce(cmd, &f)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.topic, "topic", "", "produce records to this topic (required)")
	fl.Int64Var(&f.numRecords, "num-records", 0, "number of records to produce (required)")
	fl.IntVar(&f.recordSize, "record-size", 0, "record value size in bytes; exactly one of --record-size, --payload-file, --payload-monotonic")
	fl.StringVar(&f.payloadFile, "payload-file", "", "file to take record values from, one per --payload-delimiter; a random one is sent each time")
	fl.StringVar(&f.payloadDelimiter, "payload-delimiter", "\n", `delimiter between payloads in --payload-file (\n, \t and \r are understood)`)
	fl.BoolVar(&f.payloadMonotonic, "payload-monotonic", false, "send the record number (0, 1, 2, ...) as the value")
	fl.Float64Var(&f.throughput, "throughput", -1, "limit to about this many records/sec; -1 means unthrottled")
	fl.StringArrayVar(&f.producerProps, "producer-props", nil, "Kafka producer properties NAME=VALUE ...; take precedence over --producer.config")
	fl.StringVar(&f.producerConfig, "producer.config", "", "producer properties file")
	fl.StringVar(&f.bootstrapServer, "bootstrap-server", "", "broker(s) to connect to, host:port[,host:port]; overrides bootstrap.servers")
	fl.BoolVar(&f.printMetrics, "print-metrics", false, "print client metrics at the end")
	fl.Int32Var(&f.partitions, "partitions", 0, "create the topic with this many partitions first (0: do not create; an existing topic must have this many)")
	fl.Int16Var(&f.replication, "replication-factor", -1, "replication factor for --partitions (-1: broker default)")
	return cmd
}

// prodSlot is one reusable record. It embeds a context so that the record's
// Context field can point back at the slot: the promise finds its slot
// without a map or a closure, and nothing is allocated per record.
type prodSlot struct {
	context.Context
	rec     kgo.Record
	start   time.Time
	scratch []byte
}

// slotPool recycles slots between the promise goroutine, which returns them,
// and the producing goroutine, which takes the whole free list at once when
// its local stack runs dry.
type slotPool struct {
	mu   sync.Mutex
	free []*prodSlot
}

func (p *slotPool) put(s *prodSlot) {
	p.mu.Lock()
	p.free = append(p.free, s)
	p.mu.Unlock()
}

func (p *slotPool) refill(local []*prodSlot) []*prodSlot {
	p.mu.Lock()
	local, p.free = p.free, local[:0]
	p.mu.Unlock()
	return local
}

func runPerfProduce(cmd *cobra.Command, f *perfProduceFlags) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case f.topic == "":
		return errors.New("--topic is required")
	case f.numRecords <= 0:
		return errors.New("--num-records must be greater than zero")
	case f.throughput == 0:
		return errors.New("--throughput must be positive, or -1 for unthrottled")
	}
	kinds := 0
	for _, set := range []bool{cmd.Flags().Changed("record-size"), f.payloadFile != "", f.payloadMonotonic} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New("give exactly one of --record-size, --payload-file or --payload-monotonic")
	}
	if cmd.Flags().Changed("record-size") && f.recordSize <= 0 {
		return errors.New("--record-size must be greater than zero")
	}
	if f.producerConfig == "" && len(f.producerProps) == 0 && f.bootstrapServer == "" {
		return errors.New("give --bootstrap-server, --producer-props bootstrap.servers=... or --producer.config")
	}

	props := perf.Props{}
	if f.producerConfig != "" {
		if err := perf.LoadPropsFile(props, f.producerConfig); err != nil {
			return err
		}
	}
	if err := perf.ParsePropsArgs(props, f.producerProps); err != nil {
		return err
	}
	if f.bootstrapServer != "" {
		props["bootstrap.servers"] = f.bootstrapServer
	}
	if _, ok := props["client.id"]; !ok {
		props["client.id"] = "perf-producer-client"
	}
	cc, err := perf.ProducerOptions(props)
	if err != nil {
		return err
	}
	if !cc.Seeds {
		return errors.New("no brokers: set bootstrap.servers or --bootstrap-server")
	}
	for _, w := range cc.Warnings {
		fmt.Fprintln(errOut, "warning:", w)
	}

	var payloads *perf.Payloads
	switch {
	case f.payloadFile != "":
		data, err := os.ReadFile(f.payloadFile)
		if err != nil {
			return err
		}
		delim := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r").Replace(f.payloadDelimiter)
		if payloads, err = perf.NewFilePayloads(data, delim, 1); err != nil {
			return fmt.Errorf("%s: %w", f.payloadFile, err)
		}
		fmt.Fprintf(out, "Reading payloads from: %s\nNumber of messages read: %d\n", f.payloadFile, payloads.Len())
	case f.payloadMonotonic:
		payloads = perf.NewMonotonicPayloads()
	default:
		payloads = perf.NewRandomPayloads(f.recordSize, 1)
	}

	opts := append(cc.Opts, kgo.AllowAutoTopicCreation(), kgo.WithHooks(tool.NewUnreachableHook(errOut, tool.ProducerPrefix(props["client.id"]))))
	var metrics *perf.Metrics
	if f.printMetrics {
		metrics = perf.NewMetrics()
		opts = append(opts, kgo.WithHooks(metrics))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx, stop := perfContext(cmd)
	defer stop()
	if f.partitions > 0 {
		if err := ensureTopic(ctx, cl, f.topic, f.partitions, f.replication, errOut); err != nil {
			return err
		}
	}

	var (
		pool     slotPool
		local    []*prodSlot
		failed   atomic.Int64
		errMu    sync.Mutex
		firstErr error
	)
	clock := perf.NewCoarseClock()
	defer clock.Stop()
	start := time.Now()
	stats := perf.NewProducerStats(start, perf.DefaultReportInterval, func(w perf.ProducerWindow) {
		fmt.Fprintln(out, w.Line())
	})
	promise := func(r *kgo.Record, err error) {
		s := r.Context.(*prodSlot)
		now := clock.Now()
		if err != nil {
			if failed.Add(1) == 1 {
				errMu.Lock()
				firstErr = err
				errMu.Unlock()
			}
		} else {
			stats.Record(now.Sub(s.start), len(r.Value), now)
		}
		pool.put(s)
	}
	throttle := perf.NewThrottler(f.throughput, start)

	sent := int64(0)
	for ; sent < f.numRecords && ctx.Err() == nil; sent++ {
		if len(local) == 0 {
			local = pool.refill(local)
		}
		var s *prodSlot
		if n := len(local); n > 0 {
			s, local = local[n-1], local[:n-1]
		} else {
			s = &prodSlot{Context: context.Background()}
		}
		value := payloads.Next(sent, s.scratch)
		if f.payloadMonotonic {
			s.scratch = value
		}
		now := clock.Now()
		s.start = now
		s.rec = kgo.Record{Topic: f.topic, Value: value, Timestamp: now, Context: s}
		cl.Produce(ctx, &s.rec, promise)
		if throttle.Enabled() {
			if d := throttle.Delay(sent+1, time.Now()); d > 0 {
				time.Sleep(d)
			}
		}
	}
	// Wait for every acknowledgement; a signal stops waiting too.
	if err := cl.Flush(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	end := time.Now()
	fmt.Fprintln(out, stats.Total(end).Line())
	if metrics != nil {
		metrics.Print(out, "producer-metrics", props["client.id"])
	}
	if n := failed.Load(); n > 0 {
		errMu.Lock()
		defer errMu.Unlock()
		return fmt.Errorf("%d of %d records failed; first error: %w", n, sent, firstErr)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d of %d records", sent, f.numRecords)
	}
	return nil
}
