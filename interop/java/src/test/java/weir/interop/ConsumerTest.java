package weir.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static weir.interop.Weir.get;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * KafkaConsumer against weir, with the classic group protocol (eager range
 * and cooperative-sticky assignors, static membership) and the consumer
 * protocol of KIP-848 (the broker assigns).
 */
class ConsumerTest {

    /** A group member: its consumer, what it read and its rebalance callbacks. */
    static final class Member implements ConsumerRebalanceListener {
        final KafkaConsumer<String, String> consumer;
        final List<ConsumerRecord<String, String>> records = new ArrayList<>();
        final List<Set<TopicPartition>> revoked = new ArrayList<>();
        final List<Set<TopicPartition>> assigned = new ArrayList<>();

        Member(String bs, String group, String protocol, String assignor, String instance) {
            Map<String, Object> c = new HashMap<>();
            c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            c.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1000);
            if (assignor != null && protocol.equals("classic")) {
                c.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
            } else if (assignor != null) {
                c.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
            }
            if (instance != null) {
                c.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
            }
            consumer = Weir.consumer(bs, c);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> ps) {
            if (!ps.isEmpty()) {
                revoked.add(Set.copyOf(ps));
                consumer.commitSync();
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> ps) {
            // Fenced or expired: there is nothing to commit.
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> ps) {
            assigned.add(Set.copyOf(ps));
        }

        void poll() {
            consumer.poll(Duration.ofMillis(100)).forEach(records::add);
        }

        Set<TopicPartition> assignment() {
            return consumer.assignment();
        }

        Set<String> values() {
            return records.stream().map(ConsumerRecord::value).collect(Collectors.toSet());
        }
    }

    /** Polls every member in turn until cond holds. */
    static void pollUntil(String what, BooleanSupplier cond, Member... ms) {
        Weir.waitFor(what, () -> {
            for (Member m : ms) {
                m.poll();
            }
            return cond.getAsBoolean();
        });
    }

