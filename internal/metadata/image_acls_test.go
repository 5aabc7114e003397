package metadata

import (
	"reflect"
	"strings"
	"testing"
)

func TestACLs(t *testing.T) {
	old := Empty()
	im, d := mustApply(t, old, 3,
		&AccessControlEntryRecord{Id: imgID(1), ResourceType: 2, ResourceName: "t", PatternType: 3, Principal: "User:alice", Host: "*", Operation: 3, PermissionType: 3},
		&AccessControlEntryRecord{Id: imgID(2), ResourceType: 3, ResourceName: "g", PatternType: 4, Principal: "User:bob", Host: "10.0.0.1", Operation: 2, PermissionType: 2},
		&AccessControlEntryRecord{Id: imgID(3), ResourceType: 4, ResourceName: "kafka-cluster", PatternType: 3, Principal: "User:*", Host: "*", Operation: 8, PermissionType: 3},
		&RemoveAccessControlEntryRecord{Id: imgID(1)})
	if len(old.ACLs) != 0 {
		t.Fatal("Apply changed the old image's ACLs")
	}
	if !d.ChangedACLs {
		t.Fatal("delta does not report the ACL change")
	}
	want := map[Uuid]ACL{
		imgID(2): {ResourceType: 3, ResourceName: "g", PatternType: 4, Principal: "User:bob", Host: "10.0.0.1", Operation: 2, PermissionType: 2},
		imgID(3): {ResourceType: 4, ResourceName: "kafka-cluster", PatternType: 3, Principal: "User:*", Host: "*", Operation: 8, PermissionType: 3},
	}
	if !reflect.DeepEqual(im.ACLs, want) {
		t.Fatalf("ACLs %+v", im.ACLs)
	}
	again, _ := mustApply(t, Empty(), im.Offset, im.Records()...)
	if !reflect.DeepEqual(again.ACLs, im.ACLs) {
		t.Fatalf("after a snapshot: %+v", again.ACLs)
	}
	if _, _, err := im.Apply([]Record{&RemoveAccessControlEntryRecord{Id: imgID(9)}}, 4); err == nil || !strings.Contains(err.Error(), "no ACL with id") {
		t.Fatalf("removing an unknown ACL: %v", err)
	}
}
