package kafka_test

// Real-client compatibility: IBM/sarama's producers, consumer and
// ClusterAdmin, at current and old protocol versions. Sarama picks request
// versions from Config.Version rather than from ApiVersions, so an old
// Version really sends old Produce, Fetch, ListOffsets and Metadata
// requests (and legacy message sets before 0.11).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/record"
)

func saramaConfig(v sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = "weir-test"
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Backoff = 20 * time.Millisecond
	// Flush.Messages alone would hold a single SendMessage forever.
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 20 * time.Millisecond
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	return cfg
}

// saramaMessages makes n messages over partitions; headers need 0.11+.
func saramaMessages(topic string, partitions int32, n int, from int, headers bool) []*sarama.ProducerMessage {
	out := make([]*sarama.ProducerMessage, n)
	for i := range out {
		j := from + i
		m := &sarama.ProducerMessage{Topic: topic, Partition: int32(j) % partitions}
		if j%5 != 0 { // every fifth message has a null key
			m.Key = sarama.StringEncoder("key-" + strconv.Itoa(j))
		}
		if j%7 != 3 { // every seventh a tombstone: a null value
			m.Value = sarama.StringEncoder(fmt.Sprintf("value-%d-%s", j, string(make([]byte, j%50))))
		}
		if headers && j%3 == 0 {
			m.Headers = []sarama.RecordHeader{{Key: []byte("n"), Value: []byte(strconv.Itoa(j))}}
		}
		out[i] = m
	}
	return out
}

// saramaSync sends msgs with a SyncProducer; Offset and Partition are set
// on each message.
func saramaSync(t *testing.T, addr string, cfg *sarama.Config, msgs []*sarama.ProducerMessage) {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sync producer (version %s): %v", cfg.Version, err)
	}
	defer p.Close()
	// A few one by one, then the rest in one call (batched by the producer).
	few := min(10, len(msgs))
	for _, m := range msgs[:few] {
		if _, _, err := p.SendMessage(m); err != nil {
			t.Fatalf("send message (version %s, codec %s): %v", cfg.Version, cfg.Producer.Compression, err)
		}
	}
	if err := p.SendMessages(msgs[few:]); err != nil {
		t.Fatalf("send messages (version %s, codec %s): %v", cfg.Version, cfg.Producer.Compression, err)
	}
}

