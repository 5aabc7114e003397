// Package acl is Kafka's authorization model: the ids and names of its
// resource types, pattern types, operations and permission types, ACL
// bindings and the filters that select them (DescribeAcls, DeleteAcls),
// and the Authorizer, which decides as Kafka's StandardAuthorizer does
// whether a principal on a host may perform an operation on a resource.
// It is pure: the ACLs come from the metadata image.
package acl

import (
	"cmp"
	"slices"
	"strings"

	"weir/internal/metadata"
)

// Resource types (Kafka's ResourceType ids).
const (
	ResourceUnknown         int8 = 0
	ResourceAny             int8 = 1
	ResourceTopic           int8 = 2
	ResourceGroup           int8 = 3
	ResourceCluster         int8 = 4
	ResourceTransactionalID int8 = 5
	ResourceDelegationToken int8 = 6
	ResourceUser            int8 = 7
)

// Pattern types (Kafka's PatternType ids). ANY and MATCH exist only in
// filters.
const (
	PatternUnknown  int8 = 0
	PatternAny      int8 = 1
	PatternMatch    int8 = 2
	PatternLiteral  int8 = 3
	PatternPrefixed int8 = 4
)

// Operations (Kafka's AclOperation ids).
const (
	OpUnknown         int8 = 0
	OpAny             int8 = 1
	OpAll             int8 = 2
	OpRead            int8 = 3
	OpWrite           int8 = 4
	OpCreate          int8 = 5
	OpDelete          int8 = 6
	OpAlter           int8 = 7
	OpDescribe        int8 = 8
	OpClusterAction   int8 = 9
	OpDescribeConfigs int8 = 10
	OpAlterConfigs    int8 = 11
	OpIdempotentWrite int8 = 12
	OpCreateTokens    int8 = 13
	OpDescribeTokens  int8 = 14
	OpTwoPhaseCommit  int8 = 15
)

// Permission types (Kafka's AclPermissionType ids).
const (
	PermUnknown int8 = 0
	PermAny     int8 = 1
	PermDeny    int8 = 2
	PermAllow   int8 = 3
)

const (
	// ClusterName is the name of the one CLUSTER resource.
	ClusterName = "kafka-cluster"
	// Wildcard as a LITERAL resource name matches every resource of
	// its type; as a host, every host.
	Wildcard = "*"
	// WildcardPrincipal matches every principal.
	WildcardPrincipal = "User:*"
	// Anonymous is the principal of an unauthenticated connection.
	Anonymous = "User:ANONYMOUS"
)

var resourceNames = map[int8]string{ResourceUnknown: "UNKNOWN", ResourceAny: "ANY", ResourceTopic: "TOPIC",
	ResourceGroup: "GROUP", ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
	ResourceDelegationToken: "DELEGATION_TOKEN", ResourceUser: "USER"}

var patternNames = map[int8]string{PatternUnknown: "UNKNOWN", PatternAny: "ANY", PatternMatch: "MATCH",
	PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED"}

var operationNames = map[int8]string{OpUnknown: "UNKNOWN", OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE",
	OpCreate: "CREATE", OpDelete: "DELETE", OpAlter: "ALTER", OpDescribe: "DESCRIBE", OpClusterAction: "CLUSTER_ACTION",
	OpDescribeConfigs: "DESCRIBE_CONFIGS", OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE",
	OpCreateTokens: "CREATE_TOKENS", OpDescribeTokens: "DESCRIBE_TOKENS", OpTwoPhaseCommit: "TWO_PHASE_COMMIT"}

var permissionNames = map[int8]string{PermUnknown: "UNKNOWN", PermAny: "ANY", PermDeny: "DENY", PermAllow: "ALLOW"}

func name(names map[int8]string, v int8) string {
	if n, ok := names[v]; ok {
		return n
	}
	return "UNKNOWN"
}

// ResourceTypeName, PatternName, OperationName and PermissionName are
// Kafka's enum names ("TRANSACTIONAL_ID", "PREFIXED", "DESCRIBE_CONFIGS",
// "ALLOW"); ids Kafka does not define are "UNKNOWN".
func ResourceTypeName(v int8) string { return name(resourceNames, v) }
func PatternName(v int8) string      { return name(patternNames, v) }
func OperationName(v int8) string    { return name(operationNames, v) }
func PermissionName(v int8) string   { return name(permissionNames, v) }

func parse(names map[int8]string, s string) (int8, bool) {
	key := strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(s)), "_", "")
	for v, n := range names {
		if v != 0 && strings.ReplaceAll(n, "_", "") == key {
			return v, true
		}
	}
	return 0, false
}

