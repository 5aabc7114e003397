package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Tests that exercise what each honoured key controls, named
// "<package directory>.<TestName>" from the module root. A broker key that
// supplies a topic key's default needs no entry: TestSynonymsSupplyTopicKeys
// checks the supply, and the topic key's tests the behaviour. Ignored and
// refused keys need none either: their reasons are in the definitions, and
// the tests of support_test.go check that they warn or are refused.
var brokerExercisedBy = map[string][]string{
	"authorizer.class.name":                     {"internal/config.TestAuthorizerSettings"},
	"super.users":                               {"internal/acl.TestAuthorize"},
	"allow.everyone.if.no.acl.found":            {"internal/acl.TestAuthorize"},
	"advertised.listeners":                      {"internal/config.TestLoadBrokerCrossChecks", "internal/kafka.TestKcatMetadataList"},
	"auto.create.topics.enable":                 {"internal/kafka.TestAutoCreateTopic"},
	"auto.leader.rebalance.enable":              {"internal/clustertest.TestPreferredLeaderRestored"},
	"broker.heartbeat.interval.ms":              {"internal/clustertest.TestIsolatedBrokerIsFencedAndUnfenced"},
	"broker.id":                                 {"internal/config.TestBrokerIDAlias"},
	"broker.rack":                               {"internal/config.TestLoadBrokerFromProperties", "internal/controller.TestCreateTopicsRackAware"},
	"broker.session.timeout.ms":                 {"internal/clustertest.TestIsolatedBrokerIsFencedAndUnfenced"},
	"connection.failed.authentication.delay.ms": {"internal/kafka.TestSASLFailedLoginIsDelayed"},
	"connections.max.reauth.ms":                 {"internal/config.TestOAuthSettings", "internal/kafka.TestSASLReauthentication"},
	"controlled.shutdown.enable":                {"internal/controller.TestControlledShutdownMovesLeadersFirst", "internal/clustertest.TestStoppedActiveControllerHandsOver"},
	"controller.listener.names":                 {"internal/kafka.TestDescribeQuorumThreeVoters", "cmd/weir.TestStartOfABrokerWithNoReachableControllerFails"},
	"controller.quorum.bootstrap.servers":       {"internal/config.TestLoadBrokerCrossChecks"},
	"controller.quorum.election.timeout.ms":     {"internal/clustertest.TestStoppedActiveControllerHandsOver", "internal/clustertest.TestActiveControllerKilled"},
	"controller.quorum.voters":                  {"internal/kafka.TestDescribeQuorumThreeVoters", "cmd/weir.TestStartRefusesAControllerThatIsNotAVoter"},
	"default.replication.factor":                {"internal/controller.TestCreateTopicDefaults"},
	"delete.topic.enable":                       {"internal/kafka.TestDeleteTopicsDisabled"},
	"fetch.max.bytes":                           {"internal/kafka.TestFetchMaxBytesCapsRequests"},
	"follower.replication.throttled.rate":       {"internal/clustertest.TestReassignmentOntoANewBrokerUnderThrottle"},
	"group.consumer.assignors":                  {"internal/group.TestConsumerManyMembersConverge", "internal/group.TestAssignorsRandomized"},
	"group.consumer.heartbeat.interval.ms":      {"internal/group.TestConsumerJoinOneMember", "internal/config.TestLoadBrokerCrossChecks"},
	"group.consumer.max.heartbeat.interval.ms":  {"internal/config.TestLoadBrokerCrossChecks"},
	"group.consumer.max.session.timeout.ms":     {"internal/config.TestLoadBrokerCrossChecks"},
	"group.consumer.max.size":                   {"internal/group.TestConsumerMaxSize"},
	"group.consumer.min.heartbeat.interval.ms":  {"internal/config.TestLoadBrokerCrossChecks"},
	"group.consumer.min.session.timeout.ms":     {"internal/config.TestLoadBrokerCrossChecks"},
	"group.consumer.session.timeout.ms":         {"internal/group.TestConsumerSessionTimeoutExact"},
	"group.initial.rebalance.delay.ms":          {"internal/group.TestInitialRebalanceDelay"},
	"group.max.session.timeout.ms":              {"internal/group.TestJoinValidation"},
	"group.max.size":                            {"internal/group.TestJoinValidation"},
	"group.min.session.timeout.ms":              {"internal/group.TestJoinValidation", "internal/kafka.TestGroupFranzSessionExpiry"},
	"initial.broker.registration.timeout.ms":    {"cmd/weir.TestStartOfABrokerWithNoReachableControllerFails"},
	"inter.broker.listener.name":                {"internal/config.TestLoadBrokerCrossChecks", "internal/clustertest.TestLeaderKilledFollowerTakesOver"},
	"leader.imbalance.check.interval.seconds":   {"internal/clustertest.TestPreferredLeaderRestored"},
	"leader.imbalance.per.broker.percentage":    {"internal/controller.TestRebalanceLeadersAboveTheThreshold"},
	"leader.replication.throttled.rate":         {"internal/clustertest.TestReassignmentOntoANewBrokerUnderThrottle"},
	"listener.security.protocol.map":            {"internal/config.TestRefusedListenersAtStartup", "cmd/weir.TestStartRefusesSecuritySettings", "internal/clustertest.TestTLSCluster"},
	"listeners":                                 {"internal/config.TestLoadBrokerCrossChecks", "internal/kafka.TestDescribeQuorumThreeVoters"},
	"log.cleaner.backoff.ms":                    {"internal/server.TestCompactedTopicKeepsLatestValuePerKey"},
	"log.cleaner.dedupe.buffer.size":            {"internal/log.TestCleanerMapCap"},
	"log.cleaner.enable":                        {"internal/server.TestCompactedTopicKeepsLatestValuePerKey"},
	"log.cleaner.io.buffer.load.factor":         {"internal/log.TestCleanerMapCap"},
	"log.dir":                                   {"internal/config.TestLoadBrokerLogDirs", "cmd/weir.TestStorageCommands"},
	"log.dirs":                                  {"internal/config.TestLoadBrokerLogDirs", "cmd/weir.TestStorageCommands"},
	// The checkpoint intervals: what the checkpoints keep across a crash.
	"log.flush.offset.checkpoint.interval.ms":       {"internal/log.TestManagerLifecycle", "cmd/weir.TestSIGKILLKeepsAcknowledgedRecords"},
	"log.flush.start.offset.checkpoint.interval.ms": {"internal/log.TestManagerLifecycle", "cmd/weir.TestSIGKILLKeepsAcknowledgedRecords"},
	"replica.high.watermark.checkpoint.interval.ms": {"internal/log.TestManagerLifecycle", "cmd/weir.TestSIGKILLKeepsAcknowledgedRecords"},
	"log.retention.check.interval.ms":               {"internal/kafka.TestFranzLowerRetentionDeletes"},
	"metadata.log.dir":                              {"cmd/weir.TestStartRefusesForeignStorage"},
	"metadata.log.max.record.bytes.between.snapshots": {"internal/clustertest.TestSnapshotPlusLogReplayEqualsLiveImage",
		"internal/quorum.TestSnapshotsCompactAndCatchUpALaggingFollower"},
	"metadata.log.max.snapshot.interval.ms": {"internal/quorum.TestSnapshotsCompactAndCatchUpALaggingFollower"},
	"metadata.log.segment.bytes":            {"internal/clustertest.TestSnapshotPlusLogReplayEqualsLiveImage"},
	"node.id":                               {"internal/config.TestBrokerIDAlias", "cmd/weir.TestStartRefusesAControllerThatIsNotAVoter"},
	"num.partitions":                        {"internal/kafka.TestAutoCreateTopic"},
	"num.recovery.threads.per.data.dir":     {"internal/server.TestLogOpenFilesMax"},
	"num.replica.fetchers":                  {"internal/clustertest.TestLeaderKilledFollowerTakesOver"},
	"offset.metadata.max.bytes":             {"internal/group.TestSimpleCommitWithoutGroup"},
	"offsets.commit.timeout.ms":             {"internal/server.TestGroupOffsetsSurviveRestart"},
	"offsets.retention.check.interval.ms":   {"internal/group.TestOffsetRetention"},
	"offsets.retention.minutes":             {"internal/group.TestOffsetRetention"},
	"offsets.topic.num.partitions":          {"internal/coordinator.TestPartitionFor", "internal/group.TestReplayReproducesGroupsAndOffsets"},
	"offsets.topic.replication.factor":      {"internal/clustertest.TestTransactionalCopyWhileBrokersBounce"},
	"offsets.topic.segment.bytes":           {"internal/kafka.TestGroupCoordinatorReadyWhenFound"},
	"process.roles":                         {"internal/config.TestLoadBrokerCrossChecks", "internal/clustertest.TestBrokerOnlyNodeFollowsTheQuorum"},
	"producer.id.expiration.ms":             {"internal/partition.TestManagerApplyDeltas", "internal/log.TestProducerExpiry"},
	// Follower fetching, mostly at Kafka's defaults.
	"replica.fetch.backoff.ms":                                    {"internal/clustertest.TestNetworkCutsAndHeals"},
	"replica.fetch.max.bytes":                                     {"internal/clustertest.TestLargeRecordDoesNotStallFollowers"},
	"replica.fetch.min.bytes":                                     {"internal/clustertest.TestLeaderKilledFollowerTakesOver"},
	"replica.fetch.response.max.bytes":                            {"internal/clustertest.TestLargeRecordDoesNotStallFollowers"},
	"replica.fetch.wait.max.ms":                                   {"internal/clustertest.TestLeaderKilledFollowerTakesOver", "internal/config.TestLoadBrokerCrossChecks"},
	"replica.lag.time.max.ms":                                     {"internal/clustertest.TestSlowFollowerLeavesAndRejoinsTheISR"},
	"replica.socket.timeout.ms":                                   {"internal/clustertest.TestNetworkCutsAndHeals", "internal/config.TestLoadBrokerCrossChecks"},
	"connections.max.idle.ms":                                     {"internal/kafka.TestGarbageConnectionsLeaveTheBrokerServing"},
	"max.connections":                                             {"internal/kafka.TestConnQuotasMaxConnections"},
	"max.connections.per.ip":                                      {"internal/kafka.TestGarbageConnectionsLeaveTheBrokerServing", "internal/kafka.TestConnQuotasPerIP"},
	"max.connections.per.ip.overrides":                            {"internal/kafka.TestGarbageConnectionsLeaveTheBrokerServing", "internal/kafka.TestConnQuotasPerIP"},
	"max.connection.creation.rate":                                {"internal/kafka.TestConnQuotasCreationRate"},
	"quota.window.num":                                            {"internal/kafka.TestProduceQuotaSlowsClientToItsRate", "internal/quota.TestRecordThrottle"},
	"quota.window.size.seconds":                                   {"internal/kafka.TestFetchQuotaSlowsConsumerToItsRate", "internal/quota.TestRecordThrottle"},
	"replication.quota.window.num":                                {"internal/clustertest.TestReplicationMetrics"},
	"replication.quota.window.size.seconds":                       {"internal/clustertest.TestReplicationMetrics"},
	"request.timeout.ms":                                          {"internal/server.TestTxnVerifierBatchesPerCoordinator", "internal/kafka.TestTxnMarkersReachTheGroupCoordinator"},
	"sasl.enabled.mechanisms":                                     {"internal/config.TestSASLSettings", "internal/kafka.TestSASLPlainAndScram", "internal/kafka.TestSASLBeforeAuthentication"},
	"sasl.mechanism.controller.protocol":                          {"internal/clustertest.TestSASLCluster", "internal/config.TestRefusedListenersAtStartup"},
	"sasl.mechanism.inter.broker.protocol":                        {"internal/clustertest.TestSASLCluster", "internal/config.TestRefusedListenersAtStartup"},
	"sasl.oauthbearer.clock.skew.seconds":                         {"internal/config.TestOAuthSettings", "internal/sasl.TestJWTValidation"},
	"sasl.oauthbearer.expected.audience":                          {"internal/config.TestOAuthSettings", "internal/kafka.TestOAuthBearerJWKS"},
	"sasl.oauthbearer.expected.issuer":                            {"internal/config.TestOAuthSettings", "internal/kafka.TestOAuthBearerJWKS"},
	"sasl.oauthbearer.jwks.endpoint.refresh.ms":                   {"internal/config.TestOAuthSettings", "internal/sasl.TestJWKSRefresh"},
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms":         {"internal/sasl.TestJWKSRefresh"},
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms":             {"internal/sasl.TestJWKSRefresh"},
	"sasl.oauthbearer.jwks.endpoint.url":                          {"internal/config.TestOAuthSettings", "internal/kafka.TestOAuthBearerJWKS"},
	"sasl.oauthbearer.scope.claim.name":                           {"internal/config.TestOAuthSettings", "internal/sasl.TestJWTValidation"},
	"sasl.oauthbearer.sub.claim.name":                             {"internal/config.TestOAuthSettings", "internal/kafka.TestOAuthBearerJWKS"},
	"sasl.server.max.receive.size":                                {"internal/kafka.TestSASLBeforeAuthentication"},
	"security.inter.broker.protocol":                              {"internal/config.TestLoadBrokerCrossChecks", "internal/config.TestRefusedListenersAtStartup"},
	"socket.receive.buffer.bytes":                                 {"internal/kafka.TestConcurrentProducers"},
	"socket.request.max.bytes":                                    {"internal/kafka.TestBadFramesCloseOnlyTheirConnection"},
	"socket.send.buffer.bytes":                                    {"internal/kafka.TestConcurrentProducers"},
	"ssl.allow.dn.changes":                                        {"internal/tlsconf.TestReloadWhenTheFilesChange"},
	"ssl.allow.san.changes":                                       {"internal/tlsconf.TestReloadWhenTheFilesChange"},
	"ssl.client.auth":                                             {"internal/tlsconf.TestClientAuthAndPrincipal", "internal/kafka.TestTLSClientAuthRequired", "internal/clustertest.TestTLSCluster"},
	"ssl.enabled.protocols":                                       {"internal/tlsconf.TestVersions", "internal/kafka.TestTLSClientAuthRequired"},
	"ssl.endpoint.identification.algorithm":                       {"internal/tlsconf.TestServerVerification", "internal/clustertest.TestTLSCluster"},
	"ssl.keystore.certificate.chain":                              {"internal/tlsconf.TestClientAuthAndPrincipal", "internal/config.TestSSLSettings"},
	"ssl.keystore.key":                                            {"internal/tlsconf.TestClientAuthAndPrincipal", "internal/tlsconf.TestStoreErrors"},
	"ssl.keystore.location":                                       {"internal/kafka.TestTLSListener", "internal/clustertest.TestTLSCluster", "internal/tlsconf.TestReloadWhenTheFilesChange"},
	"ssl.keystore.password":                                       {"internal/config.TestSSLSettings", "internal/tlsconf.TestPKCS12Stores", "internal/kafka.TestTLSPKCS12Stores"},
	"ssl.key.password":                                            {"internal/config.TestSSLSettings", "internal/tlsconf.TestPKCS12Stores"},
	"ssl.truststore.password":                                     {"internal/config.TestSSLSettings", "internal/tlsconf.TestPKCS12Stores", "internal/kafka.TestTLSPKCS12Stores"},
	"ssl.principal.mapping.rules":                                 {"internal/sslprincipal.TestNames", "internal/kafka.TestTLSPrincipalMappingRules"},
	"ssl.keystore.type":                                           {"internal/config.TestSSLSettings", "internal/kafka.TestTLSListener"},
	"ssl.truststore.certificates":                                 {"internal/tlsconf.TestClientAuthAndPrincipal", "internal/config.TestSSLSettings"},
	"ssl.truststore.location":                                     {"internal/kafka.TestTLSClientAuthRequired", "internal/clustertest.TestTLSCluster"},
	"ssl.truststore.type":                                         {"internal/config.TestSSLSettings", "internal/clustertest.TestTLSCluster"},
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": {"internal/kafka.TestTxnFranzTimeout", "internal/txn.TestTimeoutAbort"},
	"transaction.max.timeout.ms":                                  {"internal/txn.TestInitProducerIDErrors"},
	"transaction.partition.verification.enable":                   {"internal/kafka.TestTransactionalProduceRefused", "internal/cli/txns.TestTransactionsCommand"},
	"transaction.remove.expired.transaction.cleanup.interval.ms":  {"internal/txn.TestExpiration"},
	"transaction.state.log.min.isr":                               {"internal/clustertest.TestTxnCoordinatorFailoverMidCommit"},
	"transaction.state.log.num.partitions":                        {"internal/txn.TestPartitionFor", "internal/clustertest.TestTxnCoordinatorFailoverMidCommit"},
	"transaction.state.log.replication.factor":                    {"internal/clustertest.TestTxnCoordinatorFailoverMidCommit"},
	"transaction.state.log.segment.bytes":                         {"internal/kafka.TestTxnFranzCommitAbort"},
	"transactional.id.expiration.ms":                              {"internal/txn.TestExpiration"},
	"log.open.files.max":                                          {"internal/server.TestLogOpenFilesMax", "internal/log.TestFileCacheBoundsOpenFiles"},
	"weir.fast.fencing.enable":                                    {"internal/clustertest.TestLeaderKilledSoonAfterCreation", "internal/clustertest.TestCrashedBrokerIsFencedBeforeItsSessionRunsOut", "cmd/weir.TestFailoverAfterSIGKILL"},
	"weir.metrics.aggregation":                                    {"internal/server.TestLogMetrics", "internal/server.TestMetricsByTopicBounded", "internal/config.TestMetricsAggregation"},
	"weir.metrics.listener":                                       {"internal/server.TestMetricsEndpoint", "internal/server.TestMetricsDisabledByDefault"},
	"weir.console.listener":                                       {"internal/console.TestConsoleServedByNode", "internal/console.TestSASLLoginAndSessions", "internal/config.TestLoadBrokerConsoleListener"},
}

