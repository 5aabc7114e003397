package links

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
		if r := weir.Run(t, args...); r.Code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.Out, r.Err)
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

// Consumer offsets follow the source's for the groups consumer.group.filters
// selects (consumer.offset.sync.enable), not for an excluded group nor for
// a group active on the destination; a promotion syncs them before it
// ends; after a failover a consumer group moved to the destination
// resumes at exactly its committed offsets.
func TestClusterLinkSyncsConsumerOffsets(t *testing.T) {
	src := clustertest.New(t, clustertest.Options{Nodes: 1})
	dst := clustertest.New(t, clustertest.Options{Nodes: 3})
	sb, db := src.Node(0).Addr, dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	scl := newClient(t, sb)
	sadm := kadm.NewClient(scl)
	if _, err := sadm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := sadm.CreateTopic(ctx, 1, 1, nil, "audit"); err != nil {
		t.Fatal(err)
	}
	produceN(t, scl, "orders", 0, 100)
	if err := scl.ProduceSync(ctx, &kgo.Record{Topic: "audit", Value: []byte("a")}, &kgo.Record{Topic: "audit", Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	props := filepath.Join(dir, "link.properties")
	os.WriteFile(props, []byte("bootstrap.servers="+sb+"\nconsumer.offset.sync.enable=true\nconsumer.offset.sync.ms=100\n"+
		`consumer.group.filters={"groupFilters": [{"name": "app", "patternType": "PREFIXED", "filterType": "INCLUDE"}, `+
		`{"name": "app-excluded", "patternType": "LITERAL", "filterType": "EXCLUDE"}]}`+"\n"), 0o644)
	slow := filepath.Join(dir, "slow.properties")
	os.WriteFile(slow, []byte("bootstrap.servers="+sb+"\nconsumer.offset.sync.enable=true\nconsumer.offset.sync.ms=3600000\n"+
		`consumer.group.filters={"groupFilters": [{"name": "*", "patternType": "LITERAL", "filterType": "INCLUDE"}]}`+"\n"), 0o644)
	bad := filepath.Join(dir, "bad.properties")
	os.WriteFile(bad, []byte("bootstrap.servers="+sb+"\nconsumer.group.filters={\"groupFilters\": [{\"name\": \"a\", \"patternType\": \"REGEX\", \"filterType\": \"INCLUDE\"}]}\n"), 0o644)
	if r := weir.Run(t, "cluster-links", "--bootstrap-server", db, "--create", "--link", "bad", "--config-file", bad); r.Code == 0 ||
		!strings.Contains(r.Err, "patternType") {
		t.Fatalf("bad filters: exit %d %s%s", r.Code, r.Out, r.Err)
	}
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props},
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "slow", "--config-file", slow},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "orders", "--link", "dr"},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "audit-copy", "--source-topic", "audit", "--link", "slow"},
	} {
		if r := weir.Run(t, args...); r.Code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.Out, r.Err)
		}
	}
	sameLogs(t, sb, "orders", db, "orders", 2)
	sameLogs(t, sb, "audit", db, "audit-copy", 1)

	// A consumer group on the source reads and commits up to offsets 30
	// and 45.
	want := map[int32]int64{0: 30, 1: 45}
	gcl := newClient(t, sb, kgo.ConsumerGroup("app"), kgo.ConsumeTopics("orders"), kgo.AutoCommitMarks())
	marked := map[int32]bool{}
	for len(marked) < 2 {
		fs := gcl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < want[r.Partition] {
				gcl.MarkCommitRecords(r)
			}
			if r.Offset == want[r.Partition]-1 {
				marked[r.Partition] = true
			}
		})
	}
	if err := gcl.CommitMarkedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	gcl.Close()
	commitAt(t, sadm, "app-excluded", "orders", 0, 5)

	dadm := kadm.NewClient(newClient(t, db))
	waitOffsets(t, dadm, "app", "orders", want)
	if os, err := dadm.FetchOffsets(ctx, "app-excluded"); err != nil || len(os) != 0 {
		t.Fatalf("an excluded group's offsets were synced: %v %v", os, err)
	}

	// A group with a member here keeps its own offsets.
	live := newClient(t, db, kgo.ConsumerGroup("app-live"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	live.PollFetches(ctx)
	testwait.For(t, 60*time.Second, "the destination's group app-live to be stable", func() error {
		dg, err := dadm.DescribeGroups(ctx, "app-live")
		if err != nil || dg["app-live"].State != "Stable" {
			return fmt.Errorf("state %s: %v", dg["app-live"].State, err)
		}
		return nil
	})
	commitAt(t, sadm, "app-live", "orders", 0, 50)
	commitAt(t, sadm, "app", "orders", 0, 60)
	want[0] = 60
	waitOffsets(t, dadm, "app", "orders", want)
	if os, err := dadm.FetchOffsets(ctx, "app-live"); err != nil || len(os) != 0 {
		t.Fatalf("the offsets of a group active on the destination were overwritten: %v %v", os, err)
	}
	live.Close()

	// A promotion syncs the offsets before it ends (the slow link's
	// periodic sync is an hour away).
	commitAt(t, sadm, "auditor", "audit", 0, 1)
	// Asked of a node that is not the active controller, which forwards
	// the sync to it.
	follower := db
	for i := range dst.Size() {
		if !dst.Node(i).Server.QuorumStatus().Active {
			follower = dst.Node(i).Addr
		}
	}
	if r := weir.Run(t, "mirrors", "--bootstrap-server", follower, "--promote", "--topics", "audit-copy"); r.Code != 0 {
		t.Fatalf("promote: %s%s", r.Out, r.Err)
	}
	os, err := dadm.FetchOffsets(ctx, "auditor")
	if o, ok := os.Lookup("audit-copy", 0); err != nil || !ok || o.At != 1 {
		t.Fatalf("auditor's offset after the promotion: %+v %v", o, err)
	}

	// The source goes; after the failover the group resumes here at
	// exactly its offsets.
	src.Kill(0)
	if r := weir.Run(t, "mirrors", "--bootstrap-server", db, "--failover", "--topics", "orders"); r.Code != 0 {
		t.Fatalf("failover: %s%s", r.Out, r.Err)
	}
	rcl := newClient(t, db, kgo.ConsumerGroup("app"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	first := map[int32]int64{}
	for len(first) < 2 {
		fs := rcl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	if first[0] != want[0] || first[1] != want[1] {
		t.Fatalf("the group resumed at %v, want %v", first, want)
	}
}

// commitAt commits group's offset of topic's partition p, as an admin.
func commitAt(t *testing.T, adm *kadm.Client, group, topic string, p int32, at int64) {
	t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	res, err := adm.CommitOffsets(context.Background(), group, os)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitOffsets waits until group's committed offsets of topic are want.
func waitOffsets(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	testwait.For(t, 60*time.Second, "group "+group+"'s offsets synced", func() error {
		os, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			return err
		}
		for p, w := range want {
			if o, ok := os.Lookup(topic, p); !ok || o.At != w {
				return fmt.Errorf("partition %d at %d (committed %v), want %d", p, o.At, ok, w)
			}
		}
		return nil
	})
}

// auto.create.mirror.topics.enable creates the mirrors of the source topics
// the filters select, named with the link's cluster.link.prefix, topics
// created at the source later too; a mirror created by hand on a link with
// a prefix must carry it.
func TestClusterLinkAutoCreatesPrefixedMirrors(t *testing.T) {
	src := clustertest.New(t, clustertest.Options{Nodes: 1})
	dst := clustertest.New(t, clustertest.Options{Nodes: 1})
	sb, db := src.Node(0).Addr, dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scl := newClient(t, sb)
	sadm := kadm.NewClient(scl)
	for _, name := range []string{"orders.eu", "orders.us", "orders.secret", "payments"} {
		if _, err := sadm.CreateTopic(ctx, 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
		produceN(t, scl, name, 0, 10)
	}
	props := filepath.Join(t.TempDir(), "link.properties")
	os.WriteFile(props, []byte("bootstrap.servers="+sb+"\ntopic.config.sync.ms=100\ncluster.link.prefix=src.\n"+
		"auto.create.mirror.topics.enable=true\n"+`auto.create.mirror.topics.filters={"topicFilters": [`+
		`{"name": "orders.", "patternType": "PREFIXED", "filterType": "INCLUDE"}, {"name": "orders.secret", "patternType": "LITERAL", "filterType": "EXCLUDE"}]}`+"\n"), 0o644)
	if r := weir.Run(t, "cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props); r.Code != 0 {
		t.Fatalf("create link: %s%s", r.Out, r.Err)
	}
	sameLogs(t, sb, "orders.eu", db, "src.orders.eu", 2)
	sameLogs(t, sb, "orders.us", db, "src.orders.us", 2)
	dadm := kadm.NewClient(newClient(t, db))
	tds, err := dadm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := tds.Names(); len(got) != 2 {
		t.Fatalf("destination topics %v, want the two selected mirrors", got)
	}
	// A topic created at the source later is mirrored too.
	if _, err := sadm.CreateTopic(ctx, 2, 1, nil, "orders.asia"); err != nil {
		t.Fatal(err)
	}
	produceN(t, scl, "orders.asia", 0, 10)
	sameLogs(t, sb, "orders.asia", db, "src.orders.asia", 2)
	r := weir.Run(t, "mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "pay", "--source-topic", "payments", "--link", "dr")
	if r.Code == 0 || !strings.Contains(r.Err, "the mirror of payments is named src.payments") {
		t.Fatalf("an unprefixed mirror: exit %d %s%s", r.Code, r.Out, r.Err)
	}
	if r := weir.Run(t, "mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "src.payments", "--link", "dr"); r.Code != 0 {
		t.Fatalf("a prefixed mirror: %s%s", r.Out, r.Err)
	}
	sameLogs(t, sb, "payments", db, "src.payments", 2)
	out := weir.Run(t, "mirrors", "--bootstrap-server", db, "--describe", "--topics", "src.payments").Out
	if !strings.Contains(out, "SourceTopic: payments") {
		t.Fatalf("describe:\n%s", out)
	}
}

// link.fetcher.throttle.bytes.per.sec holds the link's fetches on a broker
// to the rate: at one byte a second, after its first fetches the mirror
// waits (the throttled fetches counted in /metrics) well behind its
// source.
func TestClusterLinkThrottle(t *testing.T) {
	src := clustertest.New(t, clustertest.Options{Nodes: 1})
	dst := clustertest.New(t, clustertest.Options{Nodes: 1, Overrides: map[string]string{"weir.metrics.listener": "127.0.0.1:0"}})
	sb, db := src.Node(0).Addr, dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scl := newClient(t, sb)
	if _, err := kadm.NewClient(scl).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	produceN(t, scl, "orders", 0, 300)
	props := filepath.Join(t.TempDir(), "link.properties")
	os.WriteFile(props, []byte("bootstrap.servers="+sb+"\nlink.fetcher.max.bytes=1024\nlink.fetcher.throttle.bytes.per.sec=1\n"), 0o644)
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "orders", "--link", "dr"},
	} {
		if r := weir.Run(t, args...); r.Code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.Out, r.Err)
		}
	}
	testwait.For(t, 60*time.Second, "the link's fetches to be throttled", func() error {
		resp, err := http.Get("http://" + dst.Node(0).Server.MetricsAddr().String() + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "weir_cluster_link_throttled_fetches_total{") && !strings.HasSuffix(line, " 0") {
				return nil
			}
		}
		return errors.New("no throttled fetch yet")
	})
	// The throttled mirror is behind: its partitions show a lag in time,
	// and the topic its state.
	testwait.For(t, 60*time.Second, "the mirror's lag in ms and its state in the metrics", func() error {
		resp, err := http.Get("http://" + dst.Node(0).Server.MetricsAddr().String() + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var lagging, state bool
		for _, line := range strings.Split(string(body), "\n") {
			lagging = lagging || strings.HasPrefix(line, `weir_cluster_link_mirror_partition_lag_ms{link="dr",partition="0",topic="orders"}`) &&
				!strings.HasSuffix(line, " 0")
			state = state || line == `weir_cluster_link_mirror_topic_state{link="dr",state="active",topic="orders"} 1`
		}
		if !lagging || !state {
			return fmt.Errorf("lag in ms shown: %v, active state shown: %v", lagging, state)
		}
		return nil
	})
	ends := endsOf(t, kadm.NewClient(newClient(t, db)), "orders")
	if ends[0]+ends[1] >= 600 {
		t.Fatalf("the throttled mirror has %v of the source's 300 records a partition", ends)
	}
}

// acl.sync.enable makes the destination's ACLs that acl.filters selects
// the source's: added, and removed when the source drops them or never
// had them; an ACL the filters do not select stays.
func TestClusterLinkSyncsACLs(t *testing.T) {
	auth := map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users": "User:ANONYMOUS"}
	src := clustertest.New(t, clustertest.Options{Nodes: 1, Overrides: auth})
	dst := clustertest.New(t, clustertest.Options{Nodes: 1, Overrides: auth})
	sb, db := src.Node(0).Addr, dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sadm, dadm := kadm.NewClient(newClient(t, sb)), kadm.NewClient(newClient(t, db))
	create := func(adm *kadm.Client, b *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, b)
		for _, r := range res {
			if err == nil {
				err = r.Err
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	create(sadm, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	create(sadm, kadm.NewACLs().Allow("User:alice").Groups("app").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	create(sadm, kadm.NewACLs().Allow("User:bob").Topics("secret").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	// Here: one of alice's the source lacks (to go), one of carol's the
	// filters do not select (to stay).
	create(dadm, kadm.NewACLs().Allow("User:alice").Topics("old").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	create(dadm, kadm.NewACLs().Allow("User:carol").Topics("local").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))

	props := filepath.Join(t.TempDir(), "link.properties")
	os.WriteFile(props, []byte("bootstrap.servers="+sb+"\nacl.sync.enable=true\nacl.sync.ms=100\n"+
		`acl.filters={"aclFilters": [{"resourceFilter": {"resourceType": "any", "patternType": "any"}, "accessFilter": {"principal": "User:alice", "operation": "any", "permissionType": "any"}}]}`+"\n"), 0o644)
	if r := weir.Run(t, "cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", props); r.Code != 0 {
		t.Fatalf("create link: %s%s", r.Out, r.Err)
	}
	acls := func() []string {
		res, err := dadm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
			Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("describe ACLs: %v %v", err, res)
		}
		var out []string
		for _, d := range res[0].Described {
			out = append(out, fmt.Sprintf("%s %s %s %s %s", d.Principal, d.Type, d.Name, d.Pattern, d.Operation))
		}
		slices.Sort(out)
		return out
	}
	wait := func(want []string) {
		t.Helper()
		testwait.For(t, 60*time.Second, "the destination's ACLs synced", func() error {
			if got := acls(); !slices.Equal(got, want) {
				return fmt.Errorf("ACLs %q, want %q", got, want)
			}
			return nil
		})
	}
	wait([]string{"User:alice GROUP app PREFIXED READ", "User:alice TOPIC orders LITERAL READ", "User:carol TOPIC local LITERAL READ"})
	res, err := sadm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("app").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("delete ACL: %v %v", err, res)
	}
	wait([]string{"User:alice TOPIC orders LITERAL READ", "User:carol TOPIC local LITERAL READ"})
}
