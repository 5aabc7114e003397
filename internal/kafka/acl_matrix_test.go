package kafka_test

// The ACL matrix: with Kafka's StandardAuthorizer on, every API weir
// serves (on a SASL broker listener and a SASL controller listener) is
// sent by alice, who holds the ACLs it needs, and by bob, who holds none:
// alice gets the data or a non-authorization answer, bob Kafka's
// authorization error; ANONYMOUS on a PLAINTEXT listener sees nothing;
// weir's internal APIs (cluster link admin, forwarding) are checked too.
// The node's own requests run as User:broker, a super user, over the same
// SASL listeners; ACLs survive a restart (snapshot and log).

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/acl"
	"weir/internal/kafka"
	"weir/internal/link"
	"weir/internal/nodeclient"
	"weir/internal/sasl"
	"weir/internal/servertest"
	"weir/internal/testwait"
	"weir/internal/tlsconf/tlstest"
)

const aclUsers = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" ` +
	`user_broker="broker-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`

// aclNode starts a node with the authorizer on, User:admin and
// User:broker super users, SASL_PLAINTEXT (PLAIN) broker and controller
// listeners ("SASL", the inter-broker one, and "CONTROLLER") and a
// PLAINTEXT one, whose clients are User:ANONYMOUS.
func aclNode(t *testing.T, dir string) *servertest.Node {
	t.Helper()
	return servertest.Start(t, servertest.Options{Dir: dir, Overrides: map[string]string{
		"listeners":                                       "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":                            "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
		"inter.broker.listener.name":                      "SASL",
		"listener.security.protocol.map":                  "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                         "PLAIN",
		"sasl.mechanism.inter.broker.protocol":            "PLAIN",
		"sasl.mechanism.controller.protocol":              "PLAIN",
		"listener.name.sasl.plain.sasl.jaas.config":       aclUsers,
		"listener.name.controller.plain.sasl.jaas.config": aclUsers,
		"connection.failed.authentication.delay.ms":       "0",
		"authorizer.class.name":                           acl.ClassName,
		"super.users":                                     "User:admin;User:broker",
		"offsets.topic.num.partitions":                    "1",
		// Snapshots early, so a restart loads one and the log after it.
		"metadata.log.max.record.bytes.between.snapshots": "1024",
		"transaction.state.log.num.partitions":            "1",
	}})
}

func userClient(t *testing.T, addr, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return cliFranz(t, addr, append([]kgo.Opt{kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
		kgo.RequestRetries(0)}, opts...)...)
}