// ParseOperation, ParsePattern and ParseResourceType read an enum name
// case-insensitively, with or without underscores, as Kafka's tools do
// ("IdempotentWrite", "IDEMPOTENT_WRITE", "prefixed"). UNKNOWN is never
// parsed.
func ParseOperation(s string) (int8, bool)    { return parse(operationNames, s) }
func ParsePattern(s string) (int8, bool)      { return parse(patternNames, s) }
func ParseResourceType(s string) (int8, bool) { return parse(resourceNames, s) }

// Binding is an ACL: a resource pattern and an access control entry.
type Binding = metadata.ACL

// Filter selects bindings (Kafka's AclBindingFilter): a nil string
// matches any value, ANY any enum value, and the MATCH pattern type every
// pattern that applies to the resource Name names (LITERAL equal or "*",
// PREFIXED a prefix of it).
type Filter struct {
	ResourceType   int8
	ResourceName   *string
	PatternType    int8
	Principal      *string
	Host           *string
	Operation      int8
	PermissionType int8
}

// Unknown returns why a filter can select nothing Kafka knows (an
// UNKNOWN enum value), or "".
func (f Filter) Unknown() string {
	if f.ResourceType == ResourceUnknown || f.PatternType == PatternUnknown || ResourceTypeName(f.ResourceType) == "UNKNOWN" ||
		PatternName(f.PatternType) == "UNKNOWN" {
		return "Unknown patternFilter."
	}
	if f.Operation == OpUnknown || f.PermissionType == PermUnknown || OperationName(f.Operation) == "UNKNOWN" ||
		PermissionName(f.PermissionType) == "UNKNOWN" {
		return "Unknown entryFilter."
	}
	return ""
}

// Matches reports whether the filter selects b.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		n := *f.ResourceName
		switch {
		case f.PatternType != PatternMatch:
			if n != b.ResourceName {
				return false
			}
		case b.PatternType == PatternLiteral:
			if n != b.ResourceName && b.ResourceName != Wildcard {
				return false
			}
		case b.PatternType == PatternPrefixed:
			if !strings.HasPrefix(n, b.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal || f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.PermissionType == PermAny || f.PermissionType == b.PermissionType
}

// Validate returns why Kafka's controller refuses to create b
// (INVALID_REQUEST), or "".
func Validate(b Binding) string {
	switch {
	case b.ResourceType == ResourceCluster && b.ResourceName != ClusterName:
		return "The only valid name for the CLUSTER resource is " + ClusterName
	case b.ResourceName == "":
		return "Invalid empty resource name"
	case ResourceTypeName(b.ResourceType) == "UNKNOWN" || b.ResourceType == ResourceAny:
		return "Invalid resourceType " + ResourceTypeName(b.ResourceType)
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return "Invalid patternType " + PatternName(b.PatternType)
	case OperationName(b.Operation) == "UNKNOWN" || b.Operation == OpAny:
		return "Invalid operation " + OperationName(b.Operation)
	case b.PermissionType != PermAllow && b.PermissionType != PermDeny:
		return "Invalid permissionType " + PermissionName(b.PermissionType)
	}
	if _, _, ok := strings.Cut(b.Principal, ":"); !ok {
		return "Could not parse principal from `" + b.Principal + "` (no colon is present separating the principal type from the principal name)"
	}
	return ""
}

// Sorted returns the bindings of an image's ACLs in a stable order: by
// resource type, pattern type, name, principal, host, operation and
// permission.
func Sorted(acls map[metadata.Uuid]metadata.ACL) []Binding {
	out := make([]Binding, 0, len(acls))
	for _, b := range acls {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Binding) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.PatternType, b.PatternType),
			cmp.Compare(a.ResourceName, b.ResourceName), cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
			cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.PermissionType, b.PermissionType))
	})
	return out
}
