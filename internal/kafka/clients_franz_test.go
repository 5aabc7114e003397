package kafka_test

// Real-client compatibility: franz-go's kgo producer and consumer and its
// kadm admin client against a single in-process node. The helpers at the
// top (nodes, clients, raw fetches of stored batches) are shared by the
// sarama, kafka-go and kcat tests of this package.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"weir/internal/record"
	"weir/internal/servertest"
)

// cliCtx bounds one client test.
func cliCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func cliNode(t *testing.T, overrides map[string]string) *servertest.Node {
	t.Helper()
	return servertest.Start(t, servertest.Options{Overrides: overrides})
}

// cliFranz returns a kgo client for addr, closed when the test ends.
func cliFranz(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func cliAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(cliFranz(t, addr))
}

// cliCreateTopic creates a topic through kadm and fails the test on error.
func cliCreateTopic(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) kadm.CreateTopicResponse {
	t.Helper()
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("creating %s: %v (%s)", topic, err, resp.ErrMessage)
	}
	return resp
}

// cliTopicID returns a topic's id from metadata.
func cliTopicID(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) [16]byte {
	t.Helper()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		t.Fatalf("metadata for %s: %v", topic, td.Err)
	}
	return td.ID
}

// cliRawBatches reads every batch of a partition, from offset 0 to the high
// watermark, with raw Fetch requests and returns them as stored. It lets
// a test check what the broker wrote (codec, timestamp type) rather than
// what a client decodes.
func cliRawBatches(t *testing.T, ctx context.Context, addr, topic string, part int32) []record.Batch {
	t.Helper()
	cl := cliFranz(t, addr)
	id := cliTopicID(t, ctx, kadm.NewClient(cl), topic)
	var out []record.Batch
	offset := int64(0)
	for {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 50<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = part, offset, 50<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("raw fetch: %v", err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("raw fetch: unexpected response shape %+v", resp)
		}
		sp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
			t.Fatalf("raw fetch of %s-%d at %d: %v", topic, part, offset, err)
		}
		buf := sp.RecordBatches
		for len(buf) > 0 {
			b, rest, err := record.Next(buf)
			if errors.Is(err, record.ErrShort) {
				break // a partial trailing batch: fetched again below
			}
			if err != nil {
				t.Fatalf("raw fetch: parsing batch at %d: %v", offset, err)
			}
			if !b.ValidCRC() {
				t.Fatalf("raw fetch: batch at %d has a bad CRC", b.BaseOffset())
			}
			out = append(out, append(record.Batch(nil), b...))
			offset = b.NextOffset()
			buf = rest
		}
		if offset >= sp.HighWatermark {
			return out
		}
		if len(sp.RecordBatches) == 0 {
			t.Fatalf("raw fetch of %s-%d at %d returned nothing below the high watermark %d", topic, part, offset, sp.HighWatermark)
		}
	}
}

// cliCheckCodecs fails unless every stored batch of the partition uses codec.
func cliCheckCodecs(t *testing.T, ctx context.Context, addr, topic string, part int32, codec record.Codec) []record.Batch {
	t.Helper()
	batches := cliRawBatches(t, ctx, addr, topic, part)
	if len(batches) == 0 {
		t.Fatalf("%s-%d holds no batches", topic, part)
	}
	for _, b := range batches {
		if got := b.Attributes().Codec(); got != codec {
			t.Fatalf("%s-%d batch at offset %d stored with codec %s, want %s", topic, part, b.BaseOffset(), got, codec)
		}
	}
	return batches
}

// cliCheckClientCodec is cliCheckCodecs for clients that send a batch
// uncompressed when compressing does not make it smaller (franz-go and
// librdkafka do; a batch of one short record often is one): small
// uncompressed batches are allowed, but most records must be in batches
// with the codec.
func cliCheckClientCodec(t *testing.T, ctx context.Context, addr, topic string, part int32, codec record.Codec) []record.Batch {
	t.Helper()
	batches := cliRawBatches(t, ctx, addr, topic, part)
	var with, total int32
	for _, b := range batches {
		total += b.NumRecords()
		switch got := b.Attributes().Codec(); {
		case got == codec:
			with += b.NumRecords()
		case got == record.None && b.Size() < 200:
		default:
			t.Fatalf("%s-%d batch at %d (%d records, %d bytes) stored with codec %s, want %s", topic, part, b.BaseOffset(), b.NumRecords(), b.Size(), got, codec)
		}
	}
	if total == 0 || with < total*9/10 {
		t.Fatalf("%s-%d: %d of %d records in %s batches", topic, part, with, total, codec)
	}
	return batches
}

// cliConsume reads want records from topic's partitions, starting at the
// given offsets, and returns them in the order received (which is offset
// order within each partition).
func cliConsume(t *testing.T, ctx context.Context, addr, topic string, parts map[int32]kgo.Offset, want int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	opts = append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}), kgo.FetchMaxWait(250 * time.Millisecond)}, opts...)
	cl := cliFranz(t, addr, opts...)
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: got %d of %d records before the deadline", topic, len(out), want)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("consuming %s-%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	if len(out) != want {
		t.Fatalf("consumed %d records from %s, want %d", len(out), topic, want)
	}
	return out
}

// cliFromStart is every partition of a topic at its start.
func cliFromStart(partitions int32) map[int32]kgo.Offset {
	m := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		m[p] = kgo.NewOffset().AtStart()
	}
	return m
}

