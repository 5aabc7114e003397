package weir.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * weir's own tools (weir topics, weir configs, ... the binary the script
 * built) and Kafka's (kafka-tools 4.4.0) run with the same arguments
 * against the same node: their output and exit code must be the same.
 */
class ToolsCompareTest {

    /** Runs `weir NOUN ARGS...` and waits for it. */
    static ToolsTest.Run weir(String noun, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Weir.bin(), noun));
        cmd.addAll(List.of(args));
        File out = File.createTempFile("weir", ".out");
        File err = File.createTempFile("weir", ".err");
        try {
            Process p = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectOutput(out).redirectError(err).start();
            if (!p.waitFor(2, TimeUnit.MINUTES)) {
                p.destroyForcibly().waitFor();
                throw new AssertionError("weir " + noun + " " + String.join(" ", args) + " did not finish");
            }
            return new ToolsTest.Run(p.exitValue(), Files.readString(out.toPath()), Files.readString(err.toPath()));
        } finally {
            out.delete();
            err.delete();
        }
    }

    /** Runs Kafka's tool mainClass and weir's noun with args and compares stdout and exit code. */
    static void same(String mainClass, String noun, String... args) throws Exception {
        ToolsTest.Run k = ToolsTest.tool(mainClass, args);
        ToolsTest.Run w = weir(noun, args);
        String what = noun + " " + String.join(" ", args);
        assertEquals(k.out(), w.out(), what + ": stdout differs; Kafka's stderr:\n" + k.err() + "\nweir's stderr:\n" + w.err());
        assertEquals(k.exit(), w.exit(), what + ": exit code differs; Kafka's stderr:\n" + k.err() + "\nweir's stderr:\n" + w.err());
    }

    static final String DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments";

    /** A topic with keyed records and a group that read them, then the same views of them from both. */
    @Test
    void sameOutput(@TempDir Path tmp) throws Exception {
        String bs = Weir.single();
        String t = Weir.name("cmp-topic");
        String g = Weir.name("cmp-group");
        ToolsTest.tool(ToolsTest.TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--partitions", "2",
                "--replication-factor", "1", "--config", "retention.ms=100000", "--config", "cleanup.policy=delete").ok();
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
            for (int i = 0; i < 6; i++) {
                p.send(new ProducerRecord<>(t, i % 2, "k" + i, "value " + i)).get();
            }
        }
        ToolsTest.tool(ToolsTest.CONSOLE_CONSUMER, "--bootstrap-server", bs, "--topic", t, "--from-beginning",
                "--max-messages", "6", "--group", g).ok();

        same(ToolsTest.TOPICS, "topics", "--bootstrap-server", bs, "--describe", "--topic", t);
        same(ToolsTest.TOPICS, "topics", "--bootstrap-server", bs, "--describe", "--topic", t, "--topics-with-overrides");
        same(ToolsTest.TOPICS, "topics", "--bootstrap-server", bs, "--list", "--topic", t);
        same(ToolsTest.CONSOLE_CONSUMER, "console-consumer", "--bootstrap-server", bs, "--topic", t, "--partition", "0",
                "--offset", "earliest", "--max-messages", "3", "--formatter-property", "print.key=true",
                "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true");
        same(ToolsTest.CONFIGS, "configs", "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", t, "--describe");
        same(ToolsTest.GROUPS, "consumer-groups", "--bootstrap-server", bs, "--describe", "--group", g);
        same(ToolsTest.GROUPS, "consumer-groups", "--bootstrap-server", bs, "--describe", "--group", g, "--state");
        same(ToolsTest.GROUPS, "consumer-groups", "--bootstrap-server", bs, "--describe", "--group", g, "--members");
        same(ToolsTest.GROUPS, "consumer-groups", "--bootstrap-server", bs, "--reset-offsets", "--to-earliest",
                "--dry-run", "--group", g, "--topic", t);
        same(ToolsTest.CONFIGS, "configs", "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", t, "--describe", "--all");
        same(ToolsTest.TRANSACTIONS, "transactions", "--bootstrap-server", bs, "describe-producers", "--topic", t, "--partition", "0");
        same(ToolsTest.LOG_DIRS, "log-dirs", "--bootstrap-server", bs, "--describe", "--topic-list", t);
        same(ToolsTest.FEATURES, "features", "--bootstrap-server", bs, "describe");
        same(ToolsTest.ELECTION, "leader-election", "--bootstrap-server", bs, "--election-type", "PREFERRED",
                "--topic", t, "--partition", "0");

        Path dir = Path.of(Weir.singleData(), t + "-0");
        String segment = dir.resolve("00000000000000000000.log").toString();
        same(DUMP_LOG, "dump-log", "--files", segment);
        same(DUMP_LOG, "dump-log", "--deep-iteration", "--print-data-log", "--files", segment);
        same(DUMP_LOG, "dump-log", "--files", dir.resolve("00000000000000000000.index") + ","
                + dir.resolve("00000000000000000000.timeindex"));
        // The metadata log grows while other tests run: both tools dump the
        // same copy of its whole batches.
        Path metadataLog = wholeBatches(Path.of(Weir.singleData(), "__cluster_metadata-0", "00000000000000000000.log"),
                Files.createDirectories(tmp.resolve("__cluster_metadata-0")));
        same(DUMP_LOG, "dump-log", "--cluster-metadata-decoder", "--max-bytes", "20000", "--files", metadataLog.toString());
    }

    /**
     * Copies a log segment into dir under its own name, cut after its last
     * whole record batch (a batch is its 8-byte base offset, its 4-byte
     * length and that many bytes), so that an append racing the copy is
     * left out.
     */
    static Path wholeBatches(Path segment, Path dir) throws Exception {
        byte[] b = Files.readAllBytes(segment);
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(b);
        int end = 0;
        while (end + 12 <= b.length) {
            int next = end + 12 + buf.getInt(end + 8);
            if (next > b.length || next <= end + 12) {
                break;
            }
            end = next;
        }
        Path copy = dir.resolve(segment.getFileName());
        Files.write(copy, Arrays.copyOf(b, end));
        return copy;
    }

    /**
     * A metadata snapshot file: the bootstrap.checkpoint weir's storage
     * format --add-scram writes, in Kafka's snapshot layout (header, records
     * and footer batches), which Kafka's DumpLogSegments reads.
     */
    @Test
    void sameSnapshotDump(@TempDir Path dir) throws Exception {
        Path props = dir.resolve("server.properties");
        Files.writeString(props, "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
                + "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\n"
                + "log.dirs=" + dir.resolve("data") + "\n");
        String id = weir("storage", "random-uuid").out().trim();
        ToolsTest.Run f = weir("storage", "format", "-t", id, "-c", props.toString(),
                "--add-scram", "SCRAM-SHA-256=[name=alice,salt=c2FsdA==,saltedpassword=c2FsdGVkcGFzc3dvcmQ=,iterations=4096]");
        assertEquals(0, f.exit(), f.err());
        same(DUMP_LOG, "dump-log", "--cluster-metadata-decoder", "--files", dir.resolve("data").resolve("bootstrap.checkpoint").toString());
    }

    /**
     * On the cluster: a replicated topic described, a reassignment's
     * rollback plan and its verification, a preferred election.
     */
    @Test
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void sameOutputOnCluster(@TempDir Path dir) throws Exception {
        String bs = Weir.cluster();
        String t = Weir.name("cmp-cluster");
        ToolsTest.tool(ToolsTest.TOPICS, "--bootstrap-server", bs, "--create", "--topic", t, "--replica-assignment", "1:2:3,2:3:1",
                "--config", "min.insync.replicas=2").ok();
        Weir.waitFor("the topic on every broker", () -> {
            try {
                return ToolsTest.tool(ToolsTest.TOPICS, "--bootstrap-server", bs, "--describe", "--topic", t, "--under-replicated-partitions")
                        .ok().out().isEmpty();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        same(ToolsTest.TOPICS, "topics", "--bootstrap-server", bs, "--describe", "--topic", t);
        same(ToolsTest.TOPICS, "topics", "--bootstrap-server", bs, "--describe", "--topic", t, "--at-min-isr-partitions");
        same(ToolsTest.CONFIGS, "configs", "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "2", "--describe");
        Path plan = dir.resolve("plan.json");
        Files.writeString(plan, "{\"version\":1,\"partitions\":[{\"topic\":\"" + t + "\",\"partition\":0,\"replicas\":[1,2,3]}]}");
        same(ToolsTest.REASSIGN, "reassign-partitions", "--bootstrap-server", bs, "--verify", "--reassignment-json-file", plan.toString(),
                "--preserve-throttles");
        same(ToolsTest.ELECTION, "leader-election", "--bootstrap-server", bs, "--election-type", "PREFERRED", "--topic", t,
                "--partition", "1");
    }

    /**
     * Bad input: the same first line of output and the same exit code, but
     * for kafka-consumer-groups, which exits 0 after printing its error
     * where weir exits 1 (deliberately: a script must see the failure).
     */
    @Test
    void sameErrors() throws Exception {
        String bs = Weir.single();
        String[][] cases = {
            {ToolsTest.TOPICS, "topics", "--bootstrap-server", bs, "--describe", "--topic", Weir.name("missing")},
            {ToolsTest.CONFIGS, "configs", "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", Weir.name("missing"),
                "--alter", "--add-config", "no.such.config=1"},
            {ToolsTest.REASSIGN, "reassign-partitions", "--bootstrap-server", bs, "--verify"},
            {ToolsTest.GROUPS, "consumer-groups", "--bootstrap-server", bs, "--describe", "--group", Weir.name("missing")},
            {DUMP_LOG, "dump-log"},
            {DUMP_LOG, "dump-log", "--print-data-log"},
        };
        for (String[] c : cases) {
            String[] args = Arrays.copyOfRange(c, 2, c.length);
            ToolsTest.Run k = ToolsTest.tool(c[0], args);
            ToolsTest.Run w = weir(c[1], args);
            String what = c[1] + " " + String.join(" ", args);
            if (c[1].equals("consumer-groups")) {
                assertEquals(List.of(0, 1), List.of(k.exit(), w.exit()), what + ": exit codes");
            } else {
                assertEquals(k.exit(), w.exit(), what + ": exit code; Kafka:\n" + k.out() + k.err() + "\nweir:\n" + w.out() + w.err());
            }
            assertEquals(firstLine(k.out() + k.err()), firstLine(w.out() + w.err()), what);
        }
    }

    static String firstLine(String s) {
        return s.lines().filter(l -> !l.isBlank()).findFirst().orElse("");
    }
}
