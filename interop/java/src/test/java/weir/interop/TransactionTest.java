package weir.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static weir.interop.Weir.get;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Kafka's transactional producer and read_committed consumer against weir. */
class TransactionTest {

    static final Map<String, Object> READ_COMMITTED = Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");

    static KafkaProducer<String, String> txnProducer(String bs, String id) {
        KafkaProducer<String, String> p = Weir.producer(bs, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000));
        p.initTransactions();
        return p;
    }

    static void sendAll(KafkaProducer<String, String> p, String topic, int partitions, String tag, int n) {
        for (int i = 0; i < n; i++) {
            p.send(new ProducerRecord<>(topic, i % partitions, null, tag + "-" + i));
        }
    }

    static List<String> values(List<ConsumerRecord<String, String>> rs) {
        return rs.stream().map(ConsumerRecord::value).collect(Collectors.toList());
    }

    static List<String> expect(String tag, int n) {
        return IntStream.range(0, n).mapToObj(i -> tag + "-" + i).collect(Collectors.toList());
    }

    /**
     * Committed, aborted and committed again, on the single node and on the
     * cluster (__transaction_state at RF 3, min ISR 2): read_committed
     * sees exactly the committed records in order, read_uncommitted sees
     * every record, and the offsets skip the control records.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"single", "cluster"})
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void commitAndAbort(String where) throws Exception {
        String bs = where.equals("single") ? Weir.single() : Weir.cluster();
        String topic = Weir.name("txn");
        int rf = where.equals("single") ? 1 : 3;
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, rf, Map.of());
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> p = txnProducer(bs, Weir.name("txn-id"))) {
            p.beginTransaction();
            sendAll(p, topic, 1, "c1", 10);
            p.commitTransaction();
            p.beginTransaction();
            sendAll(p, topic, 1, "a", 10);
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            sendAll(p, topic, 1, "c2", 10);
            p.commitTransaction();
        }
        List<String> want = new ArrayList<>(expect("c1", 10));
        want.addAll(expect("c2", 10));
        List<ConsumerRecord<String, String>> committed = Weir.readExactly(bs, List.of(tp), 20, READ_COMMITTED);
        assertEquals(want, values(committed));
        // 10 records, a commit marker, 10 aborted records, an abort marker.
        assertEquals(22, committed.get(10).offset());

        List<ConsumerRecord<String, String>> all = Weir.readExactly(bs, List.of(tp), 30, Map.of());
        List<String> every = new ArrayList<>(expect("c1", 10));
        every.addAll(expect("a", 10));
        every.addAll(expect("c2", 10));
        assertEquals(every, values(all));
        try (KafkaConsumer<String, String> c = Weir.consumer(bs, READ_COMMITTED)) {
            assertEquals(33L, c.endOffsets(List.of(tp)).get(tp));
        }
    }

    /**
     * An open transaction holds back read_committed consumers at its first
     * offset (the last stable offset) until it commits, and the admin client
     * sees it: describeProducers, describeTransactions, listTransactions.
     */
    @Test
    void openTransactionHoldsTheLastStableOffset() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("txn-open");
        String id = Weir.name("txn-open-id");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
            try (KafkaProducer<String, String> plain = Weir.producer(bs, Map.of())) {
                plain.send(new ProducerRecord<>(topic, "before")).get();
            }
            try (KafkaProducer<String, String> p = txnProducer(bs, id);
                    KafkaConsumer<String, String> c = Weir.consumer(bs, READ_COMMITTED)) {
                p.beginTransaction();
                sendAll(p, topic, 1, "open", 5);
                p.flush();

                c.assign(List.of(tp));
                assertEquals(1L, c.endOffsets(List.of(tp)).get(tp), "the last stable offset");
                List<ConsumerRecord<String, String>> got = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    c.poll(Duration.ofMillis(100)).forEach(got::add);
                }
                assertEquals(List.of("before"), values(got));

                List<ProducerState> ps = get(admin.describeProducers(List.of(tp)).partitionResult(tp)).activeProducers();
                assertEquals(1, ps.stream().filter(s -> s.currentTransactionStartOffset().orElse(-1) == 1).count(),
                        "the open transaction in " + ps);
                TransactionDescription d = get(admin.describeTransactions(List.of(id)).description(id));
                assertEquals(TransactionState.ONGOING, d.state());
                assertEquals(java.util.Set.of(tp), d.topicPartitions());
                assertTrue(d.transactionStartTimeMs().isPresent());
                List<String> ongoing = get(admin.listTransactions(new ListTransactionsOptions()
                        .filterStates(List.of(TransactionState.ONGOING))).all()).stream()
                        .map(TransactionListing::transactionalId).toList();
                assertTrue(ongoing.contains(id), id + " among the ongoing transactions " + ongoing);

                p.commitTransaction();
                Weir.waitFor("the committed records", () -> {
                    c.poll(Duration.ofMillis(100)).forEach(got::add);
                    return got.size() >= 6;
                });
                assertEquals(List.of("before", "open-0", "open-1", "open-2", "open-3", "open-4"), values(got));
                Weir.waitFor("the transaction to complete", () -> {
                    try {
                        return admin.describeTransactions(List.of(id)).description(id).get().state()
                                == TransactionState.COMPLETE_COMMIT;
                    } catch (Exception e) {
                        return false;
                    }
                });
            }
        }
    }

    /**
     * Consume-transform-produce with sendOffsetsToTransaction: a committed
     * transaction moves the group's offsets with the output, an aborted one
     * moves neither, and the next round redoes the aborted work.
     */
    @Test
    void sendOffsetsToTransaction() throws Exception {
        String bs = Weir.single();
        String in = Weir.name("ctp-in");
        String out = Weir.name("ctp-out");
        String group = Weir.name("ctp-group");
        TopicPartition inTp = new TopicPartition(in, 0);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, in, 1, 1, Map.of());
            Weir.createTopic(admin, out, 1, 1, Map.of());
            try (KafkaProducer<String, String> plain = Weir.producer(bs, Map.of())) {
                sendAll(plain, in, 1, "in", 20);
                plain.flush();
            }
            Map<String, Object> cc = new HashMap<>(READ_COMMITTED);
            cc.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            cc.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10);
            try (KafkaProducer<String, String> p = txnProducer(bs, Weir.name("ctp-id"))) {
                boolean[] commits = {true, false, true};
                long[] groupOffsets = {10, 10, 20};
                for (int round = 0; round < 3; round++) {
                    boolean commit = commits[round];
                    try (KafkaConsumer<String, String> c = Weir.consumer(bs, cc)) {
                        c.subscribe(List.of(in));
                        List<ConsumerRecord<String, String>> batch = new ArrayList<>();
                        Weir.waitFor("ten input records", () -> {
                            c.poll(Duration.ofMillis(100)).forEach(batch::add);
                            return batch.size() >= 10;
                        });
                        assertEquals(round == 0 ? 0 : 10, batch.get(0).offset(), "round " + round + " starts at the group's offset");
                        p.beginTransaction();
                        for (ConsumerRecord<String, String> r : batch.subList(0, 10)) {
                            p.send(new ProducerRecord<>(out, r.value().toUpperCase()));
                        }
                        long next = batch.get(9).offset() + 1;
                        p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(next)), c.groupMetadata());
                        if (commit) {
                            p.commitTransaction();
                        } else {
                            p.abortTransaction();
                        }
                    }
                    long want = groupOffsets[round];
                    Weir.waitFor("group offset " + want + " after round " + round, () -> {
                        try {
                            OffsetAndMetadata o = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                                    .get().get(inTp);
                            return o != null && o.offset() == want;
                        } catch (Exception e) {
                            return false;
                        }
                    });
                }
            }
            List<String> want = IntStream.range(0, 20).mapToObj(i -> "IN-" + i).toList();
            assertEquals(want, values(Weir.readExactly(bs, List.of(new TopicPartition(out, 0)), 20, READ_COMMITTED)));
        }
    }

    /**
     * A second producer with the same transactional.id fences the first: the
     * zombie's open transaction is aborted, and its next send or commit
     * fails with ProducerFencedException (or InvalidProducerEpochException,
     * as Kafka answers a produce at the old epoch).
     */
    @Test
    void zombieIsFenced() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("zombie");
        String id = Weir.name("zombie-id");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
        }
        KafkaProducer<String, String> zombie = txnProducer(bs, id);
        try (KafkaProducer<String, String> successor = Weir.producer(bs, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id))) {
            zombie.beginTransaction();
            sendAll(zombie, topic, 1, "zombie", 3);
            zombie.flush();

            successor.initTransactions();
            Throwable failure = null;
            try {
                zombie.send(new ProducerRecord<>(topic, "late")).get();
                zombie.commitTransaction();
            } catch (java.util.concurrent.ExecutionException e) {
                failure = e.getCause();
            } catch (KafkaException e) {
                failure = e;
            }
            assertTrue(fenced(failure), "the zombie fails with " + failure);

            successor.beginTransaction();
            sendAll(successor, topic, 1, "successor", 3);
            successor.commitTransaction();
        } finally {
            zombie.close(Duration.ZERO);
        }
        assertEquals(expect("successor", 3), values(Weir.readExactly(bs, List.of(tp), 3, READ_COMMITTED)));
        List<String> all = values(Weir.readExactly(bs, List.of(tp), 6, Map.of()));
        assertEquals(expect("zombie", 3), all.subList(0, 3), "the zombie's aborted records stay in the log");
    }

    /**
     * sendOffsetsToTransaction with group metadata of a generation the
     * group is not at fails the commit (KIP-447: the coordinator checks the
     * member and generation), and the offsets stay uncommitted.
     */
    @Test
    void sendOffsetsOfAStaleGeneration() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("stale-in");
        String group = Weir.name("stale-group");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
            try (KafkaConsumer<String, String> c = Weir.consumer(bs, Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
                    ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"));
                    KafkaProducer<String, String> p = txnProducer(bs, Weir.name("stale-id"))) {
                c.subscribe(List.of(topic));
                Weir.waitFor("the consumer's assignment", () -> {
                    c.poll(Duration.ofMillis(100));
                    return !c.assignment().isEmpty();
                });
                org.apache.kafka.clients.consumer.ConsumerGroupMetadata real = c.groupMetadata();
                org.apache.kafka.clients.consumer.ConsumerGroupMetadata stale = new org.apache.kafka.clients.consumer.ConsumerGroupMetadata(
                        group, real.generationId() + 5, real.memberId(), real.groupInstanceId());
                p.beginTransaction();
                p.send(new ProducerRecord<>(topic, "x"));
                KafkaException e = assertThrows(KafkaException.class, () -> {
                    p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(1)), stale);
                    p.commitTransaction();
                });
                boolean commitFailed = false;
                for (Throwable t = e; t != null; t = t.getCause()) {
                    commitFailed |= t instanceof org.apache.kafka.clients.consumer.CommitFailedException
                            || t instanceof org.apache.kafka.common.errors.IllegalGenerationException;
                }
                assertTrue(commitFailed, "a stale generation fails with " + e);
            }
            assertEquals(null, get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()).get(tp));
        }
    }

    /** Whether e is, or is caused by, one of the exceptions Kafka fences a producer with. */
    static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Admin.fenceProducers and Admin.forceTerminateTransaction (KIP-939;
     * without two-phase commit it is the same InitProducerId) bump the
     * epoch of a transactional id: the running producer is fenced and its
     * open transaction aborted.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"fenceProducers", "forceTerminateTransaction"})
    void fenceProducers(String call) throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("fenced");
        String id = Weir.name("fenced-id");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
            KafkaProducer<String, String> p = txnProducer(bs, id);
            try {
                p.beginTransaction();
                sendAll(p, topic, 1, "fenced", 3);
                p.flush();
                if (call.equals("fenceProducers")) {
                    get(admin.fenceProducers(List.of(id)).all());
                } else {
                    get(admin.forceTerminateTransaction(id).result());
                }
                KafkaException e = assertThrows(KafkaException.class, p::commitTransaction);
                assertTrue(fenced(e), "commit after fencing fails with " + e);
            } finally {
                p.close(Duration.ZERO);
            }
            Weir.waitFor("the fenced transaction is aborted", () -> {
                try {
                    TransactionState s = admin.describeTransactions(List.of(id)).description(id).get().state();
                    return s == TransactionState.COMPLETE_ABORT || s == TransactionState.EMPTY;
                } catch (Exception ex) {
                    return false;
                }
            });
            try (KafkaConsumer<String, String> c = Weir.consumer(bs, READ_COMMITTED)) {
                c.assign(List.of(tp));
                assertEquals(4L, c.endOffsets(List.of(tp)).get(tp), "three aborted records and the marker");
                List<ConsumerRecord<String, String>> got = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    c.poll(Duration.ofMillis(100)).forEach(got::add);
                }
                assertEquals(List.of(), values(got));
            }
        }
    }
}