// cliSameRecords compares what was produced (with offsets from the
// produce results) against what was consumed: same partition, offset, key,
// value and headers, offsets contiguous from 0 in each partition.
func cliSameRecords(t *testing.T, sent, got []*kgo.Record) {
	t.Helper()
	type key struct {
		p int32
		o int64
	}
	bySlot := map[key]*kgo.Record{}
	for _, r := range sent {
		bySlot[key{r.Partition, r.Offset}] = r
	}
	next := map[int32]int64{}
	for _, r := range got {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: consumed offset %d, want %d (offsets must be contiguous and in order)", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
		s := bySlot[key{r.Partition, r.Offset}]
		if s == nil {
			t.Fatalf("consumed %d@%d that was never produced", r.Partition, r.Offset)
		}
		if !cliSameBytes(s.Key, r.Key) || !cliSameBytes(s.Value, r.Value) {
			t.Fatalf("%d@%d: consumed key %q value %.40q, produced key %q value %.40q", r.Partition, r.Offset, r.Key, r.Value, s.Key, s.Value)
		}
		if len(s.Headers) != len(r.Headers) {
			t.Fatalf("%d@%d: %d headers consumed, %d produced", r.Partition, r.Offset, len(r.Headers), len(s.Headers))
		}
		for i := range s.Headers {
			if s.Headers[i].Key != r.Headers[i].Key || !cliSameBytes(s.Headers[i].Value, r.Headers[i].Value) {
				t.Fatalf("%d@%d: header %d is %q=%q, produced %q=%q", r.Partition, r.Offset, i, r.Headers[i].Key, r.Headers[i].Value, s.Headers[i].Key, s.Headers[i].Value)
			}
		}
		if !r.Timestamp.Equal(s.Timestamp) {
			t.Fatalf("%d@%d: timestamp %v, produced %v", r.Partition, r.Offset, r.Timestamp, s.Timestamp)
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("consumed %d records, produced %d", len(got), len(sent))
	}
}

// cliSameBytes is bytes.Equal that also tells null from empty.
func cliSameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// cliRecords makes n records spread over partitions, with a mix of null
// keys, null values, empty values and headers.
func cliRecords(topic string, partitions int32, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	for i := range recs {
		r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		switch i % 7 {
		case 0: // null key
			r.Value = []byte("value-" + strconv.Itoa(i))
		case 1: // null value: a tombstone
			r.Key = []byte("key-" + strconv.Itoa(i))
		case 2: // both null
		case 3: // empty, not null
			r.Key, r.Value = []byte{}, []byte{}
		default:
			r.Key = []byte("key-" + strconv.Itoa(i))
			r.Value = bytes.Repeat([]byte{byte('a' + i%26)}, 10+i%300)
			r.Headers = []kgo.RecordHeader{{Key: "h1", Value: []byte("v" + strconv.Itoa(i))}, {Key: "null", Value: nil}, {Key: "", Value: []byte{}}}
		}
		recs[i] = r
	}
	return recs
}

var cliCodecs = []struct {
	name  string
	codec kgo.CompressionCodec
	want  record.Codec
}{
	{"none", kgo.NoCompression(), record.None},
	{"gzip", kgo.GzipCompression(), record.Gzip},
	{"snappy", kgo.SnappyCompression(), record.Snappy},
	{"lz4", kgo.Lz4Compression(), record.LZ4},
	{"zstd", kgo.ZstdCompression(), record.Zstd},
}

// The idempotent producer (kgo's default) writes many records over several
// partitions, synchronously and asynchronously, with each codec; a
// consumer from the start reads exactly those records back, in order and
// with contiguous offsets, and the stored batches carry the codec.
func TestFranzProduceConsumeEveryCodec(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	const partitions, perMode = 3, 600
	for _, c := range cliCodecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "franz-" + c.name
			cliCreateTopic(t, ctx, adm, topic, partitions, nil)
			cl := cliFranz(t, n.Addr, kgo.ProducerBatchCompression(c.codec), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
			recs := cliRecords(topic, partitions, 2*perMode)

			// Synchronous, in slices so that batches hold many records.
			for i := 0; i < perMode; i += 100 {
				if err := cl.ProduceSync(ctx, recs[i:i+100]...).FirstErr(); err != nil {
					t.Fatalf("sync produce: %v", err)
				}
			}
			// Asynchronous, one record at a time.
			var wg sync.WaitGroup
			var mu sync.Mutex
			var firstErr error
			for _, r := range recs[perMode:] {
				wg.Add(1)
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						mu.Lock()
						firstErr = cliFirstErr(firstErr, err)
						mu.Unlock()
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if firstErr != nil {
				t.Fatalf("async produce: %v", firstErr)
			}

			got := cliConsume(t, ctx, n.Addr, topic, cliFromStart(partitions), len(recs))
			cliSameRecords(t, recs, got)
			for p := int32(0); p < partitions; p++ {
				batches := cliCheckClientCodec(t, ctx, n.Addr, topic, p, c.want)
				for _, b := range batches {
					if b.ProducerID() < 0 || b.BaseSequence() < 0 {
						t.Fatalf("batch at %d has producer id %d sequence %d: the idempotent producer was not used", b.BaseOffset(), b.ProducerID(), b.BaseSequence())
					}
				}
			}
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err != nil || o.Offset != int64(len(recs))/partitions {
					t.Fatalf("end offset of %s-%d = %d (%v), want %d", topic, o.Partition, o.Offset, o.Err, len(recs)/partitions)
				}
			})
		})
	}
}

func cliFirstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Records close to the topic's max.message.bytes are accepted and read
// back whole (each one is a batch nearly as large as a fetch's partition
// limit); one byte more is MESSAGE_TOO_LARGE and leaves the log untouched.
func TestFranzLargeRecords(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	const maxBytes = 300_000
	topic := "franz-large"
	cliCreateTopic(t, ctx, adm, topic, 1, map[string]*string{"max.message.bytes": kadm.StringPtr(strconv.Itoa(maxBytes))})
	cl := cliFranz(t, n.Addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(3))

	// A batch is a 61-byte header plus, for a one-record batch with a
	// null key, about 12 bytes of record framing around the value.
	valueLen := maxBytes - 61 - 16
	var sent []*kgo.Record
	for i := 0; i < 4; i++ {
		v := bytes.Repeat([]byte{byte('A' + i)}, valueLen)
		r := &kgo.Record{Value: v}
		res := cl.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("producing a %d-byte record: %v", valueLen, err)
		}
		sent = append(sent, r)
	}
	tooBig := &kgo.Record{Value: bytes.Repeat([]byte{'x'}, maxBytes)}
	if err := cl.ProduceSync(ctx, tooBig).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("producing a %d-byte record to max.message.bytes=%d: %v, want MESSAGE_TOO_LARGE", maxBytes, maxBytes, err)
	}
	for _, b := range cliRawBatches(t, ctx, n.Addr, topic, 0) {
		if b.Size() > maxBytes {
			t.Fatalf("stored a %d-byte batch over max.message.bytes", b.Size())
		}
	}
	// A partition limit smaller than one batch still returns it whole.
	got := cliConsume(t, ctx, n.Addr, topic, cliFromStart(1), len(sent), kgo.FetchMaxPartitionBytes(100_000), kgo.FetchMaxBytes(100_000))
	cliSameRecords(t, sent, got)

	// Near the broker-wide default limit too (1 MiB plus 12 bytes; kgo's
	// own default limit is lower, so raise it to the broker's).
	big := "franz-large-default"
	cliCreateTopic(t, ctx, adm, big, 1, nil)
	cl = cliFranz(t, n.Addr, kgo.ProducerBatchMaxBytes(1048588), kgo.ProducerBatchCompression(kgo.NoCompression()))
	v := bytes.Repeat([]byte("0123456789"), 104_800)
	r := &kgo.Record{Topic: big, Value: v}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("producing a %d-byte record under the default message.max.bytes: %v", len(v), err)
	}
	got = cliConsume(t, ctx, n.Addr, big, cliFromStart(1), 1)
	cliSameRecords(t, []*kgo.Record{r}, got)
}

