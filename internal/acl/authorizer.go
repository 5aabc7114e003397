package acl

import (
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"weir/internal/metadata"
)

// ClassName is the authorizer.class.name that turns authorization on:
// Kafka's StandardAuthorizer, whose rules the Authorizer follows.
const ClassName = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Config is the authorizer's configuration.
type Config struct {
	// SuperUsers are principals ("User:admin") allowed everything
	// (super.users).
	SuperUsers map[string]bool
	// AllowIfNoACL allows an operation on a resource no ACL applies to
	// (allow.everyone.if.no.acl.found).
	AllowIfNoACL bool
}

// ParseSuperUsers reads super.users: principals separated by ';'.
func ParseSuperUsers(s string) map[string]bool {
	out := map[string]bool{}
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out[p] = true
		}
	}
	return out
}

// Authorizer decides requests against the ACLs of the latest metadata
// image. It indexes the ACLs by resource type and name, rebuilding the
// index when the image's ACLs change, so a check looks at the ACLs of
// its resource only.
type Authorizer struct {
	cfg   Config
	image func() *metadata.Image

	built atomic.Pointer[index]
	mu    sync.Mutex // held while building an index
}

// New returns an authorizer reading the ACLs of image().
func New(cfg Config, image func() *metadata.Image) *Authorizer {
	return &Authorizer{cfg: cfg, image: image}
}

// entry is an ACL's principal, host, operation and permission.
type entry struct {
	principal, host string
	op, perm        int8
}

// byType are the ACLs of one resource type.
type byType struct {
	literal    map[string][]entry // "*" included
	prefixed   map[string][]entry
	prefixLens []int // distinct lengths of the prefixed names, ascending
	all        []Binding
}

type index struct {
	acls  map[metadata.Uuid]metadata.ACL // the map indexed, compared by identity
	types map[int8]*byType
}

