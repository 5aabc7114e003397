package kafka

// DescribeAcls (29, v0-3), CreateAcls (30, v0-3) and DeleteAcls (31,
// v0-3), and the authorization of every request (see authorized).
//
// With an authorizer configured (authorizer.class.name set to Kafka's
// StandardAuthorizer, internal/acl), DescribeAcls needs DESCRIBE on the
// cluster and answers from this node's metadata image; CreateAcls and
// DeleteAcls need ALTER on the cluster and are carried out by the active
// controller (forwarded, as Kafka's brokers do), which validates each
// binding and filter and writes AccessControlEntryRecord and
// RemoveAccessControlEntryRecord; the answer waits until this node's
// image has the change, so the next request here sees it. Without an
// authorizer the three answer SECURITY_DISABLED, as Kafka's.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
)

// authorized reports whether req's principal may perform op on the
// resource of type rt named name. Requests a node makes itself (forwarded
// without a principal: their sender was authorized already) and every
// request when no authorizer is configured are.
func (s *Server) authorized(req *Request, op, rt int8, name string) bool {
	if s.cfg.Authorizer == nil || req.Principal == "" {
		return true
	}
	return s.cfg.Authorizer.Authorize(req.Principal, req.Host, op, rt, name)
}

// authorizedCluster is authorized on the cluster resource.
func (s *Server) authorizedCluster(req *Request, op int8) bool {
	return s.authorized(req, op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedAny reports whether req's principal may perform op on some
// resource of type rt (Kafka's authorizeByResourceType).
func (s *Server) authorizedAny(req *Request, op, rt int8) bool {
	if s.cfg.Authorizer == nil || req.Principal == "" {
		return true
	}
	return s.cfg.Authorizer.AuthorizeAny(req.Principal, req.Host, op, rt)
}

const noAuthorizer = "No Authorizer is configured on the broker"

func (s *Server) handleDescribeAcls(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := respFor(req).(*kmsg.DescribeACLsResponse)
	switch {
	case s.cfg.Authorizer == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizer)
		return done(resp)
	case !s.authorizedCluster(req, acl.OpDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	f := acl.Filter{ResourceType: int8(r.ResourceType), ResourceName: r.ResourceName, PatternType: int8(r.ResourcePatternType),
		Principal: r.Principal, Host: r.Host, Operation: int8(r.Operation), PermissionType: int8(r.PermissionType)}
	if req.Version == 0 {
		f.PatternType = acl.PatternLiteral
	}
	if msg := f.Unknown(); msg != "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return done(resp)
	}
	type key struct {
		rt, pt int8
		name   string
	}
	byResource := map[key]int{}
	for _, b := range acl.Sorted(s.deps.Metadata.Image().ACLs) {
		if !f.Matches(b) {
			continue
		}
		k := key{b.ResourceType, b.PatternType, b.ResourceName}
		i, ok := byResource[k]
		if !ok {
			i = len(resp.Resources)
			byResource[k] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.ResourceName, kmsg.ACLResourcePatternType(b.PatternType)
			resp.Resources = append(resp.Resources, res)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.PermissionType)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return done(resp)
}

// aclChangeRefused is why CreateAcls or DeleteAcls is refused as a whole
// (0: not refused): no authorizer, or no ALTER on the cluster.
func (s *Server) aclChangeRefused(req *Request) (int16, *string) {
	switch {
	case s.cfg.Authorizer == nil:
		return kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
	case !s.authorizedCluster(req, acl.OpAlter):
		return kerr.ClusterAuthorizationFailed.Code, nil
	}
	return 0, nil
}

func (s *Server) handleCreateAcls(req *Request) *Reply {
	r := req.Body.(*kmsg.CreateACLsRequest)
	resp := respFor(req).(*kmsg.CreateACLsResponse)
	fail := func(code int16, msg *string) *Reply {
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			resp.Results = append(resp.Results, res)
		}
		return done(resp)
	}
	if code, msg := s.aclChangeRefused(req); code != 0 {
		return fail(code, msg)
	}
	bindings := make([]acl.Binding, len(r.Creations))
	for i, c := range r.Creations {
		bindings[i] = acl.Binding{ResourceType: int8(c.ResourceType), ResourceName: c.ResourceName, PatternType: int8(c.ResourcePatternType),
			Principal: c.Principal, Host: c.Host, Operation: int8(c.Operation), PermissionType: int8(c.PermissionType)}
		if req.Version == 0 {
			bindings[i].PatternType = acl.PatternLiteral
		}
	}
	created, err := s.deps.Controller.CreateAcls(bindings)
	if err != nil {
		return fail(errorCode(err), errorMessage(err))
	}
	s.awaitACLs(req, created.Offset)
	for _, err := range created.Errs {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Results = append(resp.Results, res)
	}
	return done(resp)
}

func (s *Server) handleDeleteAcls(req *Request) *Reply {
	r := req.Body.(*kmsg.DeleteACLsRequest)
	resp := respFor(req).(*kmsg.DeleteACLsResponse)
	fail := func(code int16, msg *string) *Reply {
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			resp.Results = append(resp.Results, res)
		}
		return done(resp)
	}
	if code, msg := s.aclChangeRefused(req); code != 0 {
		return fail(code, msg)
	}
	filters := make([]acl.Filter, len(r.Filters))
	for i, f := range r.Filters {
		filters[i] = acl.Filter{ResourceType: int8(f.ResourceType), ResourceName: f.ResourceName, PatternType: int8(f.ResourcePatternType),
			Principal: f.Principal, Host: f.Host, Operation: int8(f.Operation), PermissionType: int8(f.PermissionType)}
		if req.Version == 0 {
			filters[i].PatternType = acl.PatternLiteral
		}
	}
	deleted, err := s.deps.Controller.DeleteAcls(filters)
	if err != nil {
		return fail(errorCode(err), errorMessage(err))
	}
	s.awaitACLs(req, deleted.Offset)
	for _, fr := range deleted.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = errorCode(fr.Err), errorMessage(fr.Err)
		for _, b := range fr.Bindings {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.ResourceName, kmsg.ACLResourcePatternType(b.PatternType)
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.PermissionType)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	return done(resp)
}

// awaitACLs waits until this node's image has an ACL change at offset
// last (-1: none).
func (s *Server) awaitACLs(req *Request, last int64) {
	if last < 0 {
		return
	}
	if err := s.awaitMetadata(req.Ctx, last, 30*time.Second); err != nil {
		s.lg.Warn("metadata did not catch up with an ACL change", "offset", last, "err", err)
	}
}