// A consumer can start at the end (it sees only later records) or at a
// timestamp (the first record at or after it).
func TestFranzConsumeFromEndAndTimestamp(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "franz-positions"
	cliCreateTopic(t, ctx, adm, topic, 1, nil)
	cl := cliFranz(t, n.Addr, kgo.DefaultProduceTopic(topic))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var early []*kgo.Record
	for i := 0; i < 100; i++ {
		r := &kgo.Record{Value: []byte(strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second)}
		early = append(early, r)
	}
	if err := cl.ProduceSync(ctx, early...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// From a timestamp between records 41 and 42: the first one read is 42.
	at := base.Add(41*time.Second + 500*time.Millisecond)
	got := cliConsume(t, ctx, n.Addr, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AfterMilli(at.UnixMilli())}, 58)
	if got[0].Offset != 42 || string(got[0].Value) != "42" {
		t.Fatalf("consuming after %v started at offset %d (%q), want 42", at, got[0].Offset, got[0].Value)
	}

	// From the end: once the consumer has listed the end offset (its
	// ListOffsets answer was read), a record produced after that is the
	// first one it sees.
	listed := make(chan struct{})
	var once sync.Once
	cons := cliFranz(t, n.Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtEnd()}}),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.WithHooks(cliReadHook(func(key int16, err error) {
			if key == 2 && err == nil {
				once.Do(func() { close(listed) })
			}
		})))
	select {
	case <-listed:
	case <-ctx.Done():
		t.Fatal("the consumer never listed offsets")
	}
	late := &kgo.Record{Value: []byte("late")}
	if err := cl.ProduceSync(ctx, late).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("deadline waiting for the late record")
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		if recs := fs.Records(); len(recs) > 0 {
			if recs[0].Offset != 100 || string(recs[0].Value) != "late" {
				t.Fatalf("consumer at the end read %d %q first, want 100 \"late\"", recs[0].Offset, recs[0].Value)
			}
			break
		}
	}
}

// cliReadHook calls fn with the key of every response a client reads.
type cliReadHook func(key int16, err error)

func (h cliReadHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	h(key, err)
}

// kadm CreateTopics: configs are applied and described in the answer;
// validate-only creates nothing; each bad topic gets Kafka's error code
// and a message, independently of the good ones in the same request.
func TestFranzAdminCreateTopics(t *testing.T) {
	n := cliNode(t, map[string]string{"auto.create.topics.enable": "false"})
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)

	resp := cliCreateTopic(t, ctx, adm, "created", 3, map[string]*string{
		"retention.ms":   kadm.StringPtr("3600000"),
		"cleanup.policy": kadm.StringPtr("compact,delete"),
	})
	if resp.NumPartitions != 3 || resp.ReplicationFactor != 1 || resp.ID == (kadm.TopicID{}) {
		t.Fatalf("created: partitions %d, replication %d, id %v", resp.NumPartitions, resp.ReplicationFactor, resp.ID)
	}
	for k, want := range map[string]string{"retention.ms": "3600000", "cleanup.policy": "compact,delete"} {
		c, ok := resp.Configs[k]
		if !ok || c.MaybeValue() != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Fatalf("created: config %s = %q from %v, want %q from DYNAMIC_TOPIC_CONFIG", k, c.MaybeValue(), c.Source, want)
		}
	}
	if c := resp.Configs["segment.bytes"]; c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("created: segment.bytes = %q from %v", c.MaybeValue(), c.Source)
	}
	md, err := adm.Metadata(ctx, "created")
	if err != nil {
		t.Fatal(err)
	}
	if td := md.Topics["created"]; td.Err != nil || len(td.Partitions) != 3 || td.ID != resp.ID {
		t.Fatalf("metadata of created: err %v, %d partitions, id %v (created as %v)", td.Err, len(td.Partitions), td.ID, resp.ID)
	}

	// validate_only answers as a creation would, and creates nothing.
	vr, err := adm.ValidateCreateTopics(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000")}, "validated")
	if err != nil {
		t.Fatal(err)
	}
	if r := vr["validated"]; r.Err != nil || r.NumPartitions != 2 {
		t.Fatalf("validate only: %v, %d partitions", r.Err, r.NumPartitions)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("validated") {
		t.Fatal("validate_only created the topic")
	}

	// Errors, per topic.
	cases := []struct {
		topic      string
		partitions int32
		rf         int16
		configs    map[string]*string
		want       *kerr.Error
		msg        string // a substring of the error message
	}{
		{"created", 1, 1, nil, kerr.TopicAlreadyExists, "created"},
		{"bad-config", 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, kerr.InvalidConfig, "retention.ms"},
		{"bad-config-2", 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("shred")}, kerr.InvalidConfig, "cleanup.policy"},
		{"unknown-config", 1, 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, kerr.InvalidConfig, "no.such.config"},
		{"bad name", 1, 1, nil, kerr.InvalidTopicException, ""},
		{"..", 1, 1, nil, kerr.InvalidTopicException, ""},
		{strings.Repeat("x", 250), 1, 1, nil, kerr.InvalidTopicException, ""},
		{"too-replicated", 1, 3, nil, kerr.InvalidReplicationFactor, "3"},
		{"no-partitions", 0, 1, nil, kerr.InvalidPartitions, ""},
	}
	for _, c := range cases {
		res, err := adm.CreateTopics(ctx, c.partitions, c.rf, c.configs, c.topic)
		if err != nil {
			t.Fatalf("%.20s: %v", c.topic, err)
		}
		r := res[c.topic]
		if !errors.Is(r.Err, c.want) {
			t.Fatalf("creating %.20q (partitions %d, rf %d, %v): %v (%s), want %s", c.topic, c.partitions, c.rf, c.configs, r.Err, r.ErrMessage, c.want.Message)
		}
		if c.want != kerr.InvalidTopicException && (r.ErrMessage == "" || !strings.Contains(r.ErrMessage, c.msg)) {
			t.Fatalf("creating %.20q: message %q, want one mentioning %q", c.topic, r.ErrMessage, c.msg)
		}
	}
	topics, err = adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := topics.Names(); len(got) != 1 || got[0] != "created" {
		t.Fatalf("topics after the failed creations: %v", got)
	}
}

