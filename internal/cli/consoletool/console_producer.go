// Package consoletool is weir console-producer and console-consumer, like
// kafka-console-producer.sh and kafka-console-consumer.sh (Kafka's
// LineMessageReader and DefaultMessageFormatter).
package consoletool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
)

type consoleProducerFlags struct {
	topic, bootstrapServer, brokerList         string
	sync                                       bool
	compression                                string
	batchSize, retries, requestTimeout         int32
	retryBackoff, linger, metadataExpiry       int64
	maxBlock, maxMemory                        int64
	maxPartitionMemory, socketBuffer           int32
	acks, lineReader, readerConfig, prodConfig string
	props, readerProps, producerProps          []string
}

// lineReaderClass is the one record reader weir has, Kafka's default.
const lineReaderClass = "org.apache.kafka.tools.LineMessageReader"

func NewProducerCommand() *cobra.Command {
	f := &consoleProducerFlags{}
	cmd := &cobra.Command{
		Use:   "console-producer --bootstrap-server HOST:PORT --topic T [--property parse.key=true] ...",
		Short: "Produce the lines of stdin as records, like kafka-console-producer.sh",
		Long: `console-producer reads stdin line by line and produces each line as a record,
with the flags and behaviour of Apache Kafka's kafka-console-producer.sh.

Reader properties (--property or --reader-property k=v, --reader-config FILE):
  parse.key=false             a line is KEY<key.separator>VALUE
  key.separator=\t
  parse.headers=false         a line starts with H1:V1,H2:V2<headers.delimiter>
  headers.delimiter=\t
  headers.separator=,         (a regular expression, as in Kafka)
  headers.key.separator=:
  ignore.error=false          a line without a separator is produced as it can be
  null.marker=                a key, value or header value equal to it is null

A line the reader cannot parse stops the producer with Kafka's
"org.apache.kafka.common.KafkaException: No key separator found on line
number N: '...'" and exit code 1. Records are sent asynchronously (a failed
send is logged as Kafka's ErrorLoggingCallback does and the tool goes on, exit
code 0) unless --sync, where a failed send stops the producer with exit code 1.

Producer properties (--producer-property k=v, --producer.config FILE) honoured:
acks, linger.ms, buffer.memory, compression.type, retries, retry.backoff.ms,
request.timeout.ms (the brokers' ack timeout), max.block.ms (how long a send
waits for the topic's metadata; a full buffer blocks until it drains),
enable.idempotence, metadata.max.age.ms, send.buffer.bytes, max.request.size
(the largest batch), client.id, and the connection properties every tool
takes. batch.size is accepted, as Kafka's tool always sets it, but does not
cut batches: weir's producer sends a batch when linger.ms ends or it reaches
max.request.size. Any other property is refused. The flags set the
properties as in Kafka: --request-required-acks (acks, -1), --timeout
(linger.ms, 1000), --batch-size and --max-partition-memory-bytes
(batch.size, 16384), --max-memory-bytes (buffer.memory), --request-timeout-ms
(1500), --message-send-max-retries (retries, 3), --retry-backoff-ms (100),
--metadata-expiry-ms, --max-block-ms (60000), --socket-buffer-size
(send.buffer.bytes) and --compression-codec (none; gzip without a value).`,
		Example: `  # one record per line
  weir console-producer --bootstrap-server localhost:9092 --topic orders

  # key<TAB>value lines, waiting for every send
  weir console-producer --bootstrap-server localhost:9092 --topic orders --property parse.key=true --sync

  # headers, key and value: "trace:abc,src:web|k1|v1"
  weir console-producer --bootstrap-server localhost:9092 --topic orders \
    --property parse.headers=true --property headers.delimiter='|' \
    --property parse.key=true --property key.separator='|'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// --compression-codec takes an optional value, given as the
			// next argument as Kafka's option parser takes it.
			if len(args) == 1 && cmd.Flags().Changed("compression-codec") && f.compression == "gzip" {
				inv := tool.Args(cmd)
				for i := 0; i+1 < len(inv); i++ {
					if inv[i] == "--compression-codec" && inv[i+1] == args[0] {
						f.compression, args = args[0], nil
						break
					}
				}
			}
			if len(args) > 0 {
				return tool.UsageError(cmd, fmt.Sprintf("Found non-option arguments: %v", args))
			}
			return runConsoleProducer(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.topic, "topic", "", "REQUIRED: the topic to produce to")
	fl.StringVar(&f.bootstrapServer, "bootstrap-server", "", "REQUIRED unless --broker-list: the server(s) to connect to, host:port[,host:port]")
	fl.StringVar(&f.brokerList, "broker-list", "", "DEPRECATED, use --bootstrap-server; ignored if --bootstrap-server is given")
	fl.BoolVar(&f.sync, "sync", false, "send records one at a time, waiting for each")
	fl.StringVar(&f.compression, "compression-codec", "", "none, gzip, snappy, lz4 or zstd (gzip if given without a value)")
	fl.Lookup("compression-codec").NoOptDefVal = "gzip"
	fl.Int32Var(&f.batchSize, "batch-size", 16384, "batch.size")
	fl.Int32Var(&f.retries, "message-send-max-retries", 3, "retries")
	fl.Int64Var(&f.retryBackoff, "retry-backoff-ms", 100, "retry.backoff.ms")
	fl.Int64Var(&f.linger, "timeout", 1000, "linger.ms: how long a record waits for its batch to fill")
	fl.StringVar(&f.acks, "request-required-acks", "-1", "acks")
	fl.Int32Var(&f.requestTimeout, "request-timeout-ms", 1500, "request.timeout.ms: the brokers' ack timeout")
	fl.Int64Var(&f.metadataExpiry, "metadata-expiry-ms", 300000, "metadata.max.age.ms")
	fl.Int64Var(&f.maxBlock, "max-block-ms", 60000, "max.block.ms: how long a send waits for the topic's metadata")
	fl.Int64Var(&f.maxMemory, "max-memory-bytes", 32<<20, "buffer.memory")
	fl.Int32Var(&f.maxPartitionMemory, "max-partition-memory-bytes", 16384, "batch.size")
	fl.StringVar(&f.lineReader, "line-reader", lineReaderClass, "the record reader (Kafka's LineMessageReader only)")
	fl.Int32Var(&f.socketBuffer, "socket-buffer-size", 102400, "send.buffer.bytes")
	fl.StringArrayVar(&f.props, "property", nil, "a reader property k=v (repeatable)")
	fl.StringArrayVar(&f.readerProps, "reader-property", nil, "a reader property k=v (repeatable; the newer name of --property)")
	fl.StringVar(&f.readerConfig, "reader-config", "", "a reader properties file (--property wins)")
	fl.StringArrayVar(&f.producerProps, "producer-property", nil, "a producer property k=v (repeatable)")
	fl.StringVar(&f.prodConfig, "producer.config", "", "a producer properties file (--producer-property wins)")
	fl.StringVar(&f.prodConfig, "command-config", "", "the newer name of --producer.config")
	return cmd
}

// keyValueArgs parses k=v arguments as Kafka's CommandLineUtils does: at
// the first '=', a missing value being empty.
func keyValueArgs(args []string, into map[string]string) {
	for _, a := range args {
		if a == "" {
			continue
		}
		k, v, _ := strings.Cut(a, "=")
		into[k] = v
	}
}

// lineReader is Kafka's LineMessageReader.
type lineReader struct {
	topic                               string
	parseKey, parseHeaders, ignoreError bool
	keySep, headersDelim, headersKeySep string
	headersSep                          *regexp.Regexp
	nullMarker                          string
	hasNullMarker                       bool
	line                                int
}

// kafkaException is a failure Kafka's tools raise as KafkaException.
type kafkaException string

func (e kafkaException) Error() string { return "org.apache.kafka.common.KafkaException: " + string(e) }

func newLineReader(props map[string]string) (*lineReader, error) {
	r := &lineReader{topic: props["topic"], keySep: "\t", headersDelim: "\t", headersKeySep: ":"}
	isTrue := func(k string) bool { return strings.EqualFold(strings.TrimSpace(props[k]), "true") }
	r.parseKey, r.parseHeaders, r.ignoreError = isTrue("parse.key"), isTrue("parse.headers"), isTrue("ignore.error")
	if v, ok := props["key.separator"]; ok {
		r.keySep = v
	}
	if v, ok := props["headers.delimiter"]; ok {
		r.headersDelim = v
	}
	headersSep := ","
	if v, ok := props["headers.separator"]; ok {
		headersSep = v
	}
	re, err := regexp.Compile(headersSep)
	if err != nil {
		return nil, fmt.Errorf("java.util.regex.PatternSyntaxException: %v", err)
	}
	r.headersSep = re
	if v, ok := props["headers.key.separator"]; ok {
		r.headersKeySep = v
	}
	r.nullMarker, r.hasNullMarker = props["null.marker"]
	for _, c := range []struct {
		a, b         string
		nameA, nameB string
		check        bool
	}{
		{r.headersDelim, headersSep, "headers.delimiter", "headers.separator", true},
		{r.headersDelim, r.headersKeySep, "headers.delimiter", "headers.key.separator", true},
		{headersSep, r.headersKeySep, "headers.separator", "headers.key.separator", true},
		{r.keySep, r.nullMarker, "null.marker", "key.separator", r.hasNullMarker},
		{headersSep, r.nullMarker, "null.marker", "headers.separator", r.hasNullMarker},
		{r.headersDelim, r.nullMarker, "null.marker", "headers.delimiter", r.hasNullMarker},
		{r.headersKeySep, r.nullMarker, "null.marker", "headers.key.separator", r.hasNullMarker},
	} {
		if c.check && c.a == c.b {
			return nil, kafkaException(c.nameA + " and " + c.nameB + " may not be equal")
		}
	}
	return r, nil
}

// isNull reports whether a field is the null marker.
func (r *lineReader) isNull(s string) bool { return r.hasNullMarker && s == r.nullMarker }

// cut returns the text of line from start up to sep, or ok false.
func (r *lineReader) cut(enabled bool, line string, start int, sep, name string) (string, bool, error) {
	if !enabled {
		return "", false, nil
	}
	i := strings.Index(line[start:], sep)
	if i < 0 {
		if r.ignoreError {
			return "", false, nil
		}
		return "", false, kafkaException(fmt.Sprintf("No %s found on line number %d: '%s'", name, r.line, line))
	}
	return line[start : start+i], true, nil
}

// record parses one line (without its line ending).
func (r *lineReader) record(line string) (*kgo.Record, error) {
	r.line++
	rec := &kgo.Record{Topic: r.topic}
	headers, hasHeaders, err := r.cut(r.parseHeaders, line, 0, r.headersDelim, "headers delimiter")
	if err != nil {
		return nil, err
	}
	off := 0
	if hasHeaders {
		off = len(headers) + len(r.headersDelim)
	}
	key, hasKey, err := r.cut(r.parseKey, line, off, r.keySep, "key separator")
	if err != nil {
		return nil, err
	}
	if hasKey {
		off += len(key) + len(r.keySep)
		if !r.isNull(key) {
			rec.Key = []byte(key)
		}
	}
	if value := line[off:]; !r.isNull(value) {
		rec.Value = []byte(value)
	}
	if hasHeaders && !r.isNull(headers) {
		for _, pair := range tool.JavaSplit(headers, r.headersSep) {
			i := strings.Index(pair, r.headersKeySep)
			if i < 0 {
				if r.ignoreError {
					rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: pair})
					continue
				}
				return nil, kafkaException(fmt.Sprintf("No header key separator found in pair '%s' on line number %d", pair, r.line))
			}
			hk, hv := pair[:i], pair[i+len(r.headersKeySep):]
			if r.isNull(hk) {
				return nil, kafkaException(fmt.Sprintf("Header keys should not be equal to the null marker '%s' as they can't be null", r.nullMarker))
			}
			h := kgo.RecordHeader{Key: hk}
			if !r.isNull(hv) {
				h.Value = []byte(hv)
			}
			rec.Headers = append(rec.Headers, h)
		}
	}
	return rec, nil
}

// producerSettings are the producer properties weir's tools honour,
// beyond the connection's.
type producerSettings struct {
	acks          kgo.Acks
	idempotence   *bool
	acksAll       bool
	maxBlock      time.Duration
	compressionOK bool
}

func producerProperties(s *producerSettings) map[string]tool.ClientProperty {
	millis := func(apply func(time.Duration) kgo.Opt) tool.ClientProperty {
		return tool.MillisProperty(func(d time.Duration, _ *tool.Client) []kgo.Opt { return []kgo.Opt{apply(d)} })
	}
	num := func(apply func(int64) (kgo.Opt, error)) tool.ClientProperty {
		return func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("not a non-negative number: %q", v)
			}
			o, err := apply(n)
			if o == nil || err != nil {
				return nil, err
			}
			return []kgo.Opt{o}, nil
		}
	}
	return map[string]tool.ClientProperty{
		"acks": func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			switch strings.TrimSpace(v) {
			case "all", "-1":
				s.acks, s.acksAll = kgo.AllISRAcks(), true
			case "1":
				s.acks, s.acksAll = kgo.LeaderAck(), false
			case "0":
				s.acks, s.acksAll = kgo.NoAck(), false
			default:
				return nil, fmt.Errorf(`Invalid value %s for configuration acks: String must be one of: all, -1, 0, 1`, v)
			}
			return nil, nil
		},
		"enable.idempotence": func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			b := strings.EqualFold(strings.TrimSpace(v), "true")
			s.idempotence = &b
			return nil, nil
		},
		"linger.ms": millis(func(d time.Duration) kgo.Opt { return kgo.ProducerLinger(d) }),
		"request.timeout.ms": millis(func(d time.Duration) kgo.Opt {
			return kgo.ProduceRequestTimeout(d)
		}),
		"max.block.ms": tool.MillisProperty(func(d time.Duration, _ *tool.Client) []kgo.Opt { s.maxBlock = d; return nil }),
		// batch.size does not cut batches: see the help.
		"batch.size":       num(func(int64) (kgo.Opt, error) { return nil, nil }),
		"max.request.size": num(func(n int64) (kgo.Opt, error) { return kgo.ProducerBatchMaxBytes(int32(n)), nil }),
		"buffer.memory": func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("not a positive number of bytes: %q", v)
			}
			return []kgo.Opt{kgo.MaxBufferedBytes(int(n))}, nil
		},
		"retries": num(func(n int64) (kgo.Opt, error) { return kgo.RecordRetries(int(n)), nil }),
		"send.buffer.bytes": num(func(n int64) (kgo.Opt, error) {
			d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
				var serr error
				err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, int(n)) })
				return errors.Join(err, serr)
			}}
			return kgo.Dialer(d.DialContext), nil
		}),
		"compression.type": func(v string, _ *tool.Client) ([]kgo.Opt, error) {
			codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
				"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
			c, ok := codecs[strings.ToLower(strings.TrimSpace(v))]
			if !ok {
				return nil, fmt.Errorf("Invalid value %s for configuration compression.type: String must be one of: none, gzip, snappy, lz4, zstd", v)
			}
			return []kgo.Opt{kgo.ProducerBatchCompression(c)}, nil
		},
		"key.serializer":   byteArrayOnly("org.apache.kafka.common.serialization.ByteArraySerializer"),
		"value.serializer": byteArrayOnly("org.apache.kafka.common.serialization.ByteArraySerializer"),
	}
}

// byteArrayOnly accepts the one (de)serializer the console tools use.
func byteArrayOnly(class string) tool.ClientProperty {
	return func(v string, _ *tool.Client) ([]kgo.Opt, error) {
		if strings.TrimSpace(v) != class {
			return nil, fmt.Errorf("%s is not supported: weir's console tools handle raw bytes (%s) only", v, class)
		}
		return nil, nil
	}
}

func runConsoleProducer(cmd *cobra.Command, f *consoleProducerFlags) error {
	stderr := cmd.ErrOrStderr()
	fail := tool.FailTo(cmd.ErrOrStderr())
	has := cmd.Flags().Changed
	if cmd.Flags().NFlag() == 0 {
		return tool.UsageError(cmd, "This tool helps to read data from standard input and publish it to Kafka.")
	}
	if !has("bootstrap-server") && !has("broker-list") {
		return tool.UsageError(cmd, "Missing required option(s) [bootstrap-server]")
	}
	if !has("topic") {
		return tool.UsageError(cmd, `Missing required argument "[topic]"`)
	}
	bootstrap := f.bootstrapServer
	if !has("bootstrap-server") {
		bootstrap = f.brokerList
	}
	seeds := tool.SeedList(bootstrap)
	for _, s := range seeds {
		if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
			return tool.UsageError(cmd, "Please provide valid host:port like host1:9091,host2:9092\n")
		}
	}
	if len(seeds) == 0 {
		return tool.UsageError(cmd, "Please provide valid host:port like host1:9091,host2:9092\n")
	}
	if f.lineReader != lineReaderClass {
		return fail(fmt.Sprintf("--line-reader %s is not supported: weir's console-producer has Kafka's %s only", f.lineReader, lineReaderClass))
	}
	if has("property") && has("reader-property") {
		return tool.UsageError(cmd, "Options --property and --reader-property cannot be specified together.")
	}
	readerProps := map[string]string{}
	if f.readerConfig != "" {
		p, err := tool.LoadProperties(f.readerConfig)
		if err != nil {
			return fail(err.Error())
		}
		readerProps = p
	}
	readerProps["topic"] = f.topic
	keyValueArgs(append(f.props, f.readerProps...), readerProps)
	reader, err := newLineReader(readerProps)
	if err != nil {
		return fail(err.Error())
	}

	props := map[string]string{}
	if f.prodConfig != "" {
		if props, err = tool.LoadProperties(f.prodConfig); err != nil {
			return fail(err.Error())
		}
	}
	keyValueArgs(f.producerProps, props)
	delete(props, "bootstrap.servers")
	codec := "none"
	if has("compression-codec") {
		codec = f.compression
		if codec == "" {
			codec = "gzip"
		}
	}
	props["compression.type"] = codec
	if _, ok := props["client.id"]; !ok {
		props["client.id"] = "console-producer"
	}
	// As Kafka's maybeMergeOptions: a flag given wins, else its default
	// fills a property not set.
	for _, m := range []struct{ flag, key, val string }{
		{"timeout", "linger.ms", tool.Itoa(f.linger)},
		{"request-required-acks", "acks", f.acks},
		{"request-timeout-ms", "request.timeout.ms", tool.Itoa(int64(f.requestTimeout))},
		{"message-send-max-retries", "retries", tool.Itoa(int64(f.retries))},
		{"retry-backoff-ms", "retry.backoff.ms", tool.Itoa(f.retryBackoff)},
		{"socket-buffer-size", "send.buffer.bytes", tool.Itoa(int64(f.socketBuffer))},
		{"max-memory-bytes", "buffer.memory", tool.Itoa(f.maxMemory)},
		{"batch-size", "batch.size", tool.Itoa(int64(f.batchSize))},
		{"max-partition-memory-bytes", "batch.size", tool.Itoa(int64(f.maxPartitionMemory))},
		{"metadata-expiry-ms", "metadata.max.age.ms", tool.Itoa(f.metadataExpiry)},
		{"max-block-ms", "max.block.ms", tool.Itoa(f.maxBlock)},
	} {
		if _, set := props[m.key]; has(m.flag) || !set {
			props[m.key] = m.val
		}
	}
	settings := &producerSettings{acks: kgo.AllISRAcks(), acksAll: true, maxBlock: time.Minute}
	opts, err := tool.PropertyOpts(props, producerProperties(settings), &tool.Client{})
	if err != nil {
		return fail(err.Error())
	}
	if settings.idempotence != nil && *settings.idempotence && !settings.acksAll {
		return fail("org.apache.kafka.common.config.ConfigException: Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.")
	}
	opts = append(opts, kgo.SeedBrokers(seeds...), kgo.RequiredAcks(settings.acks))
	if !settings.acksAll || (settings.idempotence != nil && !*settings.idempotence) {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	opts = append(append(opts, kgo.WithHooks(tool.NewUnreachableHook(cmd.ErrOrStderr(), tool.ProducerPrefix(props["client.id"])))), tool.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fail(err.Error())
	}
	defer cl.Close()
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}

	topicKnown := false
	in := bufio.NewReader(cmd.InOrStdin())
	for {
		line, rerr := in.ReadString('\n')
		if rerr != nil && rerr != io.EOF {
			return fail(kafkaException(rerr.Error()).Error())
		}
		if line == "" && rerr == io.EOF {
			break
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		rec, err := reader.record(line)
		if err != nil {
			cl.Flush(ctx)
			return fail(err.Error())
		}
		if !topicKnown {
			err = waitForTopic(ctx, cl, f.topic, settings.maxBlock)
			topicKnown = err == nil
		}
		if err != nil {
			if f.sync {
				return fail("java.util.concurrent.ExecutionException: " + tool.DescribeErr(err))
			}
			logSendError(stderr, rec, err)
		} else if f.sync {
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				return fail("java.util.concurrent.ExecutionException: " + tool.DescribeErr(tool.KafkaError(err, nil)))
			}
		} else {
			cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				if err != nil {
					logSendError(stderr, r, tool.KafkaError(err, nil))
				}
			})
		}
		if rerr == io.EOF {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return fail(err.Error())
	}
	return nil
}

// logSendError prints a failed asynchronous send as Kafka's
// ErrorLoggingCallback logs it.
func logSendError(w io.Writer, r *kgo.Record, err error) {
	size := func(b []byte) string {
		if b == nil {
			return "null"
		}
		return strconv.Itoa(len(b)) + " bytes"
	}
	fmt.Fprintf(w, "ERROR Error when sending message to topic %s with key: %s, value: %s with error: (org.apache.kafka.clients.producer.internals.ErrorLoggingCallback)\n%s\n",
		r.Topic, size(r.Key), size(r.Value), tool.DescribeErr(err))
}

// waitForTopic waits up to maxBlock for the topic to be in the cluster's
// metadata (asking for it to be created where the brokers create topics
// on first use), as Kafka's producer does before a send.
func waitForTopic(ctx context.Context, cl *kgo.Client, topic string, maxBlock time.Duration) error {
	deadline := time.Now().Add(maxBlock)
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics, req.AllowAutoTopicCreation = []kmsg.MetadataRequestTopic{rt}, true
		rctx, cancel := context.WithDeadline(ctx, deadline)
		resp, err := req.RequestWith(rctx, cl)
		cancel()
		if err == nil && len(resp.Topics) == 1 {
			terr := kerr.ErrorForCode(resp.Topics[0].ErrorCode)
			switch {
			case terr == nil && len(resp.Topics[0].Partitions) > 0:
				return nil
			case terr != nil && !kerr.IsRetriable(terr) && !errors.Is(terr, kerr.UnknownTopicOrPartition):
				return tool.KafkaError(terr, nil)
			}
		}
		if !time.Now().Before(deadline) {
			return &tool.JavaError{Class: "TimeoutException", Msg: fmt.Sprintf("Topic %s not present in metadata after %d ms.", topic, maxBlock.Milliseconds())}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(100*time.Millisecond, time.Until(deadline))):
		}
	}
}
