package clustertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A quorum of three that loses two voters cannot commit: metadata writes
// sent to the survivor fail with a retriable Kafka error within the
// request timeout. The survivor still serves what needs no quorum:
// Metadata from its image, and produce and fetch on the partitions it
// leads.
func TestQuorumLossRefusesWritesServesReads(t *testing.T) {
	for _, survivor := range []string{"follower", "active controller"} {
		t.Run(survivor, func(t *testing.T) {
			c := New(t, Options{Nodes: 3})
			createTopics(t, c.Node(0), 3, []int32{1, 2, 3}, nil, "kept")
			s := c.Leader()
			if survivor == "follower" {
				s = (s + 1) % c.Size()
			}
			for _, i := range c.Live() {
				if i != s {
					c.Kill(i)
				}
			}
			sn := c.Node(s)

			// A metadata write: refused, in time, with a retriable error.
			for _, timeout := range []int32{2000, 5000} {
				req := kmsg.NewPtrCreateTopicsRequest()
				req.TimeoutMillis = timeout
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("refused-%d", timeout), 1, 1
				req.Topics = append(req.Topics, rt)
				start := time.Now()
				resp, err := ask(t, sn, req)
				took := time.Since(start)
				if err != nil {
					t.Fatalf("CreateTopics with no quorum: %v after %v", err, took)
				}
				code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
				t.Logf("CreateTopics (timeout %d ms) with no quorum: %v after %v", timeout, kerr.ErrorForCode(code), took)
				if code != kerr.NotController.Code && code != kerr.RequestTimedOut.Code {
					t.Errorf("CreateTopics with no quorum answered %v, want NOT_CONTROLLER or REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
				}
				if took > time.Duration(timeout)*time.Millisecond {
					t.Errorf("CreateTopics with no quorum took %v, more than its timeout of %d ms", took, timeout)
				}
			}

			// So is a config change.
			alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r := kmsg.NewIncrementalAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "kept"
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("1000")
			r.Configs = append(r.Configs, cfg)
			alter.Resources = append(alter.Resources, r)
			resp, err := ask(t, sn, alter)
			if err != nil {
				t.Fatalf("IncrementalAlterConfigs with no quorum: %v", err)
			}
			if code := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != kerr.NotController.Code {
				t.Errorf("IncrementalAlterConfigs with no quorum answered %v, want NOT_CONTROLLER", kerr.ErrorForCode(code))
			}

			// Reads: Metadata from the survivor's image.
			m := metadataFrom(t, sn)
			if !slices.Contains(topicNames(m), "kept") {
				t.Fatalf("the survivor lists topics %v, want kept", topicNames(m))
			}
			if slices.Contains(topicNames(m), "refused-2000") {
				t.Fatal("a topic was created with no quorum")
			}
			// Produce and fetch on the survivor's own partition.
			p := int32(s)
			cl := c.Client(t, kgo.SeedBrokers(sn.Addr), kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kept": {p: kgo.NewOffset().AtStart()}}))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for i := 0; i < 10; i++ {
				r := &kgo.Record{Topic: "kept", Partition: p, Value: []byte(fmt.Sprintf("v%d", i))}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatalf("producing to the survivor's partition %d: %v", p, err)
				}
			}
			var got []string
			for len(got) < 10 {
				fs := cl.PollFetches(ctx)
				if err := fs.Err(); err != nil {
					t.Fatalf("fetching from the survivor's partition %d: %v", p, err)
				}
				fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			}
			if got[0] != "v0" || got[9] != "v9" {
				t.Fatalf("fetched %v", got)
			}
		})
	}
}