var topicExercisedBy = map[string][]string{
	"cleanup.policy":                          {"internal/server.TestCompactedTopicKeepsLatestValuePerKey", "internal/log.TestCleanerKeepsLatestValue"},
	"compression.gzip.level":                  {"internal/record.TestCompressLevels", "internal/config.TestResolveTopicTyped"},
	"compression.lz4.level":                   {"internal/record.TestCompressLevels"},
	"compression.type":                        {"internal/kafka.TestFranzTopicCompressionRecompresses"},
	"compression.zstd.level":                  {"internal/record.TestCompressLevels", "internal/config.TestResolveTopicTyped"},
	"delete.retention.ms":                     {"internal/log.TestCleanerTombstones"},
	"file.delete.delay.ms":                    {"internal/log.TestRetentionByTime"},
	"flush.messages":                          {"internal/log.TestFlushMessagesSyncsBeforeAck"},
	"flush.ms":                                {"internal/log.TestManagerRetentionAndFlush"},
	"follower.replication.throttled.replicas": {"internal/clustertest.TestReassignmentOntoANewBrokerUnderThrottle"},
	"index.interval.bytes":                    {"internal/log.TestIndexContent"},
	"leader.replication.throttled.replicas":   {"internal/clustertest.TestReassignmentOntoANewBrokerUnderThrottle"},
	"max.compaction.lag.ms":                   {"internal/log.TestCleanerMaxCompactionLag"},
	"max.message.bytes":                       {"internal/kafka.TestProduceTooLargeFailsOnlyItsPartition"},
	"message.timestamp.after.max.ms":          {"internal/kafka.TestProduceRejectsBadBatchesAndWritesNothing", "internal/record.TestValidateTimestamps"},
	"message.timestamp.before.max.ms":         {"internal/record.TestValidateTimestamps"},
	"message.timestamp.type":                  {"internal/kafka.TestFranzLogAppendTime", "internal/partition.TestSetConfigChangesValidation"},
	"min.cleanable.dirty.ratio":               {"internal/server.TestCompactedTopicKeepsLatestValuePerKey"},
	"min.compaction.lag.ms":                   {"internal/log.TestCleanerMinCompactionLag"},
	"min.insync.replicas":                     {"internal/partition.TestMinInsyncReplicas", "internal/clustertest.TestISRBelowMinInsyncRefusesAcksAll"},
	"retention.bytes":                         {"internal/log.TestRetentionBySize"},
	"retention.ms":                            {"internal/log.TestRetentionByTime", "internal/kafka.TestFranzLowerRetentionDeletes"},
	"segment.bytes":                           {"internal/log.TestRollBySize"},
	"segment.index.bytes":                     {"internal/log.TestRollByIndexFull"},
	"segment.jitter.ms":                       {"internal/log.TestRollByTime"},
	"segment.ms":                              {"internal/log.TestRollByTime"},
	"unclean.leader.election.enable":          {"internal/controller.TestLastISRMemberGoesOfflineUnlessUncleanIsAllowed", "internal/controller.TestEnablingUncleanElectionAtRunTime"},
}

