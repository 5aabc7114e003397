package weir.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static weir.interop.Weir.failure;
import static weir.interop.Weir.get;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Kafka's Admin client against weir: every call weir serves, and the refusal of the others. */
class AdminTest {

    static ConfigEntry entry(Config c, String name) {
        ConfigEntry e = c.get(name);
        assertNotNull(e, name + " in " + c);
        return e;
    }

    static Config topicConfig(Admin admin, String topic) {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        return get(admin.describeConfigs(List.of(r)).all()).get(r);
    }

    /**
     * Topics with configs: created (and refused: existing, bad config,
     * replication factor above the brokers, validate-only creates nothing),
     * described by name and by id, their configs with their sources,
     * partitions added (never removed), deleted by name and by id.
     */
    @Test
    void topics() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("admin-topic");
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 2, 1, Map.of("cleanup.policy", "compact", "retention.ms", "123456",
                    "max.message.bytes", "65536"));
            TopicDescription d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
            assertEquals(2, d.partitions().size());
            assertEquals(1, d.partitions().get(0).replicas().size());
            assertFalse(d.isInternal());
            Uuid id = d.topicId();
            Set<AclOperation> ops = get(admin.describeTopics(List.of(topic), new org.apache.kafka.clients.admin.DescribeTopicsOptions()
                    .includeAuthorizedOperations(true)).allTopicNames()).get(topic).authorizedOperations();
            assertEquals(Set.of(AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER,
                    AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS), ops);
            TopicDescription byId = get(admin.describeTopics(TopicCollection.ofTopicIds(List.of(id))).allTopicIds()).get(id);
            assertEquals(topic, byId.name());

            Config c = topicConfig(admin, topic);
            assertEquals("compact", entry(c, "cleanup.policy").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, entry(c, "cleanup.policy").source());
            assertEquals("123456", entry(c, "retention.ms").value());
            assertEquals("65536", entry(c, "max.message.bytes").value());
            assertEquals("1073741824", entry(c, "segment.bytes").value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, entry(c, "segment.bytes").source());

            failure(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all(), TopicExistsException.class);
            failure(admin.createTopics(List.of(new NewTopic(Weir.name("bad-config"), 1, (short) 1)
                    .configs(Map.of("retention.ms", "soon")))).all(), InvalidConfigurationException.class);
            failure(admin.createTopics(List.of(new NewTopic(Weir.name("bad-config"), 1, (short) 1)
                    .configs(Map.of("no.such.config", "1")))).all(), InvalidConfigurationException.class);
            failure(admin.createTopics(List.of(new NewTopic(Weir.name("too-many-replicas"), 1, (short) 3))).all(),
                    InvalidReplicationFactorException.class);
            failure(admin.createTopics(List.of(new NewTopic(Weir.name("bad-assignment"), Map.of(0, List.of(1, 1))))).all(),
                    org.apache.kafka.common.errors.InvalidReplicaAssignmentException.class);
            failure(admin.createTopics(List.of(new NewTopic(Weir.name("unknown-broker"), Map.of(0, List.of(42))))).all(),
                    org.apache.kafka.common.errors.InvalidReplicaAssignmentException.class);
            String dry = Weir.name("validate-only");
            get(admin.createTopics(List.of(new NewTopic(dry, 3, (short) 1)), new CreateTopicsOptions().validateOnly(true)).all());
            assertFalse(get(admin.listTopics().names()).contains(dry));

            get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all());
            Weir.waitFor("four partitions", () -> {
                try {
                    return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size() == 4;
                } catch (Exception e) {
                    return false;
                }
            });
            failure(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all(), InvalidPartitionsException.class);
            failure(admin.createPartitions(Map.of(Weir.name("missing"), NewPartitions.increaseTo(3))).all(),
                    UnknownTopicOrPartitionException.class);
            String missing = Weir.name("missing");
            failure(admin.describeTopics(List.of(missing)).allTopicNames(), UnknownTopicOrPartitionException.class);
            failure(admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, missing))).all(),
                    UnknownTopicOrPartitionException.class);

            String other = Weir.name("admin-delete-by-id");
            Weir.createTopic(admin, other, 1, 1, Map.of());
            Uuid otherId = get(admin.describeTopics(List.of(other)).allTopicNames()).get(other).topicId();
            get(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(otherId))).all());
            get(admin.deleteTopics(List.of(topic)).all());
            Set<String> names = get(admin.listTopics().names());
            assertFalse(names.contains(topic) || names.contains(other), "deleted topics still listed: " + names);
            failure(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(otherId))).all(), UnknownTopicIdException.class);
            failure(admin.deleteTopics(List.of(topic)).all(), UnknownTopicOrPartitionException.class);
        }
    }

    /**
     * incrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic,
     * a dynamic broker config set and removed, and a bad value refused.
     */
    @Test
    void incrementalAlterConfigs() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("admin-configs");
        ConfigResource tr = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of("retention.ms", "100000"));
            get(admin.incrementalAlterConfigs(Map.of(tr, List.of(
                    new AlterConfigOp(new ConfigEntry("segment.ms", "3600000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND)))).all());
            Config c = topicConfig(admin, topic);
            assertEquals("3600000", entry(c, "segment.ms").value());
            assertEquals("604800000", entry(c, "retention.ms").value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, entry(c, "retention.ms").source());
            assertEquals("delete,compact", entry(c, "cleanup.policy").value());

            get(admin.incrementalAlterConfigs(Map.of(tr, List.of(
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT)))).all());
            assertEquals("compact", entry(topicConfig(admin, topic), "cleanup.policy").value());

            failure(admin.incrementalAlterConfigs(Map.of(tr, List.of(
                    new AlterConfigOp(new ConfigEntry("segment.ms", "never"), AlterConfigOp.OpType.SET)))).all(),
                    InvalidConfigurationException.class);
            assertEquals("3600000", entry(topicConfig(admin, topic), "segment.ms").value());

            String node = Integer.toString(get(admin.describeCluster().nodes()).iterator().next().id());
            ConfigResource br = new ConfigResource(ConfigResource.Type.BROKER, node);
            get(admin.incrementalAlterConfigs(Map.of(br, List.of(new AlterConfigOp(
                    new ConfigEntry("leader.replication.throttled.rate", "1048576"), AlterConfigOp.OpType.SET)))).all());
            Config b = get(admin.describeConfigs(List.of(br)).all()).get(br);
            assertEquals("1048576", entry(b, "leader.replication.throttled.rate").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG, entry(b, "leader.replication.throttled.rate").source());
            get(admin.incrementalAlterConfigs(Map.of(br, List.of(new AlterConfigOp(
                    new ConfigEntry("leader.replication.throttled.rate", null), AlterConfigOp.OpType.DELETE)))).all());
            b = get(admin.describeConfigs(List.of(br)).all()).get(br);
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, entry(b, "leader.replication.throttled.rate").source());
        }
    }

    /** describeCluster: the nodes, the controller and the cluster id. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"single", "cluster"})
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void describeCluster(String where) throws Exception {
        String bs = where.equals("single") ? Weir.single() : Weir.cluster();
        int n = where.equals("single") ? 1 : 3;
        try (Admin admin = Weir.admin(bs)) {
            DescribeClusterResult r = admin.describeCluster();
            Set<Integer> ids = get(r.nodes()).stream().map(org.apache.kafka.common.Node::id).collect(Collectors.toSet());
            assertEquals(n, ids.size());
            for (String addr : bs.split(",")) {
                assertTrue(get(r.nodes()).stream().anyMatch(node -> (node.host() + ":" + node.port()).equals(addr)),
                        addr + " among " + get(r.nodes()));
            }
            assertTrue(ids.contains(get(r.controller()).id()));
            Set<AclOperation> ops = get(admin.describeCluster(new org.apache.kafka.clients.admin.DescribeClusterOptions()
                    .includeAuthorizedOperations(true)).authorizedOperations());
            assertTrue(ops != null && ops.containsAll(Set.of(AclOperation.DESCRIBE, AclOperation.ALTER, AclOperation.CREATE,
                    AclOperation.CLUSTER_ACTION, AclOperation.IDEMPOTENT_WRITE)), "cluster operations with no authorizer: " + ops);
            assertEquals(null, get(r.authorizedOperations()), "not asked for");
            assertFalse(get(r.clusterId()).isEmpty());
        }
    }

    /** describeLogDirs and describeReplicaLogDirs see a partition's bytes. */
    @Test
    void logDirs() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("admin-logdirs");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
            try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
                for (int i = 0; i < 100; i++) {
                    p.send(new ProducerRecord<>(topic, "x".repeat(100)));
                }
                p.flush();
            }
            int node = get(admin.describeCluster().nodes()).iterator().next().id();
            Map<String, LogDirDescription> dirs = get(admin.describeLogDirs(List.of(node)).allDescriptions()).get(node);
            assertEquals(1, dirs.size(), "log dirs " + dirs.keySet());
            LogDirDescription dir = dirs.values().iterator().next();
            assertEquals(null, dir.error());
            ReplicaInfo ri = dir.replicaInfos().get(tp);
            assertNotNull(ri, tp + " in " + dir.replicaInfos().keySet());
            assertTrue(ri.size() > 100 * 100, "size " + ri.size());
            assertEquals(0, ri.offsetLag());
            assertFalse(ri.isFuture());
            assertTrue(dir.totalBytes().isPresent() && dir.usableBytes().isPresent());

            TopicPartitionReplica rep = new TopicPartitionReplica(topic, 0, node);
            var info = get(admin.describeReplicaLogDirs(List.of(rep)).all()).get(rep);
            assertEquals(dirs.keySet().iterator().next(), info.getCurrentReplicaLogDir());
        }
    }

    /**
     * Consumer groups: listed (by state and type), described, their offsets
     * listed, altered, deleted per partition; a group with members cannot be
     * deleted, an empty one can.
     */
    @Test
    void consumerGroups() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("admin-groups");
        String group = Weir.name("admin-group");
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 2, 1, Map.of());
            try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
                for (int i = 0; i < 20; i++) {
                    p.send(new ProducerRecord<>(topic, i % 2, null, "g" + i));
                }
                p.flush();
            }
            try (KafkaConsumer<String, String> c = Weir.consumer(bs, Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
                    ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"))) {
                c.subscribe(List.of(topic));
                int[] n = {0};
                Weir.waitFor("the group reads the topic", () -> {
                    n[0] += c.poll(Duration.ofMillis(100)).count();
                    return n[0] >= 20;
                });
                c.commitSync();

                Collection<GroupListing> stable = get(admin.listGroups(ListGroupsOptions.forConsumerGroups()
                        .inGroupStates(Set.of(GroupState.STABLE))).all());
                assertTrue(stable.stream().anyMatch(g -> g.groupId().equals(group)), group + " among " + stable);
                ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
                assertEquals(GroupState.STABLE, d.groupState());
                assertEquals(1, d.members().size());
                assertEquals(Set.of(p0, p1), d.members().iterator().next().assignment().topicPartitions());
                assertEquals("range", d.partitionAssignor());
                failure(admin.deleteConsumerGroups(List.of(group)).all(), GroupNotEmptyException.class);
                failure(admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(1))).all(),
                        org.apache.kafka.common.errors.UnknownMemberIdException.class);
            }
            Map<TopicPartition, OffsetAndMetadata> offs = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            assertEquals(Map.of(p0, new OffsetAndMetadata(10), p1, new OffsetAndMetadata(10)), offs.entrySet().stream()
                    .collect(Collectors.toMap(Map.Entry::getKey, e -> new OffsetAndMetadata(e.getValue().offset()))));
            assertEquals(GroupState.EMPTY, get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group)).groupState());

            get(admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(3, "altered"))).all());
            offs = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            assertEquals(3, offs.get(p0).offset());
            assertEquals("altered", offs.get(p0).metadata());
            get(admin.deleteConsumerGroupOffsets(group, Set.of(p1)).all());
            offs = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            assertEquals(Set.of(p0), offs.keySet());

            get(admin.deleteConsumerGroups(List.of(group)).all());
            Collection<GroupListing> all = get(admin.listGroups().all());
            assertFalse(all.stream().anyMatch(g -> g.groupId().equals(group)), group + " still listed");
            failure(admin.deleteConsumerGroups(List.of(group)).all(), GroupIdNotFoundException.class);
            failure(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group), GroupIdNotFoundException.class);
            assertEquals(Map.of(), get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()));
        }
    }

    /**
     * listOffsets (earliest, latest, max timestamp, by timestamp,
     * read_committed) and deleteRecords, which moves the earliest offset and
     * refuses an offset past the end.
     */
    @Test
    void listOffsetsAndDeleteRecords() throws Exception {
        String bs = Weir.single();
        String topic = Weir.name("admin-offsets");
        TopicPartition tp = new TopicPartition(topic, 0);
        long t0 = System.currentTimeMillis() - 60_000;
        try (Admin admin = Weir.admin(bs)) {
            Weir.createTopic(admin, topic, 1, 1, Map.of());
            try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
                for (int i = 0; i < 10; i++) {
                    long ts = i == 6 ? t0 + 50_000 : t0 + i * 100;
                    p.send(new ProducerRecord<>(topic, 0, ts, null, "o" + i));
                }
                p.flush();
            }
            Function<OffsetSpec, ListOffsetsResultInfo> at = spec ->
                    get(admin.listOffsets(Map.of(tp, spec)).partitionResult(tp));
            assertEquals(0, at.apply(OffsetSpec.earliest()).offset());
            assertEquals(10, at.apply(OffsetSpec.latest()).offset());
            ListOffsetsResultInfo max = at.apply(OffsetSpec.maxTimestamp());
            assertEquals(6, max.offset());
            assertEquals(t0 + 50_000, max.timestamp());
            assertEquals(3, at.apply(OffsetSpec.forTimestamp(t0 + 250)).offset());
            assertEquals(0, at.apply(OffsetSpec.earliestLocal()).offset(), "no tiered storage: the local log starts at 0");
            assertEquals(-1, at.apply(OffsetSpec.latestTiered()).offset(), "no tiered storage: nothing tiered");
            assertEquals(-1, at.apply(OffsetSpec.forTimestamp(t0 + 100_000)).offset());
            assertEquals(10, get(admin.listOffsets(Map.of(tp, OffsetSpec.latest()),
                    new org.apache.kafka.clients.admin.ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).partitionResult(tp)).offset());

            assertEquals(4, get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp)).lowWatermark());
            assertEquals(4, at.apply(OffsetSpec.earliest()).offset());
            assertEquals(4, at.apply(OffsetSpec.earliestLocal()).offset());
            assertEquals(4, Weir.readExactly(bs, List.of(tp), 6, Map.of()).get(0).offset());
            failure(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(11))).lowWatermarks().get(tp),
                    OffsetOutOfRangeException.class);
            assertEquals(10, get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp)).lowWatermark());

            String compacted = Weir.name("admin-compacted");
            TopicPartition ctp = new TopicPartition(compacted, 0);
            Weir.createTopic(admin, compacted, 1, 1, Map.of("cleanup.policy", "compact"));
            failure(admin.deleteRecords(Map.of(ctp, RecordsToDelete.beforeOffset(0))).lowWatermarks().get(ctp),
                    org.apache.kafka.common.errors.PolicyViolationException.class);
        }
    }

    /**
     * On the cluster: a preferred election where the preferred leaders lead
     * is not needed; a reassignment moves a partition's replicas and is
     * listed while it runs; cancelling none is refused.
     */
    @Test
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void electLeadersAndReassign() throws Exception {
        String bs = Weir.cluster();
        String topic = Weir.name("admin-reassign");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Weir.admin(bs)) {
            get(admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(1, 2))))).all());
            Weir.waitFor("a leader", () -> {
                try {
                    return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0).leader() != null;
                } catch (Exception e) {
                    return false;
                }
            });
            try (KafkaProducer<String, String> p = Weir.producer(bs, Map.of())) {
                for (int i = 0; i < 50; i++) {
                    p.send(new ProducerRecord<>(topic, "r" + i));
                }
                p.flush();
            }
            Weir.waitFor("the preferred leader", () -> {
                try {
                    return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0).leader().id() == 1;
                } catch (Exception e) {
                    return false;
                }
            });
            Map<TopicPartition, Optional<Throwable>> el = get(admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions());
            assertTrue(el.get(tp).orElse(null) instanceof ElectionNotNeededException, "preferred election: " + el);

            get(admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(2, 3))))).all());
            Weir.waitFor("the reassignment to finish", () -> {
                try {
                    return admin.listPartitionReassignments().reassignments().get().isEmpty()
                            && admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0)
                                    .replicas().stream().map(org.apache.kafka.common.Node::id).collect(Collectors.toList())
                                    .equals(List.of(2, 3));
                } catch (Exception e) {
                    return false;
                }
            });
            var p = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic).partitions().get(0);
            assertEquals(Set.of(2, 3), p.isr().stream().map(org.apache.kafka.common.Node::id).collect(Collectors.toSet()));
            failure(admin.alterPartitionReassignments(Map.of(tp, Optional.empty())).all(), NoReassignmentInProgressException.class);
            assertEquals(50, Weir.readExactly(bs, List.of(tp), 50, Map.of()).size());
        }
    }

    /**
     * describeFeatures and updateFeatures: the finalized and supported
     * levels, a validate-only change, an unknown feature refused, and a
     * real change of eligible.leader.replicas.version and back.
     */
    @Test
    void features() throws Exception {
        String bs = Weir.single();
        String elr = "eligible.leader.replicas.version";
        try (Admin admin = Weir.admin(bs)) {
            FeatureMetadata fm = get(admin.describeFeatures().featureMetadata());
            assertTrue(fm.finalizedFeatures().containsKey("metadata.version"), "finalized " + fm.finalizedFeatures());
            short mv = fm.finalizedFeatures().get("metadata.version").maxVersionLevel();
            var supported = fm.supportedFeatures().get("metadata.version");
            assertTrue(supported.minVersion() <= mv && mv <= supported.maxVersion(), "supported " + supported);
            assertTrue(fm.finalizedFeaturesEpoch().isPresent());
            assertTrue(fm.supportedFeatures().containsKey(elr), "supported " + fm.supportedFeatures());

            short cur = fm.finalizedFeatures().containsKey(elr) ? fm.finalizedFeatures().get(elr).maxVersionLevel() : 0;
            short other = (short) (1 - cur);
            FeatureUpdate.UpgradeType there = other > cur ? FeatureUpdate.UpgradeType.UPGRADE : FeatureUpdate.UpgradeType.SAFE_DOWNGRADE;
            FeatureUpdate.UpgradeType back = other > cur ? FeatureUpdate.UpgradeType.SAFE_DOWNGRADE : FeatureUpdate.UpgradeType.UPGRADE;
            get(admin.updateFeatures(Map.of(elr, new FeatureUpdate(other, there)), new UpdateFeaturesOptions().validateOnly(true)).all());
            assertEquals(cur, level(admin, elr));
            failure(admin.updateFeatures(Map.of("no.such.feature", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                    new UpdateFeaturesOptions()).all(), InvalidUpdateVersionException.class);

            get(admin.updateFeatures(Map.of(elr, new FeatureUpdate(other, there)), new UpdateFeaturesOptions()).all());
            Weir.waitFor(elr + " at " + other, () -> level(admin, elr) == other);
            get(admin.updateFeatures(Map.of(elr, new FeatureUpdate(cur, back)), new UpdateFeaturesOptions()).all());
            Weir.waitFor(elr + " back at " + cur, () -> level(admin, elr) == cur);
        }
    }

    static short level(Admin admin, String feature) {
        var f = get(admin.describeFeatures().featureMetadata()).finalizedFeatures().get(feature);
        return f == null ? 0 : f.maxVersionLevel();
    }

    /** describeMetadataQuorum: the leader, every voter, their log end offsets. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"single", "cluster"})
    @ResourceLock(value = Weir.CLUSTER_LOCK, mode = ResourceAccessMode.READ)
    void describeMetadataQuorum(String where) throws Exception {
        String bs = where.equals("single") ? Weir.single() : Weir.cluster();
        Set<Integer> voters = where.equals("single") ? Set.of(1) : Set.of(1, 2, 3);
        try (Admin admin = Weir.admin(bs)) {
            QuorumInfo q = get(admin.describeMetadataQuorum().quorumInfo());
            assertTrue(voters.contains(q.leaderId()), "leader " + q.leaderId());
            assertTrue(q.leaderEpoch() > 0);
            assertTrue(q.highWatermark() > 0);
            assertEquals(voters, q.voters().stream().map(QuorumInfo.ReplicaState::replicaId).collect(Collectors.toSet()));
            for (QuorumInfo.ReplicaState v : q.voters()) {
                assertTrue(v.logEndOffset() > 0, "voter " + v);
            }
            QuorumInfo.ReplicaState leader = q.voters().stream().filter(v -> v.replicaId() == q.leaderId()).findFirst().orElseThrow();
            assertTrue(leader.logEndOffset() >= q.highWatermark());
        }
    }

    /**
     * SCRAM users through Admin: the client salts the password, weir keeps
     * the credential in the metadata log and describes its mechanism and
     * iterations; deleting a credential that does not exist, and
     * describing a user without one, is RESOURCE_NOT_FOUND, as in Kafka.
     */
    @Test
    void scramCredentials() {
        try (Admin admin = Weir.admin(Weir.single())) {
            get(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialUpsertion("interop-user", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "secret"),
                    new UserScramCredentialUpsertion("interop-user2", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "secret"))).all());
            Map<String, UserScramCredentialsDescription> d = get(admin.describeUserScramCredentials(List.of("interop-user", "interop-user2")).all());
            assertEquals(List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)), d.get("interop-user").credentialInfos());
            assertEquals(List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)), d.get("interop-user2").credentialInfos());
            failure(admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_256))).all(),
                    ResourceNotFoundException.class);
            get(admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion("interop-user2", ScramMechanism.SCRAM_SHA_256))).all());
            // RESOURCE_NOT_FOUND: all() counts the user as one without
            // credentials, description() fails (Kafka's Admin).
            assertEquals(List.of(), get(admin.describeUserScramCredentials(List.of("interop-user2")).all()).get("interop-user2").credentialInfos());
            failure(admin.describeUserScramCredentials(List.of("interop-user2")).description("interop-user2"), ResourceNotFoundException.class);
        }
    }

    /**
     * unregisterBroker of a broker id that is not registered fails with
     * BROKER_ID_NOT_REGISTERED, as Kafka's controller answers.
     */
    @Test
    void unregisterUnknownBroker() {
        try (Admin admin = Weir.admin(Weir.single())) {
            failure(admin.unregisterBroker(7).all(), org.apache.kafka.common.errors.BrokerIdNotRegisteredException.class);
        }
    }

    /**
     * The ACL APIs of a node without an authorizer fail with Kafka's
     * SecurityDisabledException, as against a broker without one.
     */
    @TestFactory
    Stream<DynamicTest> aclsWithoutAnAuthorizer() {
        String bs = Weir.single();
        Map<String, Function<Admin, KafkaFuture<?>>> calls = new java.util.LinkedHashMap<>();
        calls.put("describeAcls", a -> a.describeAcls(AclBindingFilter.ANY).values());
        calls.put("createAcls", a -> a.createAcls(List.of(new AclBinding(
                new ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL),
                new AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW)))).all());
        calls.put("deleteAcls", a -> a.deleteAcls(List.of(AclBindingFilter.ANY)).all());
        return calls.entrySet().stream().map(e -> DynamicTest.dynamicTest(e.getKey(), () -> {
            try (Admin admin = Weir.admin(bs)) {
                failure(e.getValue().apply(admin), SecurityDisabledException.class);
            }
        }));
    }

    /**
     * Calls of APIs weir does not serve fail at once with Kafka's
     * UnsupportedVersionException, as against a broker without them.
     */
    @TestFactory
    Stream<DynamicTest> unsupportedApis() {
        String bs = Weir.single();
        Map<String, Function<Admin, KafkaFuture<?>>> calls = new java.util.LinkedHashMap<>();
        calls.put("createDelegationToken", a -> a.createDelegationToken().delegationToken());
        calls.put("describeDelegationToken", a -> a.describeDelegationToken().delegationTokens());
        calls.put("alterReplicaLogDirs", a -> a.alterReplicaLogDirs(Map.of(new TopicPartitionReplica("t", 0, 1), "/tmp")).all());
        calls.put("describeShareGroups", a -> a.describeShareGroups(List.of("g")).all());
        calls.put("describeStreamsGroups", a -> a.describeStreamsGroups(List.of("g")).all());
        calls.put("listConfigResources", a -> a.listConfigResources().all());
        return calls.entrySet().stream().map(e -> DynamicTest.dynamicTest(e.getKey(), () -> {
            try (Admin admin = Weir.admin(bs)) {
                failure(e.getValue().apply(admin), UnsupportedVersionException.class);
            }
        }));
    }
}
