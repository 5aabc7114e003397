package kafka_test

// Requests the request fuzzer (internal/reqfuzz) found to do harm, each
// sent raw with the answer it must get, and the node serving afterwards.

import (
	"testing"

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
