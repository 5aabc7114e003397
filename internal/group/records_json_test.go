package group

import (
	"encoding/json"
	"testing"
)

// TestDescribeConsumerGroupRecords checks the JSON of each consumer group
// (KIP-848) record type as the coordinator writes it.
func TestDescribeConsumerGroupRecords(t *testing.T) {
	id := [16]byte{1}
	assigned := assignment{id: {0, 2}}
	rack := "r1"
	for _, tc := range []struct {
		rec        cgRecord
		key, value string
	}{
		{cgRecord{kind: cgMetadataKey, group: "g", value: int32(4)}, `{"groupId":"g"}`, `{"epoch":4}`},
		{cgRecord{kind: cgPartitionMetadataKey, group: "g", value: map[string]topicMeta{"t": {id: id, partitions: 3}}},
			`{"groupId":"g"}`, `{"topics":[{"topicId":"AQAAAAAAAAAAAAAAAAAAAA","topicName":"t","numPartitions":3,"partitionMetadata":[]}]}`},
		{cgRecord{kind: cgMemberMetadataKey, group: "g", member: "m", value: memberMeta{rackID: &rack, clientID: "c", clientHost: "/h", topics: []string{"t"}, rebalanceTimeoutMs: 5}},
			`{"groupId":"g","memberId":"m"}`, `{"instanceId":null,"rackId":"r1","clientId":"c","clientHost":"/h","subscribedTopicNames":["t"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":5,"serverAssignor":null}`},
		{cgRecord{kind: cgTargetMetadataKey, group: "g", value: int32(4)}, `{"groupId":"g"}`, `{"assignmentEpoch":4}`},
		{cgRecord{kind: cgTargetMemberKey, group: "g", member: "m", value: assigned},
			`{"groupId":"g","memberId":"m"}`, `{"topicPartitions":[{"topicId":"AQAAAAAAAAAAAAAAAAAAAA","partitions":[0,2]}]}`},
		{cgRecord{kind: cgCurrentMemberKey, group: "g", member: "m", value: memberAssignment{epoch: 4, prevEpoch: 3, assigned: assigned, pending: assignment{}}},
			`{"groupId":"g","memberId":"m"}`, `{"memberEpoch":4,"previousMemberEpoch":3,"state":0,"assignedPartitions":[{"topicId":"AQAAAAAAAAAAAAAAAAAAAA","partitions":[0,2]}],"partitionsPendingRevocation":[]}`},
		{cgRecord{kind: cgRegexKey, group: "g", member: "t.*", value: resolvedRegex{topics: []string{"t"}, version: 9, timestamp: 10}},
			`{"groupId":"g","regularExpression":"t.*"}`, `{"topics":["t"],"version":9,"timestamp":10}`},
		{cgRecord{kind: cgCurrentMemberKey, group: "g", member: "m"}, `{"groupId":"g","memberId":"m"}`, `null`},
	} {
		d, err := Describe(tc.rec.encode())
		if err != nil {
			t.Fatalf("kind %d: %v", tc.rec.kind, err)
		}
		k, _ := json.Marshal(d.Key)
		v, _ := json.Marshal(d.Value)
		if d.KeyType != tc.rec.kind || string(k) != tc.key || string(v) != tc.value {
			t.Errorf("kind %d: got type %d key %s value %s, want key %s value %s", tc.rec.kind, d.KeyType, k, v, tc.key, tc.value)
		}
	}
}