// saramaAsync sends msgs with an AsyncProducer and waits for every success.
func saramaAsync(t *testing.T, ctx context.Context, addr string, cfg *sarama.Config, msgs []*sarama.ProducerMessage) {
	t.Helper()
	p, err := sarama.NewAsyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("async producer: %v", err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, m := range msgs {
			select {
			case p.Input() <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	for done := 0; done < len(msgs); done++ {
		select {
		case <-p.Successes():
		case perr := <-p.Errors():
			t.Fatalf("async produce (version %s, codec %s): %v", cfg.Version, cfg.Producer.Compression, perr.Err)
		case <-ctx.Done():
			t.Fatalf("async produce: %d of %d acknowledged before the deadline", done, len(msgs))
		}
	}
	wg.Wait()
}

// saramaConsume reads, with one consumer, want[p] messages of each
// partition p from offset.
func saramaConsume(t *testing.T, ctx context.Context, addr string, cfg *sarama.Config, topic string, offset int64, want map[int32]int) map[int32][]*sarama.ConsumerMessage {
	t.Helper()
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("consumer (version %s): %v", cfg.Version, err)
	}
	defer c.Close()
	pcs := map[int32]sarama.PartitionConsumer{}
	for p := range want {
		pc, err := c.ConsumePartition(topic, p, offset)
		if err != nil {
			t.Fatalf("consume partition %s-%d (version %s): %v", topic, p, cfg.Version, err)
		}
		defer pc.AsyncClose()
		pcs[p] = pc
	}
	out := map[int32][]*sarama.ConsumerMessage{}
	for p, pc := range pcs {
		for len(out[p]) < want[p] {
			select {
			case m := <-pc.Messages():
				out[p] = append(out[p], m)
			case cerr := <-pc.Errors():
				t.Fatalf("consuming %s-%d (version %s): %v", topic, p, cfg.Version, cerr.Err)
			case <-ctx.Done():
				t.Fatalf("consuming %s-%d (version %s): %d of %d messages before the deadline", topic, p, cfg.Version, len(out[p]), want[p])
			}
		}
	}
	return out
}

// saramaCheck consumes every partition from the oldest offset and
// compares with what was sent (Offset set by the producer).
func saramaCheck(t *testing.T, ctx context.Context, addr string, cfg *sarama.Config, topic string, partitions int32, sent []*sarama.ProducerMessage) {
	t.Helper()
	byPart := map[int32][]*sarama.ProducerMessage{}
	counts := map[int32]int{}
	for _, m := range sent {
		byPart[m.Partition] = append(byPart[m.Partition], m)
		counts[m.Partition]++
	}
	for p := int32(0); p < partitions; p++ {
		counts[p] += 0
	}
	all := saramaConsume(t, ctx, addr, cfg, topic, sarama.OffsetOldest, counts)
	for p := int32(0); p < partitions; p++ {
		want := byPart[p]
		for i, g := range all[p] {
			w := want[i]
			if g.Offset != int64(i) || w.Offset != g.Offset {
				t.Fatalf("%s-%d: message %d has offset %d (produced at %d)", topic, p, i, g.Offset, w.Offset)
			}
			wk, wv := encoded(t, w.Key), encoded(t, w.Value)
			if !cliSameBytes(wk, g.Key) || !cliSameBytes(wv, g.Value) {
				t.Fatalf("%s-%d@%d: key %q value %q, produced key %q value %q", topic, p, g.Offset, g.Key, g.Value, wk, wv)
			}
			if len(w.Headers) != len(g.Headers) {
				t.Fatalf("%s-%d@%d: %d headers, produced %d", topic, p, g.Offset, len(g.Headers), len(w.Headers))
			}
			// Sarama stamps messages from 0.10 on; older ones have none.
			if !w.Timestamp.IsZero() && !g.Timestamp.Equal(w.Timestamp.Truncate(time.Millisecond)) {
				t.Fatalf("%s-%d@%d: timestamp %v, produced %v", topic, p, g.Offset, g.Timestamp, w.Timestamp)
			}
			for j := range w.Headers {
				if string(g.Headers[j].Key) != string(w.Headers[j].Key) || string(g.Headers[j].Value) != string(w.Headers[j].Value) {
					t.Fatalf("%s-%d@%d: header %d differs", topic, p, g.Offset, j)
				}
			}
		}
	}
}

func encoded(t *testing.T, e sarama.Encoder) []byte {
	t.Helper()
	if e == nil {
		return nil
	}
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var saramaCodecs = []struct {
	codec sarama.CompressionCodec
	want  record.Codec
}{
	{sarama.CompressionNone, record.None},
	{sarama.CompressionGZIP, record.Gzip},
	{sarama.CompressionSnappy, record.Snappy},
	{sarama.CompressionLZ4, record.LZ4},
	{sarama.CompressionZSTD, record.Zstd},
}

// SyncProducer and AsyncProducer with acks=all and every codec (zstd needs
// 2.1), read back by the partition consumer; the stored batches carry the
// codec.
func TestSaramaProducersEveryCodec(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	const partitions = 3
	for _, c := range saramaCodecs {
		t.Run(c.codec.String(), func(t *testing.T) {
			topic := "sarama-" + c.codec.String()
			cliCreateTopic(t, ctx, adm, topic, partitions, nil)
			cfg := saramaConfig(sarama.V2_1_0_0)
			cfg.Producer.Compression = c.codec
			cfg.Producer.Flush.Messages = 20
			sent := saramaMessages(topic, partitions, 300, 0, true)
			saramaSync(t, n.Addr, cfg, sent)
			more := saramaMessages(topic, partitions, 300, 300, true)
			saramaAsync(t, ctx, n.Addr, cfg, more)
			saramaCheck(t, ctx, n.Addr, cfg, topic, partitions, append(sent, more...))
			for p := int32(0); p < partitions; p++ {
				cliCheckCodecs(t, ctx, n.Addr, topic, p, c.want)
			}
		})
	}
}

// The idempotent producer: InitProducerId, sequence numbers, one request
// in flight; its batches carry the producer id and every message lands
// once.
func TestSaramaIdempotentProducer(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	// 0.11 sends InitProducerId v0 and Produce v3, the first versions
	// with idempotence; 2.8 InitProducerId v4 and Produce v8.
	for _, v := range []sarama.KafkaVersion{sarama.V0_11_0_0, sarama.V2_8_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			topic := "sarama-idempotent-" + v.String()
			cliCreateTopic(t, ctx, adm, topic, 2, nil)
			cfg := saramaConfig(v)
			cfg.Producer.Idempotent = true
			cfg.Net.MaxOpenRequests = 1
			cfg.Producer.Compression = sarama.CompressionLZ4
			cfg.Producer.Flush.Messages = 10
			sent := saramaMessages(topic, 2, 200, 0, true)
			saramaSync(t, n.Addr, cfg, sent)
			more := saramaMessages(topic, 2, 400, 200, true)
			saramaAsync(t, ctx, n.Addr, cfg, more)
			saramaCheck(t, ctx, n.Addr, cfg, topic, 2, append(sent, more...))
			for p := int32(0); p < 2; p++ {
				// Each producer has its own id, its sequences from 0 per partition.
				next := map[int64]int32{}
				for _, b := range cliCheckCodecs(t, ctx, n.Addr, topic, p, record.LZ4) {
					if b.ProducerID() < 0 || b.BaseSequence() != next[b.ProducerID()] {
						t.Fatalf("%s-%d batch at %d: producer id %d, sequence %d, want sequence %d", topic, p, b.BaseOffset(), b.ProducerID(), b.BaseSequence(), next[b.ProducerID()])
					}
					next[b.ProducerID()] = b.LastSequence() + 1
				}
				if len(next) != 2 {
					t.Fatalf("%s-%d: batches of %d producer ids, want 2 (the sync and the async producer)", topic, p, len(next))
				}
			}
		})
	}
}

// A small fetch size and messages much larger than it, on two partitions
// fetched together: each fetch returns at least one whole batch of the
// first partition with data, and both partitions are read completely.
func TestSaramaSmallFetchLargeMessages(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	topic := "sarama-large"
	cliCreateTopic(t, ctx, cliAdmin(t, n.Addr), topic, 2, nil)
	cfg := saramaConfig(sarama.V2_8_0_0)
	cfg.Producer.Flush.Messages = 1
	var sent []*sarama.ProducerMessage
	for i := 0; i < 40; i++ {
		v := make([]byte, 30_000+i)
		for j := range v {
			v[j] = byte(i + j*31)
		}
		sent = append(sent, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2), Key: sarama.StringEncoder(strconv.Itoa(i)), Value: sarama.ByteEncoder(v)})
	}
	saramaSync(t, n.Addr, cfg, sent)
	cfg.Consumer.Fetch.Default = 4096
	cfg.Consumer.Fetch.Min = 1
	saramaCheck(t, ctx, n.Addr, cfg, topic, 2, sent)

	// Many small batches and a fetch size that ends inside one: the
	// response ends with a partial batch, which the consumer drops and
	// fetches again.
	small := "sarama-partial"
	cliCreateTopic(t, ctx, cliAdmin(t, n.Addr), small, 1, nil)
	pcfg := saramaConfig(sarama.V2_8_0_0)
	pcfg.Producer.Flush.MaxMessages = 1
	msgs := saramaMessages(small, 1, 60, 0, false)
	saramaSync(t, n.Addr, pcfg, msgs)
	if b := cliRawBatches(t, ctx, n.Addr, small, 0); len(b) < 30 {
		t.Fatalf("%d batches, want one per message or close", len(b))
	}
	ccfg := saramaConfig(sarama.V2_8_0_0)
	ccfg.Consumer.Fetch.Default = 700
	saramaCheck(t, ctx, n.Addr, ccfg, small, 1, msgs)
}

