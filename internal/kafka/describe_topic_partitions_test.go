package kafka_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTopicPartitions pages through the topics by name with a cursor,
// answers ELR lists that are empty but never null, and errors unknown
// topics and bad cursors as Kafka does.
func TestDescribeTopicPartitions(t *testing.T) {
	n := cliNode(t, nil)
	ctx := cliCtx(t)
	adm := cliAdmin(t, n.Addr)
	a := cliCreateTopic(t, ctx, adm, "a", 3, nil)
	cliCreateTopic(t, ctx, adm, "b", 2, nil)
	cl := cliFranz(t, n.Addr)

	ask := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		for _, name := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// summary prints "topic:err:partitions... next=topic/p".
	summary := func(resp *kmsg.DescribeTopicPartitionsResponse) string {
		var parts []string
		for _, rt := range resp.Topics {
			s := fmt.Sprintf("%s:%d:", *rt.Topic, rt.ErrorCode)
			for _, p := range rt.Partitions {
				s += fmt.Sprint(p.Partition)
			}
			parts = append(parts, s)
		}
		if c := resp.NextCursor; c != nil {
			parts = append(parts, fmt.Sprintf("next=%s/%d", c.Topic, c.Partition))
		}
		return strings.Join(parts, " ")
	}

	full := ask(2000, nil)
	if got := summary(full); got != "a:0:012 b:0:01" {
		t.Fatalf("every topic: %s", got)
	}
	p := full.Topics[0].Partitions[1]
	if full.Topics[0].TopicID != a.ID || p.LeaderID != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 ||
		p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 || p.LastKnownELR == nil || len(p.LastKnownELR) != 0 {
		t.Fatalf("partition a-1: %+v", p)
	}

	// Paging: two partitions per response.
	var pages []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for i := 0; i < 5; i++ {
		resp := ask(2, cursor)
		pages = append(pages, summary(resp))
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	if got := strings.Join(pages, " | "); got != "a:0:01 next=a/2 | a:0:2 b:0:0 next=b/1 | b:0:1" {
		t.Fatalf("pages: %s", got)
	}

	if got := summary(ask(2000, nil, "b", "nope", "a", "bad/name")); got != fmt.Sprintf("a:0:012 b:0:01 bad/name:%d: nope:%d:",
		kerr.InvalidTopicException.Code, kerr.UnknownTopicOrPartition.Code) {
		t.Fatalf("named topics: %s", got)
	}
	if got := summary(ask(2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b"}, "a")); got != fmt.Sprintf("a:%d:", kerr.InvalidRequest.Code) {
		t.Fatalf("cursor outside the named topics: %s", got)
	}
}
