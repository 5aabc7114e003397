package link

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/metadata"
)

// DefaultACLSyncMs is acl.sync.ms when not set.
const DefaultACLSyncMs = 5000

// aclSync reports whether the link syncs ACLs.
func aclSync(l *metadata.Link) bool { return l.Configs["acl.sync.enable"] == "true" }

// ParseACLFilters parses acl.filters, Confluent's JSON:
//
//	{"aclFilters": [{"resourceFilter": {"resourceType": "TOPIC", "name": "orders", "patternType": "LITERAL"},
//	                 "accessFilter": {"principal": "User:alice", "host": "*", "operation": "READ", "permissionType": "ALLOW"}}]}
//
// Enum values by Kafka's names (ANY for all; patternType MATCH too), a
// missing name, principal or host for any; a missing enum is ANY.
func ParseACLFilters(value string) ([]acl.Filter, error) {
	type doc struct {
		ACLFilters []struct {
			ResourceFilter struct {
				ResourceType string  `json:"resourceType"`
				Name         *string `json:"name"`
				PatternType  string  `json:"patternType"`
			} `json:"resourceFilter"`
			AccessFilter struct {
				Principal      *string `json:"principal"`
				Host           *string `json:"host"`
				Operation      string  `json:"operation"`
				PermissionType string  `json:"permissionType"`
			} `json:"accessFilter"`
		} `json:"aclFilters"`
	}
	var d doc
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not Confluent's acl.filters JSON: %v", err)
	}
	if len(d.ACLFilters) == 0 {
		return nil, fmt.Errorf("aclFilters lists no filter")
	}
	enum := func(field, v string, parse func(string) (int8, bool)) (int8, error) {
		if v == "" {
			return 1, nil // ANY in every enum
		}
		n, ok := parse(v)
		if !ok {
			return 0, fmt.Errorf("aclFilters: unknown %s %q", field, v)
		}
		return n, nil
	}
	var out []acl.Filter
	for _, f := range d.ACLFilters {
		var af acl.Filter
		var err error
		if af.ResourceType, err = enum("resourceType", f.ResourceFilter.ResourceType, acl.ParseResourceType); err != nil {
			return nil, err
		}
		if af.PatternType, err = enum("patternType", f.ResourceFilter.PatternType, acl.ParsePattern); err != nil {
			return nil, err
		}
		if af.Operation, err = enum("operation", f.AccessFilter.Operation, acl.ParseOperation); err != nil {
			return nil, err
		}
		if af.PermissionType, err = enum("permissionType", f.AccessFilter.PermissionType, parsePermission); err != nil {
			return nil, err
		}
		af.ResourceName, af.Principal, af.Host = f.ResourceFilter.Name, f.AccessFilter.Principal, f.AccessFilter.Host
		out = append(out, af)
	}
	return out, nil
}

func parsePermission(s string) (int8, bool) {
	for _, p := range []int8{acl.PermAny, acl.PermDeny, acl.PermAllow} {
		if strings.EqualFold(strings.TrimSpace(s), acl.PermissionName(p)) {
			return p, true
		}
	}
	return 0, false
}

// sourceACLs asks the source for the ACLs the filters select
// (DescribeAcls, one filter a request).
func (s *clientSource) sourceACLs(ctx context.Context, filters []acl.Filter) (map[acl.Binding]bool, error) {
	out := map[acl.Binding]bool{}
	for _, f := range filters {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceType(f.ResourceType), f.ResourceName, kmsg.ACLResourcePatternType(f.PatternType)
		req.Principal, req.Host = f.Principal, f.Host
		req.Operation, req.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.PermissionType)
		resp, err := req.RequestWith(ctx, s.cl)
		if err != nil {
			return nil, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = ": " + *resp.ErrorMessage
			}
			return nil, fmt.Errorf("the source's ACLs: %w%s", err, msg)
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				out[acl.Binding{ResourceType: int8(r.ResourceType), ResourceName: r.ResourceName, PatternType: int8(r.ResourcePatternType),
					Principal: a.Principal, Host: a.Host, Operation: int8(a.Operation), PermissionType: int8(a.PermissionType)}] = true
			}
		}
	}
	return out, nil
}

// syncACLs makes this cluster's ACLs that acl.filters selects the
// source's: those the source has and this cluster lacks are created,
// those this cluster has and the source does not are deleted (so an ACL
// managed here on its own must not be selected by the filters). A failed
// read of the source (no authorizer there: SECURITY_DISABLED) changes
// nothing.
func syncACLs(ctx context.Context, img *metadata.Image, l *metadata.Link, src *clientSource,
	create func([]acl.Binding) error, remove func([]acl.Filter) error) error {
	filters, err := ParseACLFilters(l.Configs["acl.filters"])
	if err != nil {
		return err
	}
	want, err := src.sourceACLs(ctx, filters)
	if err != nil {
		return err
	}
	have := map[acl.Binding]bool{}
	for _, b := range img.ACLs {
		for _, f := range filters {
			if f.Matches(b) {
				have[b] = true
				break
			}
		}
	}
	var add []acl.Binding
	for b := range want {
		if !have[b] {
			add = append(add, b)
		}
	}
	var drop []acl.Filter
	for b := range have {
		if !want[b] {
			drop = append(drop, acl.Filter{ResourceType: b.ResourceType, ResourceName: &b.ResourceName, PatternType: b.PatternType,
				Principal: &b.Principal, Host: &b.Host, Operation: b.Operation, PermissionType: b.PermissionType})
		}
	}
	if len(add) > 0 {
		if err := create(add); err != nil {
			return err
		}
	}
	if len(drop) > 0 {
		return remove(drop)
	}
	return nil
}