// kadm DeleteTopics: the topic disappears from metadata, producing to it
// with auto-creation off is UNKNOWN_TOPIC_OR_PARTITION, and a topic of
// the same name created later is a new, empty topic.
func TestFranzAdminDeleteTopics(t *testing.T) {
	n := cliNode(t, map[string]string{"auto.create.topics.enable": "false"})
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	first := cliCreateTopic(t, ctx, adm, "doomed", 2, nil)
	cl := cliFranz(t, n.Addr, kgo.DefaultProduceTopic("doomed"), kgo.UnknownTopicRetries(1), kgo.MetadataMinAge(50*time.Millisecond))
	if err := cl.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	dr, err := adm.DeleteTopics(ctx, "doomed", "never-existed")
	if err != nil {
		t.Fatal(err)
	}
	if r := dr["doomed"]; r.Err != nil {
		t.Fatalf("deleting doomed: %v", r.Err)
	}
	if r := dr["never-existed"]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting a topic that does not exist: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("doomed") {
		t.Fatal("deleted topic still listed")
	}

	// A raw produce to the deleted partition.
	b, err := record.Build(record.NewBatchHeader(), []record.Record{{Value: []byte("after")}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "doomed"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw := cliFranz(t, n.Addr)
	presp, err := req.RequestWith(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("raw produce to a deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	// kgo gives up after its unknown-topic retries with the same error.
	if err := cl.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("kgo produce to a deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}

	second := cliCreateTopic(t, ctx, adm, "doomed", 1, nil)
	if second.ID == first.ID {
		t.Fatal("a re-created topic kept the old topic id")
	}
	ends, err := adm.ListEndOffsets(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("doomed", 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("re-created topic ends at %d (%v), want 0", o.Offset, o.Err)
	}
}

// kadm CreatePartitions grows a topic; the new partitions take records at
// once; shrinking is INVALID_PARTITIONS.
func TestFranzAdminCreatePartitions(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	cliCreateTopic(t, ctx, adm, "growing", 1, nil)
	res, err := adm.CreatePartitions(ctx, 2, "growing")
	if err != nil {
		t.Fatal(err)
	}
	if r := res["growing"]; r.Err != nil {
		t.Fatalf("adding 2 partitions: %v (%s)", r.Err, r.ErrMessage)
	}
	md, err := adm.Metadata(ctx, "growing")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(md.Topics["growing"].Partitions); got != 3 {
		t.Fatalf("%d partitions after adding 2 to 1", got)
	}
	cl := cliFranz(t, n.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rec := &kgo.Record{Topic: "growing", Partition: 2, Value: []byte("new")}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("producing to a new partition: %v", err)
	}
	got := cliConsume(t, ctx, n.Addr, "growing", map[int32]kgo.Offset{2: kgo.NewOffset().AtStart()}, 1)
	cliSameRecords(t, []*kgo.Record{rec}, got)

	res, err = adm.UpdatePartitions(ctx, 2, "growing")
	if err != nil {
		t.Fatal(err)
	}
	if r := res["growing"]; !errors.Is(r.Err, kerr.InvalidPartitions) {
		t.Fatalf("shrinking to 2 partitions: %v, want INVALID_PARTITIONS", r.Err)
	}
}

// cliConfigOf finds a key in a kadm config list.
func cliConfigOf(t *testing.T, rcs kadm.ResourceConfigs, name, key string) kadm.Config {
	t.Helper()
	rc, err := rcs.On(name, nil)
	if err != nil {
		t.Fatalf("describing %s: %v", name, err)
	}
	if rc.Err != nil {
		t.Fatalf("describing %s: %v", name, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("%s: %s not described", name, key)
	return kadm.Config{}
}

func cliSynonyms(c kadm.Config) string {
	var parts []string
	for _, s := range c.Synonyms {
		v := "<nil>"
		if s.Value != nil {
			v = *s.Value
		}
		parts = append(parts, s.Key+"="+v+"("+s.Source.String()+")")
	}
	return strings.Join(parts, " ")
}

// kadm DescribeConfigs of a topic and of the broker: values, sources and
// synonyms, from topic overrides down to static server.properties and
// defaults.
func TestFranzAdminDescribeConfigs(t *testing.T) {
	n := cliNode(t, map[string]string{"log.retention.hours": "24", "message.max.bytes": "2000000"})
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	cliCreateTopic(t, ctx, adm, "described", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("5000")})
	rcs, err := adm.DescribeTopicConfigs(ctx, "described")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		key, value string
		source     kmsg.ConfigSource
		synonyms   string
	}{
		{"max.message.bytes", "5000", kmsg.ConfigSourceDynamicTopicConfig,
			"max.message.bytes=5000(DYNAMIC_TOPIC_CONFIG) message.max.bytes=2000000(STATIC_BROKER_CONFIG) message.max.bytes=1048588(DEFAULT_CONFIG)"},
		{"retention.ms", "86400000", kmsg.ConfigSourceStaticBrokerConfig,
			"log.retention.hours=24(STATIC_BROKER_CONFIG) log.retention.hours=168(DEFAULT_CONFIG)"},
		{"segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig, "log.segment.bytes=1073741824(DEFAULT_CONFIG)"},
		{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig, "log.cleanup.policy=delete(DEFAULT_CONFIG)"},
	}
	for _, c := range checks {
		got := cliConfigOf(t, rcs, "described", c.key)
		if got.MaybeValue() != c.value || got.Source != c.source || cliSynonyms(got) != c.synonyms {
			t.Errorf("topic %s = %q from %v, synonyms %s; want %q from %v, synonyms %s",
				c.key, got.MaybeValue(), got.Source, cliSynonyms(got), c.value, c.source, c.synonyms)
		}
	}

	brcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, value string
		source     kmsg.ConfigSource
	}{
		{"log.retention.hours", "24", kmsg.ConfigSourceStaticBrokerConfig},
		{"message.max.bytes", "2000000", kmsg.ConfigSourceStaticBrokerConfig},
		{"num.partitions", "1", kmsg.ConfigSourceDefaultConfig},
		{"log.dirs", n.Dir + "/logs", kmsg.ConfigSourceStaticBrokerConfig},
	} {
		got := cliConfigOf(t, brcs, "1", c.key)
		if got.MaybeValue() != c.value || got.Source != c.source {
			t.Errorf("broker %s = %q from %v, want %q from %v", c.key, got.MaybeValue(), got.Source, c.value, c.source)
		}
	}

	// An unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
	rcs, err = adm.DescribeTopicConfigs(ctx, "nope")
	if err == nil {
		if rc, err2 := rcs.On("nope", nil); err2 == nil {
			err = rc.Err
		}
	}
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("describing an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

// cliAlterOK fails the test unless every alteration succeeded.
func cliAlterOK(t *testing.T, what string, res kadm.AlterConfigsResponses, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(res) == 0 {
		t.Fatalf("%s: no results", what)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s on %q: %v (%s)", what, r.Name, r.Err, r.ErrMessage)
		}
	}
}

// cliWantConfig checks one described value and source.
func cliWantConfig(t *testing.T, rcs kadm.ResourceConfigs, err error, name, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	if err != nil {
		t.Fatalf("describing %s: %v", name, err)
	}
	c := cliConfigOf(t, rcs, name, key)
	if c.MaybeValue() != value || c.Source != source {
		t.Fatalf("%s %s = %q from %v (synonyms %s), want %q from %v", name, key, c.MaybeValue(), c.Source, cliSynonyms(c), value, source)
	}
}

// IncrementalAlterConfigs (kadm's AlterTopicConfigs / AlterBrokerConfigs)
// and the legacy AlterConfigs (the ...State variants) on a topic and on
// the broker: values take effect at once (a lower max.message.bytes
// rejects a larger batch, cleanup.policy=compact rejects null keys) and
// survive a restart.
func TestFranzAdminAlterConfigsSurviveRestart(t *testing.T) {
	n := startNodeWithDir(t)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	cliCreateTopic(t, ctx, adm, "altered", 1, nil)
	cliCreateTopic(t, ctx, adm, "plain", 1, nil)
	cliCreateTopic(t, ctx, adm, "replaced", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2000"), "retention.ms": kadm.StringPtr("60000")})

	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("120000")},
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("1000")},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
	}, "altered")
	cliAlterOK(t, "incremental alter of altered", res, err)
	// The legacy API replaces the whole set: max.message.bytes is dropped.
	res, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("30000")}}, "replaced")
	cliAlterOK(t, "alter of replaced", res, err)
	// Broker: a per-broker value and a cluster-wide default.
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kadm.StringPtr("7200000")}}, 1)
	cliAlterOK(t, "incremental alter of broker 1", res, err)
	res, err = adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "log.cleaner.delete.retention.ms", Value: kadm.StringPtr("3600000")}})
	cliAlterOK(t, "alter of the cluster default", res, err)

	// Invalid values name the key; validate-only changes nothing.
	res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("tomorrow")}}, "altered")
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidConfig) || !strings.Contains(res[0].ErrMessage, "retention.ms") {
		t.Fatalf("setting retention.ms=tomorrow: %v %+v, want INVALID_CONFIG naming the key", err, res)
	}
	res, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "altered")
	cliAlterOK(t, "validate-only alter", res, err)

	check := func(adm *kadm.Client) {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "altered", "replaced")
		cliWantConfig(t, rcs, err, "altered", "retention.ms", "120000", kmsg.ConfigSourceDynamicTopicConfig)
		cliWantConfig(t, rcs, err, "altered", "max.message.bytes", "1000", kmsg.ConfigSourceDynamicTopicConfig)
		cliWantConfig(t, rcs, err, "altered", "cleanup.policy", "delete,compact", kmsg.ConfigSourceDynamicTopicConfig)
		cliWantConfig(t, rcs, err, "altered", "delete.retention.ms", "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		cliWantConfig(t, rcs, err, "replaced", "retention.ms", "30000", kmsg.ConfigSourceDynamicTopicConfig)
		cliWantConfig(t, rcs, err, "replaced", "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
		brcs, err := adm.DescribeBrokerConfigs(ctx, 1)
		cliWantConfig(t, brcs, err, "1", "log.retention.ms", "7200000", kmsg.ConfigSourceDynamicBrokerConfig)
		cliWantConfig(t, brcs, err, "1", "log.cleaner.delete.retention.ms", "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		// A topic without an override inherits the broker's dynamic value;
		// the synonyms list every level that has one.
		rcs, err = adm.DescribeTopicConfigs(ctx, "plain")
		cliWantConfig(t, rcs, err, "plain", "retention.ms", "7200000", kmsg.ConfigSourceDynamicBrokerConfig)
		c := cliConfigOf(t, rcs, "plain", "retention.ms")
		if got, want := cliSynonyms(c), "log.retention.ms=7200000(DYNAMIC_BROKER_CONFIG) log.retention.hours=168(DEFAULT_CONFIG)"; got != want {
			t.Fatalf("plain retention.ms synonyms: %s, want %s", got, want)
		}

		// The new limits apply to produce.
		cl := cliFranz(t, n.Addr, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(2))
		big := &kgo.Record{Topic: "altered", Key: []byte("k"), Value: bytes.Repeat([]byte{'v'}, 1200)}
		if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("a 1200-byte record with max.message.bytes=1000: %v, want MESSAGE_TOO_LARGE", err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "altered", Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("a null key on a compacted topic: %v, want INVALID_RECORD", err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "altered", Key: []byte("k"), Value: []byte("small")}).FirstErr(); err != nil {
			t.Fatalf("a small keyed record: %v", err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "replaced", Value: bytes.Repeat([]byte{'v'}, 5000)}).FirstErr(); err != nil {
			t.Fatalf("a 5000-byte record once max.message.bytes was dropped: %v", err)
		}
	}
	check(adm)
	n.Restart()
	check(cliAdmin(t, n.Addr))
}

// startNodeWithDir starts a node whose data outlives restarts.
func startNodeWithDir(t *testing.T) *servertest.Node {
	t.Helper()
	return servertest.Start(t, servertest.Options{Dir: t.TempDir()})
}

// kadm DeleteRecords moves the low watermark; reading below it is
// OFFSET_OUT_OF_RANGE, which a consumer without a reset policy reports and
// one with the default policy resets from.
func TestFranzAdminDeleteRecords(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "trimmed"
	cliCreateTopic(t, ctx, adm, topic, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1048576")})
	cl := cliFranz(t, n.Addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var sent []*kgo.Record
	for i := 0; i < 400; i++ {
		sent = append(sent, &kgo.Record{Value: bytes.Repeat([]byte{byte(i)}, 8000)})
	}
	if err := cl.ProduceSync(ctx, sent...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	sizeBefore := cliLogSize(t, ctx, adm, topic)

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 300})
	dr, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r := dr[topic][0]; r.Err != nil || r.LowWatermark != 300 {
		t.Fatalf("delete records to 300: low watermark %d, %v", r.LowWatermark, r.Err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 0); o.Offset != 300 {
		t.Fatalf("start offset after delete records = %d, want 300", o.Offset)
	}
	if after := cliLogSize(t, ctx, adm, topic); after >= sizeBefore {
		t.Fatalf("log size %d after deleting records below 300, %d before: no segment was deleted", after, sizeBefore)
	}
	// Past the high watermark is OFFSET_OUT_OF_RANGE.
	offs = nil
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 401})
	dr, err = adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r := dr[topic][0]; !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete records past the end: %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
	// A compacted-only topic refuses, as Kafka: POLICY_VIOLATION.
	cliCreateTopic(t, ctx, adm, "compacted", 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "compacted", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs = nil
	offs.Add(kadm.Offset{Topic: "compacted", Partition: 0, At: 1})
	if dr, err = adm.DeleteRecords(ctx, offs); err != nil {
		t.Fatal(err)
	}
	if r := dr["compacted"][0]; !errors.Is(r.Err, kerr.PolicyViolation) {
		t.Fatalf("delete records of a compacted topic: %v, want POLICY_VIOLATION", r.Err)
	}

	// No reset policy: the consumer reports the error.
	cons := cliFranz(t, n.Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(100)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("deadline waiting for OFFSET_OUT_OF_RANGE")
		}
		if len(fs.Records()) > 0 {
			t.Fatalf("read offset %d below the log start offset", fs.Records()[0].Offset)
		}
		var got error
		fs.EachError(func(_ string, _ int32, err error) { got = err })
		if got != nil {
			if !errors.Is(got, kerr.OffsetOutOfRange) {
				t.Fatalf("fetching below the log start: %v, want OFFSET_OUT_OF_RANGE", got)
			}
			break
		}
	}
	// The default policy resets to the start.
	got := cliConsume(t, ctx, n.Addr, topic, map[int32]kgo.Offset{0: kgo.NewOffset().At(100)}, 100)
	if got[0].Offset != 300 || got[99].Offset != 399 {
		t.Fatalf("after the reset read %d..%d, want 300..399", got[0].Offset, got[99].Offset)
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, sent[300+i].Value) {
			t.Fatalf("offset %d: wrong value", r.Offset)
		}
	}
}

