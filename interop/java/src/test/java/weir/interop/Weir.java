package weir.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The weir nodes scripts/java-interop started, and what every test needs
 * to talk to them: clients configured for them, unique names, condition
 * waits and reading a topic back.
 */
final class Weir {
    private Weir() {}

    /** How long a condition or a read may take before the test fails. */
    static final Duration WAIT = Duration.ofSeconds(60);

    /** The single node (auto.create.topics.enable=true, RF 1). */
    static String single() {
        return env("WEIR_BOOTSTRAP");
    }

    /** The three-node cluster (auto.create.topics.enable=false). */
    static String cluster() {
        String bs = env("WEIR_CLUSTER_BOOTSTRAP");
        awaitCluster(bs);
        return bs;
    }

    /** The weir binary the script built and runs the nodes with. */
    static String bin() {
        return env("WEIR_BIN");
    }

    /** The single node's log directory. */
    static String singleData() {
        return env("WEIR_SINGLE_DATA");
    }

    private static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException(name + " is not set: run the tests with scripts/java-interop");
        }
        return v;
    }

    private static boolean clusterReady;

    /**
     * Waits, once per run, until the three brokers are registered and
     * unfenced: until a topic of replication factor 3 can be created.
     */
    private static synchronized void awaitCluster(String bs) {
        if (clusterReady) {
            return;
        }
        String topic = name("cluster-ready");
        try (Admin admin = admin(bs)) {
            waitFor("three brokers that take an RF 3 topic", () -> {
                try {
                    if (admin.describeCluster().nodes().get().size() != 3) {
                        return false;
                    }
                    admin.createTopics(List.of(new NewTopic(topic, 1, (short) 3))).all().get();
                    return true;
                } catch (ExecutionException e) {
                    return e.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException;
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            });
        }
        clusterReady = true;
    }

    /** The name of the lock that tests using the cluster hold (READ) and a test restarting its nodes holds alone. */
    static final String CLUSTER_LOCK = "weir-cluster";

    /**
     * Restarts cluster node id (1-3) cleanly: SIGTERM to its process, which
     * shuts down as on any stop; scripts/java-interop's supervisor starts
     * it again. Returns once the new process listens.
     */
    static void restartClusterNode(int id) {
        java.nio.file.Path pidFile = java.nio.file.Path.of(env("WEIR_CLUSTER_DIR"), "node" + id, "pid");
        long pid = readPid(pidFile);
        ProcessHandle node = ProcessHandle.of(pid).orElseThrow(() -> new AssertionError("node " + id + " (pid " + pid + ") is not running"));
        node.destroy();
        try {
            node.onExit().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("node " + id + " did not stop", e);
        }
        waitFor("node " + id + " to start again", () -> {
            try {
                return java.nio.file.Files.exists(pidFile) && readPid(pidFile) != pid;
            } catch (AssertionError e) {
                return false;
            }
        });
        String[] hostPort = env("WEIR_CLUSTER_BOOTSTRAP").split(",")[id - 1].split(":");
        waitFor("node " + id + " to listen", () -> {
            try (java.net.Socket s = new java.net.Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
                return true;
            } catch (java.io.IOException e) {
                return false;
            }
        });
    }

    private static long readPid(java.nio.file.Path f) {
        try {
            return Long.parseLong(java.nio.file.Files.readString(f).trim());
        } catch (java.io.IOException | NumberFormatException e) {
            throw new AssertionError("reading " + f, e);
        }
    }

    /**
     * Waits until the cluster has three live brokers and every partition of
     * every topic has its full ISR (after a restart, before other tests may
     * use the cluster again).
     */
    static void awaitClusterHealthy(Admin admin) {
        waitFor("every replica of the cluster in sync", () -> {
            try {
                if (admin.describeCluster().nodes().get().size() != 3) {
                    return false;
                }
                java.util.Set<String> topics = admin.listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true))
                        .names().get();
                return admin.describeTopics(topics).allTopicNames().get().values().stream()
                        .flatMap(t -> t.partitions().stream())
                        .allMatch(p -> p.leader() != null && p.isr().size() == p.replicas().size());
            } catch (ExecutionException | InterruptedException e) {
                return false;
            }
        });
    }

    /** A name unique to this run, for a topic, group or transactional id. */
    static String name(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static Admin admin(String bs) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bs,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000));
    }

    static KafkaProducer<String, String> producer(String bs, Map<String, Object> extra) {
        Map<String, Object> c = new HashMap<>();
        c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bs);
        c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        c.putAll(extra);
        return new KafkaProducer<>(c);
    }

    static KafkaConsumer<String, String> consumer(String bs, Map<String, Object> extra) {
        Map<String, Object> c = new HashMap<>();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bs);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.putAll(extra);
        return new KafkaConsumer<>(c);
    }

    /** Creates topic and waits until every partition has a leader. */
    static void createTopic(Admin admin, String topic, int partitions, int rf, Map<String, String> configs) {
        get(admin.createTopics(List.of(new NewTopic(topic, partitions, (short) rf).configs(configs))).all());
        waitFor("leaders of " + topic, () -> {
            try {
                return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions()
                        .stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty());
            } catch (ExecutionException | InterruptedException e) {
                return false;
            }
        });
    }

    static List<TopicPartition> partitions(String topic, int n) {
        return IntStream.range(0, n).mapToObj(p -> new TopicPartition(topic, p)).collect(Collectors.toList());
    }

    /**
     * Reads want records from the start of the given partitions with an
     * assigned consumer (no group) of the given extra config, then polls once
     * more to check that nothing follows them.
     */
    static List<ConsumerRecord<String, String>> readExactly(String bs, Collection<TopicPartition> tps, int want,
            Map<String, Object> extra) {
        try (KafkaConsumer<String, String> c = consumer(bs, extra)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (out.size() < want) {
                if (System.nanoTime() > deadline) {
                    fail("read " + out.size() + " of " + want + " records from " + tps);
                }
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
            c.poll(Duration.ofMillis(500)).forEach(out::add);
            assertEquals(want, out.size(), "records read from " + tps);
            return out;
        }
    }

    /** Waits until cond holds, failing the test after WAIT. */
    static void waitFor(String what, BooleanSupplier cond) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + what);
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }
    }

    /** The value of f, failing the test if it does not complete within WAIT. */
    static <T> T get(KafkaFuture<T> f) {
        try {
            return f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError("failed: " + e.getCause(), e.getCause());
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** The exception f fails with (an instance of want), within WAIT. */
    static <E extends Throwable> E failure(KafkaFuture<?> f, Class<E> want) {
        return failure((java.util.concurrent.Future<?>) f, want);
    }

    static <E extends Throwable> E failure(java.util.concurrent.Future<?> f, Class<E> want) {
        try {
            Object v = f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            throw new AssertionError("expected " + want.getSimpleName() + ", got the value " + v);
        } catch (ExecutionException e) {
            return assertInstanceOf(want, e.getCause(), "the failure");
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("expected " + want.getSimpleName() + ", but the call hangs", e);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
