package weir.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka's own command-line tools (the classes behind kafka-topics.sh,
 * kafka-configs.sh, ... in kafka-tools 4.4.0) run against weir as their
 * scripts run them, `java -cp ... MainClass args`, each checked on its
 * output and exit code.
 */
class ToolsTest {

    /** A finished tool run. */
    record Run(int exit, String out, String err) {
        Run ok() {
            assertEquals(0, exit, "exit code; stdout:\n" + out + "\nstderr:\n" + err);
            return this;
        }

        /** The lines of stdout, each split at runs of whitespace. */
        List<List<String>> rows() {
            List<List<String>> rows = new ArrayList<>();
            for (String line : out.split("\n")) {
                if (!line.isBlank()) {
                    rows.add(Arrays.asList(line.trim().split("\\s+")));
                }
            }
            return rows;
        }
    }

    /**
     * Runs a tool's main class in a new JVM on this test's classpath, with
     * stdin as its input, and waits for it (two minutes at most). The JVM
     * options keep its start cheap on a small machine.
     */
    static Run toolWithInput(String mainClass, String stdin, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(List.of(args));
        File out = File.createTempFile("tool", ".out");
        File err = File.createTempFile("tool", ".err");
        File in = File.createTempFile("tool", ".in");
        try {
            Files.writeString(in.toPath(), stdin == null ? "" : stdin);
            Process p = new ProcessBuilder(cmd).redirectInput(in).redirectOutput(out).redirectError(err).start();
            if (!p.waitFor(2, TimeUnit.MINUTES)) {
                p.destroyForcibly().waitFor();
                fail(mainClass + " " + String.join(" ", args) + " did not finish; stdout:\n"
                        + Files.readString(out.toPath()) + "\nstderr:\n" + Files.readString(err.toPath()));
            }
            return new Run(p.exitValue(), Files.readString(out.toPath()), Files.readString(err.toPath()));
        } finally {
            out.delete();
            err.delete();
            in.delete();
        }
    }

    static Run tool(String mainClass, String... args) throws Exception {
        return toolWithInput(mainClass, null, args);
    }

    static final String TOPICS = "org.apache.kafka.tools.TopicCommand";
    static final String CONFIGS = "org.apache.kafka.tools.ConfigCommand";
    static final String GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
    static final String CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer";
    static final String CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer";
    static final String QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand";
    static final String TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand";
    static final String LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand";
    static final String ELECTION = "org.apache.kafka.tools.LeaderElectionCommand";
    static final String REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";
    static final String FEATURES = "org.apache.kafka.tools.FeatureCommand";
    static final String PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance";
    static final String CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance";

    static void contains(Run r, String want) {
        assertTrue(r.out.contains(want), "output lacks \"" + want + "\":\n" + r.out + "\nstderr:\n" + r.err);
    }

