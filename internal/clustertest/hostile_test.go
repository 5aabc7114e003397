package clustertest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker-only node forwards CreateTopics to the active controller, which
// refuses the metadata log's topic as it refuses it locally.
func TestForwardedCreateOfMetadataTopicRefused(t *testing.T) {
	c := New(t, Options{Nodes: 1, Brokers: 1})
	b := c.Node(1)
	if b.Controller {
		t.Fatal("node 1 should be broker-only")
	}
	createTopics(t, b, 1, nil, nil, "forwarded") // the broker reaches the controller
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "__cluster_metadata", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := ask(t, b, req)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.(*kmsg.CreateTopicsResponse).Topics[0]
	if err := kerr.ErrorForCode(got.ErrorCode); err != kerr.InvalidRequest || deref(got.ErrorMessage) != "Creation of internal topic __cluster_metadata is prohibited." {
		t.Fatalf("forwarded CreateTopics __cluster_metadata: %v (%s)", err, deref(got.ErrorMessage))
	}
}
