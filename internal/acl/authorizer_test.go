package acl

import (
	"strconv"
	"testing"

	"weir/internal/metadata"
)

func imageOf(acls ...Binding) func() *metadata.Image {
	im := metadata.Empty()
	for i, b := range acls {
		im.ACLs[metadata.Uuid{byte(i + 1)}] = b
	}
	return func() *metadata.Image { return im }
}

func allow(rt int8, name string, pt int8, principal, host string, op int8) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, PermissionType: PermAllow}
}

func deny(rt int8, name string, pt int8, principal, host string, op int8) Binding {
	b := allow(rt, name, pt, principal, host, op)
	b.PermissionType = PermDeny
	return b
}

func TestAuthorize(t *testing.T) {
	const alice, bob, h1, h2 = "User:alice", "User:bob", "10.0.0.1", "10.0.0.2"
	tests := []struct {
		name      string
		acls      []Binding
		cfg       Config
		principal string
		host      string
		op, rt    int8
		resource  string
		want      bool
	}{
		{"no ACL, default deny", nil, Config{}, alice, h1, OpRead, ResourceTopic, "t", false},
		{"no ACL, allow.everyone.if.no.acl.found", nil, Config{AllowIfNoACL: true}, alice, h1, OpRead, ResourceTopic, "t", true},
		{"an ACL of another principal disables allow.everyone", []Binding{allow(ResourceTopic, "t", PatternLiteral, bob, "*", OpRead)},
			Config{AllowIfNoACL: true}, alice, h1, OpRead, ResourceTopic, "t", false},
		{"ACLs of another resource leave allow.everyone", []Binding{allow(ResourceTopic, "u", PatternLiteral, bob, "*", OpRead)},
			Config{AllowIfNoACL: true}, alice, h1, OpRead, ResourceTopic, "t", true},
		{"super user", []Binding{deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)},
			Config{SuperUsers: ParseSuperUsers("User:admin; User:alice")}, alice, h1, OpRead, ResourceTopic, "t", true},
		{"literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, Config{}, alice, h1, OpRead, ResourceTopic, "t", true},
		{"literal is not a prefix", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, Config{}, alice, h1, OpRead, ResourceTopic, "tt", false},
		{"other operation", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, Config{}, alice, h1, OpWrite, ResourceTopic, "t", false},
		{"other principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, bob, "*", OpRead)}, Config{}, alice, h1, OpRead, ResourceTopic, "t", false},
		{"other resource type", []Binding{allow(ResourceGroup, "t", PatternLiteral, alice, "*", OpRead)}, Config{}, alice, h1, OpRead, ResourceTopic, "t", false},
		{"wildcard principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:*", "*", OpRead)}, Config{}, alice, h1, OpRead, ResourceTopic, "t", true},
		{"wildcard resource", []Binding{allow(ResourceTopic, "*", PatternLiteral, alice, "*", OpRead)}, Config{}, alice, h1, OpRead, ResourceTopic, "t", true},
		{"prefixed", []Binding{allow(ResourceTopic, "pay", PatternPrefixed, alice, "*", OpWrite)}, Config{}, alice, h1, OpWrite, ResourceTopic, "payments", true},
		{"prefixed equal to the name", []Binding{allow(ResourceTopic, "pay", PatternPrefixed, alice, "*", OpWrite)}, Config{}, alice, h1, OpWrite, ResourceTopic, "pay", true},
		{"prefixed longer than the name", []Binding{allow(ResourceTopic, "payments", PatternPrefixed, alice, "*", OpWrite)}, Config{}, alice, h1, OpWrite, ResourceTopic, "pay", false},
		{"prefixed not a prefix", []Binding{allow(ResourceTopic, "pax", PatternPrefixed, alice, "*", OpWrite)}, Config{}, alice, h1, OpWrite, ResourceTopic, "payments", false},
		{"prefix * is not a wildcard", []Binding{allow(ResourceTopic, "*", PatternPrefixed, alice, "*", OpWrite)}, Config{}, alice, h1, OpWrite, ResourceTopic, "t", false},
		{"host matches", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, h1, OpRead)}, Config{}, alice, h1, OpRead, ResourceTopic, "t", true},
		{"host differs", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, h1, OpRead)}, Config{}, alice, h2, OpRead, ResourceTopic, "t", false},
		{"deny over allow", []Binding{allow(ResourceTopic, "*", PatternLiteral, alice, "*", OpRead), deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			Config{}, alice, h1, OpRead, ResourceTopic, "t", false},
		{"prefixed deny over literal allow", []Binding{allow(ResourceTopic, "secret-x", PatternLiteral, alice, "*", OpRead), deny(ResourceTopic, "secret", PatternPrefixed, "User:*", "*", OpAll)},
			Config{}, alice, h1, OpRead, ResourceTopic, "secret-x", false},
		{"deny from one host only", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead), deny(ResourceTopic, "t", PatternLiteral, alice, h2, OpRead)},
			Config{}, alice, h1, OpRead, ResourceTopic, "t", true},
		{"deny ALL", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead), deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)},
			Config{}, alice, h1, OpRead, ResourceTopic, "t", false},
		{"allow ALL", []Binding{allow(ResourceCluster, ClusterName, PatternLiteral, alice, "*", OpAll)}, Config{}, alice, h1, OpClusterAction, ResourceCluster, ClusterName, true},
		{"READ implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, Config{}, alice, h1, OpDescribe, ResourceTopic, "t", true},
		{"WRITE implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, Config{}, alice, h1, OpDescribe, ResourceTopic, "t", true},
		{"DELETE implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpDelete)}, Config{}, alice, h1, OpDescribe, ResourceTopic, "t", true},
		{"ALTER implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAlter)}, Config{}, alice, h1, OpDescribe, ResourceTopic, "t", true},
		{"CREATE does not imply DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpCreate)}, Config{}, alice, h1, OpDescribe, ResourceTopic, "t", false},
		{"DESCRIBE does not imply READ", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpDescribe)}, Config{}, alice, h1, OpRead, ResourceTopic, "t", false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAlterConfigs)}, Config{}, alice, h1, OpDescribeConfigs, ResourceTopic, "t", true},
		{"ALTER does not imply ALTER_CONFIGS", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAlter)}, Config{}, alice, h1, OpAlterConfigs, ResourceTopic, "t", false},
		{"a DENY of READ does not deny DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpDescribe), deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			Config{}, alice, h1, OpDescribe, ResourceTopic, "t", true},
		{"transactional id", []Binding{allow(ResourceTransactionalID, "tx-", PatternPrefixed, alice, "*", OpWrite)}, Config{}, alice, h1, OpWrite, ResourceTransactionalID, "tx-1", true},
		{"user resource", []Binding{allow(ResourceUser, "bob", PatternLiteral, alice, "*", OpCreateTokens)}, Config{}, alice, h1, OpCreateTokens, ResourceUser, "bob", true},
		{"delegation token", []Binding{allow(ResourceDelegationToken, "tok", PatternLiteral, alice, "*", OpDescribe)}, Config{}, alice, h1, OpDescribe, ResourceDelegationToken, "tok", true},
		{"anonymous", []Binding{allow(ResourceGroup, "g", PatternLiteral, Anonymous, "*", OpRead)}, Config{}, Anonymous, h1, OpRead, ResourceGroup, "g", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(tt.cfg, imageOf(tt.acls...))
			if got := a.Authorize(tt.principal, tt.host, tt.op, tt.rt, tt.resource); got != tt.want {
				t.Fatalf("Authorize = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	const alice, h = "User:alice", "10.0.0.1"
	tests := []struct {
		name string
		acls []Binding
		cfg  Config
		want bool
	}{
		{"nothing", nil, Config{}, false},
		{"allow.everyone with no ACL", nil, Config{AllowIfNoACL: true}, true},
		{"super user", nil, Config{SuperUsers: map[string]bool{alice: true}}, true},
		{"a literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, Config{}, true},
		{"a literal allow denied by name", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite), deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, Config{}, false},
		{"a prefixed allow covered by a shorter prefixed deny", []Binding{allow(ResourceTopic, "abc", PatternPrefixed, alice, "*", OpWrite), deny(ResourceTopic, "ab", PatternPrefixed, alice, "*", OpWrite)}, Config{}, false},
		{"a prefixed allow not covered by a longer prefixed deny", []Binding{allow(ResourceTopic, "ab", PatternPrefixed, alice, "*", OpWrite), deny(ResourceTopic, "abc", PatternPrefixed, alice, "*", OpWrite)}, Config{}, true},
		{"a wildcard deny", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite), deny(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite)}, Config{}, false},
		{"another operation", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, Config{}, false},
		{"another host", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "10.9.9.9", OpWrite)}, Config{}, false},
		{"ALL", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:*", "*", OpAll)}, Config{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.cfg, imageOf(tt.acls...)).AuthorizeAny(alice, h, OpWrite, ResourceTopic); got != tt.want {
				t.Fatalf("AuthorizeAny = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIndexFollowsTheImage(t *testing.T) {
	im := metadata.Empty()
	a := New(Config{}, func() *metadata.Image { return im })
	if a.Authorize("User:alice", "h", OpRead, ResourceTopic, "t") {
		t.Fatal("allowed without ACLs")
	}
	next, _, err := im.Apply([]metadata.Record{&metadata.AccessControlEntryRecord{Id: metadata.Uuid{1}, ResourceType: ResourceTopic,
		ResourceName: "t", PatternType: PatternLiteral, Principal: "User:alice", Host: "*", Operation: OpRead, PermissionType: PermAllow}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	im = next
	if !a.Authorize("User:alice", "h", OpRead, ResourceTopic, "t") {
		t.Fatal("the new ACL is not seen")
	}
}

func TestFilter(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := allow(ResourceTopic, "foo", PatternLiteral, "User:alice", "*", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead)
	pre := deny(ResourceTopic, "fo", PatternPrefixed, "User:bob", "1.2.3.4", OpWrite)
	tests := []struct {
		name string
		f    Filter
		want []bool // lit, wild, pre
	}{
		{"any", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, PermissionType: PermAny}, []bool{true, true, true}},
		{"any named foo", Filter{ResourceType: ResourceAny, ResourceName: str("foo"), PatternType: PatternAny, Operation: OpAny, PermissionType: PermAny}, []bool{true, false, false}},
		{"match foo", Filter{ResourceType: ResourceTopic, ResourceName: str("foo"), PatternType: PatternMatch, Operation: OpAny, PermissionType: PermAny}, []bool{true, true, true}},
		{"match bar", Filter{ResourceType: ResourceTopic, ResourceName: str("bar"), PatternType: PatternMatch, Operation: OpAny, PermissionType: PermAny}, []bool{false, true, false}},
		{"prefixed", Filter{ResourceType: ResourceTopic, PatternType: PatternPrefixed, Operation: OpAny, PermissionType: PermAny}, []bool{false, false, true}},
		{"principal", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Principal: str("User:bob"), Operation: OpAny, PermissionType: PermAny}, []bool{false, false, true}},
		{"host", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Host: str("*"), Operation: OpAny, PermissionType: PermAny}, []bool{true, true, false}},
		{"operation", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpWrite, PermissionType: PermAny}, []bool{false, false, true}},
		{"permission", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, PermissionType: PermAllow}, []bool{true, true, false}},
		{"group", Filter{ResourceType: ResourceGroup, PatternType: PatternAny, Operation: OpAny, PermissionType: PermAny}, []bool{false, false, false}},
	}
	for _, tt := range tests {
		for i, b := range []Binding{lit, wild, pre} {
			if got := tt.f.Matches(b); got != tt.want[i] {
				t.Errorf("%s: binding %d: %v, want %v", tt.name, i, got, tt.want[i])
			}
		}
	}
	if (Filter{ResourceType: ResourceUnknown, PatternType: PatternAny, Operation: OpAny, PermissionType: PermAny}).Unknown() == "" {
		t.Error("an UNKNOWN resource type must be refused")
	}
	if (Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: 99, PermissionType: PermAny}).Unknown() == "" {
		t.Error("an undefined operation must be refused")
	}
}

