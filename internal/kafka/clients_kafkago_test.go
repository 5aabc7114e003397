package kafka_test

// Real-client compatibility: segmentio/kafka-go's Writer, Reader (one
// partition, no group), low-level Conn and request/response Client. kafka-go
// negotiates versions from ApiVersions, choosing among the few it knows
// (Fetch v2, v5 or v10; Produce v2, v3 or v7; Metadata v1 or v6).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/record"
)

// kafkagoMessages makes n messages for partition p (Writer messages need
// no partition: the balancer picks it).
func kafkagoMessages(n, from int) []kafkago.Message {
	msgs := make([]kafkago.Message, n)
	for i := range msgs {
		j := from + i
		m := kafkago.Message{Value: []byte(fmt.Sprintf("value-%d", j))}
		if j%4 != 0 {
			m.Key = []byte("key-" + strconv.Itoa(j))
		}
		if j%3 == 0 {
			m.Headers = []kafkago.Header{{Key: "n", Value: []byte(strconv.Itoa(j))}}
		}
		msgs[i] = m
	}
	return msgs
}

// kafkagoRead reads n messages of one partition from offset with a Reader.
func kafkagoRead(t *testing.T, ctx context.Context, addr, topic string, part int, offset int64, n int) []kafkago.Message {
	t.Helper()
	return kafkagoReadMax(t, ctx, addr, topic, part, offset, n, 10<<20)
}

// kafkagoReadMax is kafkagoRead with the Reader's MaxBytes.
func kafkagoReadMax(t *testing.T, ctx context.Context, addr, topic string, part int, offset int64, n, maxBytes int) []kafkago.Message {
	t.Helper()
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:   []string{addr},
		Topic:     topic,
		Partition: part,
		MinBytes:  1,
		MaxBytes:  maxBytes,
		MaxWait:   100 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		t.Fatal(err)
	}
	var out []kafkago.Message
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("reading %s-%d: %v after %d of %d messages", topic, part, err, len(out), n)
		}
		out = append(out, m)
	}
	return out
}

// kafkagoCheck compares messages read from a partition (from offset 0)
// with those written to it.
func kafkagoCheck(t *testing.T, topic string, part int, sent, got []kafkago.Message) {
	t.Helper()
	if len(got) != len(sent) {
		t.Fatalf("%s-%d: read %d messages, wrote %d", topic, part, len(got), len(sent))
	}
	for i, g := range got {
		w := sent[i]
		if g.Offset != int64(i) || g.Partition != part {
			t.Fatalf("%s-%d: message %d at %d-%d", topic, part, i, g.Partition, g.Offset)
		}
		if !cliSameBytes(g.Key, w.Key) || string(g.Value) != string(w.Value) || len(g.Headers) != len(w.Headers) {
			t.Fatalf("%s-%d@%d: key %q value %q headers %v, wrote key %q value %q headers %v", topic, part, g.Offset, g.Key, g.Value, g.Headers, w.Key, w.Value, w.Headers)
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || string(g.Headers[j].Value) != string(w.Headers[j].Value) {
				t.Fatalf("%s-%d@%d: header %d differs", topic, part, g.Offset, j)
			}
		}
	}
}