func TestACLMatrix(t *testing.T) {
	dir := t.TempDir()
	n := aclNode(t, dir)
	addr, ctrl := n.Server.Addr("SASL").String(), n.Server.Addr("CONTROLLER").String()
	ctx := cliCtx(t)
	admin := kadm.NewClient(userClient(t, addr, "admin"))
	cliCreateTopic(t, ctx, admin, "t", 1, nil)
	if err := userClient(t, addr, "admin").ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// alice's ACLs: what each API needs, through implied operations where
	// Kafka has them (READ implies DESCRIBE, ALTER_CONFIGS implies
	// DESCRIBE_CONFIGS), prefixed patterns, and a wildcard host.
	allow := func(b *kadm.ACLBuilder) *kadm.ACLBuilder { return b.Allow("User:alice").AllowHosts("*") }
	builders := []*kadm.ACLBuilder{
		allow(kadm.NewACLs().Topics("t").ResourcePatternType(kadm.ACLPatternLiteral).
			Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDelete, kadm.OpAlter, kadm.OpAlterConfigs)),
		allow(kadm.NewACLs().Topics("alice-").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpCreate, kadm.OpAlter, kadm.OpDelete)),
		allow(kadm.NewACLs().Groups("g").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead, kadm.OpDelete)),
		allow(kadm.NewACLs().TransactionalIDs("tx").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)),
		allow(kadm.NewACLs().Clusters().ResourcePatternType(kadm.ACLPatternLiteral).
			Operations(kadm.OpAlter, kadm.OpDescribe, kadm.OpClusterAction, kadm.OpAlterConfigs, kadm.OpIdempotentWrite)),
	}
	for _, b := range builders {
		res, err := admin.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("creating ACLs: %v (%s)", r.Err, r.ErrMessage)
			}
		}
	}

	clients := map[string][2]*kgo.Client{
		"alice": {userClient(t, addr, "alice"), userClient(t, ctrl, "alice")},
		"bob":   {userClient(t, addr, "bob"), userClient(t, ctrl, "bob")},
		"admin": {userClient(t, addr, "admin"), userClient(t, ctrl, "admin")},
	}
	ask := func(user string, onController bool, version int16, req kmsg.Request) kmsg.Response {
		t.Helper()
		cl := clients[user][0]
		a := addr
		if onController {
			cl, a = clients[user][1], ctrl
		}
		if version > 0 {
			v := kversion.Stable()
			v.SetMaxKeyVersion(req.Key(), version)
			cl = userClient(t, a, user, kgo.MaxVersions(v))
		}
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatalf("%s %s: %v", user, kmsg.NameForKey(req.Key()), err)
		}
		return resp
	}
	topicID := func() [16]byte {
		td, err := admin.ListTopics(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		return td["t"].ID
	}()
	authErrors := []int16{kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code,
		kerr.TransactionalIDAuthorizationFailed.Code}

	cases := []struct {
		name       string
		controller bool
		version    int16 // when set, the version to send
		req        func(user string) kmsg.Request
		code       func(kmsg.Response) int16
		denied     *kerr.Error
		// check, when set, checks alice's answer further.
		check func(t *testing.T, resp kmsg.Response)
	}{
		{name: "Produce", req: func(string) kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis = -1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = batchOf(t, 1, "acl")
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		{name: "Produce of a transactional batch", req: func(string) kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.TransactionID, r.Acks, r.TimeoutMillis = kmsg.StringPtr("other-tx"), -1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = txnBatch(t, 1, 0, 0, 1, "acl")
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TransactionalIDAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				// alice may not write other-tx either.
				if c := r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.TransactionalIDAuthorizationFailed.Code {
					t.Errorf("alice, other-tx: %v", kerr.ErrorForCode(c))
				}
			}},
		{name: "Fetch", req: func(string) kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxBytes = -1, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "t", topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				if len(r.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches) == 0 {
					t.Error("alice fetched no records")
				}
			}},
		{name: "Fetch as a follower", req: func(string) kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.ReplicaState.ID, r.MaxBytes = 2, 2, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "t", topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		{name: "Fetch of the metadata log", controller: true, version: 12, req: func(string) kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.ReplicaState.ID, r.MaxBytes = -1, -1, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "__cluster_metadata"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "ListOffsets", req: func(string) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		{name: "Metadata of a topic", req: func(string) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("t")
			r.Topics = append(r.Topics, rt)
			r.IncludeTopicAuthorizedOperations = true
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				mt := r.(*kmsg.MetadataResponse).Topics[0]
				want := int32(1<<acl.OpRead | 1<<acl.OpWrite | 1<<acl.OpDelete | 1<<acl.OpAlter | 1<<acl.OpDescribe | 1<<acl.OpDescribeConfigs | 1<<acl.OpAlterConfigs)
				if len(mt.Partitions) != 1 || mt.AuthorizedOperations != want {
					t.Errorf("alice's metadata of t: %d partitions, operations %b, want %b", len(mt.Partitions), mt.AuthorizedOperations, want)
				}
			}},
		{name: "Metadata of every topic", req: func(string) kmsg.Request { return kmsg.NewPtrMetadataRequest() },
			code: func(r kmsg.Response) int16 {
				if len(r.(*kmsg.MetadataResponse).Topics) == 0 {
					return kerr.TopicAuthorizationFailed.Code // bob sees nothing
				}
				return 0
			}, denied: kerr.TopicAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				var names []string
				for _, mt := range r.(*kmsg.MetadataResponse).Topics {
					names = append(names, *mt.Topic)
				}
				if !slices.Equal(names, []string{"t"}) {
					t.Errorf("alice sees topics %v, want [t]", names)
				}
			}},
		{name: "Metadata auto-creating a topic", req: func(user string) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("alice-auto")
			r.Topics, r.AllowAutoTopicCreation = append(r.Topics, rt), true
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				if mt := r.(*kmsg.MetadataResponse).Topics[0]; mt.ErrorCode != 0 || len(mt.Partitions) == 0 {
					t.Errorf("alice's auto-created topic: %v, %d partitions", kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
				}
			}},
		{name: "FindCoordinator of a group", req: func(string) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKeys = []string{"g"}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed},
		{name: "FindCoordinator of a transactional id", req: func(string) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType, r.CoordinatorKeys = 1, []string{"tx"}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode },
			denied: kerr.TransactionalIDAuthorizationFailed},
		{name: "OffsetCommit", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "g", -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				if c := r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
					t.Errorf("alice's commit: %v", kerr.ErrorForCode(c))
				}
			}},
		{name: "OffsetFetch", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			r.Groups = append(r.Groups, g)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				g := r.(*kmsg.OffsetFetchResponse).Groups[0]
				if len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 1 {
					t.Errorf("alice's offsets of g: %+v", g.Topics)
				}
			}},
		{name: "OffsetFetch of named topics", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			for _, topic := range []string{"t", "hidden"} {
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = topic, []int32{0}
				g.Topics = append(g.Topics, gt)
			}
			r.Groups = append(r.Groups, g)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				codes := map[string]int16{}
				for _, gt := range r.(*kmsg.OffsetFetchResponse).Groups[0].Topics {
					codes[gt.Topic] = gt.Partitions[0].ErrorCode
				}
				if len(codes) != 2 || codes["t"] != 0 || codes["hidden"] != kerr.TopicAuthorizationFailed.Code {
					t.Errorf("alice's offsets of t and hidden: %v", codes)
				}
			}},
		{name: "JoinGroup", req: func(string) kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			r.Protocols = append(r.Protocols, p)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }, denied: kerr.GroupAuthorizationFailed},
		{name: "SyncGroup", req: func(string) kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID = "g", "m"
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }, denied: kerr.GroupAuthorizationFailed},
		{name: "Heartbeat", req: func(string) kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID = "g", "m"
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }, denied: kerr.GroupAuthorizationFailed},
		{name: "LeaveGroup", req: func(string) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group = "g"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m"
			r.Members = append(r.Members, m)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }, denied: kerr.GroupAuthorizationFailed},
		{name: "DescribeGroups", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups, r.IncludeAuthorizedOperations = []string{"g"}, true
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				if ops := r.(*kmsg.DescribeGroupsResponse).Groups[0].AuthorizedOperations; ops != 1<<acl.OpRead|1<<acl.OpDelete|1<<acl.OpDescribe {
					t.Errorf("alice's operations on g: %b", ops)
				}
			}},
		{name: "ListGroups", req: func(string) kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
			code: func(r kmsg.Response) int16 {
				if len(r.(*kmsg.ListGroupsResponse).Groups) == 0 {
					return kerr.GroupAuthorizationFailed.Code // bob sees no group
				}
				return 0
			}, denied: kerr.GroupAuthorizationFailed},
		{name: "ConsumerGroupHeartbeat", req: func(string) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "g2", "m2", 0, 10000
			r.SubscribedTopicNames = []string{"t"}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode },
			denied: kerr.GroupAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				// alice may not read g2.
				if c := r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
					t.Errorf("alice, g2: %v", kerr.ErrorForCode(c))
				}
			}},
		{name: "ConsumerGroupDescribe", req: func(string) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{"g"}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode },
			denied: kerr.GroupAuthorizationFailed},
		{name: "CreateTopics", req: func(user string) kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "alice-1", 1, 1
			r.Topics, r.TimeoutMillis = append(r.Topics, rt), 10000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				rt := r.(*kmsg.CreateTopicsResponse).Topics[0]
				// No DESCRIBE_CONFIGS on alice-1: no configs.
				if rt.ErrorCode != 0 || rt.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code || len(rt.Configs) != 0 {
					t.Errorf("alice's CreateTopics: %v, configs %v (%d)", kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(rt.ConfigErrorCode), len(rt.Configs))
				}
			}},
		{name: "CreatePartitions", req: func(string) kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "alice-1", 2
			r.Topics, r.TimeoutMillis = append(r.Topics, rt), 10000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		{name: "DeleteRecords", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = 0
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics, r.TimeoutMillis = append(r.Topics, rt), 10000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		{name: "InitProducerId, idempotent", req: func(string) kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed},
		{name: "InitProducerId, transactional", req: func(string) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 60000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode },
			denied: kerr.TransactionalIDAuthorizationFailed},
		{name: "OffsetForLeaderEpoch", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
		}, denied: kerr.TopicAuthorizationFailed},
		{name: "AddPartitionsToTxn", version: 3, req: func(string) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", 1, 0
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
		},
			denied: kerr.TransactionalIDAuthorizationFailed},
		{name: "AddPartitionsToTxn v4, brokers'", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = "tx", 1, true
			// As Kafka, v4+ checks CLUSTER_ACTION only: not WRITE on
			// the transactional id nor on the topics, which alice
			// lacks for nobody-tx and u.
			other := kmsg.NewAddPartitionsToTxnRequestTransaction()
			other.TransactionalID, other.ProducerID, other.VerifyOnly = "nobody-tx", 2, true
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic, rt.Partitions = "u", []int32{0}
			other.Topics = append(other.Topics, rt)
			r.Transactions = append(r.Transactions, tx, other)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AddPartitionsToTxnResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed, check: func(t *testing.T, r kmsg.Response) {
				resp := r.(*kmsg.AddPartitionsToTxnResponse)
				if resp.ErrorCode != 0 || len(resp.Transactions) != 2 {
					t.Fatalf("alice: %v, %d transactions", kerr.ErrorForCode(resp.ErrorCode), len(resp.Transactions))
				}
				for _, tx := range resp.Transactions {
					for _, rt := range tx.Topics {
						for _, rp := range rt.Partitions {
							if c := rp.ErrorCode; c == kerr.TransactionalIDAuthorizationFailed.Code || c == kerr.TopicAuthorizationFailed.Code {
								t.Errorf("alice, %s %s-%d: %v", tx.TransactionalID, rt.Topic, rp.Partition, kerr.ErrorForCode(c))
							}
						}
					}
				}
			}},
		{name: "AddOffsetsToTxn", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.Group = "tx", 1, "g"
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode },
			denied: kerr.TransactionalIDAuthorizationFailed},
		{name: "EndTxn", req: func(string) kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID = "tx", 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode },
			denied: kerr.TransactionalIDAuthorizationFailed},
		{name: "WriteTxnMarkers", req: func(string) kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID = 12345
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = "nope", []int32{0}
			m.Topics = append(m.Topics, mt)
			r.Markers = append(r.Markers, m)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
		}, denied: kerr.ClusterAuthorizationFailed},
		{name: "TxnOffsetCommit", req: func(string) kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID = "tx", "g", 1
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		},
			denied: kerr.TransactionalIDAuthorizationFailed},
		{name: "DescribeTransactions", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{"tx"}
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
		}, denied: kerr.TransactionalIDAuthorizationFailed},
		{name: "ListTransactions", req: func(string) kmsg.Request { return kmsg.NewPtrListTransactionsRequest() },
			code: func(r kmsg.Response) int16 {
				if len(r.(*kmsg.ListTransactionsResponse).TransactionStates) == 0 {
					return kerr.TransactionalIDAuthorizationFailed.Code // bob sees no transaction
				}
				return 0
			}, denied: kerr.TransactionalIDAuthorizationFailed},
		{name: "DescribeConfigs of a topic", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			r.Resources = append(r.Resources, rr)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		{name: "DescribeConfigs of the broker", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
			r.Resources = append(r.Resources, rr)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode },
			denied: kerr.ClusterAuthorizationFailed},
		{name: "AlterConfigs of a topic", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("86400000")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		{name: "IncrementalAlterConfigs of the cluster", req: func(string) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType = kmsg.ConfigResourceTypeBroker
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "log.retention.ms", kmsg.StringPtr("86400000")
			rr.Configs = append(rr.Configs, c)
			r.Resources, r.ValidateOnly = append(r.Resources, rr), true
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode },
			denied: kerr.ClusterAuthorizationFailed},
		{name: "DescribeLogDirs", req: func(string) kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() },
			code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "ElectLeaders", req: func(string) kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			r.Topics, r.TimeoutMillis = append(r.Topics, rt), 10000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "AlterPartitionReassignments", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.TimeoutMillis = 10000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed},
		{name: "ListPartitionReassignments", req: func(string) kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed},
		{name: "DescribeUserScramCredentials", req: func(string) kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() },
			code:   func(r kmsg.Response) int16 { return r.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode },
			denied: kerr.ClusterAuthorizationFailed},
		{name: "AlterUserScramCredentials", req: func(string) kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "nobody", 1
			r.Deletions = append(r.Deletions, d)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode },
			denied: kerr.ClusterAuthorizationFailed},
		{name: "DescribeQuorum", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = "__cluster_metadata"
			rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeQuorumResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "UpdateFeatures", req: func(string) kmsg.Request {
			r := kmsg.NewPtrUpdateFeaturesRequest()
			r.ValidateOnly, r.TimeoutMillis = true, 10000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.UpdateFeaturesResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "DescribeCluster", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.IncludeClusterAuthorizedOperations = true
			return r
		}, code: func(r kmsg.Response) int16 {
			// Open to all; the operations are the principal's.
			if r.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations == 0 {
				return kerr.ClusterAuthorizationFailed.Code
			}
			return r.(*kmsg.DescribeClusterResponse).ErrorCode
		}, denied: kerr.ClusterAuthorizationFailed},
		{name: "DescribeProducers", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
		},
			denied: kerr.TopicAuthorizationFailed},
		{name: "DescribeTopicPartitions", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = "t"
			r.Topics, r.ResponsePartitionLimit = append(r.Topics, rt), 100
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeTopicPartitionsResponse).Topics[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		{name: "DescribeAcls", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeACLsResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed,
			check: func(t *testing.T, r kmsg.Response) {
				n := 0
				for _, res := range r.(*kmsg.DescribeACLsResponse).Resources {
					n += len(res.ACLs)
				}
				if n != 16 {
					t.Errorf("alice sees %d ACLs, want 16", n)
				}
			}},
		{name: "CreateAcls", req: func(string) kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:carol", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			r.Creations = append(r.Creations, c)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "DeleteAcls", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType, f.Principal = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.StringPtr("User:carol")
			f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r.Filters = append(r.Filters, f)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode }, denied: kerr.ClusterAuthorizationFailed,
			check: func(t *testing.T, r kmsg.Response) {
				if m := r.(*kmsg.DeleteACLsResponse).Results[0].MatchingACLs; len(m) != 1 || m[0].ResourceName != "x" {
					t.Errorf("alice deleted %+v", m)
				}
			}},
		{name: "OffsetDelete", req: func(string) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "g"
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = "t"
			rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }, denied: kerr.GroupAuthorizationFailed},
		{name: "DeleteGroups", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"g"}
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }, denied: kerr.GroupAuthorizationFailed},
		{name: "DeleteTopics", req: func(string) kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr("alice-1")
			r.Topics, r.TopicNames, r.TimeoutMillis = append(r.Topics, rt), []string{"alice-1"}, 10000
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode },
			denied: kerr.TopicAuthorizationFailed},
		// The controller listener's APIs.
		{name: "AlterPartition", controller: true, req: func(string) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionRequest()
			r.BrokerID, r.BrokerEpoch = 99, 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "BrokerRegistration", controller: true, req: func(string) kmsg.Request {
			r := kmsg.NewPtrBrokerRegistrationRequest()
			r.BrokerID, r.ClusterID = 99, "another-cluster"
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.BrokerRegistrationResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "BrokerHeartbeat", controller: true, req: func(string) kmsg.Request {
			r := kmsg.NewPtrBrokerHeartbeatRequest()
			r.BrokerID, r.BrokerEpoch = 99, 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.BrokerHeartbeatResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "AllocateProducerIds", controller: true, req: func(string) kmsg.Request {
			r := kmsg.NewPtrAllocateProducerIDsRequest()
			r.BrokerID, r.BrokerEpoch = 99, 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AllocateProducerIDsResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "UnregisterBroker", req: func(string) kmsg.Request {
			r := kmsg.NewPtrUnregisterBrokerRequest()
			r.BrokerID = 99
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.UnregisterBrokerResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed,
			check: func(t *testing.T, r kmsg.Response) {
				if c := r.(*kmsg.UnregisterBrokerResponse).ErrorCode; c != kerr.BrokerIDNotRegistered.Code {
					t.Errorf("alice unregistering broker 99: %v", kerr.ErrorForCode(c))
				}
			}},
		{name: "DescribeClientQuotas", req: func(string) kmsg.Request {
			return kmsg.NewPtrDescribeClientQuotasRequest()
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.DescribeClientQuotasResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "AlterClientQuotas", req: func(user string) kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			e := kmsg.NewAlterClientQuotasRequestEntry()
			ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ent.Type, ent.Name = "client-id", kmsg.StringPtr(user+"-client")
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = "producer_byte_rate", 1e6
			e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
			r.Entries = append(r.Entries, e)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "AssignReplicasToDirs", controller: true, req: func(string) kmsg.Request {
			r := kmsg.NewPtrAssignReplicasToDirsRequest()
			r.BrokerID, r.BrokerEpoch = 99, 1
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.AssignReplicasToDirsResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
		{name: "FetchSnapshot", controller: true, req: func(string) kmsg.Request {
			r := kmsg.NewPtrFetchSnapshotRequest()
			rt := kmsg.NewFetchSnapshotRequestTopic()
			rt.Topic = "__cluster_metadata"
			rt.Partitions = append(rt.Partitions, kmsg.NewFetchSnapshotRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}, code: func(r kmsg.Response) int16 { return r.(*kmsg.FetchSnapshotResponse).ErrorCode }, denied: kerr.ClusterAuthorizationFailed},
	}
	// ANONYMOUS, on the PLAINTEXT listener, holds no ACL either.
	anon, err := cliFranz(t, n.Addr).SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil || len(anon.(*kmsg.MetadataResponse).Topics) != 0 {
		t.Fatalf("ANONYMOUS sees topics: %v %v", err, anon)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.code(ask("bob", tc.controller, tc.version, tc.req("bob"))); got != tc.denied.Code {
				t.Errorf("bob: %v, want %v", kerr.ErrorForCode(got), tc.denied)
			}
			resp := ask("alice", tc.controller, tc.version, tc.req("alice"))
			if tc.check != nil {
				tc.check(t, resp)
			} else if got := tc.code(resp); slices.Contains(authErrors, got) {
				t.Errorf("alice: %v", kerr.ErrorForCode(got))
			}
		})
	}

	// The cluster link admin API (weir's own) needs ALTER on the cluster.
	for user, want := range map[string]int16{"alice": kerr.InvalidRequest.Code, "bob": kerr.ClusterAuthorizationFailed.Code} {
		if got := linkAdminCode(t, ctx, addr, user, `{"op":"delete-link","link":"none"}`); got != want {
			t.Errorf("%s: cluster link admin: %v, want %v", user, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}

	// ConsumerGroupDescribe hides a group whose members are assigned
	// topics the principal may not describe: bob may describe g848, whose
	// member the admin joined to t.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "g848", "admin-member", 30000, []string{"t"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if resp, err := userClient(t, addr, "admin").SeedBrokers()[0].Request(ctx, hb); err != nil || resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode != 0 {
		t.Fatalf("admin joining g848: %v %+v", err, resp)
	}
	if res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts("*").Groups("g848").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe)); err != nil || res[0].Err != nil {
		t.Fatalf("granting bob g848: %v %+v", err, res)
	}
	describe848 := kmsg.NewPtrConsumerGroupDescribeRequest()
	describe848.Groups = []string{"g848"}
	testwait.For(t, 30*time.Second, "g848's member assigned t", func() error {
		resp := ask("admin", false, 0, describe848).(*kmsg.ConsumerGroupDescribeResponse)
		if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || len(g.Members[0].TargetAssignment.TopicPartitions) == 0 {
			return fmt.Errorf("g848: %+v", g)
		}
		return nil
	})
	if g := ask("bob", false, 0, describe848).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]; g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 {
		t.Errorf("bob describing g848: %v, %d members", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
	}
	if _, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts("*").Groups("g848").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe)); err != nil {
		t.Fatal(err)
	}

	// Forwarding (weir's internal envelope) needs CLUSTER_ACTION, and the
	// request is authorized as the principal it carries.
	quorum := kmsg.NewPtrDescribeQuorumRequest()
	qt := kmsg.NewDescribeQuorumRequestTopic()
	qt.Topic, qt.Partitions = "__cluster_metadata", []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	quorum.Topics = append(quorum.Topics, qt)
	for principal, want := range map[string]int16{"User:alice": 0, "User:bob": kerr.ClusterAuthorizationFailed.Code} {
		resp, err := forwardAs(ctx, ctrl, "alice", principal, quorum)
		if err != nil || resp.(*kmsg.DescribeQuorumResponse).ErrorCode != want {
			t.Errorf("DescribeQuorum forwarded by alice for %s: %v %+v", principal, err, resp)
		}
	}
	if _, err := forwardAs(ctx, ctrl, "bob", "User:admin", quorum); err == nil {
		t.Error("bob, without CLUSTER_ACTION, had a request forwarded")
	}

	// The ACLs survive a restart: a snapshot holds them, and one more,
	// added after it, is in the log.
	testwait.Until(t, 30*time.Second, "a metadata snapshot", func() bool {
		snapshots, _ := filepath.Glob(filepath.Join(dir, "metadata", "__cluster_metadata-0", "*.checkpoint"))
		return len(snapshots) > 0
	})
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:dave").AllowHosts("*").Topics("after-snapshot").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("creating an ACL after the snapshot: %v %+v", err, res)
	}
	before := describeAllACLs(t, ctx, admin)
	n.Stop()
	n = aclNode(t, dir)
	admin = kadm.NewClient(userClient(t, n.Server.Addr("SASL").String(), "admin"))
	if after := describeAllACLs(t, ctx, admin); !slices.Equal(after, before) || len(after) != 17 {
		t.Fatalf("after a restart: %v\nbefore: %v", after, before)
	}
	alice := userClient(t, n.Server.Addr("SASL").String(), "alice", kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if fs := alice.PollFetches(fctx); fs.Err() != nil || fs.NumRecords() == 0 {
		t.Fatalf("alice consuming after the restart: %v (%d records)", fs.Err(), fs.NumRecords())
	}
}

// describeAllACLs lists every ACL, one line each, sorted.
func describeAllACLs(t *testing.T, ctx context.Context, adm *kadm.Client) []string {
	t.Helper()
	res, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		for _, d := range r.Described {
			out = append(out, d.Type.String()+" "+d.Name+" "+d.Pattern.String()+" "+d.Principal+" "+d.Host+" "+d.Operation.String()+" "+d.Permission.String())
		}
	}
	slices.Sort(out)
	return out
}

// saslConn is a node-to-node connection to addr, logged in as user.
func saslConn(addr, user string) *nodeclient.Conn {
	m := plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()
	return nodeclient.New(addr, "acl-test", func(ctx context.Context, network, address string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err == nil {
			if err = sasl.Login(ctx, nc, m, "acl-test"); err != nil {
				nc.Close()
			}
		}
		return nc, err
	})
}

// linkAdminCode sends a cluster link admin request as user and returns
// its error code.
func linkAdminCode(t *testing.T, ctx context.Context, addr, user, body string) int16 {
	t.Helper()
	c := saslConn(addr, user)
	defer c.Close()
	raw, err := c.RoundTrip(ctx, link.AdminAPIKey, 0, false, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var resp link.AdminResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode
}

// forwardAs sends req to the controller listener at addr as a request
// forwarded by user on behalf of principal (see forward.go).
func forwardAs(ctx context.Context, addr, user, principal string, req kmsg.Request) (kmsg.Response, error) {
	c := saslConn(addr, user)
	defer c.Close()
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = kbin.AppendString(kbin.AppendString(kbin.AppendString(body, principal), "127.0.0.1"), "forwarded-client")
	raw, err := c.RoundTrip(ctx, kafka.ForwardAPIKey, 0, false, req.AppendTo(body))
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp, resp.ReadFrom(raw[8:])
}

// Over mutual TLS the principal is the client certificate's DN: the nodes'
// own connections present the broker's certificate (a super user), and
// ACLs name clients by DN.
func TestACLsOverMutualTLS(t *testing.T) {
	ctx := cliCtx(t)
	ca := tlstest.NewCA(t, "test CA")
	addr := tlsNode(t, ca, map[string]string{
		"ssl.truststore.type":         "PEM",
		"ssl.truststore.certificates": string(ca.PEM),
		"ssl.client.auth":             "required",
		"authorizer.class.name":       acl.ClassName,
		"super.users":                 "User:CN=broker;User:CN=admin",
	})
	as := func(cn string, opts ...kgo.Opt) *kgo.Client {
		return tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.Issue(cn, "").TLS(t)}}, opts...)
	}
	admin := kadm.NewClient(as("admin"))
	cliCreateTopic(t, ctx, admin, "granted", 1, nil)
	cliCreateTopic(t, ctx, admin, "other", 1, nil)
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:CN=alice").AllowHosts("*").Topics("granted").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("creating the ACL: %v %+v", err, res)
	}
	alice := as("alice", kgo.RecordRetries(1))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "granted", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("alice producing to granted: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("v")}).FirstErr(); err != kerr.TopicAuthorizationFailed {
		t.Fatalf("alice producing to other: %v", err)
	}
	if err := as("mallory", kgo.RecordRetries(1)).ProduceSync(ctx, &kgo.Record{Topic: "granted", Value: []byte("v")}).FirstErr(); err == nil {
		t.Fatal("mallory, without ACLs, produced")
	}
}
