package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// SyncMirror follows the source's synced configs (set, changed, removed;
// others untouched) and adds the partitions it added; a synced config is
// not alterable while the topic mirrors, a mirror of another source or a
// stopped one is not synced.
func TestSyncMirror(t *testing.T) {
	h := newCluster(t, 3, nil)
	if _, err := h.c.CreateClusterLink("dr", map[string]string{"bootstrap.servers": "s:1", "cluster.link.prefix": "src."}, false); err != nil {
		t.Fatal(err)
	}
	_, err := h.c.CreateMirrorTopic(MirrorTopic{Topic: "orders", Link: "dr", SourceTopic: "orders", Partitions: 2, ReplicationFactor: 2})
	wantErr(t, err, kerr.InvalidRequest, "the mirror of orders is named src.orders")
	if _, err := h.c.CreateMirrorTopic(MirrorTopic{Topic: "src.orders", Link: "dr", SourceTopic: "orders", Partitions: 2, ReplicationFactor: 2,
		Configs: map[string]string{"retention.ms": "1000", "segment.ms": "60000"}}); err != nil {
		t.Fatal(err)
	}
	alter := func(k, v string) error {
		op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		op.Name, op.Value = k, kmsg.StringPtr(v)
		res, err := h.c.AlterConfigs([]ConfigChange{{Type: metadata.ResourceTopic, Name: "src.orders", Incremental: true,
			Ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{op}}}, false)
		if err != nil {
			return err
		}
		return res.Errs[0]
	}
	if err := alter("min.insync.replicas", "2"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, alter("retention.ms", "5"), kerr.InvalidRequest, "config retention.ms follows the source topic's")

	_, err = h.c.SyncMirror(MirrorSync{Topic: "src.orders", SourceTopic: "payments", Partitions: 2})
	wantErr(t, err, kerr.InvalidRequest, "mirrors orders, not payments")
	_, err = h.c.SyncMirror(MirrorSync{Topic: "src.orders", SourceTopic: "orders", Partitions: 2, Configs: map[string]string{"retention.ms": "-5"}})
	wantErr(t, err, kerr.InvalidConfig, "retention.ms")
	if _, err := h.c.SyncMirror(MirrorSync{Topic: "src.orders", SourceTopic: "orders", Partitions: 5,
		Configs: map[string]string{"retention.ms": "2000", "cleanup.policy": "compact", "min.insync.replicas": "3"}}); err != nil {
		t.Fatal(err)
	}
	img := h.c.Image()
	cfg := img.TopicConfig("src.orders")
	if cfg["retention.ms"] != "2000" || cfg["cleanup.policy"] != "compact" || cfg["segment.ms"] != "" || cfg["min.insync.replicas"] != "2" {
		t.Fatalf("configs after the sync: %v", cfg)
	}
	if ps := img.Topics.Get("src.orders").Partitions; len(ps) != 5 || len(ps[4].Replicas) != 2 || ps[4].Leader < 0 {
		t.Fatalf("partitions after the sync: %d, the last %+v", len(ps), ps[4])
	}
	// Nothing to change: nothing committed.
	before := h.c.Image().Offset
	if _, err := h.c.SyncMirror(MirrorSync{Topic: "src.orders", SourceTopic: "orders", Partitions: 3,
		Configs: map[string]string{"retention.ms": "2000", "cleanup.policy": "compact"}}); err != nil || h.c.Image().Offset != before {
		t.Fatalf("an idle sync: %v, offset %d -> %d", err, before, h.c.Image().Offset)
	}
	if _, err := h.c.SetMirrorState("src.orders", metadata.MirrorPaused); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.StopMirror("src.orders", metadata.MirrorPromoted, map[int32]int32{0: 0, 1: 0, 2: 0, 3: 0, 4: 0},
		map[int32]int32{0: 0, 1: 0, 2: 0, 3: 0, 4: 0}); err != nil {
		t.Fatal(err)
	}
	_, err = h.c.SyncMirror(MirrorSync{Topic: "src.orders", SourceTopic: "orders", Partitions: 6})
	wantErr(t, err, kerr.InvalidRequest, "already STOPPED")
	if err := alter("retention.ms", "5"); err != nil {
		t.Fatalf("a promoted topic's configs are its own: %v", err)
	}
}