// ClusterAdmin: CreateTopic (also validate-only and errors), DescribeTopics,
// DescribeConfig, AlterConfig (legacy, whole set), IncrementalAlterConfig,
// CreatePartitions, DeleteRecords, DescribeLogDirs, DescribeCluster,
// DeleteTopic.
func TestSaramaClusterAdmin(t *testing.T) {
	n := cliNode(t, map[string]string{"auto.create.topics.enable": "false"})
	ctx := cliCtx(t)
	cfg := saramaConfig(sarama.V3_6_0_0)
	adm, err := sarama.NewClusterAdmin([]string{n.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	topic := "sarama-admin"
	retention := "3600000"
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := adm.CreateTopic("sarama-validated", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, true); err != nil {
		t.Fatalf("validate-only create: %v", err)
	}
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("creating an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	bad := "nope"
	err = adm.CreateTopic("sarama-bad", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &bad}}, false)
	if !errors.Is(err, sarama.ErrInvalidConfig) {
		t.Fatalf("creating with retention.ms=nope: %v, want INVALID_CONFIG", err)
	}
	err = adm.CreateTopic("sarama-rf", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 2}, false)
	if !errors.Is(err, sarama.ErrInvalidReplicationFactor) {
		t.Fatalf("creating with replication factor 2 on one broker: %v, want INVALID_REPLICATION_FACTOR", err)
	}
	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics["sarama-validated"]; ok || len(topics) != 1 {
		t.Fatalf("topics: %v, want only %s", topics, topic)
	}
	if d := topics[topic]; d.NumPartitions != 2 || d.ReplicationFactor != 1 || d.ConfigEntries["retention.ms"] == nil || *d.ConfigEntries["retention.ms"] != retention {
		t.Fatalf("listed %s: %+v", topic, d)
	}

	md, err := adm.DescribeTopics([]string{topic, "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(md) != 2 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 2 || md[0].Partitions[0].Leader != 1 || md[1].Err != sarama.ErrUnknownTopicOrPartition {
		t.Fatalf("describe topics: %+v %+v", md[0], md[1])
	}

	describe := func(key string) sarama.ConfigEntry {
		t.Helper()
		entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name == key {
				return e
			}
		}
		t.Fatalf("%s not described", key)
		return sarama.ConfigEntry{}
	}
	if e := describe("retention.ms"); e.Value != retention || e.Source != sarama.SourceTopic || e.Default {
		t.Fatalf("retention.ms: %+v", e)
	}
	if e := describe("cleanup.policy"); e.Value != "delete" || e.Source != sarama.SourceDefault || !e.Default {
		t.Fatalf("cleanup.policy: %+v", e)
	}

	// Legacy AlterConfigs replaces the set: retention.ms goes back to the
	// default.
	maxBytes := "50000"
	if err := adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"max.message.bytes": &maxBytes}, false); err != nil {
		t.Fatalf("alter config: %v", err)
	}
	if e := describe("max.message.bytes"); e.Value != maxBytes || e.Source != sarama.SourceTopic {
		t.Fatalf("max.message.bytes after alter: %+v", e)
	}
	if e := describe("retention.ms"); e.Value != "604800000" || e.Source != sarama.SourceDefault {
		t.Fatalf("retention.ms after a legacy alter without it: %+v", e)
	}
	compact := "compact"
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &compact},
	}, false); err != nil {
		t.Fatalf("incremental alter config: %v", err)
	}
	if e := describe("cleanup.policy"); e.Value != "compact" || e.Source != sarama.SourceTopic {
		t.Fatalf("cleanup.policy after incremental alter: %+v", e)
	}
	if e := describe("max.message.bytes"); e.Value != maxBytes {
		t.Fatalf("an incremental alter dropped max.message.bytes: %+v", e)
	}
	err = adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"max.message.bytes": &bad}, false)
	if !errors.Is(err, sarama.ErrInvalidConfig) {
		t.Fatalf("alter max.message.bytes=nope: %v, want INVALID_CONFIG", err)
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{"log.retention.hours"}})
	if err != nil || len(entries) != 1 || entries[0].Value != "168" || entries[0].Source != sarama.SourceDefault {
		t.Fatalf("describe broker log.retention.hours: %+v, %v", entries, err)
	}

	if err := adm.CreatePartitions(topic, 3, nil, false); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	// Keyed records for the now compacted topic, then DeleteRecords.
	cfgP := saramaConfig(sarama.V3_6_0_0)
	msgs := saramaMessages(topic, 3, 30, 1, false)
	for _, m := range msgs {
		m.Key = sarama.StringEncoder("k")
	}
	saramaSync(t, n.Addr, cfgP, msgs)
	// Compacted only: DeleteRecords is refused; with delete too it works.
	if err := adm.DeleteRecords(topic, map[int32]int64{2: 5}); !errors.Is(err, sarama.ErrPolicyViolation) {
		t.Fatalf("delete records of a compacted topic: %v, want POLICY_VIOLATION", err)
	}
	compactDelete := "compact,delete"
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &compactDelete},
	}, false); err != nil {
		t.Fatalf("incremental alter cleanup.policy: %v", err)
	}
	if err := adm.DeleteRecords(topic, map[int32]int64{2: 5}); err != nil {
		t.Fatalf("delete records: %v", err)
	}
	starts, err := cliAdmin(t, n.Addr).ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 2); o.Offset != 5 {
		t.Fatalf("start offset of partition 2 after delete records = %d, want 5", o.Offset)
	}

	dirs, err := adm.DescribeLogDirs([]int32{1})
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, d := range dirs[1] {
		for _, dt := range d.Topics {
			if dt.Topic == topic {
				for _, p := range dt.Partitions {
					size += p.Size
				}
			}
		}
	}
	if size <= 0 {
		t.Fatalf("describe log dirs: %s has size %d", topic, size)
	}
	brokers, controller, err := adm.DescribeCluster()
	if err != nil || len(brokers) != 1 || brokers[0].ID() != 1 || brokers[0].Addr() != n.Addr || controller != 1 {
		t.Fatalf("describe cluster: %v brokers, controller %d, %v", len(brokers), controller, err)
	}

	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	if err := adm.DeleteTopic(topic); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("deleting it again: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	names, err := kadm.NewClient(cliFranz(t, n.Addr)).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names.Has(topic) {
		t.Fatal("deleted topic still listed")
	}
}

