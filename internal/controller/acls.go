package controller

import (
	"bytes"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/acl"
	"weir/internal/metadata"
)

// CreateAcls adds ACLs (AccessControlEntryRecord), each validated as
// Kafka's AclApis and AclControlManager do (INVALID_REQUEST for an
// UNKNOWN or ANY enum value, a pattern type other than LITERAL or
// PREFIXED, an empty name, a CLUSTER resource not named kafka-cluster);
// an ACL that exists already, or twice in the request, is added once
// and succeeds. It returns one error per binding (nil: created) and the
// offset of the change (-1 when nothing changed).
func (c *Controller) CreateAcls(bindings []acl.Binding) ([]error, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return nil, -1, err
	}
	recs, errs := createACLs(c.Image(), bindings, newUUID)
	return c.commitACLs(recs, errs)
}

// DeleteAcls removes the ACLs each filter selects
// (RemoveAccessControlEntryRecord), an ACL selected by several filters
// once. A filter with an UNKNOWN value gets INVALID_REQUEST. It returns
// per filter the bindings it selected (or its error), and the offset of
// the change (-1 when nothing changed).
func (c *Controller) DeleteAcls(filters []acl.Filter) ([]DeletedACLs, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return nil, -1, err
	}
	recs, out := deleteACLs(c.Image(), filters)
	if len(recs) > MaxRecordsPerUserOp {
		for i := range out {
			out[i] = DeletedACLs{Err: errExcessiveBatch}
		}
		return out, -1, nil
	}
	if len(recs) == 0 {
		return out, -1, nil
	}
	last, err := c.commit(recs)
	if err != nil {
		return nil, -1, err
	}
	return out, last, nil
}

func (c *Controller) commitACLs(recs []metadata.Record, errs []error) ([]error, int64, error) {
	if len(recs) > MaxRecordsPerUserOp {
		for i := range errs {
			errs[i] = errExcessiveBatch
		}
		return errs, -1, nil
	}
	if len(recs) == 0 {
		return errs, -1, nil
	}
	last, err := c.commit(recs)
	if err != nil {
		return nil, -1, err
	}
	return errs, last, nil
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