    static Set<String> produce(String bs, String topic, int partitions, int n, String tag) throws Exception {
        Set<String> sent = new HashSet<>();
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
            for (int i = 0; i < n; i++) {
                String v = tag + "-" + i;
                p.send(new ProducerRecord<>(topic, i % partitions, null, v));
                sent.add(v);
            }
            p.flush();
        }
        return sent;
    }

    static boolean split(Member a, Member b, int each) {
        Set<TopicPartition> x = a.assignment();
        Set<TopicPartition> y = b.assignment();
        return x.size() == each && y.size() == each && x.stream().noneMatch(y::contains);
    }

    /**
     * Members join and leave a group of four partitions: the partitions are
     * always split without overlap, the eager range assignor revokes
     * everything at a rebalance while the incremental ones (cooperative-sticky,
     * and the consumer protocol with the broker's uniform or range assignor)
     * revoke only what moves, and after the
     * changes the group reads exactly the new records, from the committed
     * offsets.
     */
    @ParameterizedTest(name = "group.protocol={0} assignor={1}")
    @CsvSource({
        "classic,org.apache.kafka.clients.consumer.RangeAssignor",
        "classic,org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
        "consumer,",
        "consumer,range",
    })
    void membersJoinAndLeave(String protocol, String assignor) throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("rebalance");
        String group = Weir.name("rebalance-group");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 4, 1, Map.of());
        }
        Set<String> first = produce(bs, topic, 4, 40, "first");
        Member m1 = new Member(bs, group, protocol, assignor, null);
        Member m2 = new Member(bs, group, protocol, assignor, null);
        Member m3 = new Member(bs, group, protocol, assignor, null);
        try {
            m1.consumer.subscribe(List.of(topic), m1);
            pollUntil("m1 reads the topic", () -> m1.values().equals(first), m1);
            assertEquals(4, m1.assignment().size());
            m1.consumer.commitSync();

            m2.consumer.subscribe(List.of(topic), m2);
            pollUntil("m1 and m2 share the partitions", () -> split(m1, m2, 2), m1, m2);
            Set<TopicPartition> revoked = m1.revoked.stream().flatMap(Set::stream).collect(Collectors.toSet());
            boolean eager = protocol.equals("classic") && assignor.endsWith("RangeAssignor");
            if (eager) {
                assertEquals(Weir.partitions(topic, 4).stream().collect(Collectors.toSet()), m1.revoked.get(0));
            } else {
                assertEquals(m2.assignment(), revoked, "the incremental rebalance revokes only what moves");
            }

            m3.consumer.subscribe(List.of(topic), m3);
            pollUntil("three members share the partitions", () -> {
                Set<TopicPartition> all = new HashSet<>();
                int n = 0;
                for (Member m : List.of(m1, m2, m3)) {
                    if (m.assignment().isEmpty()) {
                        return false;
                    }
                    n += m.assignment().size();
                    all.addAll(m.assignment());
                }
                return n == 4 && all.size() == 4;
            }, m1, m2, m3);

            m1.consumer.close();
            pollUntil("m2 and m3 share the partitions after m1 left", () -> split(m2, m3, 2), m2, m3);
            assertTrue(m2.records.isEmpty() && m3.records.isEmpty(),
                    "members that joined after m1 committed read nothing again: " + m2.values() + m3.values());

            Set<String> second = produce(bs, topic, 4, 40, "second");
            pollUntil("m2 and m3 read the new records",
                    () -> m2.records.size() + m3.records.size() >= 40, m2, m3);
            Set<String> got = new HashSet<>(m2.values());
            got.addAll(m3.values());
            assertEquals(second, got);
            assertEquals(40, m2.records.size() + m3.records.size(), "no record read twice");
        } finally {
            m2.consumer.close();
            m3.consumer.close();
            try {
                m1.consumer.close();
            } catch (IllegalStateException alreadyClosed) {
                // closed above
            }
        }
    }

    /**
     * A static member (group.instance.id) that restarts within its session
     * gets its partitions back without a rebalance of the others; the admin
     * client sees the instance ids and can remove a static member, which
     * gives its partitions to the others.
     */
    @ParameterizedTest(name = "group.protocol={0}")
    @ValueSource(strings = {"classic", "consumer"})
    void staticMembership(String protocol) throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("static");
        String group = Weir.name("static-group");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 4, 1, Map.of());
            Member a = new Member(bs, group, protocol, null, "instance-a");
            Member b = new Member(bs, group, protocol, null, "instance-b");
            Member b2 = new Member(bs, group, protocol, null, "instance-b");
            try {
                a.consumer.subscribe(List.of(topic), a);
                b.consumer.subscribe(List.of(topic), b);
                pollUntil("a and b share the partitions", () -> split(a, b, 2), a, b);
                Set<TopicPartition> ofB = Set.copyOf(b.assignment());
                int aCallbacks = a.assigned.size() + a.revoked.size();
                ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
                assertEquals(Set.of("instance-a", "instance-b"), d.members().stream()
                        .map(m -> m.groupInstanceId().orElse("")).collect(Collectors.toSet()));

                b.consumer.close();
                b2.consumer.subscribe(List.of(topic), b2);
                pollUntil("b's restart gets b's partitions", () -> b2.assignment().equals(ofB), a, b2);
                for (int i = 0; i < 10; i++) {
                    a.poll();
                }
                assertEquals(aCallbacks, a.assigned.size() + a.revoked.size(), "a was not rebalanced: " + a.assigned);

                b2.consumer.close();
                get(admin.removeMembersFromConsumerGroup(group, new org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions(
                        List.of(new org.apache.kafka.clients.admin.MemberToRemove("instance-b")))).all());
                pollUntil("a gets every partition once b is removed", () -> a.assignment().size() == 4, a);
            } finally {
                a.consumer.close();
                try {
                    b.consumer.close();
                } catch (IllegalStateException closed) {
                    // closed above
                }
                try {
                    b2.consumer.close();
                } catch (IllegalStateException closed) {
                    // closed above
                }
            }
        }
    }

    /**
     * A second member with the instance id of a live static member: with
     * the classic protocol it replaces the first, which is fenced
     * (FencedInstanceIdException); with the consumer protocol it is refused
     * while the first holds the id (UnreleasedInstanceIdException).
     */
    @ParameterizedTest(name = "group.protocol={0}")
    @ValueSource(strings = {"classic", "consumer"})
    void duplicateInstanceId(String protocol) throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("dup-instance");
        String group = Weir.name("dup-instance-group");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 2, 1, Map.of());
        }
        Member first = new Member(bs, group, protocol, null, "same");
        Member second = new Member(bs, group, protocol, null, "same");
        try {
            first.consumer.subscribe(List.of(topic), first);
            pollUntil("the first member is assigned", () -> first.assignment().size() == 2, first);
            second.consumer.subscribe(List.of(topic), second);
            Class<? extends Exception> want = protocol.equals("classic")
                    ? org.apache.kafka.common.errors.FencedInstanceIdException.class
                    : org.apache.kafka.common.errors.UnreleasedInstanceIdException.class;
            Member loser = protocol.equals("classic") ? first : second;
            Member winner = protocol.equals("classic") ? second : first;
            Exception[] got = {null};
            Weir.waitFor(want.getSimpleName(), () -> {
                for (Member m : List.of(winner, loser)) {
                    try {
                        m.poll();
                    } catch (Exception e) {
                        if (m != loser) {
                            throw e;
                        }
                        got[0] = e;
                    }
                }
                return got[0] != null;
            });
            assertTrue(want.isInstance(got[0]), "the " + (loser == first ? "first" : "second") + " member fails with " + got[0]);
            pollUntil("the other member holds the partitions", () -> winner.assignment().size() == 2, winner);
        } finally {
            for (Member m : List.of(first, second)) {
                try {
                    m.consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(5)));
                } catch (Exception closing) {
                    // a fenced member may fail to leave
                }
            }
        }
    }

    /**
     * Subscription by pattern: matching topics are assigned, others are not,
     * and a matching topic created later is picked up. With the consumer
     * protocol the broker evaluates the pattern too (SubscriptionPattern).
     */
    @ParameterizedTest(name = "group.protocol={0} broker-side={1}")
    @CsvSource({"classic,false", "consumer,false", "consumer,true"})
    void subscribePattern(String protocol, boolean brokerSide) throws Exception {
        String bs = Weir.single();
        String prefix = Weir.name("pattern");
        String group = Weir.name("pattern-group");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, prefix + "-a", 2, 1, Map.of());
            Weir.createTopic(admin, prefix + "-b", 1, 1, Map.of());
            Weir.createTopic(admin, prefix + "x-c", 1, 1, Map.of());
            Set<String> want = produce(bs, prefix + "-a", 2, 10, "a");
            want.addAll(produce(bs, prefix + "-b", 1, 10, "b"));
            produce(bs, prefix + "x-c", 1, 10, "c");
            Member m = new Member(bs, group, protocol, null, null);
            try {
                if (brokerSide) {
                    m.consumer.subscribe(new SubscriptionPattern(Pattern.quote(prefix) + "-.*"), m);
                } else {
                    m.consumer.subscribe(Pattern.compile(Pattern.quote(prefix) + "-.*"), m);
                }
                pollUntil("the matching topics are read", () -> m.values().equals(want), m);
                assertEquals(Set.of(prefix + "-a", prefix + "-b"),
                        m.assignment().stream().map(TopicPartition::topic).collect(Collectors.toSet()));

                Weir.createTopic(admin, prefix + "-d", 1, 1, Map.of());
                want.addAll(produce(bs, prefix + "-d", 1, 10, "d"));
                pollUntil("a new matching topic is read", () -> m.values().equals(want), m);
                assertEquals(4, m.assignment().size());
            } finally {
                m.consumer.close();
            }
        }
    }

    /**
     * commitSync and commitAsync (with metadata) are read back by committed()
     * and by the admin client, and a new member resumes at the committed
     * offset.
     */
    @ParameterizedTest(name = "group.protocol={0}")
    @ValueSource(strings = {"classic", "consumer"})
    void commits(String protocol) throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("commit");
        String group = Weir.name("commit-group");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
            produce(bs, topic, 1, 20, "r");
            Member m = new Member(bs, group, protocol, null, null);
            try {
                m.consumer.subscribe(List.of(topic)); // no listener: nothing commits at close
                pollUntil("the records are read", () -> m.records.size() == 20, m);

                m.consumer.commitSync(Map.of(tp, new OffsetAndMetadata(10, "sync")));
                OffsetAndMetadata c = m.consumer.committed(Set.of(tp)).get(tp);
                assertEquals(10, c.offset());
                assertEquals("sync", c.metadata());

                AtomicReference<Object> done = new AtomicReference<>();
                m.consumer.commitAsync(Map.of(tp, new OffsetAndMetadata(15, "async")),
                        (offsets, err) -> done.set(err != null ? err : offsets));
                pollUntil("the async commit completes", () -> done.get() != null, m);
                assertEquals(Map.of(tp, new OffsetAndMetadata(15, "async")), done.get());
                OffsetAndMetadata viaAdmin = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()).get(tp);
                assertEquals(15, viaAdmin.offset());
                assertEquals("async", viaAdmin.metadata());
            } finally {
                m.consumer.close();
            }
            Member next = new Member(bs, group, protocol, null, null);
            try {
                next.consumer.subscribe(List.of(topic));
                pollUntil("the next member reads from the committed offset", () -> next.records.size() == 5, next);
                assertEquals(15, next.records.get(0).offset());
                next.consumer.commitSync();
                assertEquals(20, next.consumer.committed(Set.of(tp)).get(tp).offset());
            } finally {
                next.consumer.close();
            }
            assertEquals(GroupType.parse(protocol),
                    get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group)).type());
        }
    }

    /**
     * offsetsForTimes finds the first record at or after a timestamp,
     * beginningOffsets/endOffsets bound the log, and seek moves the position.
     */
    @Test
    void seekAndOffsetsForTimes() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("times");
        TopicPartition tp = new TopicPartition(topic, 0);
        long t0 = System.currentTimeMillis() - 3_600_000;
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
        }
        try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(topic, 0, t0 + i * 1000L, null, "t" + i));
            }
            p.flush();
        }
        try (KafkaConsumer<String, String> c = Weir.consumer(bs, Map.of())) {
            c.assign(List.of(tp));
            assertEquals(0L, c.beginningOffsets(List.of(tp)).get(tp));
            assertEquals(10L, c.endOffsets(List.of(tp)).get(tp));
            Map<TopicPartition, OffsetAndTimestamp> at = c.offsetsForTimes(Map.of(tp, t0 + 4500));
            assertEquals(5, at.get(tp).offset());
            assertEquals(t0 + 5000, at.get(tp).timestamp());
            assertEquals(0, c.offsetsForTimes(Map.of(tp, 0L)).get(tp).offset());
            assertNull(c.offsetsForTimes(Map.of(tp, t0 + 60_000)).get(tp), "no record at or after the time");

            c.seek(tp, at.get(tp).offset());
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            Weir.waitFor("records from offset 5", () -> {
                c.poll(Duration.ofMillis(100)).forEach(got::add);
                return got.size() >= 5;
            });
            assertEquals(List.of("t5", "t6", "t7", "t8", "t9"), got.stream().map(ConsumerRecord::value).toList());
            assertEquals(t0 + 5000, got.get(0).timestamp());
            assertEquals(10, c.position(tp));

            c.seek(tp, 8);
            got.clear();
            Weir.waitFor("records from offset 8", () -> {
                c.poll(Duration.ofMillis(100)).forEach(got::add);
                return got.size() >= 2;
            });
            assertEquals(List.of("t8", "t9"), got.stream().map(ConsumerRecord::value).toList());
            c.seekToBeginning(List.of(tp));
            assertEquals(0, c.position(tp));
            c.seekToEnd(List.of(tp));
            assertEquals(10, c.position(tp));
        }
        // A position past the end is out of range: reset by
        // auto.offset.reset, or OffsetOutOfRangeException with none.
        try (KafkaConsumer<String, String> c = Weir.consumer(bs, Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest"))) {
            c.assign(List.of(tp));
            c.seek(tp, 1000);
            Weir.waitFor("the reset to the end", () -> {
                c.poll(Duration.ofMillis(100));
                return c.position(tp) == 10;
            });
        }
        try (KafkaConsumer<String, String> c = Weir.consumer(bs, Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none"))) {
            c.assign(List.of(tp));
            c.seek(tp, 1000);
            org.apache.kafka.clients.consumer.OffsetOutOfRangeException e = null;
            long deadline = System.nanoTime() + Weir.WAIT.toNanos();
            while (e == null && System.nanoTime() < deadline) {
                try {
                    c.poll(Duration.ofMillis(100));
                } catch (org.apache.kafka.clients.consumer.OffsetOutOfRangeException oor) {
                    e = oor;
                }
            }
            assertNotNull(e, "no OffsetOutOfRangeException");
            assertEquals(Map.of(tp, 1000L), e.offsetOutOfRangePartitions());
        }
    }

    /** A paused partition returns nothing until it is resumed; the others go on. */
    @Test
    void pauseResume() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("pause");
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 2, 1, Map.of());
        }
        produce(bs, topic, 2, 20, "p");
        try (KafkaConsumer<String, String> c = Weir.consumer(bs, Map.of())) {
            c.assign(List.of(p0, p1));
            c.pause(List.of(p0));
            assertEquals(Set.of(p0), c.paused());
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            Weir.waitFor("p1's records", () -> {
                c.poll(Duration.ofMillis(100)).forEach(got::add);
                return got.size() >= 10;
            });
            for (int i = 0; i < 5; i++) {
                c.poll(Duration.ofMillis(100)).forEach(got::add);
            }
            assertTrue(got.stream().allMatch(r -> r.partition() == 1), "records of the paused partition");
            assertEquals(10, got.size());
            assertEquals(0, c.position(p0));

            c.resume(List.of(p0));
            Weir.waitFor("p0's records", () -> {
                c.poll(Duration.ofMillis(100)).forEach(got::add);
                return got.size() >= 20;
            });
            assertEquals(20, got.size());
            assertEquals(10, got.stream().filter(r -> r.partition() == 0).count());
            assertEquals(10, c.position(p0));
        }
    }

    /** A group's members as the admin client describes them. */
    @Test
    void describeGroupMembers() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("describe");
        String group = Weir.name("describe-group");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 2, 1, Map.of());
            Member m = new Member(bs, group, "consumer", null, null);
            try {
                m.consumer.subscribe(List.of(topic), m);
                pollUntil("the member is assigned", () -> m.assignment().size() == 2, m);
                ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
                assertEquals(1, d.members().size());
                MemberDescription md = d.members().iterator().next();
                assertEquals(m.assignment(), md.assignment().topicPartitions());
                assertNotNull(md.consumerId());
                assertEquals(GroupType.CONSUMER, d.type());
            } finally {
                m.consumer.close();
            }
        }
    }
}