// The Writer with RequiredAcks=all, uncompressed and with each codec, and
// the Reader on each partition; the stored batches carry the codec.
func TestKafkaGoWriterReader(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	codecs := []struct {
		name  string
		codec compress.Compression
		want  record.Codec
	}{
		{"none", 0, record.None},
		{"gzip", kafkago.Gzip, record.Gzip},
		{"snappy", kafkago.Snappy, record.Snappy},
		{"lz4", kafkago.Lz4, record.LZ4},
		{"zstd", kafkago.Zstd, record.Zstd},
	}
	const partitions = 2
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "kafkago-" + c.name
			cliCreateTopic(t, ctx, adm, topic, partitions, nil)
			w := &kafkago.Writer{
				Addr:         kafkago.TCP(n.Addr),
				Topic:        topic,
				RequiredAcks: kafkago.RequireAll,
				Compression:  c.codec,
				BatchTimeout: 5 * time.Millisecond,
				BatchSize:    50,
				// Hash on the key: null keys go round-robin, so tell the
				// partitions apart by reading them back below.
				Balancer: &kafkago.RoundRobin{},
				// A Transport caches metadata (6 s by default), and the
				// shared default one predates this topic.
				Transport: &kafkago.Transport{},
			}
			defer w.Close()
			msgs := kafkagoMessages(400, 0)
			for i := 0; i < len(msgs); i += 100 {
				if err := w.WriteMessages(ctx, msgs[i:i+100]...); err != nil {
					t.Fatalf("writing with %s: %v", c.name, err)
				}
			}
			// Round-robin spreads the messages evenly; which partition got
			// which is read back from the partitions themselves.
			byValue := map[string]kafkago.Message{}
			for _, m := range msgs {
				byValue[string(m.Value)] = m
			}
			total := 0
			for p := 0; p < partitions; p++ {
				got := kafkagoRead(t, ctx, n.Addr, topic, p, kafkago.FirstOffset, len(msgs)/partitions)
				var sent []kafkago.Message
				for _, g := range got {
					sent = append(sent, byValue[string(g.Value)])
				}
				kafkagoCheck(t, topic, p, sent, got)
				total += len(got)
				cliCheckCodecs(t, ctx, n.Addr, topic, int32(p), c.want)
			}
			if total != len(msgs) {
				t.Fatalf("read %d messages, wrote %d", total, len(msgs))
			}
		})
	}
}

