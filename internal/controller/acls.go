package controller

import (
	"bytes"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/acl"
	"weir/internal/metadata"
)

// CreateAclsResult is the answer of CreateAcls: one error per binding
// (nil: created).
type CreateAclsResult struct {
	Committed
	Errs []error
}

// CreateAcls adds ACLs (AccessControlEntryRecord), each validated as
// Kafka's AclApis and AclControlManager do (INVALID_REQUEST for an
// UNKNOWN or ANY enum value, a pattern type other than LITERAL or
// PREFIXED, an empty name, a CLUSTER resource not named kafka-cluster);
// an ACL that exists already, or twice in the request, is added once
// and succeeds. The offset is -1 when nothing changed.
func (c *Controller) CreateAcls(bindings []acl.Binding) (CreateAclsResult, error) {
	return run(c, func(img *metadata.Image) (result[CreateAclsResult], error) {
		recs, errs := createACLs(img, bindings, newUUID)
		if len(recs) > MaxRecordsPerUserOp {
			for i := range errs {
				errs[i] = errExcessiveBatch
			}
			recs = nil
		}
		return result[CreateAclsResult]{Records: recs, Answer: CreateAclsResult{Committed{-1}, errs}}, nil
	})
}

// DeleteAclsResult is the answer of DeleteAcls: per filter the bindings
// it selected, or its error.
type DeleteAclsResult struct {
	Committed
	Filters []DeletedACLs
}

// DeleteAcls removes the ACLs each filter selects
// (RemoveAccessControlEntryRecord), an ACL selected by several filters
// once. A filter with an UNKNOWN value gets INVALID_REQUEST. The offset
// is -1 when nothing changed.
func (c *Controller) DeleteAcls(filters []acl.Filter) (DeleteAclsResult, error) {
	return run(c, func(img *metadata.Image) (result[DeleteAclsResult], error) {
		recs, out := deleteACLs(img, filters)
		if len(recs) > MaxRecordsPerUserOp {
			for i := range out {
				out[i] = DeletedACLs{Err: errExcessiveBatch}
			}
			recs = nil
		}
		return result[DeleteAclsResult]{Records: recs, Answer: DeleteAclsResult{Committed{-1}, out}}, nil
	})
}

// DeletedACLs is the outcome of one DeleteAcls filter.
type DeletedACLs struct {
	Bindings []acl.Binding
	Err      error
}

// createACLs returns the records adding the valid, new bindings and one
// error per binding.
func createACLs(img *metadata.Image, bindings []acl.Binding, newID func() metadata.Uuid) ([]metadata.Record, []error) {
	have := map[acl.Binding]bool{}
	for _, b := range img.ACLs {
		have[b] = true
	}
	errs := make([]error, len(bindings))
	var recs []metadata.Record
	for i, b := range bindings {
		if msg := acl.Validate(b); msg != "" {
			errs[i] = topicErr(kerr.InvalidRequest, "%s", msg)
			continue
		}
		if have[b] {
			continue
		}
		have[b] = true
		id := newID()
		for img.ACLs[id] != (metadata.ACL{}) {
			id = newID()
		}
		recs = append(recs, &metadata.AccessControlEntryRecord{Id: id, ResourceType: b.ResourceType, ResourceName: b.ResourceName,
			PatternType: b.PatternType, Principal: b.Principal, Host: b.Host, Operation: b.Operation, PermissionType: b.PermissionType})
	}
	return recs, errs
}

// deleteACLs returns the records removing what the filters select and the
// outcome of each filter.
func deleteACLs(img *metadata.Image, filters []acl.Filter) ([]metadata.Record, []DeletedACLs) {
	ids := slices.SortedFunc(maps.Keys(img.ACLs), func(a, b metadata.Uuid) int { return bytes.Compare(a[:], b[:]) })
	removed := map[metadata.Uuid]bool{}
	var recs []metadata.Record
	out := make([]DeletedACLs, len(filters))
	for i, f := range filters {
		if msg := f.Unknown(); msg != "" {
			out[i].Err = topicErr(kerr.InvalidRequest, "%s", msg)
			continue
		}
		for _, id := range ids {
			b := img.ACLs[id]
			if !f.Matches(b) {
				continue
			}
			out[i].Bindings = append(out[i].Bindings, b)
			if !removed[id] {
				removed[id] = true
				recs = append(recs, &metadata.RemoveAccessControlEntryRecord{Id: id})
			}
		}
	}
	return recs, out
}
