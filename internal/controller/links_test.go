package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

func wantErr(t *testing.T, err error, code *kerr.Error, text string) {
	t.Helper()
	var te *TopicError
	if !errors.As(err, &te) || te.Code != code || !strings.Contains(err.Error(), text) {
		t.Fatalf("error %v, want %v containing %q", err, code, text)
	}
}

func TestClusterLinksAndMirrorTopics(t *testing.T) {
	h := newCluster(t, 3, nil)
	src := map[string]string{"bootstrap.servers": "src:9092"}
	_, err := h.c.CreateClusterLink("dr", map[string]string{}, false)
	wantErr(t, err, kerr.InvalidConfig, "bootstrap.servers")
	_, err = h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1", "availability.check.ms": "1000"}, false)
	wantErr(t, err, kerr.InvalidConfig, "not supported yet")
	_, err = h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, false)
	wantErr(t, err, kerr.InvalidConfig, "sasl.mechanism: GSSAPI is not supported")
	_, err = h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1", "sasl.mechanism": "PLAIN"}, false)
	wantErr(t, err, kerr.InvalidConfig, "no effect with security.protocol=PLAINTEXT")
	_, err = h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1", "link.mode": "BIDIRECTIONAL"}, false)
	wantErr(t, err, kerr.InvalidConfig, "DESTINATION links only")
	_, err = h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1", "acl.sync.enable": "true"}, false)
	wantErr(t, err, kerr.InvalidConfig, "needs acl.filters")
	_, err = h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1", "cluster.link.prefix": "a/"}, false)
	wantErr(t, err, kerr.InvalidConfig, "cluster.link.prefix")
	_, err = h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": strings.Repeat("s", 40000)}, false)
	wantErr(t, err, kerr.InvalidConfig, "longer than 32767 bytes")
	_, err = h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1", "bogus": "1"}, false)
	wantErr(t, err, kerr.InvalidConfig, "unknown cluster link property bogus")
	if _, err := h.c.CreateClusterLink("dr", src, true); err != nil || h.c.Image().LinkByName("dr") != nil {
		t.Fatalf("validate only: %v", err)
	}
	if _, err := h.c.CreateClusterLink("dr", src, false); err != nil {
		t.Fatal(err)
	}
	_, err = h.c.CreateClusterLink("dr", src, false)
	wantErr(t, err, kerr.InvalidRequest, "already exists")

	_, err = h.c.CreateMirrorTopic(MirrorTopic{Topic: "orders", Link: "dr", SourceTopic: "bad/name", Partitions: 2})
	wantErr(t, err, kerr.InvalidRequest, "Source topic: Topic name is invalid")
	_, err = h.c.CreateMirrorTopic(MirrorTopic{Topic: "orders", Link: "nope", SourceTopic: "orders", Partitions: 2, ReplicationFactor: 2})
	wantErr(t, err, kerr.InvalidRequest, "does not exist")
	_, err = h.c.CreateMirrorTopic(MirrorTopic{Topic: "orders", Link: "dr", SourceTopic: "src-orders", Partitions: 2, ReplicationFactor: 2,
		Configs: map[string]string{"retention.ms": "-2"}})
	wantErr(t, err, kerr.InvalidConfig, "retention.ms")
	if _, err := h.c.CreateMirrorTopic(MirrorTopic{Topic: "orders", Link: "dr", SourceTopic: "src-orders", Partitions: 2, ReplicationFactor: 2,
		Configs: map[string]string{"cleanup.policy": "compact"}}); err != nil {
		t.Fatal(err)
	}
	if c := h.c.Image().TopicConfig("orders"); c["cleanup.policy"] != "compact" {
		t.Fatalf("mirror topic configs %v", c)
	}
	img := h.c.Image()
	m := img.MirrorOf("orders")
	if m == nil || m.State != metadata.MirrorActive || m.SourceTopic != "src-orders" || len(img.Topics.Get("orders").Partitions) != 2 {
		t.Fatalf("mirror %+v", m)
	}
	// Its partition count is the source's.
	cp := kmsg.NewCreatePartitionsRequestTopic()
	cp.Topic, cp.Count = "orders", 3
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics = append(req.Topics, cp)
	wantErr(t, h.createPartitions(req)[0], kerr.InvalidRequest, "mirror of cluster link 'dr'")
	// The link cannot go while the mirror follows it.
	_, err = h.c.DeleteClusterLink("dr")
	wantErr(t, err, kerr.InvalidRequest, "still has mirror topics [orders]")

	// Stopping needs a pause first; then the epochs rise above the log's.
	leaders := map[int32]int32{0: 0, 1: 0}
	_, err = h.c.StopMirror("orders", metadata.MirrorFailedOver, map[int32]int32{0: 5, 1: 0}, leaders)
	wantErr(t, err, kerr.InvalidRequest, "must be paused")
	if _, err := h.c.SetMirrorState("orders", metadata.MirrorPaused); err != nil {
		t.Fatal(err)
	}
	_, err = h.c.StopMirror("orders", metadata.MirrorFailedOver, map[int32]int32{0: 5}, leaders)
	wantErr(t, err, kerr.InvalidRequest, "orders-1 is missing")
	_, err = h.c.StopMirror("orders", metadata.MirrorFailedOver, map[int32]int32{0: 5, 1: 0}, map[int32]int32{0: 0, 1: 3})
	wantErr(t, err, kerr.FencedLeaderEpoch, "read it again")
	before := h.c.Image().Topics.Get("orders").Partitions[0]
	if _, err := h.c.StopMirror("orders", metadata.MirrorFailedOver, map[int32]int32{0: 5, 1: 0}, leaders); err != nil {
		t.Fatal(err)
	}
	img = h.c.Image()
	p0, p1 := img.Topics.Get("orders").Partitions[0], img.Topics.Get("orders").Partitions[1]
	if p0.LeaderEpoch != 6 || p0.PartitionEpoch != before.PartitionEpoch+1 || p0.Leader != before.Leader || p1.LeaderEpoch != 1 {
		t.Fatalf("epochs after the failover: %+v %+v", p0, p1)
	}
	if m := img.MirrorOf("orders"); m.ReadOnly() || !slices.Equal(m.StopEpochs, []int32{6, 1}) {
		t.Fatalf("mirror %+v still read-only, or stop epochs wrong", m)
	}
	_, err = h.c.SetMirrorState("orders", metadata.MirrorActive)
	wantErr(t, err, kerr.InvalidRequest, "already STOPPED")
	if _, err := h.c.DeleteClusterLink("dr"); err != nil {
		t.Fatal(err)
	}
	if len(h.c.Image().Links) != 0 {
		t.Fatal("link not deleted")
	}
}