// Old protocol versions. Sarama chooses request versions from
// Config.Version: before 0.10 it produces magic 0 message sets, from 0.10
// magic 1 (Produce v2), from 0.11 record batches. Weir serves Produce from
// v0, so every version can produce; it serves Fetch from v4 and
// ListOffsets from v1 (as Kafka 4 does), so consuming needs 0.11 (Fetch
// v5): the oldest sarama Version that both produces and consumes.
func TestSaramaOldProtocolVersions(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	versions := []struct {
		v       sarama.KafkaVersion
		consume bool
		codecs  []sarama.CompressionCodec
	}{
		{sarama.V0_8_2_0, false, []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy}},
		{sarama.V0_9_0_0, false, []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy}}, // lz4 needs 0.10
		{sarama.V0_10_0_0, false, []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4}},
		{sarama.V0_10_2_0, false, []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4}},
		{sarama.V0_11_0_0, true, []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4}},
		{sarama.V1_0_0_0, true, []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4}},
		{sarama.V2_0_0_0, true, []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionLZ4}},
		{sarama.MaxVersion, true, []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionZSTD}},
	}
	for _, vc := range versions {
		for _, codec := range vc.codecs {
			t.Run(vc.v.String()+"-"+codec.String(), func(t *testing.T) {
				topic := "sarama-v" + vc.v.String() + "-" + codec.String()
				cliCreateTopic(t, ctx, adm, topic, 2, nil)
				cfg := saramaConfig(vc.v)
				cfg.Producer.Compression = codec
				cfg.Producer.Flush.Messages = 10
				headers := vc.v.IsAtLeast(sarama.V0_11_0_0)
				sent := saramaMessages(topic, 2, 100, 0, headers)
				saramaSync(t, n.Addr, cfg, sent)
				// Read back with a current client (and with this version
				// where it can fetch).
				check := cfg
				if !vc.consume {
					check = saramaConfig(sarama.V2_1_0_0)
				}
				saramaCheck(t, ctx, n.Addr, check, topic, 2, sent)
				// Legacy message sets are stored as one v2 batch each;
				// the codec is kept.
				want := map[sarama.CompressionCodec]record.Codec{sarama.CompressionNone: record.None, sarama.CompressionGZIP: record.Gzip,
					sarama.CompressionSnappy: record.Snappy, sarama.CompressionLZ4: record.LZ4, sarama.CompressionZSTD: record.Zstd}[codec]
				for p := int32(0); p < 2; p++ {
					batches := cliCheckCodecs(t, ctx, n.Addr, topic, p, want)
					if !vc.v.IsAtLeast(sarama.V0_10_0_0) {
						continue
					}
					for _, b := range batches {
						// Magic 1 carries timestamps; they must survive.
						if b.MaxTimestamp() <= 0 {
							t.Fatalf("%s-%d batch at %d: max timestamp %d", topic, p, b.BaseOffset(), b.MaxTimestamp())
						}
					}
				}
			})
		}
	}
}

