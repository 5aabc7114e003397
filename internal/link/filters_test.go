package link

import (
	"strings"
	"testing"

	"weir/internal/acl"
)

func TestFilters(t *testing.T) {
	fs, err := ParseFilters("groupFilters", `{"groupFilters": [
		{"name": "*", "patternType": "LITERAL", "filterType": "INCLUDE"},
		{"name": "tmp-", "patternType": "PREFIXED", "filterType": "EXCLUDE"},
		{"name": "secret", "patternType": "LITERAL", "filterType": "EXCLUDE"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"app": true, "tmp-1": false, "secret": false, "secrets": true} {
		if fs.Match(name) != want {
			t.Errorf("%s: %v", name, !want)
		}
	}
	fs, _ = ParseFilters("topicFilters", `{"topicFilters": [{"name": "orders.", "patternType": "PREFIXED", "filterType": "INCLUDE"}]}`)
	if !fs.Match("orders.eu") || fs.Match("payments") {
		t.Error("prefix include")
	}
	if fs, _ := ParseFilters("topicFilters", `{}`); fs.Match("x") {
		t.Error("no filter selects nothing")
	}
	for _, bad := range []struct{ v, want string }{
		{`[]`, "not a JSON object"},
		{`{"groupFilters": []}`, `unknown field "groupFilters"`},
		{`{"topicFilters": [{"name": "a", "patternType": "REGEX", "filterType": "INCLUDE"}]}`, "patternType"},
		{`{"topicFilters": [{"name": "a", "patternType": "LITERAL", "filterType": "MAYBE"}]}`, "filterType"},
		{`{"topicFilters": [{"name": "a", "patternType": "LITERAL", "filterType": "INCLUDE", "x": 1}]}`, "unknown field"},
		{`{"topicFilters": [{"patternType": "LITERAL", "filterType": "INCLUDE"}]}`, "name is missing"},
	} {
		if _, err := ParseFilters("topicFilters", bad.v); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.v, err, bad.want)
		}
	}
}

func TestACLFilters(t *testing.T) {
	fs, err := ParseACLFilters(`{"aclFilters": [{"resourceFilter": {"resourceType": "topic", "name": "orders", "patternType": "PREFIXED"},
		"accessFilter": {"principal": "User:alice", "operation": "READ", "permissionType": "ALLOW"}},
		{"resourceFilter": {"resourceType": "any", "patternType": "any"}, "accessFilter": {"operation": "any", "permissionType": "any"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	f := fs[0]
	if f.ResourceType != acl.ResourceTopic || *f.ResourceName != "orders" || f.PatternType != acl.PatternPrefixed || *f.Principal != "User:alice" ||
		f.Host != nil || f.Operation != acl.OpRead || f.PermissionType != acl.PermAllow {
		t.Fatalf("filter %+v", f)
	}
	if g := fs[1]; g.ResourceType != acl.ResourceAny || g.PatternType != acl.PatternAny || g.Operation != acl.OpAny || g.PermissionType != acl.PermAny {
		t.Fatalf("filter %+v", g)
	}
	for _, bad := range []struct{ v, want string }{
		{`{"aclFilters": []}`, "no filter"},
		{`{"aclFilters": [{"resourceFilter": {"resourceType": "table"}}]}`, `unknown resourceType "table"`},
		{`{"aclFilters": [{"accessFilter": {"permissionType": "MAYBE"}}]}`, `unknown permissionType`},
		{`{"aclFilters": [{"accessFilter": {"who": "x"}}]}`, "unknown field"},
	} {
		if _, err := ParseACLFilters(bad.v); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.v, err, bad.want)
		}
	}
}