// TestEveryKeyIsExercisedOrExplained checks that every honoured key is
// exercised by a test that exists, and that nothing else is listed.
func TestEveryKeyIsExercisedOrExplained(t *testing.T) {
	tests := testFunctions(t, "../..")
	synonym := map[string]bool{}
	for _, d := range TopicDefs() {
		for _, s := range d.Synonyms {
			synonym[s.Name] = true
		}
	}
	check := func(kind string, defs []Def, exercisedBy map[string][]string, needs func(Def) bool) {
		listed := maps.Clone(exercisedBy)
		for _, d := range defs {
			names, ok := listed[d.Name]
			delete(listed, d.Name)
			switch {
			case !needs(d) && ok:
				t.Errorf("%s key %s is %s and needs no test entry", kind, d.Name, d.Support)
			case needs(d) && len(names) == 0:
				t.Errorf("%s key %s is honoured: name a test that exercises it, or define it as ignored or refused with the reason", kind, d.Name)
			}
			for _, n := range names {
				if !tests[n] {
					t.Errorf("%s key %s: no test %s", kind, d.Name, n)
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(listed)) {
			t.Errorf("%s key %s is listed but not defined", kind, k)
		}
	}
	check("broker", BrokerDefs(), brokerExercisedBy, func(d Def) bool { return d.Support == Honoured && !synonym[d.Name] })
	check("topic", TopicDefs(), topicExercisedBy, func(d Def) bool { return d.Support == Honoured })
}

// testFunctions returns "<package directory>.<TestName>" of every top-level
// test function in the module rooted at root.
func testFunctions(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
				out[filepath.ToSlash(dir)+"."+fd.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out["internal/config.TestEveryKeyIsExercisedOrExplained"] {
		t.Fatalf("found no test functions under %s", root)
	}
	return out
}
