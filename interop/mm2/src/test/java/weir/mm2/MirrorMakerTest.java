package weir.mm2;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.mirror.Checkpoint;
import org.apache.kafka.connect.mirror.Heartbeat;
import org.apache.kafka.connect.mirror.MirrorMaker;
import org.apache.kafka.connect.mirror.OffsetSync;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * MirrorMaker 2 (4.3.1, the dedicated driver run in this JVM) replicating
 * A->B between two single-node weir clusters, then weir's own mirror
 * (`weir mirror`) taking over the same flow from MM2's internal topics
 * with the same properties file, MM2's client reading what weir's mirror
 * wrote, and MM2 taking the flow back. The steps build on each other and
 * run in order.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MirrorMakerTest {
    static final Duration WAIT = Duration.ofSeconds(90);
    static final String TOPIC = "orders";
    static final String REMOTE = "A.orders";
    static final int PARTITIONS = 3;
    /**
     * Records per partition written before MM2 starts, after it stops (for
     * weir's mirror), and after weir's mirror stops (for MM2 again).
     */
    static final int FIRST = 40, SECOND = 25, THIRD = 15;
    /** Groups on A: one committed at the end of each partition, one midway. */
    static final String GROUP_END = "app-end", GROUP_MID = "app-mid";
    static final int MID = 17;

    String a, b;
    Path config;
    Path weirLog;
    Process weirMirror;
    /** Every record written to A, by partition, in offset order. */
    final Map<Integer, List<ConsumerRecord<byte[], byte[]>>> written = new HashMap<>();

    @BeforeAll
    void setUp() throws Exception {
        a = env("WEIR_A_BOOTSTRAP");
        b = env("WEIR_B_BOOTSTRAP");
        config = Files.createTempFile("mm2-", ".properties");
        weirLog = Files.createTempFile("weir-mirror-", ".log");
        // One file for MM2 and weir's mirror. Single-node clusters, so every
        // replication factor is 1; short intervals so that the test sees
        // checkpoints and positions within seconds. MM2's B->A herder (there
        // only to emit heartbeats into A) is switched off.
        String props = String.join("\n",
                "clusters = A, B",
                "A.bootstrap.servers = " + a,
                "B.bootstrap.servers = " + b,
                "A->B.enabled = true",
                "B->A.enabled = false",
                "B->A.emit.heartbeats.enabled = false",
                "topics = " + TOPIC,
                "groups = app-.*",
                "replication.factor = 1",
                "offset-syncs.topic.replication.factor = 1",
                "checkpoints.topic.replication.factor = 1",
                "heartbeats.topic.replication.factor = 1",
                "offset.storage.replication.factor = 1",
                "config.storage.replication.factor = 1",
                "status.storage.replication.factor = 1",
                "emit.checkpoints.interval.seconds = 1",
                "refresh.topics.interval.seconds = 1",
                "refresh.groups.interval.seconds = 1",
                "sync.topic.configs.enabled = false",
                "sync.topic.acls.enabled = false",
                // Connect's worker: source positions flushed every second.
                "B.offset.flush.interval.ms = 1000",
                "");
        Files.writeString(config, props);
        try (Admin admin = admin(a)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
        }
    }

    @AfterAll
    void tearDown() throws Exception {
        if (weirMirror != null) {
            stopWeirMirror();
        }
        Files.deleteIfExists(config);
    }

    /**
     * MM2 copies A's topic to B as A.orders record for record (partition,
     * offset order, key, value, headers, timestamp), creates heartbeats,
     * offset-syncs and checkpoints topics whose records its own classes
     * read, and translates the groups' offsets with RemoteClusterUtils.
     */
    @Test
    @Order(1)
    void mirrorMakerReplicatesAToB() throws Exception {
        produce(0, FIRST);
        commit(GROUP_END, p -> (long) FIRST);
        commit(GROUP_MID, p -> (long) MID);

        MirrorMaker mm = new MirrorMaker(Utils.propsToStringMap(Utils.loadProps(config.toString())));
        mm.start();
        try {
            awaitCopied(FIRST);
            assertReplicated(FIRST);

            // The group at the end of each partition translates exactly: MM2
            // syncs the last record of a batch at its offset flush.
            Map<TopicPartition, OffsetAndMetadata> end = awaitTranslation(GROUP_END, FIRST);
            assertEquals(PARTITIONS, end.size(), "translated partitions " + end);
            // The group midway translates to at most its position (MM2 never
            // points past replicated data; it rounds towards the last sync).
            Map<TopicPartition, OffsetAndMetadata> mid = awaitTranslated(GROUP_MID);
            for (int p = 0; p < PARTITIONS; p++) {
                OffsetAndMetadata o = mid.get(new TopicPartition(REMOTE, p));
                assertNotNull(o, "no translation of " + GROUP_MID + " for partition " + p + ": " + mid);
                assertTrue(o.offset() >= 0 && o.offset() <= MID, "translated " + o + " for group at " + MID);
            }

            try (Admin admin = admin(b)) {
                Set<String> topics = admin.listTopics().names().get();
                assertTrue(topics.contains("heartbeats"), "topics on B: " + topics);
                assertTrue(topics.contains("A.checkpoints.internal"), "topics on B: " + topics);
                assertTrue(topics.contains("mm2-offsets.A.internal"), "topics on B: " + topics);
            }
            try (Admin admin = admin(a)) {
                Set<String> topics = admin.listTopics().names().get();
                assertTrue(topics.contains("mm2-offset-syncs.B.internal"), "topics on A: " + topics);
            }
            List<Heartbeat> beats = readAll(b, "heartbeats").stream().map(Heartbeat::deserializeRecord).toList();
            assertFalse(beats.isEmpty(), "no heartbeat on B");
            for (Heartbeat h : beats) {
                assertEquals("A", h.sourceClusterAlias());
                assertEquals("B", h.targetClusterAlias());
            }
            assertSyncs(FIRST);
        } finally {
            mm.stop();
            mm.awaitStop();
        }
    }

    /**
     * weir's mirror, started with MM2's file after MM2 stopped, resumes
     * from the positions MM2 left in mm2-offsets.A.internal: the records
     * written since are copied once, none before them again. It reads
     * MM2's offset syncs and checkpoints too, and MM2's client reads the
     * checkpoints, offset syncs and heartbeats it writes.
     */
    @Test
    @Order(2)
    void weirMirrorResumesFromMirrorMaker() throws Exception {
        produce(FIRST, SECOND);
        long started = System.currentTimeMillis();
        startWeirMirror();
        awaitCopied(FIRST + SECOND);
        assertReplicated(FIRST + SECOND);

        commit(GROUP_END, p -> (long) (FIRST + SECOND));
        Map<TopicPartition, OffsetAndMetadata> end = awaitTranslation(GROUP_END, FIRST + SECOND);
        assertEquals(PARTITIONS, end.size(), "translated partitions " + end);
        for (Checkpoint c : readAll(b, "A.checkpoints.internal").stream().map(Checkpoint::deserializeRecord).toList()) {
            assertTrue(c.consumerGroupId().startsWith("app-"), "checkpoint " + c);
            assertEquals(REMOTE, c.topicPartition().topic(), "checkpoint " + c);
            assertTrue(c.downstreamOffset() <= c.upstreamOffset(), "checkpoint " + c);
        }
        assertSyncs(FIRST + SECOND);
        assertPositions(FIRST + SECOND);
        waitFor("a heartbeat from weir's mirror", () -> readAll(b, "heartbeats").stream()
                .map(Heartbeat::deserializeRecord)
                .anyMatch(h -> h.timestamp() >= started && h.sourceClusterAlias().equals("A")
                        && h.targetClusterAlias().equals("B")));
        stopWeirMirror();
    }

    /**
     * MM2, started again after weir's mirror stopped, resumes from the
     * positions weir's mirror left in Connect's offset store: the records
     * written since are copied once, none before them again, and MM2
     * translates the group from the offset syncs of both.
     */
    @Test
    @Order(3)
    void mirrorMakerResumesFromWeirMirror() throws Exception {
        int total = FIRST + SECOND + THIRD;
        produce(FIRST + SECOND, THIRD);
        commit(GROUP_END, p -> (long) total);
        MirrorMaker mm = new MirrorMaker(Utils.propsToStringMap(Utils.loadProps(config.toString())));
        mm.start();
        try {
            awaitCopied(total);
            assertReplicated(total);
            Map<TopicPartition, OffsetAndMetadata> end = awaitTranslation(GROUP_END, total);
            assertEquals(PARTITIONS, end.size(), "translated partitions " + end);
        } finally {
            mm.stop();
            mm.awaitStop();
        }
        assertSyncs(total);
        assertPositions(total);
    }

    // --- the steps' helpers

    /** Writes n records to each partition, numbered from `from`. */
    void produce(int from, int n) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        long base = System.currentTimeMillis() - 3_600_000L;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            for (int p = 0; p < PARTITIONS; p++) {
                for (int i = from; i < from + n; i++) {
                    byte[] key = i % 7 == 3 ? null : bytes("k" + p + "-" + i);
                    byte[] value = bytes("v" + p + "-" + i);
                    List<Header> headers = i % 2 == 0
                            ? List.of(new RecordHeader("h", bytes("x" + i)), new RecordHeader("empty", new byte[0]))
                            : List.of();
                    producer.send(new ProducerRecord<>(TOPIC, p, base + p * 1000L + i, key, value, headers)).get();
                }
            }
        }
        written.clear();
        for (ConsumerRecord<byte[], byte[]> r : readAll(a, TOPIC)) {
            written.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
        }
    }

    /** Commits offset(p) for each partition of the topic as group on A. */
    void commit(String group, java.util.function.IntFunction<Long> offset) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            offsets.put(new TopicPartition(TOPIC, p), new OffsetAndMetadata(offset.apply(p)));
        }
        try (Admin admin = admin(a)) {
            admin.alterConsumerGroupOffsets(group, offsets).all().get();
        }
    }

    /** Waits until every partition of the remote topic on B holds n records. */
    void awaitCopied(int n) throws Exception {
        try (Admin admin = admin(b)) {
            waitFor(REMOTE + " with " + n + " records per partition", () -> {
                try {
                    if (!admin.listTopics().names().get().contains(REMOTE)) {
                        return false;
                    }
                    Map<TopicPartition, OffsetSpec> want = new HashMap<>();
                    for (int p = 0; p < PARTITIONS; p++) {
                        want.put(new TopicPartition(REMOTE, p), OffsetSpec.latest());
                    }
                    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = admin.listOffsets(want).all().get();
                    return ends.values().stream().allMatch(e -> e.offset() >= n);
                } catch (Exception e) {
                    return false;
                }
            });
        }
    }

    /**
     * Checks that the remote topic holds exactly the records written to A,
     * each once, at the same partition and offset, with the same key,
     * value, headers and timestamp.
     */
    void assertReplicated(int n) throws Exception {
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> copied = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readAll(b, REMOTE)) {
            copied.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
        }
        assertEquals(PARTITIONS, copied.size(), "partitions of " + REMOTE);
        for (int p = 0; p < PARTITIONS; p++) {
            List<ConsumerRecord<byte[], byte[]>> src = written.get(p), dst = copied.get(p);
            assertEquals(n, src.size());
            assertEquals(values(src), values(dst), "records of " + REMOTE + "-" + p + " (duplicated or lost)");
            for (int i = 0; i < n; i++) {
                ConsumerRecord<byte[], byte[]> s = src.get(i), d = dst.get(i);
                assertEquals(s.offset(), d.offset(), "offset of " + str(s.value()));
                assertArrayEquals(s.key(), d.key(), "key of " + str(s.value()));
                assertEquals(s.timestamp(), d.timestamp(), "timestamp of " + str(s.value()));
                assertEquals(s.timestampType(), d.timestampType(), "timestamp type of " + str(s.value()));
                assertEquals(headers(s), headers(d), "headers of " + str(s.value()));
            }
        }
    }

    /**
     * Checks the offset syncs on A with MM2's own decoder: every sync is
     * of the topic, exact (offsets are the same on both sides here), and
     * the last of each partition is at most n-1.
     */
    void assertSyncs(int n) throws Exception {
        Map<Integer, OffsetSync> last = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readAll(a, "mm2-offset-syncs.B.internal")) {
            OffsetSync s = OffsetSync.deserializeRecord(r);
            assertEquals(TOPIC, s.topicPartition().topic(), "sync " + s);
            assertEquals(s.upstreamOffset(), s.downstreamOffset(), "sync " + s);
            last.put(s.topicPartition().partition(), s);
        }
        assertEquals(PARTITIONS, last.size(), "partitions synced: " + last);
        for (OffsetSync s : last.values()) {
            assertTrue(s.upstreamOffset() < n, "sync past the data: " + s);
        }
    }

    /**
     * Checks the source positions in Connect's offset store on B, written
     * by MM2 and then by weir's mirror: one key per source partition, byte
     * for byte the same from both writers and always on the same partition
     * of the store (so that compaction and Connect's last-wins reading keep
     * the newest), the last one at the last record copied.
     */
    void assertPositions(int n) throws Exception {
        Map<String, Set<Integer>> partitionsOf = new HashMap<>();
        Map<String, String> last = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readAll(b, "mm2-offsets.A.internal")) {
            String key = str(r.key());
            if (!key.startsWith("[\"MirrorSourceConnector\",")) {
                continue;
            }
            partitionsOf.computeIfAbsent(key, k -> new HashSet<>()).add(r.partition());
            last.put(key, str(r.value()));
        }
        assertEquals(PARTITIONS, partitionsOf.size(), "position keys " + partitionsOf.keySet());
        partitionsOf.forEach((k, ps) -> assertEquals(1, ps.size(), "store partitions of " + k + ": " + partitionsOf));
        last.forEach((k, v) -> assertEquals("{\"offset\":" + (n - 1) + "}", v, "position of " + k));
    }

    /** Waits until the group translates to exactly `offset` on every partition. */
    Map<TopicPartition, OffsetAndMetadata> awaitTranslation(String group, long offset) throws Exception {
        AtomicReference<Map<TopicPartition, OffsetAndMetadata>> got = new AtomicReference<>();
        waitFor(group + " translated to " + offset, () -> {
            got.set(translate(group));
            return got.get().size() == PARTITIONS && got.get().values().stream().allMatch(o -> o.offset() == offset);
        }, () -> "last translation " + got.get());
        return got.get();
    }

    /** Waits until the group translates on every partition. */
    Map<TopicPartition, OffsetAndMetadata> awaitTranslated(String group) throws Exception {
        AtomicReference<Map<TopicPartition, OffsetAndMetadata>> got = new AtomicReference<>();
        waitFor(group + " translated", () -> {
            got.set(translate(group));
            return got.get().size() == PARTITIONS;
        }, () -> "last translation " + got.get());
        return got.get();
    }

    /** RemoteClusterUtils.translateOffsets on B for a group of A. */
    Map<TopicPartition, OffsetAndMetadata> translate(String group) {
        Map<String, Object> props = new HashMap<>();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, b);
        try {
            return RemoteClusterUtils.translateOffsets(props, "A", group, Duration.ofSeconds(10));
        } catch (Exception e) {
            return Map.of();
        }
    }

    void startWeirMirror() throws IOException {
        weirMirror = new ProcessBuilder(env("WEIR_BIN"), "mirror", "--config", config.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(weirLog.toFile()))
                .start();
    }

    /** Stops weir's mirror with SIGTERM; it must exit cleanly. */
    void stopWeirMirror() throws Exception {
        Process p = weirMirror;
        weirMirror = null;
        p.destroy();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("weir mirror did not stop on SIGTERM; log:\n" + Files.readString(weirLog));
        }
        assertEquals(0, p.exitValue(), "weir mirror exit; log:\n" + Files.readString(weirLog));
    }

    // --- plumbing

    static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException(name + " is not set: run the tests with scripts/java-interop");
        }
        return v;
    }

    static Admin admin(String bootstrap) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
    }

    /** Reads every partition of topic from its start to its end offsets of now. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(String bootstrap, String topic) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props)) {
            List<TopicPartition> tps = c.partitionsFor(topic, WAIT).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = c.endOffsets(tps, WAIT);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (tps.stream().anyMatch(tp -> c.position(tp, WAIT) < ends.get(tp))) {
                if (System.nanoTime() > deadline) {
                    fail("reading " + topic + " to " + ends + " timed out");
                }
                c.poll(Duration.ofMillis(200)).forEach(r -> {
                    if (r.offset() < ends.get(new TopicPartition(r.topic(), r.partition()))) {
                        out.add(r);
                    }
                });
            }
        }
        out.sort((x, y) -> x.partition() != y.partition()
                ? Integer.compare(x.partition(), y.partition()) : Long.compare(x.offset(), y.offset()));
        return out;
    }

    static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        waitFor(what, cond, () -> "");
    }

    static void waitFor(String what, BooleanSupplier cond, java.util.function.Supplier<String> detail)
            throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + what + " " + detail.get());
            }
            Thread.sleep(200);
        }
    }

    static List<String> values(List<ConsumerRecord<byte[], byte[]>> recs) {
        return recs.stream().map(r -> str(r.value())).collect(Collectors.toList());
    }

    static Map<String, String> headers(ConsumerRecord<byte[], byte[]> r) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Header h : r.headers()) {
            out.put(h.key(), str(h.value()));
        }
        return out;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
