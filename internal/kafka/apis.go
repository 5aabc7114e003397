package kafka

import "github.com/twmb/franz-go/pkg/kmsg"

// Keys referred to outside the table.
const (
	produceKey     = 0
	apiVersionsKey = 18
)

// apiTable lists every API this broker serves, with the version range it
// advertises in ApiVersions. Produce is advertised from v0 although v0-v2
// carry legacy message sets: librdkafka only enables gzip, snappy and lz4
// when Produce v0 is in range, and FindCoordinator v0 gates its lz4 too.
// The group APIs keep the old versions librdkafka's balanced-consumer
// feature checks for (OffsetCommit 2, OffsetFetch 1, JoinGroup,
// SyncGroup, Heartbeat and LeaveGroup 0). OffsetCommit and OffsetFetch
// stop at v9: v10 names topics by id.
func (s *Server) apiTable() map[int16]api {
	t := map[int16]api{
		0:  {0, 11, s.handleProduce},
		1:  {4, 17, s.handleFetch},
		2:  {1, 9, s.handleListOffsets},
		3:  {0, 12, s.handleMetadata},
		8:  {2, 9, s.handleOffsetCommit},
		9:  {1, 9, s.handleGroupRequest}, // OffsetFetch
		10: {0, 6, s.handleFindCoordinator},
		11: {0, 9, s.handleGroupRequest}, // JoinGroup
		12: {0, 4, s.handleGroupRequest}, // Heartbeat
		13: {0, 5, s.handleGroupRequest}, // LeaveGroup
		14: {0, 5, s.handleGroupRequest}, // SyncGroup
		15: {0, 6, s.handleGroupRequest}, // DescribeGroups
		16: {0, 5, s.handleGroupRequest}, // ListGroups
		17: {0, 1, s.handleSaslHandshake},
		18: {0, 4, s.handleAPIVersions},
		19: {0, 7, s.handleCreateTopics},
		20: {0, 6, s.handleDeleteTopics},
		21: {0, 2, s.handleDeleteRecords},
		22: {0, 5, s.handleInitProducerID},
		23: {0, 4, s.handleOffsetForLeaderEpoch},
		27: {0, 1, s.handleWriteTxnMarkers},
		28: {0, 4, s.handleTxnOffsetCommit},
		29: {0, 3, s.handleDescribeAcls},
		30: {0, 3, s.handleCreateAcls},
		31: {0, 3, s.handleDeleteAcls},
		32: {0, 4, s.handleDescribeConfigs},
		33: {0, 2, s.handleAlterConfigs},
		35: {0, 4, s.handleDescribeLogDirs},
		36: {0, 2, s.handleSaslAuthenticate},
		37: {0, 3, s.handleCreatePartitions},
		42: {0, 2, s.handleGroupRequest}, // DeleteGroups
		43: {0, 2, s.handleElectLeaders},
		44: {0, 1, s.handleIncrementalAlterConfigs},
		45: {0, 0, s.handleAlterPartitionReassignments},
		46: {0, 0, s.handleListPartitionReassignments},
		57: {0, 1, s.handleUpdateFeatures},
		47: {0, 0, s.handleGroupRequest}, // OffsetDelete
		48: {0, 1, s.handleDescribeClientQuotas},
		49: {0, 1, s.handleAlterClientQuotas},
		50: {0, 0, s.handleDescribeUserScramCredentials},
		51: {0, 0, s.handleAlterUserScramCredentials},
		68: {0, 1, s.handleGroupRequest}, // ConsumerGroupHeartbeat (KIP-848)
		69: {0, 1, s.handleGroupRequest}, // ConsumerGroupDescribe
		60: {0, 2, s.handleDescribeCluster},
		61: {0, 0, s.handleDescribeProducers},
		64: {0, 0, s.handleUnregisterBroker},
		75: {0, 0, s.handleDescribeTopicPartitions},
	}
	if s.deps.Txns != nil {
		t[24] = api{0, 4, s.handleTxnRequest} // AddPartitionsToTxn (v5+ is KIP-890 part 2)
		t[25] = api{0, 4, s.handleTxnRequest} // AddOffsetsToTxn
		t[26] = api{0, 4, s.handleTxnRequest} // EndTxn
		t[65] = api{0, 0, s.handleTxnRequest} // DescribeTransactions
		t[66] = api{0, 1, s.handleTxnRequest} // ListTransactions
	}
	if s.deps.Raft != nil {
		// Controller listeners also serve the brokers' controller APIs.
		t[56] = api{2, 3, s.handleAlterPartition}
		t[62] = api{0, 4, s.handleBrokerRegistration}
		t[63] = api{0, 2, s.handleBrokerHeartbeat}
		t[67] = api{0, 0, s.handleAllocateProducerIDs}
		t[73] = api{0, 0, s.handleAssignReplicasToDirs}
	}
	if s.deps.MetadataLog != nil {
		t[59] = api{0, 1, s.handleFetchSnapshot}
	}
	if s.deps.Partitions == nil {
		// A controller listener (of a controller-only or a combined
		// node) serves the controller's APIs, Metadata and the admin
		// APIs, as a KRaft controller's does: no produce, consume,
		// groups or transactions there.
		for key := range t {
			if !controllerAPIs[key] {
				delete(t, key)
			}
		}
	}
	// DescribeQuorum: answered by the leader; other nodes forward it.
	t[55] = api{0, 2, s.handleDescribeQuorum}
	return t
}

// controllerAPIs are those a controller listener serves. BrokerRegistration,
// BrokerHeartbeat, AlterPartition, AllocateProducerIds, AssignReplicasToDirs and FetchSnapshot
// are served there only (they are added for controller listeners above),
// as in Kafka; Fetch there reads the metadata log only.
var controllerAPIs = map[int16]bool{1: true, 3: true, 17: true, 18: true, 36: true, 19: true, 20: true, 29: true, 30: true, 31: true, 32: true, 33: true, 37: true,
	43: true, 44: true, 45: true, 46: true, 49: true, 51: true, 55: true, 57: true, 56: true, 59: true, 60: true, 62: true, 63: true, 64: true, 67: true, 73: true}

// respFor returns the response type for a request, at the request's version.
func respFor(req *Request) kmsg.Response {
	r := req.Body.ResponseKind()
	r.SetVersion(req.Version)
	return r
}
