package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/acl"
	"weir/internal/metadata"
)

func TestCreateAndDeleteACLs(t *testing.T) {
	n := byte(0)
	newID := func() metadata.Uuid { n++; return metadata.Uuid{n} }
	read := acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: "t", PatternType: acl.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: acl.OpRead, PermissionType: acl.PermAllow}
	write := read
	write.Operation = acl.OpWrite
	bad := read
	bad.PatternType = acl.PatternMatch
	recs, errs := createACLs(metadata.Empty(), []acl.Binding{read, bad, read, write}, newID)
	if len(recs) != 2 {
		t.Fatalf("records %v: a duplicate must be added once", recs)
	}
	var te *TopicError
	if errs[0] != nil || errs[2] != nil || errs[3] != nil || !errors.As(errs[1], &te) || te.Code != kerr.InvalidRequest ||
		te.Error() != "Invalid patternType MATCH" {
		t.Fatalf("errors %v", errs)
	}
	img, _, err := metadata.Empty().Apply(recs, 1)
	if err != nil {
		t.Fatal(err)
	}
	// An existing ACL succeeds without a record.
	if recs, errs := createACLs(img, []acl.Binding{read}, newID); len(recs) != 0 || errs[0] != nil {
		t.Fatalf("existing ACL: %v %v", recs, errs)
	}
	name := "t"
	byName := acl.Filter{ResourceType: acl.ResourceTopic, ResourceName: &name, PatternType: acl.PatternLiteral, Operation: acl.OpAny, PermissionType: acl.PermAny}
	reads := acl.Filter{ResourceType: acl.ResourceAny, PatternType: acl.PatternAny, Operation: acl.OpRead, PermissionType: acl.PermAny}
	unknown := acl.Filter{ResourceType: acl.ResourceUnknown, PatternType: acl.PatternAny, Operation: acl.OpAny, PermissionType: acl.PermAny}
	recs, out := deleteACLs(img, []acl.Filter{byName, reads, unknown})
	if len(recs) != 2 {
		t.Fatalf("records %v: an ACL two filters select is removed once", recs)
	}
	if len(out[0].Bindings) != 2 || len(out[1].Bindings) != 1 || out[1].Bindings[0] != read || out[2].Err == nil {
		t.Fatalf("results %+v", out)
	}
	img, _, err = img.Apply(recs, 2)
	if err != nil || len(img.ACLs) != 0 {
		t.Fatalf("after deletion: %v %v", img.ACLs, err)
	}
}
