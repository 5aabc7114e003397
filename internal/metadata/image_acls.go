package metadata

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// ACL is one access control entry (an AccessControlEntryRecord without
// its id). The int8 fields hold the ids of Kafka's ResourceType,
// PatternType, AclOperation and AclPermissionType enums; internal/acl
// gives them meaning.
type ACL struct {
	ResourceType   int8
	ResourceName   string
	PatternType    int8
	Principal      string
	Host           string
	Operation      int8
	PermissionType int8
}

// applyACL applies AccessControlEntryRecord and
// RemoveAccessControlEntryRecord. Removing an ACL the image does not have
// is an error, as in Kafka's AclControlManager.
func (b *builder) applyACL(r Record) error {
	if !b.aclsCopied {
		b.im.ACLs = maps.Clone(b.im.ACLs)
		if b.im.ACLs == nil {
			b.im.ACLs = map[Uuid]ACL{}
		}
		b.aclsCopied = true
	}
	b.delta.ChangedACLs = true
	switch r := r.(type) {
	case *AccessControlEntryRecord:
		b.im.ACLs[r.Id] = ACL{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.PatternType,
			Principal: r.Principal, Host: r.Host, Operation: r.Operation, PermissionType: r.PermissionType}
	case *RemoveAccessControlEntryRecord:
		if _, ok := b.im.ACLs[r.Id]; !ok {
			return fmt.Errorf("no ACL with id %s", r.Id)
		}
		delete(b.im.ACLs, r.Id)
	}
	return nil
}

// aclRecords are the records of the image's ACLs, by id.
func (im *Image) aclRecords() []Record {
	ids := slices.SortedFunc(maps.Keys(im.ACLs), func(a, b Uuid) int { return bytes.Compare(a[:], b[:]) })
	out := make([]Record, 0, len(ids))
	for _, id := range ids {
		a := im.ACLs[id]
		out = append(out, &AccessControlEntryRecord{Id: id, ResourceType: a.ResourceType, ResourceName: a.ResourceName,
			PatternType: a.PatternType, Principal: a.Principal, Host: a.Host, Operation: a.Operation, PermissionType: a.PermissionType})
	}
	return out
}
