package weir.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static weir.interop.Weir.get;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The consume-transform-produce loop exactly once (KafkaConsumer with
 * read_committed, a transactional KafkaProducer and
 * sendOffsetsToTransaction) on the three-node cluster while nodes restart:
 * first the transaction coordinator's, then another, while more input
 * arrives. Every input record is in the output once, in order per key. It
 * holds the cluster alone while it runs.
 */
class ExactlyOnceRestartTest {

    static final int RECORDS = 3000;
    static final int KEYS = 30;

    @Test
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ_WRITE)
    void exactlyOnceAcrossRestarts() throws Exception {
        String bs = Weir.cluster();
        String in = Weir.name("eos-in");
        String out = Weir.name("eos-out");
        String group = Weir.name("eos-group");
        String txnId = Weir.name("eos-txn");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, in, 3, 3, Map.of("min.insync.replicas", "2"));
            Weir.createTopic(admin, out, 3, 3, Map.of("min.insync.replicas", "2"));
            feed(bs, in, 0, RECORDS / 3);

            Map<String, Object> cc = new HashMap<>();
            cc.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            cc.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            cc.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
            int committedRecords = 0;
            int aborted = 0;
            CompletableFuture<Void> restarts = null;
            try (KafkaConsumer<String, String> c = Weir.consumer(bs, cc);
                    KafkaProducer<String, String> p = Weir.producer(bs, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId))) {
                p.initTransactions();
                c.subscribe(List.of(in));
                long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
                while (committedRecords < RECORDS) {
                    if (System.nanoTime() > deadline) {
                        throw new AssertionError("only " + committedRecords + " records processed; " + aborted + " transactions aborted");
                    }
                    if (restarts == null && committedRecords >= RECORDS / 6) {
                        // The rest of the input arrives while the nodes
                        // restart, so the loop runs through both restarts.
                        int coordinator = get(admin.describeTransactions(List.of(txnId)).description(txnId)).coordinatorId();
                        restarts = CompletableFuture.runAsync(() -> {
                            CompletableFuture<Void> first = CompletableFuture.runAsync(() -> Weir.restartClusterNode(coordinator));
                            feed(bs, in, RECORDS / 3, 2 * RECORDS / 3);
                            first.join();
                            Weir.awaitClusterHealthy(admin);
                            CompletableFuture<Void> second = CompletableFuture.runAsync(() -> Weir.restartClusterNode(coordinator % 3 + 1));
                            feed(bs, in, 2 * RECORDS / 3, RECORDS);
                            second.join();
                        });
                    }
                    ConsumerRecords<String, String> batch = c.poll(Duration.ofMillis(200));
                    if (batch.isEmpty()) {
                        continue;
                    }
                    try {
                        p.beginTransaction();
                        for (ConsumerRecord<String, String> r : batch) {
                            p.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
                        }
                        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                        for (TopicPartition tp : batch.partitions()) {
                            List<ConsumerRecord<String, String>> rs = batch.records(tp);
                            next.put(tp, new OffsetAndMetadata(rs.get(rs.size() - 1).offset() + 1));
                        }
                        p.sendOffsetsToTransaction(next, c.groupMetadata());
                        p.commitTransaction();
                        committedRecords += batch.count();
                    } catch (ProducerFencedException e) {
                        throw e;
                    } catch (KafkaException e) {
                        // Abortable: abort and go back to the committed offsets.
                        aborted++;
                        p.abortTransaction();
                        Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment());
                        for (TopicPartition tp : c.assignment()) {
                            OffsetAndMetadata o = committed.get(tp);
                            if (o == null) {
                                c.seekToBeginning(List.of(tp));
                            } else {
                                c.seek(tp, o.offset());
                            }
                        }
                    }
                }
            } finally {
                if (restarts != null) {
                    restarts.get();
                }
                Weir.awaitClusterHealthy(admin);
            }
            assertNotEquals(null, restarts, "no node was restarted");

            List<ConsumerRecord<String, String>> got = Weir.readExactly(bs, Weir.partitions(out, 3), RECORDS,
                    Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
            Map<String, List<Integer>> byKey = new HashMap<>();
            for (ConsumerRecord<String, String> r : got) {
                byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Integer.parseInt(r.value().substring(1)));
            }
            assertEquals(KEYS, byKey.size());
            for (int k = 0; k < KEYS; k++) {
                List<Integer> want = new ArrayList<>();
                for (int i = k; i < RECORDS; i += KEYS) {
                    want.add(i);
                }
                assertEquals(want, byKey.get("k" + k), "key k" + k + ": every record once, in order");
            }
            assertEquals(Map.of(), get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()).entrySet().stream()
                    .filter(e -> e.getValue().offset() != endOffset(admin, e.getKey()))
                    .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)), "the group's offsets at the input's end");
        }
    }

    /** Produces the input records from to to (exclusive): key k(i mod KEYS), value v(i). */
    static void feed(String bs, String topic, int from, int to) {
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
            for (int i = from; i < to; i++) {
                p.send(new ProducerRecord<>(topic, "k" + (i % KEYS), "v" + i));
            }
            p.flush();
        }
    }

    static long endOffset(Admin admin, TopicPartition tp) {
        return get(admin.listOffsets(Map.of(tp, org.apache.kafka.clients.admin.OffsetSpec.latest())).partitionResult(tp)).offset();
    }
}