// The low-level Conn: DialLeader, WriteMessages and ReadBatch on the
// leader, offsets, ReadPartitions, CreateTopics and DeleteTopics.
func TestKafkaGoConn(t *testing.T) {
	n := cliNode(t, map[string]string{"auto.create.topics.enable": "false"})
	ctx := cliCtx(t)

	ctrl, err := kafkago.DialContext(ctx, "tcp", n.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	topic := "kafkago-conn"
	if err := ctrl.CreateTopics(kafkago.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: []kafkago.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}}}); err != nil {
		t.Fatalf("create topics: %v", err)
	}
	// Creating it again is no error for Conn.CreateTopics (it ignores
	// TOPIC_ALREADY_EXISTS); a bad replication factor is.
	if err := ctrl.CreateTopics(kafkago.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create existing topic: %v", err)
	}
	err = ctrl.CreateTopics(kafkago.TopicConfig{Topic: "kafkago-rf", NumPartitions: 1, ReplicationFactor: 3})
	if !errors.Is(err, kafkago.InvalidReplicationFactor) {
		t.Fatalf("create with replication factor 3: %v, want INVALID_REPLICATION_FACTOR", err)
	}

	parts, err := ctrl.ReadPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 {
		t.Fatalf("read partitions: %d, want 3", len(parts))
	}
	for _, p := range parts {
		if p.Topic != topic || p.Leader.ID != 1 || net.JoinHostPort(p.Leader.Host, strconv.Itoa(p.Leader.Port)) != n.Addr || len(p.Replicas) != 1 || len(p.Isr) != 1 {
			t.Fatalf("partition %+v", p)
		}
	}

	leader, err := kafkago.DialLeader(ctx, "tcp", n.Addr, topic, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	leader.SetDeadline(time.Now().Add(20 * time.Second))
	msgs := kafkagoMessages(50, 0)
	if _, err := leader.WriteMessages(msgs[:25]...); err != nil {
		t.Fatalf("conn write: %v", err)
	}
	if _, err := leader.WriteCompressedMessages(kafkago.Snappy.Codec(), msgs[25:]...); err != nil {
		t.Fatalf("conn compressed write: %v", err)
	}
	first, last, err := leader.ReadOffsets()
	if err != nil || first != 0 || last != 50 {
		t.Fatalf("read offsets: %d, %d, %v; want 0, 50", first, last, err)
	}
	if _, err := leader.Seek(0, kafkago.SeekAbsolute); err != nil {
		t.Fatal(err)
	}
	var got []kafkago.Message
	for len(got) < len(msgs) {
		batch := leader.ReadBatch(1, 10<<20)
		for {
			m, err := batch.ReadMessage()
			if err != nil {
				break
			}
			got = append(got, m)
		}
		if err := batch.Close(); err != nil {
			t.Fatalf("conn read batch: %v after %d messages", err, len(got))
		}
	}
	kafkagoCheck(t, topic, 1, msgs, got)
	batches := cliRawBatches(t, ctx, n.Addr, topic, 1)
	if len(batches) < 2 || batches[0].Attributes().Codec() != record.None || batches[len(batches)-1].Attributes().Codec() != record.Snappy {
		t.Fatalf("stored %d batches; want the plain ones then snappy", len(batches))
	}

	if err := ctrl.DeleteTopics(topic); err != nil {
		t.Fatalf("delete topics: %v", err)
	}
	if err := ctrl.DeleteTopics(topic); !errors.Is(err, kafkago.UnknownTopicOrPartition) {
		t.Fatalf("deleting again: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if parts, err := ctrl.ReadPartitions(topic); err == nil && len(parts) > 0 {
		t.Fatalf("a deleted topic still has %d partitions", len(parts))
	}
}

// The request/response Client: CreateTopics, Metadata and ListOffsets
// (first, last, by time).
func TestKafkaGoClient(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	cl := &kafkago.Client{Addr: kafkago.TCP(n.Addr), Timeout: 20 * time.Second}
	topic := "kafkago-client"
	cr, err := cl.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{
		{Topic: topic, NumPartitions: 2, ReplicationFactor: 1, ConfigEntries: []kafkago.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "delete"}}},
		{Topic: "kafkago-bad", NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: []kafkago.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "never"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cr.Errors[topic]; err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if err := cr.Errors["kafkago-bad"]; !errors.Is(err, kafkago.InvalidConfiguration) {
		t.Fatalf("create with cleanup.policy=never: %v, want INVALID_CONFIG", err)
	}

	md, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || md.Controller.ID != 1 || md.ClusterID == "" || len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata: %+v", md)
	}

	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	w := &kafkago.Writer{Addr: kafkago.TCP(n.Addr), Topic: topic, RequiredAcks: kafkago.RequireAll, BatchTimeout: time.Millisecond,
		Balancer: kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return 0 }), Transport: &kafkago.Transport{}}
	defer w.Close()
	msgs := kafkagoMessages(20, 0)
	for i := range msgs {
		msgs[i].Time = base.Add(time.Duration(i) * time.Second)
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	lo, err := cl.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{
		topic: {kafkago.FirstOffsetOf(0), kafkago.LastOffsetOf(1)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// One timestamp per partition and request: Kafka refuses a partition
	// listed twice, so ask for the time in a second request.
	lt, err := cl.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{
		topic: {kafkago.TimeOffsetOf(0, base.Add(12500*time.Millisecond))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]kafkago.PartitionOffsets{}
	for _, p := range lo.Topics[topic] {
		got[p.Partition] = p
	}
	if p := got[0]; p.Error != nil || p.FirstOffset != 0 {
		t.Fatalf("first offset of partition 0: %+v", p)
	}
	if p := got[1]; p.Error != nil || p.LastOffset != 0 {
		t.Fatalf("last offset of the empty partition 1: %+v", p)
	}
	// kafka-go reports the requested time, not the record's.
	if ps := lt.Topics[topic]; len(ps) != 1 || ps[0].Error != nil || len(ps[0].Offsets) != 1 {
		t.Fatalf("offset by time: %+v", ps)
	} else if _, ok := ps[0].Offsets[13]; !ok {
		t.Fatalf("offset by time 12.5s: %v, want 13", ps[0].Offsets)
	}
	read := kafkagoRead(t, ctx, n.Addr, topic, 0, kafkago.FirstOffset, len(msgs))
	for i, m := range read {
		if !m.Time.Equal(msgs[i].Time) {
			t.Fatalf("message %d: time %v, written %v", i, m.Time, msgs[i].Time)
		}
	}
	kafkagoCheck(t, topic, 0, msgs, read)
}

// A Writer that allows auto-creation writes to a topic that does not
// exist yet: the broker creates it (num.partitions) on the metadata
// request, and the Reader reads it back.
func TestKafkaGoWriterAutoCreate(t *testing.T) {
	n := cliNode(t, map[string]string{"num.partitions": "2"})
	ctx := cliCtx(t)
	topic := "kafkago-auto"
	w := &kafkago.Writer{Addr: kafkago.TCP(n.Addr), Topic: topic, RequiredAcks: kafkago.RequireOne, BatchTimeout: time.Millisecond,
		AllowAutoTopicCreation: true, Compression: kafkago.Lz4, Transport: &kafkago.Transport{},
		Balancer: kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return 1 })}
	defer w.Close()
	msgs := kafkagoMessages(30, 0)
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("writing to a new topic: %v", err)
	}
	md, err := cliAdmin(t, n.Addr).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(md.Topics[topic].Partitions); got != 2 {
		t.Fatalf("auto-created topic has %d partitions, want num.partitions=2", got)
	}
	kafkagoCheck(t, topic, 1, msgs, kafkagoRead(t, ctx, n.Addr, topic, 1, kafkago.FirstOffset, len(msgs)))
}

