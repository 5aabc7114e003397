package weir.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static weir.interop.Weir.get;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Kafka Streams against weir: a word count with a state store (a changelog
 * topic) behind a repartition, under processing.guarantee=exactly_once_v2,
 * on the three-node cluster while a node restarts mid-run. With the store's
 * cache off every count is emitted, so a read_committed reader must see each
 * word's counts exactly 1, 2, ..., n: a duplicate or lost update under a
 * failure would show.
 */
class StreamsTest {

    static final List<String> WORDS = List.of("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta");

    /** Line i of the input: words chosen by i, so the counts are known. */
    static String line(int i) {
        List<String> ws = new ArrayList<>();
        for (int j = 0; j <= i % 4; j++) {
            ws.add(WORDS.get((i * 7 + j * 3) % WORDS.size()));
        }
        return String.join(" ", ws);
    }

    @Test
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ_WRITE)
    void wordCountExactlyOnceAcrossARestart(@TempDir Path state) throws Exception {
        String bs = Weir.cluster();
        String app = Weir.name("wordcount");
        String in = app + "-lines";
        String out = app + "-counts";
        int lines = 600;
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, in, 3, 3, Map.of("min.insync.replicas", "2"));
            Weir.createTopic(admin, out, 3, 3, Map.of("min.insync.replicas", "2"));

            StreamsBuilder b = new StreamsBuilder();
            b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                    .flatMapValues(v -> Arrays.asList(v.split(" ")))
                    .groupBy((k, w) -> w)
                    .count(Materialized.as("counts"))
                    .toStream()
                    .to(out, Produced.with(Serdes.String(), Serdes.Long()));
            Properties p = new Properties();
            p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
            p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bs);
            p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
            p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
            p.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
            p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
            p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

            try (KafkaStreams streams = new KafkaStreams(b.build(), p);
                    KafkaConsumer<String, Long> reader = countsReader(bs)) {
                streams.start();
                reader.subscribe(List.of(out));
                Map<String, List<Long>> seen = new HashMap<>();
                feed(bs, in, 0, lines / 2);
                awaitCounts(reader, seen, lines / 2);

                Weir.restartClusterNode(2);
                feed(bs, in, lines / 2, lines);
                awaitCounts(reader, seen, lines);
                Weir.awaitClusterHealthy(admin);

                Set<String> topics = get(admin.listTopics().names());
                assertTrue(topics.contains(app + "-counts-changelog"), "the store's changelog among " + topics);
                assertTrue(topics.stream().anyMatch(t -> t.startsWith(app + "-") && t.endsWith("-repartition")),
                        "a repartition topic among " + topics);
                assertEquals(KafkaStreams.State.RUNNING, streams.state());
            }
        }
    }

    static KafkaConsumer<String, Long> countsReader(String bs) {
        Map<String, Object> c = new HashMap<>();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bs);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, Weir.name("wordcount-reader"));
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class);
        return new KafkaConsumer<>(c);
    }

    static void feed(String bs, String topic, int from, int to) {
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
            for (int i = from; i < to; i++) {
                p.send(new ProducerRecord<>(topic, null, line(i)));
            }
            p.flush();
        }
    }

    /**
     * Reads counts until every word has reached its count over the first
     * `lines` lines, checking that each word's counts go 1, 2, 3, ... with
     * nothing repeated or skipped.
     */
    static void awaitCounts(KafkaConsumer<String, Long> reader, Map<String, List<Long>> seen, int lines) {
        Map<String, Long> want = new TreeMap<>();
        for (int i = 0; i < lines; i++) {
            for (String w : line(i).split(" ")) {
                want.merge(w, 1L, Long::sum);
            }
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!want.entrySet().stream().allMatch(e -> {
            List<Long> s = seen.get(e.getKey());
            return s != null && s.get(s.size() - 1).equals(e.getValue());
        })) {
            if (System.nanoTime() > deadline) {
                Map<String, Long> last = new TreeMap<>();
                seen.forEach((w, s) -> last.put(w, s.get(s.size() - 1)));
                throw new AssertionError("counts " + last + ", want " + want);
            }
            for (ConsumerRecord<String, Long> r : reader.poll(Duration.ofMillis(200))) {
                List<Long> s = seen.computeIfAbsent(r.key(), k -> new ArrayList<>());
                assertEquals(s.size() + 1L, r.value(), "count of " + r.key() + " after " + s);
                s.add(r.value());
            }
        }
    }
}