// cliLogSize is the size DescribeLogDirs reports for a topic.
func cliLogSize(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) int64 {
	t.Helper()
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	found := false
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			t.Fatalf("log dir %s: %v", d.Dir, d.Err)
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				size += p.Size
				found = true
			}
		})
	})
	if !found {
		t.Fatalf("DescribeLogDirs does not list %s", topic)
	}
	return size
}

// ListOffsets through kadm: earliest, latest, by timestamp (also past the
// last record) and the max timestamp (KIP-734), which need not be the
// last record's.
func TestFranzAdminListOffsets(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "listed"
	cliCreateTopic(t, ctx, adm, topic, 2, nil)
	cl := cliFranz(t, n.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := 0; i < 50; i++ {
		ts := base.Add(time.Duration(i) * time.Second)
		if i == 30 {
			ts = base.Add(10 * time.Minute) // the max, in the middle
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i)), Timestamp: ts})
	}
	// In several requests, so that the partition holds several batches.
	for i := 0; i < len(recs); i += 10 {
		if err := cl.ProduceSync(ctx, recs[i:i+10]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	lookup := func(what string, l kadm.ListedOffsets, err error, p int32) kadm.ListedOffset {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		o, ok := l.Lookup(topic, p)
		if !ok || o.Err != nil {
			t.Fatalf("%s of %s-%d: %v", what, topic, p, o.Err)
		}
		return o
	}
	l, err := adm.ListStartOffsets(ctx, topic)
	if o := lookup("earliest", l, err, 0); o.Offset != 0 {
		t.Fatalf("earliest = %d", o.Offset)
	}
	l, err = adm.ListEndOffsets(ctx, topic)
	if o := lookup("latest", l, err, 0); o.Offset != 50 {
		t.Fatalf("latest = %d", o.Offset)
	}
	if o := lookup("latest", l, err, 1); o.Offset != 0 {
		t.Fatalf("latest of the empty partition = %d", o.Offset)
	}
	l, err = adm.ListOffsetsAfterMilli(ctx, base.Add(20500*time.Millisecond).UnixMilli(), topic)
	if o := lookup("after 20.5s", l, err, 0); o.Offset != 21 || o.Timestamp != base.Add(21*time.Second).UnixMilli() {
		t.Fatalf("offset after 20.5s = %d at %d, want 21 at %d", o.Offset, o.Timestamp, base.Add(21*time.Second).UnixMilli())
	}
	// Between record 29 and the max: the max record (30) is first.
	l, err = adm.ListOffsetsAfterMilli(ctx, base.Add(5*time.Minute).UnixMilli(), topic)
	if o := lookup("after 5m", l, err, 0); o.Offset != 30 {
		t.Fatalf("offset after 5m = %d, want 30", o.Offset)
	}
	// Past every record: kadm asks again for the end offset.
	l, err = adm.ListOffsetsAfterMilli(ctx, base.Add(time.Hour).UnixMilli(), topic)
	if o := lookup("after 1h", l, err, 0); o.Offset != 50 {
		t.Fatalf("offset after every record = %d, want 50", o.Offset)
	}
	l, err = adm.ListMaxTimestampOffsets(ctx, topic)
	if o := lookup("max timestamp", l, err, 0); o.Offset != 30 || o.Timestamp != base.Add(10*time.Minute).UnixMilli() {
		t.Fatalf("max timestamp offset = %d at %d, want 30 at %d", o.Offset, o.Timestamp, base.Add(10*time.Minute).UnixMilli())
	}

	// The raw answer past every record is offset -1, timestamp -1.
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = 0, -1, base.Add(time.Hour).UnixMilli()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cliFranz(t, n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.Offset != -1 || sp.Timestamp != -1 {
		t.Fatalf("raw list offsets past the end: %+v, want offset -1 timestamp -1", sp)
	}
}

// OffsetForLeaderEpoch, DescribeCluster, DescribeLogDirs and Metadata with
// topic ids, through kadm and raw kmsg.
func TestFranzAdminClusterAndEpochs(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "epochs"
	created := cliCreateTopic(t, ctx, adm, topic, 2, nil)
	cl := cliFranz(t, n.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 25; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("e")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// Metadata: topic id, leader, epoch, replicas.
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[topic]
	if td.Err != nil || td.ID != created.ID || td.ID == (kadm.TopicID{}) {
		t.Fatalf("metadata topic id %v (%v), created as %v", td.ID, td.Err, created.ID)
	}
	pd := td.Partitions[1]
	if pd.Leader != 1 || pd.LeaderEpoch < 0 || len(pd.Replicas) != 1 || len(pd.ISR) != 1 {
		t.Fatalf("partition 1 metadata: %+v", pd)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].NodeID != 1 || md.Cluster == "" || md.Controller != 1 {
		t.Fatalf("metadata brokers %+v cluster %q controller %d", md.Brokers, md.Cluster, md.Controller)
	}

	// OffsetForLeaderEpoch of the current epoch is the log end.
	var req kadm.OffsetForLeaderEpochRequest
	req.Add(topic, 1, pd.LeaderEpoch)
	req.Add(topic, 0, pd.LeaderEpoch)
	eps, err := adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if e := eps[topic][1]; e.Err != nil || e.EndOffset != 25 || e.LeaderEpoch != pd.LeaderEpoch {
		t.Fatalf("offset for epoch %d of partition 1: epoch %d end %d (%v), want epoch %d end 25", pd.LeaderEpoch, e.LeaderEpoch, e.EndOffset, e.Err, pd.LeaderEpoch)
	}
	if e := eps[topic][0]; e.Err != nil {
		t.Fatalf("offset for epoch of the empty partition 0: %v", e.Err)
	}

	// DescribeCluster (raw: kadm has no call for it).
	dc := kmsg.NewPtrDescribeClusterRequest()
	dcr, err := dc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if dcr.ErrorCode != 0 || dcr.ClusterID != md.Cluster || dcr.ControllerID != 1 || len(dcr.Brokers) != 1 ||
		fmt.Sprintf("%s:%d", dcr.Brokers[0].Host, dcr.Brokers[0].Port) != n.Addr {
		t.Fatalf("describe cluster: %+v", dcr)
	}

	// DescribeLogDirs: the partitions with their sizes.
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Fatalf("log dir %s: err %v, total %d usable %d", d.Dir, d.Err, d.TotalBytes, d.UsableBytes)
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				sizes[p.Partition] = p.Size
			}
		})
	})
	if len(sizes) != 2 || sizes[1] <= 0 || sizes[0] != 0 {
		t.Fatalf("log dir sizes of %s: %v, want partition 1 > 0 and the empty partition 0 at 0", topic, sizes)
	}
}

