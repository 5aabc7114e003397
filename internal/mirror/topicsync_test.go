package mirror

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testwait"
)

// topicConfig returns a topic's config value and whether it is set on the
// topic (not a default).
func (c *cluster) topicConfig(t *testing.T, topic, name string) (string, bool) {
	t.Helper()
	v, set, err := c.tryTopicConfig(topic, name)
	if err != nil {
		t.Fatal(err)
	}
	return v, set
}

func (c *cluster) tryTopicConfig(topic, name string) (string, bool, error) {
	rcs, err := c.adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		return "", false, err
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return "", false, err
	}
	for _, cfg := range rc.Configs {
		if cfg.Key == name {
			return cfg.MaybeValue(), cfg.Source == kmsg.ConfigSourceDynamicTopicConfig, nil
		}
	}
	return "", false, fmt.Errorf("%s has no config %s", topic, name)
}

// waitConfig waits until topic's config name is value, set on the topic
// (set) or at its default (!set).
func (c *cluster) waitConfig(t *testing.T, topic, name, value string, set bool) {
	t.Helper()
	testwait.For(t, 60*time.Second, fmt.Sprintf("%s: %s=%q (set on the topic: %v)", topic, name, value, set), func() error {
		v, s, err := c.tryTopicConfig(topic, name)
		if err != nil || s != set || value != "" && v != value {
			return fmt.Errorf("%s=%s (set on the topic: %v, %v)", name, v, s, err)
		}
		return nil
	})
}

func (c *cluster) alterConfig(t *testing.T, topic string, ac kadm.AlterConfig) {
	t.Helper()
	r, err := c.adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{ac}, topic)
	if err == nil {
		_, err = r.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("altering %s of %s: %v", ac.Name, topic, err)
	}
}

// Topic configs: a remote topic is created with its source's configs, and
// later changes on the source follow, a config back at its default on the
// source goes back to the target's default, and excluded configs stay as
// the target has them.
func TestTopicConfigSync(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	configs := map[string]*string{"retention.ms": kadm.StringPtr("123456"), "min.insync.replicas": kadm.StringPtr("1"), "max.message.bytes": kadm.StringPtr("500000")}
	if r, err := a.adm.CreateTopic(context.Background(), 2, 1, configs, "orders"); err != nil || r.Err != nil {
		t.Fatalf("creating orders: %v %v", err, r.Err)
	}
	props := mirrorProps(a, b, "A->B")
	props["sync.topic.configs.enabled"] = "true"
	props["sync.topic.configs.interval.seconds"] = "1"
	startMirror(t, props)
	b.waitConfig(t, "A.orders", "retention.ms", "123456", true)
	b.waitConfig(t, "A.orders", "max.message.bytes", "500000", true)
	if v, set := b.topicConfig(t, "A.orders", "min.insync.replicas"); set {
		t.Errorf("min.insync.replicas=%s synced: config.properties.exclude has it", v)
	}

	a.alterConfig(t, "orders", kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("654321")})
	a.alterConfig(t, "orders", kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"})
	b.alterConfig(t, "A.orders", kadm.AlterConfig{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: kadm.StringPtr("1")})
	b.waitConfig(t, "A.orders", "retention.ms", "654321", true)
	b.waitConfig(t, "A.orders", "max.message.bytes", "", false)
	// Excluded: the target's own value stays through later rounds.
	a.alterConfig(t, "orders", kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("777777")})
	b.waitConfig(t, "A.orders", "retention.ms", "777777", true)
	if v, set := b.topicConfig(t, "A.orders", "min.insync.replicas"); !set || v != "1" {
		t.Errorf("min.insync.replicas on the target: %s (set %v), want its own 1", v, set)
	}
}

// A topic created on the source is mirrored at the next metadata poll, with
// its configs, though refresh.topics.interval.seconds is ten minutes and
// configs are not synced after creation.
func TestNewTopicPrompt(t *testing.T) {
	a, b := startCluster(t), startCluster(t)
	a.create(t, "first", 1)
	a.produce(t, "first", 1, 0, 3)
	props := mirrorProps(a, b, "A->B")
	props["refresh.topics.interval.seconds"] = "600"
	startMirror(t, props)
	b.readAll(t, "A.first", 1, 3)
	if r, err := a.adm.CreateTopic(context.Background(), 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("86400000")}, "late"); err != nil || r.Err != nil {
		t.Fatalf("creating late: %v %v", err, r.Err)
	}
	a.produce(t, "late", 2, 0, 5)
	checkCopy(t, a.readAll(t, "late", 2, 5), b.readAll(t, "A.late", 2, 5))
	if v, set := b.topicConfig(t, "A.late", "retention.ms"); !set || v != "86400000" {
		t.Errorf("A.late created with retention.ms=%s (set %v), want the source's 86400000", v, set)
	}
}