// current returns the index of the latest image's ACLs.
func (a *Authorizer) current() *index {
	acls := a.image().ACLs
	if ix := a.built.Load(); ix != nil && sameMap(ix.acls, acls) {
		return ix
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ix := a.built.Load(); ix != nil && sameMap(ix.acls, acls) {
		return ix
	}
	ix := &index{acls: acls, types: map[int8]*byType{}}
	for _, b := range acls {
		t := ix.types[b.ResourceType]
		if t == nil {
			t = &byType{literal: map[string][]entry{}, prefixed: map[string][]entry{}}
			ix.types[b.ResourceType] = t
		}
		e := entry{b.Principal, b.Host, b.Operation, b.PermissionType}
		t.all = append(t.all, b)
		switch b.PatternType {
		case PatternLiteral:
			t.literal[b.ResourceName] = append(t.literal[b.ResourceName], e)
		case PatternPrefixed:
			if len(t.prefixed[b.ResourceName]) == 0 && !slices.Contains(t.prefixLens, len(b.ResourceName)) {
				t.prefixLens = append(t.prefixLens, len(b.ResourceName))
			}
			t.prefixed[b.ResourceName] = append(t.prefixed[b.ResourceName], e)
		}
	}
	for _, t := range ix.types {
		slices.Sort(t.prefixLens)
	}
	a.built.Store(ix)
	return ix
}

// sameMap reports whether a and b are the same map (images copy the ACL
// map on every change and share it otherwise).
func sameMap(a, b map[metadata.Uuid]metadata.ACL) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Authorize reports whether principal, connected from host (an IP address
// as Host formats it), may perform op on the resource of type resType
// named name. As Kafka's StandardAuthorizer: super users may do
// anything; otherwise the ACLs of the resource (LITERAL with its name or
// "*", PREFIXED with a prefix of it) for the principal or User:* and the
// host or "*" decide, a DENY of the operation (or ALL) over any ALLOW; an
// ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE, and one of
// ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL covers every operation. A
// resource without any ACL is allowed only with AllowIfNoACL.
func (a *Authorizer) Authorize(principal, host string, op, resType int8, name string) bool {
	if a.cfg.SuperUsers[principal] {
		return true
	}
	t := a.current().types[resType]
	if t == nil {
		return a.cfg.AllowIfNoACL
	}
	found, allowed := false, false
	check := func(es []entry) bool { // false: denied
		for _, e := range es {
			found = true
			switch applies(e, principal, host, op) {
			case PermDeny:
				return false
			case PermAllow:
				allowed = true
			}
		}
		return true
	}
	if !check(t.literal[name]) {
		return false
	}
	if name != Wildcard && !check(t.literal[Wildcard]) {
		return false
	}
	for _, n := range t.prefixLens {
		if n > len(name) {
			break
		}
		if !check(t.prefixed[name[:n]]) {
			return false
		}
	}
	if allowed {
		return true
	}
	return !found && a.cfg.AllowIfNoACL
}

// applies returns the permission of e for the request, or PermUnknown
// when e does not apply to it.
func applies(e entry, principal, host string, op int8) int8 {
	if e.principal != principal && e.principal != WildcardPrincipal || e.host != Wildcard && e.host != host {
		return PermUnknown
	}
	if e.op != OpAll && e.op != op {
		if e.perm != PermAllow {
			return PermUnknown
		}
		switch op {
		case OpDescribe:
			if e.op != OpRead && e.op != OpWrite && e.op != OpDelete && e.op != OpAlter {
				return PermUnknown
			}
		case OpDescribeConfigs:
			if e.op != OpAlterConfigs {
				return PermUnknown
			}
		default:
			return PermUnknown
		}
	}
	return e.perm
}

// AuthorizeAny reports whether principal may perform op on some resource
// of type resType (Kafka's authorizeByResourceType, which lets an
// idempotent producer in with WRITE on any topic): true when it may on a
// resource no ACL names, or some ALLOW (of op or ALL, for the principal
// or User:*, from the host or any) names a pattern that no DENY covers (a
// LITERAL DENY of the same name, or a PREFIXED DENY of a prefix of it);
// a DENY of "*" or of the empty prefix denies outright.
func (a *Authorizer) AuthorizeAny(principal, host string, op, resType int8) bool {
	if a.Authorize(principal, host, op, resType, "hardcode") {
		return true
	}
	t := a.current().types[resType]
	if t == nil {
		return false
	}
	deny := map[int8]map[string]bool{PatternLiteral: {}, PatternPrefixed: {}}
	var allow []Binding
	for _, b := range t.all {
		if b.Host != host && b.Host != Wildcard || b.Principal != principal && b.Principal != WildcardPrincipal ||
			b.Operation != op && b.Operation != OpAll {
			continue
		}
		wild := b.PatternType == PatternLiteral && b.ResourceName == Wildcard || b.PatternType == PatternPrefixed && b.ResourceName == ""
		switch b.PermissionType {
		case PermDeny:
			if wild {
				return false
			}
			deny[b.PatternType][b.ResourceName] = true
		case PermAllow:
			if wild {
				return true
			}
			allow = append(allow, b)
		}
	}
next:
	for _, b := range allow {
		if b.PatternType == PatternLiteral && deny[PatternLiteral][b.ResourceName] {
			continue
		}
		for i := 1; i <= len(b.ResourceName); i++ {
			if deny[PatternPrefixed][b.ResourceName[:i]] {
				continue next
			}
		}
		return true
	}
	return false
}

// Host formats a connection's remote address ("ip:port") as Kafka's ACLs
// name hosts (Java's InetAddress.getHostAddress): IPv4 dotted, IPv6 as
// eight groups of hexadecimal without leading zeros ("0:0:0:0:0:0:0:1").
func Host(remote string) string {
	h, _, err := net.SplitHostPort(remote)
	if err != nil {
		h = remote
	}
	ip := net.ParseIP(h)
	if ip == nil {
		return h
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = strconv.FormatUint(uint64(ip[2*i])<<8|uint64(ip[2*i+1]), 16)
	}
	return strings.Join(groups, ":")
}
