package perf

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/clientsec"
)

// Props is a set of Kafka client properties (bootstrap.servers, acks, ...).
type Props map[string]string

// ParsePropsArgs parses key=value arguments as given to --producer-props. The
// value is everything after the first '=', so values may contain '='.
func ParsePropsArgs(into Props, args []string) error {
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("invalid property %q: want name=value", a)
		}
		into[k] = strings.TrimSpace(v)
	}
	return nil
}

// LoadPropsFile reads a Java .properties file.
func LoadPropsFile(into Props, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := ReadProps(into, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ReadProps reads the common subset of the Java .properties format: one
// "key=value", "key: value" or "key value" per line, '#' and '!' comment
// lines, a trailing backslash continuing a line, and the escapes \t \n \r
// \\ \= \: and \uXXXX.
func ReadProps(into Props, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var logical strings.Builder
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if continued(line) {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		k, v := splitProp(logical.String())
		logical.Reset()
		into[k] = v
	}
	if logical.Len() > 0 {
		k, v := splitProp(logical.String())
		into[k] = v
	}
	return sc.Err()
}

// continued reports whether a line ends in an odd number of backslashes.
func continued(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitProp(s string) (string, string) {
	end := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	key := s[:end]
	rest := strings.TrimLeft(s[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return unescapeProp(key), unescapeProp(rest)
}

func unescapeProp(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// propReader reads typed values out of Props, remembering which keys were
// used so the rest can be reported.
type propReader struct {
	p    Props
	used map[string]bool
	err  error
}

func newPropReader(p Props) *propReader { return &propReader{p: p, used: map[string]bool{}} }

func (r *propReader) str(k string) (string, bool) {
	r.used[k] = true
	v, ok := r.p[k]
	return v, ok
}

func (r *propReader) int(k string, min int64) (int64, bool) {
	v, ok := r.str(k)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err == nil && n < min {
		err = fmt.Errorf("must be at least %d", min)
	}
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("invalid value %q for %s: %v", v, k, err)
		}
		return 0, false
	}
	return n, true
}

func (r *propReader) millis(k string) (time.Duration, bool) {
	n, ok := r.int(k, 0)
	return time.Duration(n) * time.Millisecond, ok
}

func (r *propReader) bool(k string) (bool, bool) {
	v, ok := r.str(k)
	if !ok {
		return false, false
	}
	switch strings.ToLower(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	if r.err == nil {
		r.err = fmt.Errorf("invalid value %q for %s: want true or false", v, k)
	}
	return false, false
}

// ignore marks keys as understood and deliberately not mapped.
func (r *propReader) ignore(keys ...string) {
	for _, k := range keys {
		r.used[k] = true
	}
}

// unused lists the keys that were supplied but not understood.
func (r *propReader) unused() []string {
	var out []string
	for k := range r.p {
		if !r.used[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// securityProps are the TLS and SASL properties of r.
func securityProps(r *propReader) map[string]string {
	sec := map[string]string{}
	for k := range clientsec.Properties {
		if v, ok := r.str(k); ok {
			sec[k] = v
		}
	}
	return sec
}

// commonOptions maps the client properties shared by producers and consumers.
func commonOptions(r *propReader) []kgo.Opt {
	var opts []kgo.Opt
	if v, ok := r.str("bootstrap.servers"); ok {
		var seeds []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				seeds = append(seeds, s)
			}
		}
		opts = append(opts, kgo.SeedBrokers(seeds...))
	}
	if v, ok := r.str("client.id"); ok {
		opts = append(opts, kgo.ClientID(v))
	}
	if secOpts, err := clientsec.Opts(securityProps(r)); err != nil && r.err == nil {
		r.err = err
	} else {
		opts = append(opts, secOpts...)
	}
	if d, ok := r.millis("metadata.max.age.ms"); ok {
		opts = append(opts, kgo.MetadataMaxAge(d))
	}
	if d, ok := r.millis("connections.max.idle.ms"); ok {
		opts = append(opts, kgo.ConnIdleTimeout(d))
	}
	if d, ok := r.millis("socket.connection.setup.timeout.ms"); ok {
		opts = append(opts, kgo.DialTimeout(d))
	}
	if d, ok := r.millis("retry.backoff.ms"); ok {
		opts = append(opts, kgo.RetryBackoffFn(func(int) time.Duration { return d }))
	}
	r.ignore("key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
		"send.buffer.bytes", "receive.buffer.bytes", "socket.connection.setup.timeout.max.ms",
		"reconnect.backoff.ms", "reconnect.backoff.max.ms", "retry.backoff.max.ms",
		"client.dns.lookup", "metric.reporters", "metrics.num.samples",
		"metrics.sample.window.ms", "metrics.recording.level", "auto.include.jmx.reporter")
	return opts
}

// ClientConfig is the result of mapping Kafka properties onto franz-go.
type ClientConfig struct {
	Opts []kgo.Opt
	// Warnings names properties that were accepted but have no effect.
	Warnings []string
	// Seeds is true when bootstrap.servers was given.
	Seeds bool
}

// ProducerOptions maps Kafka producer properties onto kgo options.
//
// Properties that are not given keep franz-go's defaults, with four
// exceptions that keep Kafka's meaning: compression.type defaults to none,
// max.in.flight.requests.per.connection to 5, buffer.memory to 32 MiB (and
// no limit on the number of buffered records), and idempotence is turned off
// on its own when acks is not all unless enable.idempotence=true was asked
// for (which is then an error, as in Kafka).
func ProducerOptions(p Props) (ClientConfig, error) {
	r := newPropReader(p)
	opts := commonOptions(r)
	_, seeds := p["bootstrap.servers"]

	acks := "all"
	if v, ok := r.str("acks"); ok {
		acks = strings.ToLower(v)
	}
	idem, idemSet := r.bool("enable.idempotence")
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return ClientConfig{}, fmt.Errorf("invalid value %q for acks: want all, -1, 0 or 1", acks)
	}
	allAcks := acks == "all" || acks == "-1"
	switch {
	case idemSet && idem && !allAcks:
		return ClientConfig{}, fmt.Errorf("enable.idempotence=true requires acks=all (got acks=%s)", acks)
	case (idemSet && !idem) || !allAcks:
		idem = false
		opts = append(opts, kgo.DisableIdempotentWrite())
	default:
		idem = true
	}

	inflight := int64(5)
	if n, ok := r.int("max.in.flight.requests.per.connection", 1); ok {
		inflight = n
		if idem && n > 5 {
			return ClientConfig{}, fmt.Errorf("max.in.flight.requests.per.connection=%d: the idempotent producer allows at most 5", n)
		}
	}
	if !idem {
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(int(inflight)))
	}

	if d, ok := r.millis("linger.ms"); ok {
		opts = append(opts, kgo.ProducerLinger(d))
	}
	if n, ok := r.int("batch.size", 1); ok {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(min(n, 1<<30))))
	}
	// The buffer is bounded by bytes only, 32 MiB unless buffer.memory says
	// otherwise, as Kafka's producer bounds it (franz-go's default is
	// 10,000 records, far less for large records, which would cap
	// acks=all throughput at that many records per round trip).
	buffer := int64(32 << 20)
	if n, ok := r.int("buffer.memory", 1); ok {
		buffer = n
	}
	opts = append(opts, kgo.MaxBufferedBytes(int(buffer)), kgo.MaxBufferedRecords(math.MaxInt32))
	if n, ok := r.int("max.request.size", 1); ok {
		opts = append(opts, kgo.BrokerMaxWriteBytes(int32(min(n, 1<<30))))
	}
	if d, ok := r.millis("request.timeout.ms"); ok {
		opts = append(opts, kgo.ProduceRequestTimeout(d))
	}
	if d, ok := r.millis("delivery.timeout.ms"); ok {
		opts = append(opts, kgo.RecordDeliveryTimeout(d))
	}
	if n, ok := r.int("retries", 0); ok {
		opts = append(opts, kgo.RecordRetries(int(min(n, 1<<31-1))))
	}

	codec, err := compression(r)
	if err != nil {
		return ClientConfig{}, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))

	if v, ok := r.str("transactional.id"); ok && v != "" {
		return ClientConfig{}, fmt.Errorf("transactional.id is not supported by weir perf produce")
	}
	part, err := partitioner(r)
	if err != nil {
		return ClientConfig{}, err
	}
	if part != nil {
		opts = append(opts, kgo.RecordPartitioner(part))
	}
	r.ignore("partitioner.ignore.keys", "partitioner.adaptive.partitioning.enable",
		"partitioner.availability.timeout.ms", "max.block.ms", "interceptor.classes",
		"transaction.timeout.ms")
	if r.err != nil {
		return ClientConfig{}, r.err
	}
	var warn []string
	for _, k := range []string{"max.block.ms", "interceptor.classes", "send.buffer.bytes", "receive.buffer.bytes"} {
		if _, ok := p[k]; ok {
			warn = append(warn, fmt.Sprintf("property %s is accepted but has no effect here", k))
		}
	}
	for _, k := range r.unused() {
		warn = append(warn, fmt.Sprintf("property %s is not a known producer property and was ignored", k))
	}
	return ClientConfig{Opts: opts, Warnings: warn, Seeds: seeds}, nil
}

// partitioner maps partitioner.class, Kafka's partitioners by class name,
// onto franz-go's: nil keeps franz-go's default, which for records without
// keys (weir perf's) is Kafka's built-in sticky partitioner (a partition
// is kept until about 64 KiB went to it). RoundRobinPartitioner spreads
// records one by one over every partition, as keyed records would be.
func partitioner(r *propReader) (kgo.Partitioner, error) {
	v, ok := r.str("partitioner.class")
	if !ok {
		return nil, nil
	}
	switch strings.TrimSpace(v) {
	case "org.apache.kafka.clients.producer.RoundRobinPartitioner":
		return kgo.RoundRobinPartitioner(), nil
	case "org.apache.kafka.clients.producer.UniformStickyPartitioner":
		// Kafka's pre-3.3 partitioners, sticky for records without keys
		// (keys ignored here), changing partition when a batch is sent.
		return kgo.StickyPartitioner(), nil
	case "org.apache.kafka.clients.producer.internals.DefaultPartitioner":
		return kgo.StickyKeyPartitioner(nil), nil // murmur2 of keys, as Kafka's
	}
	return nil, fmt.Errorf("partitioner.class %q is not supported by weir perf produce: use "+
		"org.apache.kafka.clients.producer.RoundRobinPartitioner, UniformStickyPartitioner or internals.DefaultPartitioner", v)
}

func compression(r *propReader) (kgo.CompressionCodec, error) {
	v, ok := r.str("compression.type")
	if !ok {
		v = "none"
	}
	r.ignore("compression.gzip.level", "compression.lz4.level", "compression.zstd.level")
	var codec kgo.CompressionCodec
	level := ""
	switch strings.ToLower(v) {
	case "none", "uncompressed":
		return kgo.NoCompression(), nil
	case "gzip":
		codec, level = kgo.GzipCompression(), "compression.gzip.level"
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec, level = kgo.Lz4Compression(), "compression.lz4.level"
	case "zstd":
		codec, level = kgo.ZstdCompression(), "compression.zstd.level"
	default:
		return codec, fmt.Errorf("invalid value %q for compression.type: want none, gzip, snappy, lz4 or zstd", v)
	}
	if level != "" {
		if s, ok := r.p[level]; ok {
			n, err := strconv.Atoi(s)
			if err != nil {
				return codec, fmt.Errorf("invalid value %q for %s", s, level)
			}
			codec = codec.WithLevel(n)
		}
	}
	return codec, nil
}

// ConsumerConfig is the result of mapping Kafka consumer properties.
type ConsumerConfig struct {
	ClientConfig
	// Fetch shape, also used by the raw reader.
	MaxBytes          int32
	MinBytes          int32
	MaxWait           time.Duration
	PartitionMaxBytes int32
	ReadCommitted     bool
	// Group is group.id when given.
	Group string
	// GroupOpts are the group settings (session timeout, auto commit...),
	// to add only when consuming in a group.
	GroupOpts []kgo.Opt
	// Dial opens the raw reader's connections as the security
	// properties ask (TLS, SASL login).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ConsumerOptions maps Kafka consumer properties onto kgo options and the
// fetch shape. Fetch defaults are Kafka's: fetch.max.bytes 50 MiB,
// max.partition.fetch.bytes 1 MiB, fetch.min.bytes 1, fetch.max.wait.ms 500.
func ConsumerOptions(p Props) (ConsumerConfig, error) {
	r := newPropReader(p)
	c := ConsumerConfig{
		MaxBytes:          50 << 20,
		MinBytes:          1,
		MaxWait:           500 * time.Millisecond,
		PartitionMaxBytes: 1 << 20,
	}
	opts := commonOptions(r)
	_, c.Seeds = p["bootstrap.servers"]
	if r.err == nil {
		c.Dial, r.err = clientsec.Dialer(securityProps(r), p["client.id"])
	}
	if n, ok := r.int("fetch.max.bytes", 1); ok {
		c.MaxBytes = int32(min(n, 1<<31-1))
	}
	if n, ok := r.int("fetch.min.bytes", 1); ok {
		c.MinBytes = int32(min(n, 1<<31-1))
	}
	if d, ok := r.millis("fetch.max.wait.ms"); ok {
		c.MaxWait = d
	}
	if n, ok := r.int("max.partition.fetch.bytes", 1); ok {
		c.PartitionMaxBytes = int32(min(n, 1<<31-1))
	}
	if v, ok := r.str("isolation.level"); ok {
		switch strings.ToLower(v) {
		case "read_committed":
			c.ReadCommitted = true
		case "read_uncommitted":
		default:
			return c, fmt.Errorf("invalid value %q for isolation.level", v)
		}
	}
	if v, ok := r.str("group.id"); ok {
		c.Group = v
	}
	if d, ok := r.millis("session.timeout.ms"); ok {
		c.GroupOpts = append(c.GroupOpts, kgo.SessionTimeout(d))
	}
	if d, ok := r.millis("heartbeat.interval.ms"); ok {
		c.GroupOpts = append(c.GroupOpts, kgo.HeartbeatInterval(d))
	}
	if d, ok := r.millis("auto.commit.interval.ms"); ok {
		c.GroupOpts = append(c.GroupOpts, kgo.AutoCommitInterval(d))
	}
	if v, ok := r.bool("enable.auto.commit"); ok && !v {
		c.GroupOpts = append(c.GroupOpts, kgo.DisableAutoCommit())
	}
	r.ignore("request.timeout.ms", "check.crcs", "auto.offset.reset", "max.poll.records", "max.poll.interval.ms",
		"partition.assignment.strategy", "group.instance.id", "interceptor.classes", "exclude.internal.topics")
	if r.err != nil {
		return c, r.err
	}
	for _, k := range r.unused() {
		c.Warnings = append(c.Warnings, fmt.Sprintf("property %s is not a known consumer property and was ignored", k))
	}
	c.Opts = opts
	return c, nil
}
