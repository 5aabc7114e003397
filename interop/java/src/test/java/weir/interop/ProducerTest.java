package weir.interop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static weir.interop.Weir.get;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** KafkaProducer against weir, each record read back and compared. */
class ProducerTest {

    /**
     * Every acks setting with every codec, on a topic of replication factor 3
     * with min.insync.replicas=2 on the cluster: keys, values, headers
     * (one with a null value), a null key, and the offsets the producer was
     * given all come back as sent.
     */
    @ParameterizedTest(name = "acks={0} compression={1}")
    @CsvSource({
        "0,none", "0,gzip", "0,snappy", "0,lz4", "0,zstd",
        "1,none", "1,gzip", "1,snappy", "1,lz4", "1,zstd",
        "all,none", "all,gzip", "all,snappy", "all,lz4", "all,zstd",
    })
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void acksAndCodecs(String acks, String codec) throws Exception {
        String bs = Weir.cluster();
        String topic = Weir.name("produce-" + acks + "-" + codec);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 2, 3, Map.of("min.insync.replicas", "2"));
        }
        int n = 200;
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of(ProducerConfig.ACKS_CONFIG, acks,
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec, ProducerConfig.LINGER_MS_CONFIG, 5))) {
            for (int i = 0; i < n; i++) {
                String key = i % 10 == 0 ? null : "key-" + i;
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, i % 2, key, value(i));
                r.headers().add("seq", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                r.headers().add("empty", null);
                sent.add(p.send(r));
            }
            p.flush();
        }
        List<ConsumerRecord<String, String>> got = Weir.readExactly(bs, Weir.partitions(topic, 2), n, Map.of());
        long[] nextOffset = new long[2];
        for (ConsumerRecord<String, String> r : got) {
            int i = Integer.parseInt(new String(r.headers().lastHeader("seq").value(), StandardCharsets.UTF_8));
            assertEquals(i % 2, r.partition(), "partition of record " + i);
            assertEquals(i % 10 == 0 ? null : "key-" + i, r.key());
            assertEquals(value(i), r.value());
            Header[] hs = r.headers().toArray();
            assertEquals(2, hs.length);
            assertEquals("empty", hs[1].key());
            assertEquals(null, hs[1].value());
            assertEquals(nextOffset[r.partition()]++, r.offset(), "records of a partition are in send order");
            RecordMetadata md = sent.get(i).get();
            if (!acks.equals("0")) {
                assertEquals(r.offset(), md.offset(), "offset the producer was given for record " + i);
            }
        }
    }

    private static String value(int i) {
        return "value-" + i + "-" + "x".repeat(i % 50);
    }

    /**
     * Idempotence is on by default: the partition's producer state shows the
     * producer's id and the sequence of its last record.
     */
    @Test
    void idempotentByDefault() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("idempotent");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
            int n = 50;
            try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
                for (int i = 0; i < n; i++) {
                    p.send(new ProducerRecord<>(topic, "v" + i));
                }
                p.flush();
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            List<ProducerState> states = get(admin.describeProducers(List.of(tp)).partitionResult(tp)).activeProducers();
            assertEquals(1, states.size(), "producers of " + tp + ": " + states);
            ProducerState s = states.get(0);
            assertTrue(s.producerId() >= 0);
            assertEquals(0, s.producerEpoch());
            assertEquals(n - 1, s.lastSequence());
            assertFalse(s.currentTransactionStartOffset().isPresent());
            assertEquals(n, Weir.readExactly(bs, List.of(tp), n, Map.of()).size());
        }
    }

    /**
     * A record that just fits max.request.size and the broker's
     * message.max.bytes (both Kafka's defaults) is stored whole; one over a
     * topic's max.message.bytes is refused with RecordTooLargeException and
     * nothing is written.
     */
    @Test
    void largeRecords() throws Exception {
        String bs = Weir.single();
        String big = Weir.name("large");
        String small = Weir.name("large-limited");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, big, 1, 1, Map.of());
            Weir.createTopic(admin, small, 1, 1, Map.of("max.message.bytes", "10000"));
            byte[] raw = new byte[1_048_576 - 200];
            new Random(1).nextBytes(raw);
            String payload = new String(java.util.Base64.getEncoder().encode(raw), StandardCharsets.US_ASCII)
                    .substring(0, raw.length);
            try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
                RecordMetadata md = p.send(new ProducerRecord<>(big, "k", payload)).get();
                assertEquals(0, md.offset());
                ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                        () -> p.send(new ProducerRecord<>(small, "k", payload.substring(0, 20_000))).get());
                assertInstanceOf(RecordTooLargeException.class, e.getCause());
            }
            // Kafka's default fetch sizes (1 MiB per partition): the first
            // batch comes whole even when it is larger.
            List<ConsumerRecord<String, String>> got = Weir.readExactly(bs, List.of(new TopicPartition(big, 0)), 1,
                    Map.of("max.partition.fetch.bytes", 1000));
            assertEquals(payload, got.get(0).value());
            TopicPartition stp = new TopicPartition(small, 0);
            assertEquals(0, get(admin.listOffsets(Map.of(stp, OffsetSpec.latest())).partitionResult(stp)).offset());
        }
    }

    /** With auto.create.topics.enable=true a send creates the topic (num.partitions=1). */
    @Test
    void sendCreatesTopic() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("auto-created");
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
            assertEquals(0, p.send(new ProducerRecord<>(topic, "k", "first")).get().offset());
        }
        try (Admin admin = Weir.admin(bs)) {
            assertEquals(1, get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic).partitions().size());
        }
        assertEquals("first", Weir.readExactly(bs, List.of(new TopicPartition(topic, 0)), 1, Map.of()).get(0).value());
    }

    /**
     * With auto.create.topics.enable=false (the cluster) a send to a missing
     * topic fails after max.block.ms, as with Kafka, and creates nothing.
     */
    @Test
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void sendDoesNotCreateTopicWhenDisabled() throws Exception {
        String bs = Weir.cluster();
        String topic = Weir.name("not-created");
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, 3000))) {
            Weir.failure(p.send(new ProducerRecord<>(topic, "k", "v")), TimeoutException.class);
        }
        try (Admin admin = Weir.admin(bs)) {
            assertFalse(get(admin.listTopics().names()).contains(topic));
        }
    }

    /** Header bytes that are not text come back byte for byte. */
    @Test
    void binaryHeaders() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("headers");
        byte[] bin = new byte[256];
        for (int i = 0; i < bin.length; i++) {
            bin[i] = (byte) i;
        }
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
            ProducerRecord<String, String> r = new ProducerRecord<>(topic, 0, "k", "v",
                    List.of(new RecordHeader("bin", bin), new RecordHeader("bin", new byte[0]), new RecordHeader("ü", bin)));
            p.send(r).get();
        }
        ConsumerRecord<String, String> got = Weir.readExactly(bs, List.of(new TopicPartition(topic, 0)), 1, Map.of()).get(0);
        Header[] hs = got.headers().toArray();
        assertEquals(3, hs.length);
        assertEquals("bin", hs[0].key());
        assertArrayEquals(bin, hs[0].value());
        assertEquals("bin", hs[1].key());
        assertArrayEquals(new byte[0], hs[1].value());
        assertEquals("ü", hs[2].key());
        assertArrayEquals(bin, hs[2].value());
    }
}
