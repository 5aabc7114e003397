package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clustertest"
	"weir/internal/testwait"
)

// A mirror topic follows its source topic's configs (topic.config.sync.ms)
// and partition count: configs set, changed and removed at the source
// reach the mirror, the destination's own (min.insync.replicas) stay
// alterable, synced ones are refused, DescribeConfigs shows the mirror
// state, and partitions added at the source are mirrored.
func TestClusterLinkSyncsConfigsAndPartitions(t *testing.T) {
	src := clustertest.New(t, clustertest.Options{Nodes: 1})
	dst := clustertest.New(t, clustertest.Options{Nodes: 3})
	sb, db := src.Node(0).Addr, dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scl := newClient(t, sb)
	sadm := kadm.NewClient(scl)
	if _, err := sadm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("600000"),
		"max.message.bytes": kadm.StringPtr("200000")}, "orders"); err != nil {
		t.Fatal(err)
	}
	produceN(t, scl, "orders", 0, 20)
	props := filepath.Join(t.TempDir(), "link.properties")
	os.WriteFile(props, []byte("bootstrap.servers="+sb+"\ntopic.config.sync.ms=100\n"), 0o644)
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "orders", "--link", "dr", "--replication-factor", "2"},
	} {
		if r := runTool(t, args...); r.code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.out, r.err)
		}
	}
	sameLogs(t, sb, "orders", db, "orders", 2)

	dadm := kadm.NewClient(newClient(t, db))
	alter := func(adm *kadm.Client, cfgs ...kadm.AlterConfig) error {
		res, err := adm.AlterTopicConfigs(ctx, cfgs, "orders")
		if err == nil && len(res) == 1 {
			err = res[0].Err
			if err != nil && res[0].ErrMessage != "" {
				err = fmt.Errorf("%w: %s", err, res[0].ErrMessage)
			}
		}
		return err
	}
	if err := alter(sadm, kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("1234567")},
		kadm.AlterConfig{Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"}); err != nil {
		t.Fatal(err)
	}
	described := func() map[string]*kadm.Config {
		rcs, err := dadm.DescribeTopicConfigs(ctx, "orders")
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			t.Fatalf("describe configs: %v %v", err, rcs)
		}
		out := map[string]*kadm.Config{}
		for _, c := range rcs[0].Configs {
			out[c.Key] = &c
		}
		return out
	}
	testwait.For(t, 60*time.Second, "the mirror's configs to follow the source's", func() error {
		got := described()
		if got["retention.ms"].MaybeValue() != "1234567" || got["cleanup.policy"].MaybeValue() != "compact" ||
			got["max.message.bytes"].Source == kmsg.ConfigSourceDynamicTopicConfig {
			return fmt.Errorf("retention.ms=%s cleanup.policy=%s max.message.bytes=%s (%v)", got["retention.ms"].MaybeValue(),
				got["cleanup.policy"].MaybeValue(), got["max.message.bytes"].MaybeValue(), got["max.message.bytes"].Source)
		}
		return nil
	})
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, newClient(t, db))
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		raw[c.Name] = c
	}
	val := func(k string) string {
		if v := raw[k].Value; v != nil {
			return *v
		}
		return ""
	}
	if val("mirror.state") != "ACTIVE" || val("mirror.link.name") != "dr" || val("mirror.source.topic") != "orders" ||
		!raw["mirror.state"].ReadOnly || !raw["retention.ms"].ReadOnly || raw["min.insync.replicas"].ReadOnly {
		t.Fatalf("mirror entries: %+v %+v %+v, retention.ms %+v, min.insync.replicas %+v", raw["mirror.state"],
			raw["mirror.link.name"], raw["mirror.source.topic"], raw["retention.ms"], raw["min.insync.replicas"])
	}
	err = alter(dadm, kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("1")})
	if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), "config retention.ms follows the source topic's") {
		t.Fatalf("altering a synced config of a mirror: %v", err)
	}
	if err := alter(dadm, kadm.AlterConfig{Name: "min.insync.replicas", Value: kadm.StringPtr("2")}); err != nil {
		t.Fatalf("altering min.insync.replicas of a mirror: %v", err)
	}

	// Partitions added at the source.
	if _, err := sadm.CreatePartitions(ctx, 2, "orders"); err != nil {
		t.Fatal(err)
	}
	pcl := newClient(t, sb, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(4) {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: p, Key: []byte("k"), Value: []byte("after")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sameLogs(t, sb, "orders", db, "orders", 4)
	if got := described(); got["min.insync.replicas"].MaybeValue() != "2" {
		t.Fatalf("min.insync.replicas %s after the sync", got["min.insync.replicas"].MaybeValue())
	}
}