// On a LogAppendTime topic, consumers see the broker's append time, not
// the producer's timestamps, and the stored batches say so.
func TestFranzLogAppendTime(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "appended"
	cliCreateTopic(t, ctx, adm, topic, 1, map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")})
	cl := cliFranz(t, n.Addr, kgo.DefaultProduceTopic(topic))
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Millisecond)
	before := time.Now().Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := 0; i < 20; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i)), Timestamp: old.Add(time.Duration(i) * time.Millisecond)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The produce answer carries the append time (kgo does not use it, so
	// send one batch raw).
	h := record.NewBatchHeader()
	h.BaseTimestamp, h.MaxTimestamp = old.UnixMilli(), old.UnixMilli()
	b, err := record.Build(h, []record.Record{{Value: []byte("raw")}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	preq := kmsg.NewPtrProduceRequest()
	preq.Acks, preq.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = b
	pt.Partitions = append(pt.Partitions, pp)
	preq.Topics = append(preq.Topics, pt)
	presp, err := preq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if sp := presp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.LogAppendTime < before.UnixMilli() || sp.LogAppendTime > after.UnixMilli() {
		t.Fatalf("raw produce to a LogAppendTime topic: error %d, log append time %d, want one in [%d, %d]", sp.ErrorCode, sp.LogAppendTime, before.UnixMilli(), after.UnixMilli())
	}
	recs = append(recs, &kgo.Record{Value: []byte("raw")})
	got := cliConsume(t, ctx, n.Addr, topic, cliFromStart(1), len(recs))
	for _, r := range got {
		if r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before) || r.Timestamp.After(after) {
			t.Fatalf("offset %d: timestamp %v type %d, want the append time (type 1) in [%v, %v]", r.Offset, r.Timestamp, r.Attrs.TimestampType(), before, after)
		}
	}
	for _, b := range cliRawBatches(t, ctx, n.Addr, topic, 0) {
		if !b.Attributes().LogAppendTime() || b.MaxTimestamp() < before.UnixMilli() {
			t.Fatalf("stored batch at %d: log append time %v, max timestamp %d", b.BaseOffset(), b.Attributes().LogAppendTime(), b.MaxTimestamp())
		}
	}
}

// A topic with compression.type=zstd stores zstd whatever the producer
// sent (here gzip), and consumers read the same records.
func TestFranzTopicCompressionRecompresses(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "zstd-topic"
	cliCreateTopic(t, ctx, adm, topic, 2, map[string]*string{"compression.type": kadm.StringPtr("zstd")})
	cl := cliFranz(t, n.Addr, kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	recs := cliRecords(topic, 2, 300)
	for i := 0; i < len(recs); i += 50 {
		if err := cl.ProduceSync(ctx, recs[i:i+50]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := cliConsume(t, ctx, n.Addr, topic, cliFromStart(2), len(recs))
	cliSameRecords(t, recs, got)
	for p := int32(0); p < 2; p++ {
		for _, b := range cliCheckCodecs(t, ctx, n.Addr, topic, p, record.Zstd) {
			if b.ProducerID() < 0 {
				t.Fatalf("recompressed batch at %d lost its producer id", b.BaseOffset())
			}
		}
	}
}

// Consuming without a group through ConsumeTopics (every partition, reset
// to the start), at read_committed (no transactions: the last stable
// offset is the high watermark), and from an offset inside a compressed
// batch.
func TestFranzConsumeTopicsReadCommitted(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "franz-topics"
	cliCreateTopic(t, ctx, adm, topic, 3, nil)
	cl := cliFranz(t, n.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	recs := cliRecords(topic, 3, 300)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := cliConsumeTopics(t, ctx, n.Addr, topic, len(recs), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	cliSameRecords(t, recs, got)

	// Start inside partition 1's largest batch.
	var in record.Batch
	for _, b := range cliRawBatches(t, ctx, n.Addr, topic, 1) {
		if in == nil || b.NumRecords() > in.NumRecords() {
			in = b
		}
	}
	if in.NumRecords() < 2 {
		t.Fatalf("partition 1 has no batch of several records")
	}
	start := in.BaseOffset() + int64(in.NumRecords()/2)
	mid := cliConsume(t, ctx, n.Addr, topic, map[int32]kgo.Offset{1: kgo.NewOffset().At(start)}, int(100-start))
	if mid[0].Offset != start || mid[len(mid)-1].Offset != 99 {
		t.Fatalf("consuming from %d read %d..%d", start, mid[0].Offset, mid[len(mid)-1].Offset)
	}
}

// cliConsumeTopics reads want records of a topic through ConsumeTopics.
func cliConsumeTopics(t *testing.T, ctx context.Context, addr, topic string, want int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := cliFranz(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.FetchMaxWait(250 * time.Millisecond)}, opts...)...)
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: %d of %d records before the deadline", topic, len(out), want)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consuming %s-%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// One produce request for several partitions where one batch is too
// large: that partition alone fails, the others are written.
func TestFranzProducePartialFailure(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "franz-partial"
	cliCreateTopic(t, ctx, adm, topic, 3, map[string]*string{"max.message.bytes": kadm.StringPtr("2000")})
	raw := cliFranz(t, n.Addr)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < 3; p++ {
		v := []byte("small")
		if p == 1 {
			v = bytes.Repeat([]byte{'x'}, 3000)
		}
		b, err := record.Build(record.NewBatchHeader(), []record.Record{{Value: v}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, b
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range resp.Topics[0].Partitions {
		want := int16(0)
		if sp.Partition == 1 {
			want = kerr.MessageTooLarge.Code
		}
		if sp.ErrorCode != want || (want == 0 && sp.BaseOffset != 0) {
			t.Fatalf("partition %d: error %v base offset %d", sp.Partition, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 1, 1: 0, 2: 1} {
		if o, _ := ends.Lookup(topic, p); o.Offset != want {
			t.Fatalf("end offset of partition %d = %d, want %d", p, o.Offset, want)
		}
	}
}

// Lowering retention.ms through IncrementalAlterConfigs takes effect at
// the next retention check: records older than the new retention go (the
// active segment too, after a roll), newer ones stay.
func TestFranzLowerRetentionDeletes(t *testing.T) {
	n := cliNode(t, map[string]string{"log.retention.check.interval.ms": "20"})
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "franz-retention"
	cliCreateTopic(t, ctx, adm, topic, 1, nil)
	cl := cliFranz(t, n.Addr, kgo.DefaultProduceTopic(topic))
	old := time.Now().Add(-48 * time.Hour)
	var recs []*kgo.Record
	for i := 0; i < 50; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i)), Timestamp: old.Add(time.Duration(i) * time.Second)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	startOf := func() int64 {
		t.Helper()
		l, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := l.Lookup(topic, 0)
		return o.Offset
	}
	if s := startOf(); s != 0 {
		t.Fatalf("start offset %d under the default 7-day retention", s)
	}
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, topic)
	cliAlterOK(t, "lowering retention.ms", res, err)
	for startOf() != 50 {
		if ctx.Err() != nil {
			t.Fatalf("start offset still %d: records two days old were not deleted under retention.ms=1h", startOf())
		}
	}
	fresh := &kgo.Record{Value: []byte("fresh")}
	if err := cl.ProduceSync(ctx, fresh).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := cliConsume(t, ctx, n.Addr, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, 1)
	if got[0].Offset != 50 || string(got[0].Value) != "fresh" {
		t.Fatalf("after retention read %d %q", got[0].Offset, got[0].Value)
	}
}

// franz-go pinned to the request versions of older Kafka releases
// (kgo.MaxVersions): old Produce, Fetch, ListOffsets, Metadata,
// CreateTopics, DescribeConfigs, AlterConfigs and DeleteTopics encodings.
// 0.11 is the oldest: weir serves Fetch from v4, as Kafka 4 does.
func TestFranzOldRequestVersions(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	for _, v := range []struct {
		name       string
		max        *kversion.Versions
		describeV0 bool // DescribeConfigs v0 (before Kafka 1.1)
	}{
		{"0.11", kversion.V0_11_0(), true}, {"1.0", kversion.V1_0_0(), true}, {"2.0", kversion.V2_0_0(), false},
		{"2.4", kversion.V2_4_0(), false}, {"2.8", kversion.V2_8_0(), false}, {"3.0", kversion.V3_0_0(), false},
	} {
		t.Run(v.name, func(t *testing.T) {
			topic := "franz-v" + v.name
			cl := cliFranz(t, n.Addr, kgo.MaxVersions(v.max), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerBatchCompression(kgo.Lz4Compression()))
			adm := kadm.NewClient(cl)
			cr, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("7200000")}, topic)
			if err != nil {
				t.Fatalf("create topic: %v (%s)", err, cr.ErrMessage)
			}
			if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); !errors.Is(err, kerr.TopicAlreadyExists) {
				t.Fatalf("creating it again: %v", err)
			}
			recs := cliRecords(topic, 2, 200)
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			got := cliConsume(t, ctx, n.Addr, topic, cliFromStart(2), len(recs), kgo.MaxVersions(v.max))
			cliSameRecords(t, recs, got)

			// DescribeConfigs v0 has no source (kadm reports UNKNOWN); it
			// has is_default, checked raw.
			want := func(rcs kadm.ResourceConfigs, err error, key, value string) {
				t.Helper()
				if !v.describeV0 {
					cliWantConfig(t, rcs, err, topic, key, value, kmsg.ConfigSourceDynamicTopicConfig)
				} else if err != nil {
					t.Fatal(err)
				} else if c := cliConfigOf(t, rcs, topic, key); c.MaybeValue() != value {
					t.Fatalf("%s = %q, want %q", key, c.MaybeValue(), value)
				}
			}
			if v.describeV0 {
				dreq := kmsg.NewPtrDescribeConfigsRequest()
				dr := kmsg.NewDescribeConfigsRequestResource()
				dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
				dreq.Resources = append(dreq.Resources, dr)
				dresp, err := dreq.RequestWith(ctx, cl)
				if err != nil {
					t.Fatal(err)
				}
				if dresp.Version != 0 {
					t.Fatalf("DescribeConfigs went out at v%d", dresp.Version)
				}
				for _, c := range dresp.Resources[0].Configs {
					if (c.Name == "retention.ms" && c.IsDefault) || (c.Name == "segment.bytes" && !c.IsDefault) {
						t.Fatalf("DescribeConfigs v0: %s is_default %v", c.Name, c.IsDefault)
					}
				}
			}
			rcs, err := adm.DescribeTopicConfigs(ctx, topic)
			want(rcs, err, "retention.ms", "7200000")
			res, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("4000")}}, topic)
			cliAlterOK(t, "alter configs", res, err)
			rcs, err = adm.DescribeTopicConfigs(ctx, topic)
			want(rcs, err, "max.message.bytes", "4000")

			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := ends.Lookup(topic, 1); o.Err != nil || o.Offset != 100 {
				t.Fatalf("end offset of partition 1: %d (%v)", o.Offset, o.Err)
			}
			after, err := adm.ListOffsetsAfterMilli(ctx, recs[51].Timestamp.UnixMilli(), topic)
			if err != nil {
				t.Fatal(err)
			}
			// Record 51 is partition 1's 26th (offset 25).
			if o, _ := after.Lookup(topic, 1); o.Err != nil || o.Offset != 25 {
				t.Fatalf("offset after record 51's time: %d (%v), want 25", o.Offset, o.Err)
			}
			if r, err := adm.DeleteTopic(ctx, topic); err != nil || r.Err != nil {
				t.Fatalf("delete topic: %v %v", err, r.Err)
			}
		})
	}
}
