package consoletool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/cli/tool"
)

type consoleConsumerFlags struct {
	topic, include, offset, group, isolation, bootstrapServer string
	partition, maxMessages                                    int32
	timeoutMs                                                 int64
	fromBeginning, skipOnError                                bool
	formatter, formatterConfig, consumerConfig                string
	formatterProps, props, consumerProps                      []string
	keyDeserializer, valueDeserializer                        string
}

// defaultFormatterClass is the one formatter weir has, Kafka's default.
const defaultFormatterClass = "org.apache.kafka.tools.consumer.DefaultMessageFormatter"

func NewConsumerCommand() *cobra.Command {
	f := &consoleConsumerFlags{}
	cmd := &cobra.Command{
		Use:   "console-consumer --bootstrap-server HOST:PORT (--topic T | --include REGEX) [--from-beginning] ...",
		Short: "Print a topic's records on stdout, like kafka-console-consumer.sh",
		Long: `console-consumer prints records as Apache Kafka's kafka-console-consumer.sh does,
with its flags and exit codes, against weir or Kafka alike.

It consumes as a member of a group: --group's, or a new console-consumer-N
group that commits nothing. It starts at the group's committed offsets, else
at the end (or the beginning with --from-beginning). --partition P reads one
partition without a group, from --offset (earliest, latest or a number; latest
by default). It stops after --max-messages records, after --timeout-ms
without a record, or on Ctrl-C, and prints "Processed a total of N messages"
on stderr. --isolation-level read_committed skips aborted and open
transactions' records.

Formatter properties (--formatter-property or --property k=v,
--formatter-config FILE), as Kafka's DefaultMessageFormatter:
  print.timestamp=false   CreateTime:1700000000000 (or LogAppendTime:...)
  print.partition=false   Partition:0
  print.offset=false      Offset:42
  print.delivery=false    Delivery:NONE
  print.headers=false     k1:v1,k2:v2 (NO_HEADERS when none)
  print.key=false
  print.value=true
  key.separator=\t        between the fields
  line.separator=\n
  headers.separator=,
  null.literal=null       printed for a null key, value or header value

Consumer properties (--consumer-property k=v, --consumer.config FILE):
group.id, auto.offset.reset, enable.auto.commit, auto.commit.interval.ms,
isolation.level, session.timeout.ms, heartbeat.interval.ms,
group.instance.id, group.protocol=classic, max.poll.records, fetch.min.bytes,
fetch.max.bytes, fetch.max.wait.ms, max.partition.fetch.bytes, client.rack,
client.id and the connection properties every tool takes; any other is
refused. Records are printed as raw bytes: no deserializer other than
Kafka's ByteArrayDeserializer and StringDeserializer (the same bytes for
UTF-8 text) is supported.`,
		Example: `  # a topic from its beginning, with keys and partitions
  weir console-consumer --bootstrap-server localhost:9092 --topic orders --from-beginning \
    --formatter-property print.key=true --formatter-property print.partition=true

  # ten records of partition 3 from offset 1000, then exit
  weir console-consumer --bootstrap-server localhost:9092 --topic orders --partition 3 --offset 1000 --max-messages 10

  # as a member of a group, committing what it printed
  weir console-consumer --bootstrap-server localhost:9092 --topic orders --group audit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runConsoleConsumer(cmd, f) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.topic, "topic", "", "the topic to consume from")
	fl.StringVar(&f.include, "include", "", "a regular expression of the topics to consume from")
	fl.Int32Var(&f.partition, "partition", 0, "the partition to consume from (from the end unless --offset)")
	fl.StringVar(&f.offset, "offset", "latest", "with --partition: earliest, latest or an offset")
	fl.StringArrayVar(&f.consumerProps, "consumer-property", nil, "a consumer property k=v (repeatable)")
	fl.StringArrayVar(&f.consumerProps, "command-property", nil, "the newer name of --consumer-property")
	fl.StringVar(&f.consumerConfig, "consumer.config", "", "a consumer properties file (--consumer-property wins)")
	fl.StringVar(&f.consumerConfig, "command-config", "", "the newer name of --consumer.config")
	fl.StringVar(&f.formatter, "formatter", defaultFormatterClass, "the formatter (Kafka's DefaultMessageFormatter only)")
	fl.StringArrayVar(&f.props, "property", nil, "a formatter property k=v (repeatable)")
	fl.StringArrayVar(&f.formatterProps, "formatter-property", nil, "a formatter property k=v (repeatable; the newer name of --property)")
	fl.StringVar(&f.formatterConfig, "formatter-config", "", "a formatter properties file (--formatter-property wins)")
	fl.BoolVar(&f.fromBeginning, "from-beginning", false, "without a committed offset, start at the beginning rather than the end")
	fl.Int32Var(&f.maxMessages, "max-messages", -1, "exit after this many records")
	fl.Int64Var(&f.timeoutMs, "timeout-ms", -1, "exit after this long without a record")
	fl.BoolVar(&f.skipOnError, "skip-message-on-error", false, "skip a record that cannot be printed rather than stop")
	fl.StringVar(&f.bootstrapServer, "bootstrap-server", "", "REQUIRED: the server(s) to connect to")
	fl.StringVar(&f.keyDeserializer, "key-deserializer", "", "the key deserializer class (ByteArray or String only)")
	fl.StringVar(&f.valueDeserializer, "value-deserializer", "", "the value deserializer class (ByteArray or String only)")
	fl.StringVar(&f.isolation, "isolation-level", "read_uncommitted", "read_committed or read_uncommitted")
	fl.StringVar(&f.group, "group", "", "the consumer group id")
	return cmd
}

// messageFormatter is Kafka's DefaultMessageFormatter.
type messageFormatter struct {
	timestamp, key, value, partition, offset, delivery, headers bool
	keySep, lineSep, headersSep, nullLiteral                    string
}

// rawDeserializers are the deserializers whose output is the record's
// bytes as they are.
var rawDeserializers = map[string]bool{
	"org.apache.kafka.common.serialization.ByteArrayDeserializer": true,
	"org.apache.kafka.common.serialization.StringDeserializer":    true,
}

func newMessageFormatter(props map[string]string) (*messageFormatter, error) {
	m := &messageFormatter{value: true, keySep: "\t", lineSep: "\n", headersSep: ",", nullLiteral: "null"}
	for k, p := range map[string]*bool{"print.timestamp": &m.timestamp, "print.key": &m.key, "print.value": &m.value,
		"print.partition": &m.partition, "print.offset": &m.offset, "print.delivery": &m.delivery, "print.headers": &m.headers} {
		if v, ok := props[k]; ok {
			*p = strings.EqualFold(strings.TrimSpace(v), "true")
		}
	}
	for k, p := range map[string]*string{"key.separator": &m.keySep, "line.separator": &m.lineSep,
		"headers.separator": &m.headersSep, "null.literal": &m.nullLiteral} {
		if v, ok := props[k]; ok {
			*p = v
		}
	}
	for _, k := range []string{"key.deserializer", "value.deserializer", "headers.deserializer"} {
		if v, ok := props[k]; ok && !rawDeserializers[v] {
			return nil, fmt.Errorf("%s %s is not supported: weir's console-consumer prints raw bytes (ByteArrayDeserializer or StringDeserializer) only", k, v)
		}
	}
	return m, nil
}

// write prints one record.
func (m *messageFormatter) write(w *bufio.Writer, r *kgo.Record) {
	bytesOr := func(b []byte) []byte {
		if b == nil {
			return []byte(m.nullLiteral)
		}
		return b
	}
	sep := func(more bool) {
		if more {
			w.WriteString(m.keySep)
		} else {
			w.WriteString(m.lineSep)
		}
	}
	if m.timestamp {
		typ := "CreateTime"
		if r.Attrs.TimestampType() == 1 {
			typ = "LogAppendTime"
		}
		fmt.Fprintf(w, "%s:%d", typ, r.Timestamp.UnixMilli())
		sep(m.partition || m.offset || m.delivery || m.headers || m.key || m.value)
	}
	if m.partition {
		fmt.Fprintf(w, "Partition:%d", r.Partition)
		sep(m.offset || m.delivery || m.headers || m.key || m.value)
	}
	if m.offset {
		fmt.Fprintf(w, "Offset:%d", r.Offset)
		sep(m.delivery || m.headers || m.key || m.value)
	}
	if m.delivery {
		w.WriteString("Delivery:NONE")
		sep(m.headers || m.key || m.value)
	}
	if m.headers {
		if len(r.Headers) == 0 {
			w.WriteString("NO_HEADERS")
		}
		for i, h := range r.Headers {
			w.WriteString(h.Key + ":")
			w.Write(bytesOr(h.Value))
			if i < len(r.Headers)-1 {
				w.WriteString(m.headersSep)
			}
		}
		sep(m.key || m.value)
	}
	if m.key {
		w.Write(bytesOr(r.Key))
		sep(m.value)
	}
	if m.value {
		w.Write(bytesOr(r.Value))
		w.WriteString(m.lineSep)
	}
}

// consumerSettings are what the consumer properties decide beyond client
// options.
type consumerSettings struct {
	group, reset, isolation string
	autoCommit              bool
	maxPoll                 int
}

func consumerProperties(s *consumerSettings) map[string]tool.ClientProperty {
	millis := func(apply func(time.Duration) kgo.Opt) tool.ClientProperty {
		return tool.MillisProperty(func(d time.Duration, _ *tool.Client) []kgo.Opt { return []kgo.Opt{apply(d)} })
	}
	bytesProp := func(apply func(int32) kgo.Opt) tool.ClientProperty {
		return func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("not a non-negative number of bytes: %q", v)
			}
			return []kgo.Opt{apply(int32(n))}, nil
		}
	}
	set := func(p *string) tool.ClientProperty {
		return func(v string, _ *tool.Client) ([]kgo.Opt, error) { *p = strings.TrimSpace(v); return nil, nil }
	}
	return map[string]tool.ClientProperty{
		"group.id":          set(&s.group),
		"auto.offset.reset": set(&s.reset),
		"isolation.level":   set(&s.isolation),
		"enable.auto.commit": func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			s.autoCommit = strings.EqualFold(strings.TrimSpace(v), "true")
			return nil, nil
		},
		"auto.commit.interval.ms":   millis(func(d time.Duration) kgo.Opt { return kgo.AutoCommitInterval(d) }),
		"session.timeout.ms":        millis(func(d time.Duration) kgo.Opt { return kgo.SessionTimeout(d) }),
		"heartbeat.interval.ms":     millis(func(d time.Duration) kgo.Opt { return kgo.HeartbeatInterval(d) }),
		"fetch.max.wait.ms":         millis(func(d time.Duration) kgo.Opt { return kgo.FetchMaxWait(d) }),
		"fetch.min.bytes":           bytesProp(func(n int32) kgo.Opt { return kgo.FetchMinBytes(n) }),
		"fetch.max.bytes":           bytesProp(func(n int32) kgo.Opt { return kgo.FetchMaxBytes(n) }),
		"max.partition.fetch.bytes": bytesProp(func(n int32) kgo.Opt { return kgo.FetchMaxPartitionBytes(n) }),
		"group.instance.id": func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			return []kgo.Opt{kgo.InstanceID(v)}, nil
		},
		"client.rack": func(v string, _ *tool.Client) ([]kgo.Opt, error) { return []kgo.Opt{kgo.Rack(v)}, nil },
		"max.poll.records": func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("not a positive number: %q", v)
			}
			s.maxPoll = n
			return nil, nil
		},
		"group.protocol": func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			if !strings.EqualFold(strings.TrimSpace(v), "classic") {
				return nil, fmt.Errorf("%s is not supported yet: weir's console-consumer joins groups with the classic protocol only", v)
			}
			return nil, nil
		},
		"key.deserializer":   deserializerProperty,
		"value.deserializer": deserializerProperty,
	}
}

func deserializerProperty(v string, _ *tool.Client) ([]kgo.Opt, error) {
	if !rawDeserializers[strings.TrimSpace(v)] {
		return nil, fmt.Errorf("%s is not supported: weir's console-consumer prints raw bytes (ByteArrayDeserializer or StringDeserializer) only", v)
	}
	return nil, nil
}

func runConsoleConsumer(cmd *cobra.Command, f *consoleConsumerFlags) error {
	stderr := cmd.ErrOrStderr()
	fail := tool.FailTo(cmd.ErrOrStderr())
	has := cmd.Flags().Changed
	if cmd.Flags().NFlag() == 0 {
		return tool.UsageError(cmd, "This tool helps to read data from Kafka topics and outputs it to standard output.")
	}
	switch {
	case has("topic") == has("include"):
		return tool.UsageError(cmd, "Exactly one of the following arguments is required: [topic], [include]")
	case has("partition") && !has("topic"):
		return tool.UsageError(cmd, "The topic is required when partition is specified.")
	case has("partition") && f.fromBeginning && has("offset"):
		return tool.UsageError(cmd, "Options from-beginning and offset cannot be specified together.")
	case !has("partition") && has("offset"):
		return tool.UsageError(cmd, "The partition is required when offset is specified.")
	case !has("bootstrap-server"):
		return tool.UsageError(cmd, `Missing required argument "[bootstrap-server]"`)
	case has("consumer-property") && has("command-property"):
		return tool.UsageError(cmd, "Options --consumer-property and --command-property cannot be specified together.")
	case has("consumer.config") && has("command-config"):
		return tool.UsageError(cmd, "Options --consumer.config and --command-config cannot be specified together.")
	}
	props := map[string]string{}
	if f.consumerConfig != "" {
		p, err := tool.LoadProperties(f.consumerConfig)
		if err != nil {
			return fail(err.Error())
		}
		props = p
	}
	fileGroup, inFile := props["group.id"]
	extra := map[string]string{}
	keyValueArgs(f.consumerProps, extra)
	var groups []string
	for _, g := range []struct {
		v  string
		ok bool
	}{{f.group, has("group")}, {fileGroup, inFile}, {extra["group.id"], hasKey(extra, "group.id")}} {
		if g.ok && !slices.Contains(groups, g.v) {
			groups = append(groups, g.v)
		}
	}
	if len(groups) > 1 {
		quoted := make([]string, len(groups))
		for i, g := range groups {
			quoted[i] = "'" + g + "'"
		}
		return tool.UsageError(cmd, "The group ids provided in different places (directly using '--group', via '--consumer-property', or via '--consumer.config') do not match. Detected group ids: "+strings.Join(quoted, ", "))
	}
	if len(groups) > 0 && has("partition") {
		return tool.UsageError(cmd, "Options group and partition cannot be specified together.")
	}
	for k, v := range extra {
		props[k] = v
	}
	if reset, ok := props["auto.offset.reset"]; ok {
		if f.fromBeginning && reset != "earliest" {
			return fail(fmt.Sprintf("Can't simultaneously specify --from-beginning and 'auto.offset.reset=%s', please remove one option", reset))
		}
	} else if f.fromBeginning {
		props["auto.offset.reset"] = "earliest"
	} else {
		props["auto.offset.reset"] = "latest"
	}
	delete(props, "bootstrap.servers")
	if _, ok := props["client.id"]; !ok {
		props["client.id"] = "console-consumer"
	}
	if has("isolation-level") || !hasKey(props, "isolation.level") {
		props["isolation.level"] = f.isolation
	}
	if len(groups) == 0 {
		props["group.id"] = fmt.Sprintf("console-consumer-%d", rand.IntN(100000))
		if !hasKey(props, "enable.auto.commit") {
			props["enable.auto.commit"] = "false"
		}
	} else {
		props["group.id"] = groups[0]
	}
	var offset kgo.Offset
	if has("partition") {
		switch strings.ToLower(f.offset) {
		case "earliest":
			offset = kgo.NewOffset().AtStart()
		case "latest":
			offset = kgo.NewOffset().AtEnd()
		default:
			n, err := strconv.ParseInt(f.offset, 10, 64)
			if err != nil || n < 0 {
				return tool.UsageError(cmd, "The provided offset value '"+f.offset+"' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long.")
			}
			offset = kgo.NewOffset().At(n)
		}
		if f.fromBeginning {
			offset = kgo.NewOffset().AtStart()
		}
	}
	timeout := time.Duration(1<<63 - 1)
	if f.timeoutMs >= 0 {
		timeout = time.Duration(f.timeoutMs) * time.Millisecond
	}

	// The formatter.
	if f.formatter != defaultFormatterClass && f.formatter != "kafka.tools.DefaultMessageFormatter" {
		return tool.UsageError(cmd, fmt.Sprintf("--formatter %s is not supported: weir's console-consumer has Kafka's %s only", f.formatter, defaultFormatterClass))
	}
	if has("property") && has("formatter-property") {
		return tool.UsageError(cmd, "Options --property and --formatter-property cannot be specified together.")
	}
	fprops := map[string]string{}
	if f.formatterConfig != "" {
		p, err := tool.LoadProperties(f.formatterConfig)
		if err != nil {
			return tool.UsageError(cmd, err.Error())
		}
		fprops = p
	}
	if f.keyDeserializer != "" {
		fprops["key.deserializer"] = f.keyDeserializer
	}
	if f.valueDeserializer != "" {
		fprops["value.deserializer"] = f.valueDeserializer
	}
	keyValueArgs(append(f.props, f.formatterProps...), fprops)
	formatter, err := newMessageFormatter(fprops)
	if err != nil {
		return tool.UsageError(cmd, err.Error())
	}

	s := &consumerSettings{maxPoll: 500, autoCommit: true}
	opts, err := tool.PropertyOpts(props, consumerProperties(s), &tool.Client{})
	if err != nil {
		return fail(err.Error())
	}
	switch s.isolation {
	case "read_committed":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	case "read_uncommitted":
	default:
		return fail(fmt.Sprintf("org.apache.kafka.common.config.ConfigException: Invalid value %s for configuration isolation.level: String must be one of: read_committed, read_uncommitted", s.isolation))
	}
	switch s.reset {
	case "earliest":
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	case "latest":
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	case "none":
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	default:
		return fail(fmt.Sprintf("org.apache.kafka.common.config.ConfigException: Invalid value %s for configuration auto.offset.reset: Invalid value `%s` for configuration auto.offset.reset. The value must be either 'earliest', 'latest', 'none' or of the format 'by_duration:<PnDTnHnMn.nS.>'.", s.reset, s.reset))
	}
	switch {
	case has("partition"):
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{f.topic: {f.partition: offset}}))
	default:
		opts = append(opts, kgo.ConsumerGroup(s.group))
		if !s.autoCommit {
			opts = append(opts, kgo.DisableAutoCommit())
		} else {
			opts = append(opts, kgo.AutoCommitMarks())
		}
		if has("include") {
			if _, err := regexp.Compile(f.include); err != nil {
				return fail(err.Error())
			}
			opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(f.include))
		} else {
			opts = append(opts, kgo.ConsumeTopics(f.topic))
		}
	}
	group := s.group
	if has("partition") {
		group = ""
	}
	opts = append(append(opts, kgo.SeedBrokers(tool.SeedList(f.bootstrapServer)...),
		kgo.WithHooks(tool.NewUnreachableHook(stderr, tool.ConsumerPrefix(props["client.id"], group)))), tool.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fail(err.Error())
	}
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt)
	defer stop()

	out := bufio.NewWriter(cmd.OutOrStdout())
	count, interrupted := 0, false
	var failure error
	var buffered []*kgo.Record
	for f.maxMessages < 0 || count < int(f.maxMessages) {
		if len(buffered) == 0 {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			fetches := cl.PollRecords(pctx, s.maxPoll)
			cancel()
			if ctx.Err() != nil {
				interrupted = true
				break
			}
			var ferr error
			fetches.EachError(func(_ string, _ int32, err error) {
				if ferr == nil && !errors.Is(err, context.DeadlineExceeded) {
					ferr = err
				}
			})
			buffered = fetches.Records()
			if ferr != nil {
				failure = ferr
				break
			}
			if len(buffered) == 0 {
				if pctx.Err() != nil {
					failure = &tool.JavaError{Class: "TimeoutException"}
					break
				}
				continue
			}
		}
		r := buffered[0]
		buffered = buffered[1:]
		count++
		formatter.write(out, r)
		if s.autoCommit && !has("partition") {
			cl.MarkCommitRecords(r)
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintln(stderr, "Unable to write to standard out, closing consumer.")
			break
		}
	}
	out.Flush()
	if failure != nil {
		var je *tool.JavaError
		msg := tool.DescribeErr(tool.KafkaError(failure, nil))
		if errors.As(failure, &je) && je.Msg == "" {
			msg = "org.apache.kafka.common.errors." + je.Class
		}
		fmt.Fprintf(stderr, "ERROR Error processing message, terminating consumer process:  (org.apache.kafka.tools.consumer.ConsoleConsumer)\n%s\n", msg)
	}
	cl.Close() // commits the marked records when auto-committing
	fmt.Fprintf(stderr, "Processed a total of %d messages\n", count)
	if interrupted {
		return tool.ExitCode(130)
	}
	return nil
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }
