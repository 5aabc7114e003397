package kafka_test

// Requests the request fuzzer (internal/reqfuzz) found to do harm, each
// sent raw with the answer it must get, and the node serving afterwards.

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/servertest"
)

// A Metadata request naming two topics 100,000 times each (5 MB) was
// answered with 200,000 topics' metadata (27 MB; the fuzzer's 8 MB
// request made the broker's RSS grow by 1.5 GB). Kafka reads the names,
// and the ids, as a set.
func TestMetadataAnswersRepeatedTopicsOnce(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{"auto.create.topics.enable": "true"}})
	w := dial(t, n.Addr)
	w.createTopic("many", 8, nil)
	id := w.metadataTopic("many", false).TopicID

	named := func(name string) kmsg.MetadataRequestTopic {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		return mt
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.AllowAutoTopicCreation = true
	for range 100_000 {
		req.Topics = append(req.Topics, named("many"), named("created-once"))
	}
	corr := w.send(req)
	frame, err := w.readFrame()
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if len(frame) > 4096 {
		t.Errorf("answer of %d bytes for two distinct topics", len(frame))
	}
	resp, err := decodeResponse(frame, req.Key(), req.Version, corr)
	if err != nil {
		t.Fatal(err)
	}
	topics := resp.(*kmsg.MetadataResponse).Topics
	if len(topics) != 2 || str(topics[0].Topic) != "many" || str(topics[1].Topic) != "created-once" {
		t.Fatalf("answered %d topics, want many and created-once once each", len(topics))
	}
	if len(topics[0].Partitions) != 8 || topics[1].ErrorCode != 0 || len(topics[1].Partitions) != 1 {
		t.Errorf("many: %d partitions; created-once: %v, %d partitions", len(topics[0].Partitions),
			kerr.ErrorForCode(topics[1].ErrorCode), len(topics[1].Partitions))
	}

	// By id (no names): each id once, known or not.
	req = kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	unknown := [16]byte{1}
	for range 1000 {
		for _, i := range [][16]byte{id, unknown} {
			mt := kmsg.NewMetadataRequestTopic()
			mt.TopicID = i
			req.Topics = append(req.Topics, mt)
		}
	}
	topics = w.do(req).(*kmsg.MetadataResponse).Topics
	if len(topics) != 2 || topics[0].TopicID != id || topics[0].ErrorCode != 0 || topics[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("by id: answered %d topics, want the known one and UNKNOWN_TOPIC_ID once each", len(topics))
	}
	w.produceOK("many", 7, batchOf(t, 1, "after"))
}

// A consumer group whose id is longer than a STRING (sent in a flexible
// version, whose compact strings can carry it) was created, and ListGroups
// v0 then answered with an int16 length that overflowed. Kafka refuses a
// request holding such a string in every version: the connection closes.
func TestRequestWithStringOverLimitIsRefused(t *testing.T) {
	n := servertest.Start(t, servertest.Options{})
	long := strings.Repeat("g", 40_000)
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(9)
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = long, "consumer", 10_000, 10_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	join.Protocols = append(join.Protocols, p)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(9)
	commit.Group, commit.Generation = "g", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Metadata = kmsg.StringPtr(long) // a nullable string
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	for _, req := range []kmsg.Request{join, commit} {
		w := dial(t, n.Addr)
		w.send(req)
		w.expectClosed()
	}

	w := dial(t, n.Addr)
	list := kmsg.NewPtrListGroupsRequest()
	list.SetVersion(0)
	resp := w.do(list).(*kmsg.ListGroupsResponse)
	if resp.ErrorCode != 0 || len(resp.Groups) != 0 {
		t.Fatalf("ListGroups v0: error %d, %d groups, want none", resp.ErrorCode, len(resp.Groups))
	}
	// A string of exactly 32,767 bytes is a valid STRING.
	if code := w.metadataTopic(long[:32767], false).ErrorCode; code != kerr.InvalidTopicException.Code {
		t.Fatalf("metadata of a topic named with 32767 bytes: error %d, want INVALID_TOPIC_EXCEPTION", code)
	}
}

// An OffsetCommit naming a topic that does not exist (16,000 characters
// long) with 313,749 copies of one partition made a record for each, the
// name in every key: the broker's memory grew by gigabytes. Kafka answers
// unknown topics and partitions UNKNOWN_TOPIC_OR_PARTITION without
// writing, and keys a commit by partition.
func TestOffsetCommitWritesOnlyKnownPartitionsOnce(t *testing.T) {
	n := grpNode(t, nil)
	w := dial(t, n.Addr)
	w.createTopic("oc", 2, nil)
	group := strings.Repeat("g", 30_000)
	w.awaitCoordinator(group)
	p := w.offsetsPartitionOf(group)
	before := w.endOffset("__consumer_offsets", p)

	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation = group, -1
	known := kmsg.NewOffsetCommitRequestTopic()
	known.Topic = "oc"
	for i := range 100_000 {
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = 0, int64(i)
		known.Partitions = append(known.Partitions, cp)
	}
	missing := kmsg.NewOffsetCommitRequestTopicPartition()
	missing.Partition = 2
	known.Partitions = append(known.Partitions, missing)
	unknown := kmsg.NewOffsetCommitRequestTopic()
	unknown.Topic = strings.Repeat("t", 16_000)
	for range 100_000 {
		unknown.Partitions = append(unknown.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
	}
	req.Topics = append(req.Topics, known, unknown)
	resp := w.do(req).(*kmsg.OffsetCommitResponse)
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 100_001 || len(resp.Topics[1].Partitions) != 100_000 {
		t.Fatalf("answered %d topics, want every mention of every partition", len(resp.Topics))
	}
	for i, rp := range resp.Topics[0].Partitions[:100_000] {
		if rp.Partition != 0 || rp.ErrorCode != 0 {
			t.Fatalf("mention %d of oc-0: partition %d, %v", i, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
		}
	}
	wantCode(t, "oc-2", resp.Topics[0].Partitions[100_000].ErrorCode, kerr.UnknownTopicOrPartition)
	for _, rp := range resp.Topics[1].Partitions {
		wantCode(t, "unknown topic", rp.ErrorCode, kerr.UnknownTopicOrPartition)
	}
	if after := w.endOffset("__consumer_offsets", p); after != before+1 {
		t.Errorf("the commit wrote %d records to __consumer_offsets-%d, want 1", after-before, p)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group = 7, group
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "oc", Partitions: []int32{0}}}
	got := w.do(fetch).(*kmsg.OffsetFetchResponse)
	if len(got.Topics) != 1 || got.Topics[0].Partitions[0].Offset != 99_999 {
		t.Fatalf("committed offset %+v, want the last in the request, 99999", got.Topics)
	}

	// Only unknown partitions: answered without the coordinator, which
	// would refuse the generation.
	req.Generation, req.Topics = 5, []kmsg.OffsetCommitRequestTopic{unknown}
	unknown.Partitions = unknown.Partitions[:1]
	resp = w.do(req).(*kmsg.OffsetCommitResponse)
	wantCode(t, "only unknown", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

// Deleting a topic whose name has the 249 characters Kafka allows renamed
// its directory to <topic>-0.<id>-delete, past the 255 bytes a file name
// may have: the metadata quorum stopped (no admin request succeeded after)
// and the node no longer started. Kafka cuts the topic short in that name.
func TestDeleteTopicWithLongestName(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	long := strings.Repeat("t", 249)
	w.createTopic(long, 2, nil)
	w.produceOK(long, 1, batchOf(t, 1, "x"))
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	del.TimeoutMillis = 10_000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(long)
	del.Topics = append(del.Topics, dt)
	resp := w.do(del).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics: %+v", resp.Topics)
	}
	w.createTopic("after", 1, nil) // the controller still works

	n.Restart()
	w = dial(t, n.Addr)
	w.createTopic("restarted", 1, nil)
	w.produceOK("after", 0, batchOf(t, 1, "y"))
	if code := w.metadataTopic(long, false).ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("deleted topic: metadata error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
}

// A node whose metadata log held more than 256 batches changing topics
// since its last snapshot did not start again: replaying them queued an
// update of the group coordinator's topics for each, on a channel of 256
// that nothing read until the replay was over.
func TestRestartAfterManyTopicChanges(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	for i := range 300 {
		w.createTopic(fmt.Sprintf("t%d", i), 1, nil)
	}
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		n.Restart()
	}()
	select {
	case <-restarted:
	case <-time.After(2 * time.Minute):
		t.Fatal("the node did not start again within 2 minutes")
	}
	w = dial(t, n.Addr)
	w.produceOK("t299", 0, batchOf(t, 1, "x"))
}

// TxnOffsetCommit, like OffsetCommit, keys its commit by partition: a
// partition named 100,000 times (under a 30,000-byte group id) is one
// record, at its last offset, not 100,000 records each carrying the id.
func TestTxnOffsetCommitWritesARepeatedPartitionOnce(t *testing.T) {
	n := grpNode(t, noTxnVerify)
	w := dial(t, n.Addr)
	w.createTopic("txo", 1, nil)
	g := strings.Repeat("g", 30_000)
	w.awaitCoordinator(g)
	p := w.offsetsPartitionOf(g)
	before := w.endOffset("__consumer_offsets", p)

	const pid = int64(4000)
	r := txnOffsetCommit(3, g, pid, map[string][]int32{"txo": {0}}, 0)
	for i := 1; i < 100_000; i++ {
		tp := r.Topics[0].Partitions[0]
		tp.Offset = int64(i)
		r.Topics[0].Partitions = append(r.Topics[0].Partitions, tp)
	}
	resp := w.do(r).(*kmsg.TxnOffsetCommitResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 100_000 {
		t.Fatalf("answered %d topics, want every mention", len(resp.Topics))
	}
	for _, rp := range resp.Topics[0].Partitions {
		wantOK(t, "txn commit", rp.ErrorCode)
	}
	if after := w.endOffset("__consumer_offsets", p); after != before+1 {
		t.Errorf("the commit wrote %d records, want 1", after-before)
	}
	wantOK(t, "commit marker", w.txnMarker(pid, 0, true, p))
	if off, code := w.fetchTxo(g, true); off != 99_999 || code != 0 {
		t.Fatalf("committed offset %d (%v), want the last in the request, 99999", off, kerr.ErrorForCode(code))
	}
}

// ElectLeaders and AlterPartitionReassignments answer every partition
// named with a message naming its topic (as Kafka does): 8,187 partitions
// of a topic named with 32,767 bytes made 268 MB of messages, and 1 GB of
// memory. Past 1 MiB of messages an answer carries the codes only.
func TestPartitionMessagesAreBounded(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	long := strings.Repeat("v", 32767)
	const parts = 100_000
	ids := make([]int32, parts)
	for i := range ids {
		ids[i] = int32(i)
	}
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.SetVersion(2)
	elect.TimeoutMillis = 10_000
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = long, ids
	elect.Topics = append(elect.Topics, et)
	reassign := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	reassign.TimeoutMillis = 10_000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = long
	for _, id := range ids {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = id, []int32{1}
		rt.Partitions = append(rt.Partitions, rp)
	}
	reassign.Topics = append(reassign.Topics, rt)

	for _, req := range []kmsg.Request{elect, reassign} {
		corr := w.send(req)
		frame, err := w.readFrame()
		if err != nil {
			t.Fatalf("%s: no answer: %v", kmsg.NameForKey(req.Key()), err)
		}
		if len(frame) > 2<<20 {
			t.Errorf("%s: answer of %d bytes, want at most 2 MiB", kmsg.NameForKey(req.Key()), len(frame))
		}
		resp, err := decodeResponse(frame, req.Key(), req.GetVersion(), corr)
		if err != nil {
			t.Fatal(err)
		}
		var codes []int16
		var first *string
		switch r := resp.(type) {
		case *kmsg.ElectLeadersResponse:
			for _, p := range r.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
			first = r.Topics[0].Partitions[0].ErrorMessage
		case *kmsg.AlterPartitionAssignmentsResponse:
			for _, p := range r.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
			first = r.Topics[0].Partitions[0].ErrorMessage
		}
		if len(codes) != parts || first == nil || !strings.Contains(*first, "vvvv") {
			t.Fatalf("%s: %d partitions answered, first message %v", kmsg.NameForKey(req.Key()), len(codes), first)
		}
		for _, c := range codes {
			wantCode(t, kmsg.NameForKey(req.Key()), c, kerr.UnknownTopicOrPartition)
		}
	}
	w.createTopic("after", 1, nil)
}

// A DescribeConfigs naming this broker 740,170 times (3.7 MB) with
// synonyms and documentation asked for tens of KB per 5 bytes of request:
// the broker grew by 500 MB and did not answer. A resource named again is
// answered once.
func TestDescribeConfigsAnswersARepeatedResourceOnce(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("dc", 1, nil)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	for range 100_000 {
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeTopic, "dc"}, {kmsg.ConfigResourceTypeTopic, "nope"}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			req.Resources = append(req.Resources, rr)
		}
	}
	resp := w.do(req).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 3 {
		t.Fatalf("answered %d resources, want broker 1, dc and nope once each", len(resp.Resources))
	}
	if b, tp := resp.Resources[0], resp.Resources[1]; b.ErrorCode != 0 || len(b.Configs) == 0 || tp.ErrorCode != 0 || len(tp.Configs) == 0 {
		t.Fatalf("broker: %v, %d configs; topic: %v, %d configs", kerr.ErrorForCode(b.ErrorCode), len(b.Configs), kerr.ErrorForCode(tp.ErrorCode), len(tp.Configs))
	}
	wantCode(t, "unknown topic", resp.Resources[2].ErrorCode, kerr.UnknownTopicOrPartition)
}

// DescribeGroups describes each member with its client id, which a client
// chooses (up to 32 KB); naming the group 10,000 times asked for the same
// description 10,000 times. A group named again is described once, in
// ConsumerGroupDescribe too.
func TestDescribeGroupsAnswersARepeatedGroupOnce(t *testing.T) {
	n := grpNode(t, noAutoCreate)
	w := dial(t, n.Addr)
	w.awaitCoordinator("dg")
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(3)
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "dg", "consumer", 30_000, 30_000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
	frame := kbin.AppendInt32(nil, 0)
	frame = kbin.AppendInt16(frame, join.Key())
	frame = kbin.AppendInt16(frame, join.Version)
	frame = kbin.AppendInt32(frame, w.nextCorr())
	frame = kbin.AppendString(frame, strings.Repeat("c", 32_000)) // the client id
	frame = join.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	w.write(frame)
	if _, err := w.readFrame(); err != nil {
		t.Fatal(err)
	}

	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(5)
	for range 10_000 {
		req.Groups = append(req.Groups, "dg", "nope")
	}
	groups := w.do(req).(*kmsg.DescribeGroupsResponse).Groups
	if len(groups) != 2 || groups[0].Group != "dg" || len(groups[0].Members) != 1 || len(groups[0].Members[0].ClientID) != 32_000 || groups[1].Group != "nope" {
		t.Fatalf("DescribeGroups answered %d groups, want dg (its member) and nope once each", len(groups))
	}
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = req.Groups
	if got := w.do(cgd).(*kmsg.ConsumerGroupDescribeResponse).Groups; len(got) != 2 {
		t.Fatalf("ConsumerGroupDescribe answered %d groups, want 2", len(got))
	}
}