// acks=0 and acks=1 producers; a consumer from the newest offset sees only
// later messages; a consumer from an offset inside a compressed batch
// starts exactly there; a message over max.message.bytes is
// MESSAGE_TOO_LARGE.
func TestSaramaAcksAndOffsets(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "sarama-acks"
	cliCreateTopic(t, ctx, adm, topic, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("10000")})

	// acks=0: no answers; the messages still arrive, in order.
	cfg := saramaConfig(sarama.V2_8_0_0)
	cfg.Producer.RequiredAcks = sarama.NoResponse
	cfg.Producer.Compression = sarama.CompressionSnappy
	none := saramaMessages(topic, 1, 100, 0, true)
	saramaSync(t, n.Addr, cfg, none)
	// Nothing tells when they are in: poll the end offset, so that the
	// next producer's messages (another connection) come after them.
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := ends.Lookup(topic, 0); o.Offset == int64(len(none)) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("deadline waiting for the acks=0 messages")
		}
	}
	// acks=1.
	cfg.Producer.RequiredAcks = sarama.WaitForLocal
	cfg.Producer.Compression = sarama.CompressionGZIP
	one := saramaMessages(topic, 1, 100, 100, true)
	saramaSync(t, n.Addr, cfg, one)
	// With acks=0 sarama cannot know the offsets: read everything back and
	// compare in order.
	got := saramaConsume(t, ctx, n.Addr, cfg, topic, sarama.OffsetOldest, map[int32]int{0: 200})[0]
	for i, g := range got {
		w := append(none, one...)[i]
		if g.Offset != int64(i) || !cliSameBytes(g.Value, encoded(t, w.Value)) {
			t.Fatalf("message %d: offset %d value %q, want value %q", i, g.Offset, g.Value, encoded(t, w.Value))
		}
	}

	// From an offset in the middle of a compressed batch.
	mid := saramaConsume(t, ctx, n.Addr, cfg, topic, 150, map[int32]int{0: 50})[0]
	if mid[0].Offset != 150 || mid[49].Offset != 199 {
		t.Fatalf("consuming from 150 read %d..%d", mid[0].Offset, mid[49].Offset)
	}

	// From the newest offset: once the partition consumer has asked for
	// the newest offset (200), a new message is the first one read.
	c, err := sarama.NewConsumer([]string{n.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetNewest) // resolves the offset before returning
	if err != nil {
		t.Fatal(err)
	}
	defer pc.AsyncClose()
	late := saramaMessages(topic, 1, 1, 1000, true)
	saramaSync(t, n.Addr, cfg, late)
	select {
	case m := <-pc.Messages():
		if m.Offset != 200 || string(m.Value) != string(encoded(t, late[0].Value)) {
			t.Fatalf("consumer from the newest offset read %d %q", m.Offset, m.Value)
		}
	case cerr := <-pc.Errors():
		t.Fatal(cerr)
	case <-ctx.Done():
		t.Fatal("deadline waiting for the late message")
	}

	// Too large for the topic.
	p, err := sarama.NewSyncProducer([]string{n.Addr}, saramaConfig(sarama.V2_8_0_0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	big := make([]byte, 20000)
	for i := range big {
		big[i] = byte(i * 7919 >> 3) // poorly compressible
	}
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(big)})
	if !errors.Is(err, sarama.ErrMessageSizeTooLarge) {
		t.Fatalf("a 20000-byte message with max.message.bytes=10000: %v, want MESSAGE_TOO_LARGE", err)
	}
}