    /** kafka-topics: create with a config, list, describe, alter partitions, delete. */
    @Test
    void topics() throws Exception {
        String bs = Weir.single();
        String t = Weir.name("tool-topic");
        contains(tool(TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--partitions", "3",
                "--replication-factor", "1", "--config", "retention.ms=100000").ok(), "Created topic " + t + ".");
        assertTrue(tool(TOPICS, "--bootstrap-server", bs, "--list").ok().out.lines().anyMatch(t::equals));
        Run d = tool(TOPICS, "--bootstrap-server", bs, "--describe", "--topic", t).ok();
        contains(d, "Topic: " + t + "\t");
        contains(d, "PartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=100000");
        for (int p = 0; p < 3; p++) {
            contains(d, "Topic: " + t + "\tPartition: " + p + "\tLeader: 1\tReplicas: 1\tIsr: 1");
        }
        tool(TOPICS, "--bootstrap-server", bs, "--alter", "--topic", t, "--partitions", "5").ok();
        contains(tool(TOPICS, "--bootstrap-server", bs, "--describe", "--topic", t).ok(), "PartitionCount: 5");
        Run again = tool(TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--partitions", "1");
        assertEquals(1, again.exit);
        assertTrue(again.err.contains("Topic '" + t + "' already exists."), again.err);
        tool(TOPICS, "--bootstrap-server", bs, "--delete", "--topic", t).ok();
        Weir.waitFor("the topic to go", () -> {
            try {
                return tool(TOPICS, "--bootstrap-server", bs, "--list").ok().out.lines().noneMatch(t::equals);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
    }

    /** kafka-configs: topic configs added, described with synonyms, deleted; broker defaults. */
    @Test
    void configs() throws Exception {
        String bs = Weir.single();
        String t = Weir.name("tool-configs");
        tool(TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--partitions", "1").ok();
        contains(tool(CONFIGS, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", t, "--alter",
                "--add-config", "retention.ms=5000,cleanup.policy=[delete,compact]").ok(),
                "Completed updating config for topic " + t + ".");
        Run d = tool(CONFIGS, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", t, "--describe").ok();
        contains(d, "Dynamic configs for topic " + t + " are:");
        contains(d, "retention.ms=5000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=5000, DEFAULT_CONFIG:log.retention.hours=168}");
        contains(d, "cleanup.policy=delete,compact sensitive=false");
        tool(CONFIGS, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", t, "--alter",
                "--delete-config", "retention.ms").ok();
        d = tool(CONFIGS, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", t, "--describe").ok();
        assertFalse(d.out.contains("retention.ms"), d.out);

        Run all = tool(CONFIGS, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all").ok();
        contains(all, "All configs for broker 1 are:");
        contains(all, "num.partitions=1 sensitive=false synonyms={DEFAULT_CONFIG:num.partitions=1}");
        contains(all, "offsets.topic.replication.factor=1 sensitive=false synonyms={STATIC_BROKER_CONFIG:offsets.topic.replication.factor=1");

        Run bad = tool(CONFIGS, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", t, "--alter",
                "--add-config", "retention.ms=soon");
        assertEquals(1, bad.exit, bad.out + bad.err);
        assertTrue(bad.err.contains("retention.ms"), bad.err);
    }

    /**
     * kafka-console-producer and kafka-console-consumer with keys, then
     * kafka-consumer-groups on the consumer's group: list, describe (offsets
     * and lag), reset to earliest, state, delete.
     */
    @Test
    void consoleAndGroups() throws Exception {
        String bs = Weir.single();
        String t = Weir.name("tool-console");
        String g = Weir.name("tool-group");
        tool(TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--partitions", "1").ok();
        toolWithInput(CONSOLE_PRODUCER, "k1:one\nk2:two\nk3:three\n", "--bootstrap-server", bs, "--topic", t,
                "--reader-property", "parse.key=true", "--reader-property", "key.separator=:").ok();
        Run c = tool(CONSOLE_CONSUMER, "--bootstrap-server", bs, "--topic", t, "--from-beginning", "--max-messages", "3",
                "--formatter-property", "print.key=true", "--group", g).ok();
        assertEquals("k1\tone\nk2\ttwo\nk3\tthree\n", c.out);
        assertTrue(c.err.contains("Processed a total of 3 messages"), c.err);

        assertTrue(tool(GROUPS, "--bootstrap-server", bs, "--list").ok().out.lines().anyMatch(g::equals));
        Run d = tool(GROUPS, "--bootstrap-server", bs, "--describe", "--group", g).ok();
        assertTrue(d.rows().contains(List.of(g, t, "0", "3", "3", "0", "-", "-", "-")), d.out);
        Run reset = tool(GROUPS, "--bootstrap-server", bs, "--reset-offsets", "--to-earliest", "--execute",
                "--group", g, "--topic", t).ok();
        assertTrue(reset.rows().contains(List.of(g, t, "0", "0")), reset.out);
        d = tool(GROUPS, "--bootstrap-server", bs, "--describe", "--group", g).ok();
        assertTrue(d.rows().contains(List.of(g, t, "0", "0", "3", "3", "-", "-", "-")), d.out);
        Run state = tool(GROUPS, "--bootstrap-server", bs, "--describe", "--group", g, "--state").ok();
        assertTrue(state.rows().stream().anyMatch(r -> r.get(0).equals(g) && r.contains("Empty") && r.get(r.size() - 1).equals("0")),
                state.out);
        contains(tool(GROUPS, "--bootstrap-server", bs, "--delete", "--group", g).ok(),
                "Deletion of requested consumer groups ('" + g + "') was successful.");
        assertFalse(tool(GROUPS, "--bootstrap-server", bs, "--list").ok().out.lines().anyMatch(g::equals));
    }

    /** kafka-log-dirs: the partition's size in the JSON it prints. */
    @Test
    void logDirs() throws Exception {
        String bs = Weir.single();
        String t = Weir.name("tool-logdirs");
        tool(TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--partitions", "1").ok();
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
            p.send(new ProducerRecord<>(t, "x".repeat(1000))).get();
        }
        Run r = tool(LOG_DIRS, "--bootstrap-server", bs, "--describe", "--topic-list", t).ok();
        contains(r, "Received log directory information from brokers 1");
        Matcher m = Pattern.compile("\\{\"partition\":\"" + Pattern.quote(t) + "-0\",\"size\":(\\d+),\"offsetLag\":0,\"isFuture\":false\\}")
                .matcher(r.out);
        assertTrue(m.find(), r.out);
        assertTrue(Long.parseLong(m.group(1)) > 1000, "size " + m.group(1));
    }

    /** kafka-features describe: the finalized levels. */
    @Test
    void features() throws Exception {
        Run r = tool(FEATURES, "--bootstrap-server", Weir.single(), "describe").ok();
        assertTrue(Pattern.compile("Feature: metadata.version\\s+SupportedMinVersion: \\S+\\s+SupportedMaxVersion: \\S+\\s+FinalizedVersionLevel: \\S+")
                .matcher(r.out).find(), r.out);
        assertTrue(Pattern.compile("Feature: group.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: 1\\s+FinalizedVersionLevel: 1")
                .matcher(r.out).find(), r.out);
    }

    /**
     * kafka-transactions: list and describe an open transaction,
     * describe-producers, and abort it as a hanging transaction (Admin
     * abortTransaction, WriteTxnMarkers to the partition leader): the last
     * stable offset moves past it and read_committed sees none of it.
     */
    @Test
    void transactions() throws Exception {
        String bs = Weir.single();
        String t = Weir.name("tool-txn");
        String id = Weir.name("tool-txn-id");
        TopicPartition tp = new TopicPartition(t, 0);
        tool(TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--partitions", "1").ok();
        KafkaProducer<String, String> p = Weir.producer(bs, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id));
        try {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 3; i++) {
                p.send(new ProducerRecord<>(t, "open-" + i));
            }
            p.flush();

            Run list = tool(TRANSACTIONS, "--bootstrap-server", bs, "list").ok();
            assertTrue(list.rows().stream().anyMatch(r -> r.get(0).equals(id) && r.get(3).equals("Ongoing")), list.out);
            Run d = tool(TRANSACTIONS, "--bootstrap-server", bs, "describe", "--transactional-id", id).ok();
            assertEquals(List.of("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"),
                    d.rows().get(0));
            assertEquals("Ongoing", d.rows().get(1).get(4));
            assertEquals(tp.toString(), d.rows().get(1).get(8));
            String producerId = d.rows().get(1).get(2);

            Run dp = tool(TRANSACTIONS, "--bootstrap-server", bs, "describe-producers", "--topic", t, "--partition", "0").ok();
            assertTrue(dp.rows().stream().anyMatch(r -> r.get(0).equals(producerId) && r.get(r.size() - 1).equals("0")), dp.out);

            contains(tool(TRANSACTIONS, "--bootstrap-server", bs, "find-hanging", "--broker-id", "1").ok(),
                    "Topic\tPartition\tProducerId");
            tool(TRANSACTIONS, "--bootstrap-server", bs, "abort", "--topic", t, "--partition", "0", "--start-offset", "0").ok();
            try (KafkaConsumer<String, String> c = Weir.consumer(bs, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
                c.assign(List.of(tp));
                Weir.waitFor("the last stable offset past the aborted transaction",
                        () -> c.endOffsets(List.of(tp)).get(tp) == 4L);
                assertEquals(0, c.poll(Duration.ofMillis(500)).count());
            }
        } finally {
            p.close(Duration.ZERO);
        }
    }

    /** kafka-producer-perf-test and kafka-consumer-perf-test count every record. */
    @Test
    void perfTests() throws Exception {
        String bs = Weir.single();
        String t = Weir.name("tool-perf");
        tool(TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--partitions", "2").ok();
        Run p = tool(PRODUCER_PERF, "--topic", t, "--num-records", "5000", "--record-size", "100", "--throughput", "-1",
                "--command-property", "bootstrap.servers=" + bs, "acks=all").ok();
        // A slow run prints a progress line every five seconds before the
        // summary, which is the last line.
        String[] lines = p.out.strip().split("\n");
        assertTrue(lines[lines.length - 1].startsWith("5000 records sent, "), p.out);
        Run c = tool(CONSUMER_PERF, "--bootstrap-server", bs, "--topic", t, "--num-records", "5000").ok();
        List<List<String>> rows = c.rows();
        assertTrue(rows.get(0).contains("data.consumed.in.nMsg,"), c.out);
        // start.time and end.time each take two columns: date and time.
        assertEquals("5000,", rows.get(1).get(6), c.out);
    }

    /** kafka-metadata-quorum on the cluster: three voters, one leader, two followers. */
    @Test
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void metadataQuorum() throws Exception {
        String bs = Weir.cluster();
        Run s = tool(QUORUM, "--bootstrap-server", bs, "describe", "--status").ok();
        Matcher voters = Pattern.compile("CurrentVoters:\\s+\\[(.*)]").matcher(s.out);
        assertTrue(voters.find(), s.out);
        for (int id = 1; id <= 3; id++) {
            assertTrue(voters.group(1).contains("{\"id\": " + id + ", "), voters.group(1));
        }
        contains(s, "CurrentObservers:       []");
        Run r = tool(QUORUM, "--bootstrap-server", bs, "describe", "--replication").ok();
        List<List<String>> rows = r.rows();
        assertEquals("NodeId", rows.get(0).get(0));
        assertEquals(1, rows.stream().filter(row -> row.get(row.size() - 1).equals("Leader")).count(), r.out);
        assertEquals(2, rows.stream().filter(row -> row.get(row.size() - 1).equals("Follower")).count(), r.out);
    }

    /**
     * kafka-reassign-partitions on the cluster moves a partition from
     * brokers 1,2 to 2,3 (execute, verify until complete), kafka-topics sees
     * the new replicas and no under-replicated partition, and
     * kafka-leader-election finds the preferred leader already elected.
     */
    @Test
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void reassignAndElect(@TempDir Path dir) throws Exception {
        String bs = Weir.cluster();
        String t = Weir.name("tool-reassign");
        tool(TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--replica-assignment", "1:2").ok();
        Path plan = dir.resolve("plan.json");
        Files.writeString(plan, "{\"version\":1,\"partitions\":[{\"topic\":\"" + t + "\",\"partition\":0,\"replicas\":[2,3]}]}",
                StandardCharsets.UTF_8);
        contains(tool(REASSIGN, "--bootstrap-server", bs, "--reassignment-json-file", plan.toString(), "--execute").ok(),
                "Successfully started partition reassignment for " + t + "-0");
        Weir.waitFor("the reassignment to complete", () -> {
            try {
                return tool(REASSIGN, "--bootstrap-server", bs, "--reassignment-json-file", plan.toString(), "--verify")
                        .ok().out.contains("Reassignment of partition " + t + "-0 is completed.");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        Run d = tool(TOPICS, "--bootstrap-server", bs, "--describe", "--topic", t).ok();
        assertTrue(Pattern.compile("Partition: 0\tLeader: [23]\tReplicas: 2,3\tIsr: (2,3|3,2)").matcher(d.out).find(), d.out);
        Run under = tool(TOPICS, "--bootstrap-server", bs, "--describe", "--topic", t, "--under-replicated-partitions").ok();
        assertEquals("", under.out.trim());

        Weir.waitFor("broker 2 to lead", () -> {
            try {
                Run e = tool(ELECTION, "--bootstrap-server", bs, "--election-type", "preferred", "--topic", t, "--partition", "0");
                return e.exit == 0 && e.out.contains("Valid replica already elected for partitions " + t + "-0");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
    }
}