func TestValidate(t *testing.T) {
	ok := allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)
	tests := []struct {
		change func(*Binding)
		want   string
	}{
		{func(*Binding) {}, ""},
		{func(b *Binding) { b.ResourceType = ResourceAny }, "Invalid resourceType ANY"},
		{func(b *Binding) { b.ResourceType = 42 }, "Invalid resourceType UNKNOWN"},
		{func(b *Binding) { b.PatternType = PatternMatch }, "Invalid patternType MATCH"},
		{func(b *Binding) { b.Operation = OpAny }, "Invalid operation ANY"},
		{func(b *Binding) { b.PermissionType = PermAny }, "Invalid permissionType ANY"},
		{func(b *Binding) { b.ResourceName = "" }, "Invalid empty resource name"},
		{func(b *Binding) { b.ResourceType, b.ResourceName = ResourceCluster, "c" }, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{func(b *Binding) { b.Principal = "alice" }, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
	}
	for _, tt := range tests {
		b := ok
		tt.change(&b)
		if got := Validate(b); got != tt.want {
			t.Errorf("%+v: %q, want %q", b, got, tt.want)
		}
	}
}

func TestNamesAndHosts(t *testing.T) {
	if op, ok := ParseOperation("IdempotentWrite"); !ok || op != OpIdempotentWrite {
		t.Errorf("IdempotentWrite: %d %v", op, ok)
	}
	if op, ok := ParseOperation("describe_configs"); !ok || op != OpDescribeConfigs {
		t.Errorf("describe_configs: %d %v", op, ok)
	}
	if _, ok := ParseOperation("Unknown"); ok {
		t.Error("UNKNOWN parsed")
	}
	if p, ok := ParsePattern("Prefixed"); !ok || p != PatternPrefixed {
		t.Errorf("Prefixed: %d %v", p, ok)
	}
	for in, want := range map[string]string{"127.0.0.1:9092": "127.0.0.1", "[::1]:9092": "0:0:0:0:0:0:0:1",
		"[fe80::ab:1]:1": "fe80:0:0:0:0:0:ab:1", "[::ffff:10.0.0.1]:1": "10.0.0.1"} {
		if got := Host(in); got != want {
			t.Errorf("Host(%s) = %s, want %s", in, got, want)
		}
	}
}

// BenchmarkAuthorize checks one topic among 10,000 topics' ACLs (literal
// and prefixed, several principals each): the index looks at the ACLs of
// that topic's names only.
func BenchmarkAuthorize(b *testing.B) {
	im := metadata.Empty()
	for i := 0; i < 10000; i++ {
		name := "topic-" + strconv.Itoa(i)
		for j, p := range []string{"User:a", "User:b", "User:c"} {
			im.ACLs[metadata.Uuid{byte(i), byte(i >> 8), byte(j)}] = allow(ResourceTopic, name, PatternLiteral, p, "*", OpRead)
		}
		im.ACLs[metadata.Uuid{byte(i), byte(i >> 8), 9}] = allow(ResourceTopic, "pre-"+strconv.Itoa(i), PatternPrefixed, "User:a", "*", OpWrite)
	}
	a := New(Config{}, func() *metadata.Image { return im })
	a.Authorize("User:b", "10.0.0.1", OpDescribe, ResourceTopic, "topic-1") // builds the index
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !a.Authorize("User:b", "10.0.0.1", OpDescribe, ResourceTopic, "topic-4242") {
			b.Fatal("denied")
		}
	}
}