// The Reader from an offset inside a compressed batch starts exactly
// there; below the log start (after DeleteRecords) it gets
// OFFSET_OUT_OF_RANGE, lists the offsets and skips to the first one.
func TestKafkaGoReaderOffsets(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	topic := "kafkago-offsets"
	cliCreateTopic(t, ctx, adm, topic, 1, nil)
	w := &kafkago.Writer{Addr: kafkago.TCP(n.Addr), Topic: topic, RequiredAcks: kafkago.RequireAll, Compression: kafkago.Zstd,
		BatchTimeout: time.Millisecond, BatchSize: 1000, Transport: &kafkago.Transport{}}
	defer w.Close()
	msgs := kafkagoMessages(100, 0)
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if b := cliCheckCodecs(t, ctx, n.Addr, topic, 0, record.Zstd); b[0].NumRecords() < 40 {
		t.Fatalf("the first batch holds %d messages; the test wants one large batch", b[0].NumRecords())
	}
	got := kafkagoRead(t, ctx, n.Addr, topic, 0, 17, 83)
	if got[0].Offset != 17 || string(got[0].Value) != string(msgs[17].Value) || got[82].Offset != 99 {
		t.Fatalf("reading from 17 read %d (%q) .. %d", got[0].Offset, got[0].Value, got[82].Offset)
	}

	// Small batches and a MaxBytes that ends inside one: each response
	// ends with a partial batch.
	small := "kafkago-partial"
	cliCreateTopic(t, ctx, adm, small, 1, nil)
	conn, err := kafkago.DialLeader(ctx, "tcp", n.Addr, small, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	smsgs := kafkagoMessages(40, 0)
	for _, m := range smsgs {
		if _, err := conn.WriteMessages(m); err != nil {
			t.Fatal(err)
		}
	}
	kafkagoCheck(t, small, 0, smsgs, kafkagoReadMax(t, ctx, n.Addr, small, 0, kafkago.FirstOffset, len(smsgs), 500))

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 60})
	if dr, err := adm.DeleteRecords(ctx, offs); err != nil || dr[topic][0].Err != nil {
		t.Fatalf("delete records: %v %v", err, dr)
	}
	got = kafkagoRead(t, ctx, n.Addr, topic, 0, 3, 40)
	if got[0].Offset != 60 || string(got[0].Value) != string(msgs[60].Value) {
		t.Fatalf("reading from 3 below the log start 60 read %d first", got[0].Offset)
	}
}