func TestTargetACLs(t *testing.T) {
	res := func(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name string, acls ...kmsg.DescribeACLsResponseResourceACL) kmsg.DescribeACLsResponseResource {
		r := kmsg.NewDescribeACLsResponseResource()
		r.ResourceType, r.ResourcePatternType, r.ResourceName, r.ACLs = rt, pt, name, acls
		return r
	}
	acl := func(principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.DescribeACLsResponseResourceACL {
		return kmsg.DescribeACLsResponseResourceACL{Principal: principal, Host: "*", Operation: op, PermissionType: perm}
	}
	allow, deny := kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	topic, literal, prefixed := kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	cases := []struct {
		name string
		in   kmsg.DescribeACLsResponseResource
		want []string // principal/op/perm on the remote topic
	}{
		{"allow write dropped", res(topic, literal, "orders", acl("User:w", kmsg.ACLOperationWrite, allow)), nil},
		{"allow all becomes allow read", res(topic, literal, "orders", acl("User:a", kmsg.ACLOperationAll, allow)), []string{"User:a/READ/ALLOW"}},
		{"allow read copied", res(topic, literal, "orders", acl("User:r", kmsg.ACLOperationRead, allow)), []string{"User:r/READ/ALLOW"}},
		{"allow describe copied", res(topic, literal, "orders", acl("User:r", kmsg.ACLOperationDescribe, allow)), []string{"User:r/DESCRIBE/ALLOW"}},
		{"deny write copied", res(topic, literal, "orders", acl("User:d", kmsg.ACLOperationWrite, deny)), []string{"User:d/WRITE/DENY"}},
		{"deny all copied", res(topic, literal, "orders", acl("User:d", kmsg.ACLOperationAll, deny)), []string{"User:d/ALL/DENY"}},
		{"prefixed skipped", res(topic, prefixed, "ord", acl("User:r", kmsg.ACLOperationRead, allow)), nil},
		{"topic not mirrored", res(topic, literal, "skipped", acl("User:r", kmsg.ACLOperationRead, allow)), nil},
		{"group skipped", res(kmsg.ACLResourceTypeGroup, literal, "orders", acl("User:r", kmsg.ACLOperationRead, allow)), nil},
		{"mixed", res(topic, literal, "orders", acl("User:w", kmsg.ACLOperationWrite, allow), acl("User:d", kmsg.ACLOperationRead, deny)), []string{"User:d/READ/DENY"}},
	}
	for _, c := range cases {
		var got []string
		for _, cr := range targetACLs([]kmsg.DescribeACLsResponseResource{c.in}, func(t string) bool { return t != "skipped" }, func(t string) string { return "A." + t }) {
			if cr.ResourceName != "A."+c.in.ResourceName || cr.ResourcePatternType != literal || cr.ResourceType != topic || cr.Host != "*" {
				t.Errorf("%s: created %+v", c.name, cr)
			}
			got = append(got, cr.Principal+"/"+cr.Operation.String()+"/"+cr.PermissionType.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// syncLog collects a flow's log lines.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// testFlow builds flow A->B between two bootstrap addresses.
func testFlow(t *testing.T, a, b string, lg io.Writer) *flow {
	t.Helper()
	cfg, _, err := Parse(map[string]string{"clusters": "A, B", "A.bootstrap.servers": a, "B.bootstrap.servers": b, "A->B.enabled": "true",
		"topics.exclude": "skipped"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFlow(cfg.Flows[0], cfg.Clusters, slog.New(slog.NewTextHandler(lg, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}

// ACLs between two clusters with an authorizer (kfake): what MM2 would
// create is created on the target, and a second round changes nothing.
func TestACLSync(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "skipped"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	srcCl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer srcCl.Close()
	ctx := context.Background()
	create := func(b *kadm.ACLBuilder) {
		t.Helper()
		r, err := kadm.NewClient(srcCl).CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range r {
			if x.Err != nil {
				t.Fatal(x.Err)
			}
		}
	}
	create(kadm.NewACLs().Topics("orders").Allow("User:w").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	create(kadm.NewACLs().Topics("orders").Allow("User:a").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
	create(kadm.NewACLs().Topics("orders").Deny("User:d").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	create(kadm.NewACLs().Topics("ord").Allow("User:p").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	create(kadm.NewACLs().Topics("skipped").Allow("User:s").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	create(kadm.NewACLs().Groups("orders").Allow("User:g").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))

	var lg syncLog
	f := testFlow(t, src.ListenAddrs()[0], dst.ListenAddrs()[0], &lg)
	s := &aclSync{f: f}
	for range 2 {
		if err := s.round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, f.dst)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range resp.Resources {
		for _, x := range r.ACLs {
			got = append(got, r.ResourceType.String()+":"+r.ResourceName+":"+r.ResourcePatternType.String()+" "+x.Principal+"/"+x.Operation.String()+"/"+x.PermissionType.String())
		}
	}
	slices.Sort(got)
	want := []string{"TOPIC:A.orders:LITERAL User:a/READ/ALLOW", "TOPIC:A.orders:LITERAL User:d/READ/DENY"}
	if !slices.Equal(got, want) {
		t.Errorf("target ACLs %q, want %q; log %s", got, want, lg.String())
	}
	if strings.Contains(lg.String(), "level=WARN") {
		t.Errorf("warnings: %s", lg.String())
	}
}

// A source without an authorizer (SECURITY_DISABLED, or no DescribeAcls
// at all as weir today) is skipped with one log line however many rounds.
func TestACLSyncNoAuthorizer(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.ControlKey(int16(kmsg.DescribeACLs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		src.KeepControl()
		resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
		resp.ErrorCode = 54 // SECURITY_DISABLED
		return resp, nil, true
	})
	w := startCluster(t)
	for _, c := range []struct{ name, addr string }{{"SECURITY_DISABLED", src.ListenAddrs()[0]}, {"no DescribeAcls", w.node.Addr}} {
		var lg syncLog
		f := testFlow(t, c.addr, w.node.Addr, &lg)
		s := &aclSync{f: f}
		for range 3 {
			if err := s.round(context.Background()); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		if n := strings.Count(lg.String(), "No ACL authorizer"); n != 1 || strings.Count(lg.String(), "\n") != 1 {
			t.Errorf("%s: log %q, want one line about no authorizer", c.name, lg.String())
		}
	}
}
