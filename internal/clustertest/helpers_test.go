package clustertest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/testwait"
)

// ask sends req to node n only (no retries, no routing by the client) and
// returns the answer.
func ask(t *testing.T, n *Node, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// metadataFrom is node n's answer to Metadata for all topics.
func metadataFrom(t *testing.T, n *Node) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := ask(t, n, req)
	if err != nil {
		t.Fatalf("metadata from node %d: %v", n.Index, err)
	}
	return resp.(*kmsg.MetadataResponse)
}

// topicNames lists the topics of a Metadata answer that have no error.
func topicNames(m *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range m.Topics {
		if t.ErrorCode == 0 && t.Topic != nil {
			out = append(out, *t.Topic)
		}
	}
	sort.Strings(out)
	return out
}

// brokerIDs lists the brokers of a Metadata answer.
func brokerIDs(m *kmsg.MetadataResponse) []int32 {
	var out []int32
	for _, b := range m.Brokers {
		out = append(out, b.NodeID)
	}
	slices.Sort(out)
	return out
}

// partitionLeaders maps each partition of topic in a Metadata answer to
// its leader (-1 when offline).
func partitionLeaders(m *kmsg.MetadataResponse, topic string) map[int32]int32 {
	out := map[int32]int32{}
	for _, t := range m.Topics {
		if t.Topic != nil && *t.Topic == topic {
			for _, p := range t.Partitions {
				out[p.Partition] = p.Leader
				if p.ErrorCode == kerr.LeaderNotAvailable.Code {
					out[p.Partition] = -1
				}
			}
		}
	}
	return out
}

// createTopics creates topics through node n (which forwards to the
// active controller); each partition p gets the single replica
// replicas[p%len(replicas)] when replicas are given, else the
// controller places partitions partitions of replication factor 1.
func createTopics(t *testing.T, n *Node, partitions int32, replicas []int32, configs map[string]string, names ...string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	for _, name := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
		if len(replicas) > 0 {
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			for p := int32(0); p < partitions; p++ {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = p, []int32{replicas[int(p)%len(replicas)]}
				rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
			}
		}
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
	}
	// NOT_CONTROLLER (the node does not know the active controller yet,
	// or the controller lost its leadership during the commit) is
	// retried, as clients do. A commit cut short that way may still have
	// been committed by the next leader, as in Kafka: the retry then finds
	// the topic, which is this request's.
	retried := map[string]bool{}
	testwait.For(t, 10*time.Second, fmt.Sprintf("node %d to create %v", n.Index, names), func() error {
		resp, err := ask(t, n, req)
		if err != nil {
			t.Fatalf("CreateTopics through node %d: %v", n.Index, err)
		}
		var retry []kmsg.CreateTopicsRequestTopic
		for i, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
			switch err := kerr.ErrorForCode(rt.ErrorCode); {
			case err == kerr.TopicAlreadyExists && retried[rt.Topic]:
			case err == kerr.NotController:
				retried[rt.Topic] = true
				retry = append(retry, req.Topics[i])
			case err != nil:
				t.Fatalf("creating %s through node %d: %v (%s)", rt.Topic, n.Index, err, deref(rt.ErrorMessage))
			}
		}
		if len(retry) > 0 {
			req.Topics = retry
			return kerr.NotController
		}
		return nil
	})
}

// alterTopicConfig sets key=value on topic through node n.
func alterTopicConfig(t *testing.T, n *Node, topic, key, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = key, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := ask(t, n, req)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs through node %d: %v", n.Index, err)
	}
	for _, rr := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			t.Fatalf("setting %s=%s on %s: %v (%s)", key, value, topic, err, deref(rr.ErrorMessage))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// names returns prefix-0 ... prefix-(n-1).
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// missing lists the names that are not in have.
func missing(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// durable renders what must survive anything in an image: topics (ids,
// partitions, replica assignments) and dynamic configs, in a stable
// order. Leaders, epochs, ISRs and broker registrations legitimately
// change across failures and restarts and are left out.
func durable(img *metadata.Image) string {
	var b strings.Builder
	topics := make([]string, 0, img.Topics.Len())
	for name := range img.Topics.All() {
		topics = append(topics, name)
	}
	sort.Strings(topics)
	for _, name := range topics {
		tp := img.Topics.Get(name)
		fmt.Fprintf(&b, "topic %s id=%s\n", name, tp.ID)
		for _, p := range tp.SortedPartitions() {
			fmt.Fprintf(&b, "  partition %d replicas=%v\n", p.ID, p.Replicas)
		}
	}
	var res []metadata.ConfigResource
	for r := range img.Configs {
		res = append(res, r)
	}
	sort.Slice(res, func(i, j int) bool {
		if res[i].Type != res[j].Type {
			return res[i].Type < res[j].Type
		}
		return res[i].Name < res[j].Name
	})
	for _, r := range res {
		cfg := img.Configs[r]
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "config %d/%s %s=%s\n", r.Type, r.Name, k, cfg[k])
		}
	}
	for _, f := range []string{"metadata.version", "group.version"} {
		fmt.Fprintf(&b, "feature %s=%d\n", f, img.Features[f])
	}
	return b.String()
}

// diffLines reports the lines of a and b that the other lacks.
func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// sameImage waits until node i's durable image equals want.
func sameImage(t *testing.T, c *Cluster, i int, want string, timeout time.Duration) {
	t.Helper()
	testwait.For(t, timeout, fmt.Sprintf("node %d's image to match", i), func() error {
		if got := durable(c.Node(i).Server.Image()); got != want {
			return fmt.Errorf("differs:\n%s", diffLines(want, got))
		}
		return nil
	})
}

// checkpoints lists the metadata snapshots in node n's metadata log dir.
func checkpoints(n *Node) []string {
	files, _ := filepath.Glob(filepath.Join(n.MetadataDir(), "__cluster_metadata-0", "*.checkpoint"))
	return files
}

// logSegments lists the metadata log segments in node n's metadata log dir.
func logSegments(n *Node) []string {
	files, _ := filepath.Glob(filepath.Join(n.MetadataDir(), "__cluster_metadata-0", "*.log"))
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

// unfenced reports whether broker id is registered and unfenced in img.
func unfenced(img *metadata.Image, id int32) error {
	b := img.Brokers[id]
	switch {
	case b == nil:
		return fmt.Errorf("broker %d is not registered", id)
	case b.Fenced:
		return fmt.Errorf("broker %d is fenced", id)
	case b.InControlledShutdown:
		return fmt.Errorf("broker %d is in controlled shutdown", id)
	}
	return nil
}

// deleteTopic deletes topic through node n.
func deleteTopic(t *testing.T, n *Node, topic string) {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 15000
	req.TopicNames = []string{topic}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := ask(t, n, req)
	if err != nil {
		t.Fatalf("DeleteTopics through node %d: %v", n.Index, err)
	}
	for _, rt := range resp.(*kmsg.DeleteTopicsResponse).Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			t.Fatalf("deleting %s through node %d: %v (%s)", topic, n.Index, err, deref(rt.ErrorMessage))
		}
	}
}
