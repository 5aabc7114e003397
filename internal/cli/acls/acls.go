// Package acls is weir acls, like kafka-acls.sh.
package acls

// weir acls: kafka-acls.sh's flags, output and exit codes (AclCommand),
// over CreateAcls, DescribeAcls and DeleteAcls.

import (
	"bufio"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/cli/tool"
)

type aclsFlags struct {
	conn                                  tool.ConnFlags
	bootstrapController                   string
	add, remove, list                     bool
	topics, groups, txnIDs, tokens, users []string
	cluster, idempotent                   bool
	patternType                           string
	operations                            []string
	allowPrincipals, denyPrincipals       []string
	allowHosts, denyHosts, listPrincipals []string
	producer, consumer, force             bool
}

func NewCommand() *cobra.Command {
	f := &aclsFlags{}
	cmd := &cobra.Command{
		Use:   "acls (--bootstrap-server HOST:PORT | --bootstrap-controller HOST:PORT) (--add | --remove | --list) [resource and ACL flags]",
		Short: "Add, remove and list ACLs, like kafka-acls.sh",
		Long: `acls manages the cluster's access control lists with the flags, output and
exit codes of Apache Kafka's kafka-acls.sh (the authorizer must be on:
authorizer.class.name=` + acl.ClassName + `).

Resources: --topic, --group, --transactional-id, --delegation-token and
--user-principal (each repeatable), --cluster; --resource-pattern-type
literal (the default) or prefixed when adding, also any or match when
listing or removing (match: every ACL that applies to the named resource).
ACLs: --allow-principal and --deny-principal (Type:name, User:* for every
user), --allow-host and --deny-host (default * for the principals given),
--operation (repeatable: All, Read, Write, Create, Delete, Alter, Describe,
ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite,
CreateTokens, DescribeTokens, TwoPhaseCommit; default All).
Conveniences: --producer (Write, Describe and Create on the topics, Write
and Describe on the transactional ids, IdempotentWrite on the cluster with
--idempotent), --consumer (Read and Describe on the topics, Read on the
groups).

--add prints "Adding ACLs for resource ` + "`ResourcePattern(...)`" + `:" and the
new entries (an existing one: "Acl ... already exists."); --remove asks
for confirmation unless --force; --list prints "Current ACLs for resource
` + "`...`" + `:" per resource, only --principal's with --principal. A failure
prints "Error while executing ACL command: ..." and exits 1.

` + tool.CommandConfigHelp,
		Example: `  # let alice read and write the topic payments from any host
  weir acls --bootstrap-server localhost:9092 --add --allow-principal User:alice \
    --operation Read --operation Write --topic payments

  # a consumer of every topic starting with "orders-", in group billing
  weir acls --bootstrap-server localhost:9092 --add --allow-principal User:bob \
    --consumer --topic orders- --resource-pattern-type prefixed --group billing

  # an idempotent, transactional producer
  weir acls --bootstrap-server localhost:9092 --add --allow-principal User:svc \
    --producer --topic events --transactional-id svc- --idempotent

  # everyone may describe the cluster, but not from 10.0.0.9
  weir acls --bootstrap-server localhost:9092 --add --allow-principal 'User:*' \
    --deny-principal 'User:*' --deny-host 10.0.0.9 --operation Describe --cluster

  # every ACL that applies to topic payments, and alice's only
  weir acls --bootstrap-server localhost:9092 --list --topic payments --resource-pattern-type match
  weir acls --bootstrap-server localhost:9092 --list --principal User:alice

  # remove alice's ACLs on payments without asking
  weir acls --bootstrap-server localhost:9092 --remove --allow-principal User:alice \
    --operation Read --operation Write --topic payments --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runACLs(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.conn.BootstrapServer, "bootstrap-server", "", "the Kafka server(s) to connect to, host:port[,host:port]")
	fl.StringVar(&f.bootstrapController, "bootstrap-controller", "", "the KRaft controllers to connect to, host:port[,host:port]")
	fl.StringVar(&f.conn.CommandConfig, "command-config", "", "a client properties file")
	fl.BoolVar(&f.add, "add", false, "add ACLs")
	fl.BoolVar(&f.remove, "remove", false, "remove ACLs")
	fl.BoolVar(&f.list, "list", false, "list ACLs of the resources given (all when none)")
	fl.StringArrayVar(&f.topics, "topic", nil, "a topic ('*': every topic); repeatable")
	fl.BoolVar(&f.cluster, "cluster", false, "the cluster")
	fl.StringArrayVar(&f.groups, "group", nil, "a consumer group ('*': every group); repeatable")
	fl.StringArrayVar(&f.txnIDs, "transactional-id", nil, "a transactional id ('*': every one); repeatable")
	fl.BoolVar(&f.idempotent, "idempotent", false, "with --producer: IdempotentWrite on the cluster")
	fl.StringArrayVar(&f.tokens, "delegation-token", nil, "a delegation token ('*': every token); repeatable")
	fl.StringArrayVar(&f.users, "user-principal", nil, "a user principal as a resource (CreateTokens, DescribeTokens); repeatable")
	fl.StringVar(&f.patternType, "resource-pattern-type", "literal", "literal or prefixed; when listing or removing also any or match")
	fl.StringArrayVar(&f.operations, "operation", []string{"All"}, "an operation allowed or denied; repeatable")
	fl.StringArrayVar(&f.allowPrincipals, "allow-principal", nil, "a principal allowed, Type:name (User:* is every user); repeatable")
	fl.StringArrayVar(&f.denyPrincipals, "deny-principal", nil, "a principal denied, Type:name; repeatable. DENY takes precedence over ALLOW")
	fl.StringArrayVar(&f.listPrincipals, "principal", nil, "with --list: only this principal's ACLs; repeatable")
	fl.StringArrayVar(&f.allowHosts, "allow-host", nil, "a host the allowed principals may connect from (default * with --allow-principal); repeatable")
	fl.StringArrayVar(&f.denyHosts, "deny-host", nil, "a host the denied principals are denied from (default * with --deny-principal); repeatable")
	fl.BoolVar(&f.producer, "producer", false, "the ACLs of a producer")
	fl.BoolVar(&f.consumer, "consumer", false, "the ACLs of a consumer")
	fl.BoolVar(&f.force, "force", false, "do not ask for confirmation")
	return cmd
}

// aclResource is a resource pattern (or, with ANY or MATCH, a filter).
type aclResource struct {
	rt      int8
	name    string
	pattern int8
}

// String is Kafka's ResourcePattern (and ResourcePatternFilter) form.
func (r aclResource) String() string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", acl.ResourceTypeName(r.rt), r.name, acl.PatternName(r.pattern))
}

// aclEntry is an access control entry.
type aclEntry struct {
	principal, host string
	op, perm        int8
}

// String is Kafka's AccessControlEntry form.
func (e aclEntry) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", e.principal, e.host, acl.OperationName(e.op), acl.PermissionName(e.perm))
}

// supportedOperations are the operations each resource type has (Kafka's
// AclEntry.supportedOperations), ALL aside.
var supportedOperations = map[int8][]int8{
	acl.ResourceTopic: {acl.OpRead, acl.OpWrite, acl.OpCreate, acl.OpDescribe, acl.OpDelete, acl.OpAlter, acl.OpDescribeConfigs, acl.OpAlterConfigs},
	acl.ResourceGroup: {acl.OpRead, acl.OpDescribe, acl.OpDelete},
	acl.ResourceCluster: {acl.OpCreate, acl.OpClusterAction, acl.OpDescribeConfigs, acl.OpAlterConfigs, acl.OpIdempotentWrite,
		acl.OpAlter, acl.OpDescribe},
	acl.ResourceTransactionalID: {acl.OpDescribe, acl.OpWrite, acl.OpTwoPhaseCommit},
	acl.ResourceDelegationToken: {acl.OpDescribe},
	acl.ResourceUser:            {acl.OpCreateTokens, acl.OpDescribeTokens},
}

func runACLs(cmd *cobra.Command, f *aclsFlags) error {
	has := cmd.Flags().Changed
	out := cmd.OutOrStdout()
	usage := func(msg string) error { return tool.UsageError(cmd, msg) }
	switch {
	case has("bootstrap-server") && has("bootstrap-controller"):
		return usage("Only one of --bootstrap-server or --bootstrap-controller must be specified")
	case !has("bootstrap-server") && !has("bootstrap-controller"):
		return usage("One of --bootstrap-server or --bootstrap-controller must be specified")
	case has("bootstrap-controller"):
		f.conn.BootstrapServer = f.bootstrapController
	}
	actions := 0
	for _, a := range []bool{f.add, f.remove, f.list} {
		if a {
			actions++
		}
	}
	if actions != 1 {
		return usage("Command must include exactly one action: --list, --add, --remove. ")
	}
	if f.list {
		for _, n := range []string{"producer", "consumer", "allow-host", "allow-principal", "deny-host", "deny-principal"} {
			if has(n) {
				return usage(fmt.Sprintf("Option \"[list]\" can't be used with option \"[%s]\"", n))
			}
		}
	}
	for _, conv := range []string{"producer", "consumer"} {
		for _, n := range []string{"operation", "deny-principal", "deny-host"} {
			if has(conv) && has(n) {
				return usage(fmt.Sprintf("Option \"[%s]\" can't be used with option \"[%s]\"", conv, n))
			}
		}
	}
	switch {
	case has("principal") && !f.list:
		return usage("The --principal option is only available if --list is set")
	case f.producer && len(f.topics) == 0:
		return usage("With --producer you must specify a --topic")
	case f.idempotent && !f.producer:
		return usage("The --idempotent option is only available if --producer is set")
	case f.consumer && (len(f.topics) == 0 || len(f.groups) == 0 || !f.producer && (f.cluster || len(f.txnIDs) > 0)):
		return usage("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.")
	}
	pattern, ok := acl.ParsePattern(f.patternType)
	if !ok {
		return usage("Unknown resource-pattern-type: " + f.patternType)
	}
	if f.add && pattern != acl.PatternLiteral && pattern != acl.PatternPrefixed {
		return usage(fmt.Sprintf("A '--resource-pattern-type' value of '%s' is not valid when adding acls.", acl.PatternName(pattern)))
	}
	for _, p := range slices.Concat(f.allowPrincipals, f.denyPrincipals, f.listPrincipals) {
		if _, _, ok := strings.Cut(strings.TrimSpace(p), ":"); !ok {
			return aclError(cmd, "expected a string in format principalType:principalName but got "+p)
		}
	}

	resources := f.resources(pattern)
	if len(resources) == 0 && !f.list {
		return usage("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>")
	}
	var toACLs map[aclResource][]aclEntry
	if !f.list {
		var err error
		if toACLs, err = f.entries(resources); err != nil {
			return usage(err.Error())
		}
	}
	t, err := f.conn.Connect(cmd, "weir-acls", tool.Either(f.list, "describeAcls", tool.Either(f.add, "createAcls", "deleteAcls")))
	if err != nil {
		return aclError(cmd, err.Error())
	}
	defer t.Close()
	ctx, cancel := t.Context(cmd)
	defer cancel()

	describe := func(filter aclResource) ([]kmsg.DescribeACLsResponseResource, error) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceType(filter.rt), kmsg.ACLResourcePatternType(filter.pattern)
		if filter.rt != acl.ResourceAny {
			req.ResourceName = kmsg.StringPtr(filter.name)
		}
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, t.Kgo)
		if err != nil {
			return nil, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, tool.KafkaError(err, resp.ErrorMessage)
		}
		return resp.Resources, nil
	}

	switch {
	case f.add:
		for _, r := range sortedResources(toACLs) {
			existing, err := describe(r)
			if err != nil {
				return aclFailed(cmd, err)
			}
			have := map[aclEntry]bool{}
			for _, res := range existing {
				if int8(res.ResourceType) == r.rt && res.ResourceName == r.name && int8(res.ResourcePatternType) == r.pattern {
					for _, a := range res.ACLs {
						have[aclEntry{a.Principal, a.Host, int8(a.Operation), int8(a.PermissionType)}] = true
					}
				}
			}
			req := kmsg.NewPtrCreateACLsRequest()
			var added []string
			for _, e := range toACLs[r] {
				if have[e] {
					fmt.Fprintf(out, "Acl (pattern=%s, entry=%s) already exists.\n", r, e)
					continue
				}
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(r.rt), r.name, kmsg.ACLResourcePatternType(r.pattern)
				c.Principal, c.Host, c.Operation, c.PermissionType = e.principal, e.host, kmsg.ACLOperation(e.op), kmsg.ACLPermissionType(e.perm)
				req.Creations = append(req.Creations, c)
				added = append(added, "\t"+e.String())
			}
			if len(added) == 0 {
				continue
			}
			fmt.Fprintf(out, "Adding ACLs for resource `%s`: \n %s\n\n", r, strings.Join(added, "\n"))
			resp, err := req.RequestWith(ctx, t.Kgo)
			if err != nil {
				return aclFailed(cmd, err)
			}
			for _, res := range resp.Results {
				if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
					return aclFailed(cmd, tool.KafkaError(err, res.ErrorMessage))
				}
			}
		}
	case f.remove:
		in := bufio.NewReader(cmd.InOrStdin())
		for _, r := range sortedResources(toACLs) {
			entries := toACLs[r]
			if !f.force {
				lines := make([]string, len(entries))
				for i, e := range entries {
					lines[i] = "\t" + e.String()
				}
				fmt.Fprintf(out, "Are you sure you want to remove ACLs: \n %s\n from resource filter `%s`? (y/n)\n", strings.Join(lines, "\n"), r)
				answer, _ := in.ReadString('\n')
				if !strings.EqualFold(strings.TrimSpace(answer), "y") {
					continue
				}
			}
			req := kmsg.NewPtrDeleteACLsRequest()
			for _, e := range entries {
				fl := kmsg.NewDeleteACLsRequestFilter()
				fl.ResourceType, fl.ResourceName, fl.ResourcePatternType = kmsg.ACLResourceType(r.rt), kmsg.StringPtr(r.name), kmsg.ACLResourcePatternType(r.pattern)
				fl.Principal, fl.Host, fl.Operation, fl.PermissionType = kmsg.StringPtr(e.principal), kmsg.StringPtr(e.host), kmsg.ACLOperation(e.op), kmsg.ACLPermissionType(e.perm)
				req.Filters = append(req.Filters, fl)
			}
			resp, err := req.RequestWith(ctx, t.Kgo)
			if err != nil {
				return aclFailed(cmd, err)
			}
			for _, res := range resp.Results {
				if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
					return aclFailed(cmd, tool.KafkaError(err, res.ErrorMessage))
				}
			}
		}
	default:
		filters := resources
		if len(filters) == 0 {
			filters = []aclResource{{rt: acl.ResourceAny, pattern: acl.PatternAny}}
		}
		byResource := map[aclResource][]aclEntry{}
		for _, fr := range filters {
			got, err := describe(fr)
			if err != nil {
				return aclFailed(cmd, err)
			}
			for _, res := range got {
				r := aclResource{int8(res.ResourceType), res.ResourceName, int8(res.ResourcePatternType)}
				for _, a := range res.ACLs {
					e := aclEntry{a.Principal, a.Host, int8(a.Operation), int8(a.PermissionType)}
					if !slices.Contains(byResource[r], e) {
						byResource[r] = append(byResource[r], e)
					}
				}
			}
		}
		print := func(m map[aclResource][]aclEntry) {
			for _, r := range sortedResources(m) {
				lines := make([]string, 0, len(m[r]))
				for _, e := range sortedEntries(m[r]) {
					lines = append(lines, "\t"+e.String())
				}
				fmt.Fprintf(out, "Current ACLs for resource `%s`:\n%s\n\n", r, strings.Join(lines, "\n"))
			}
		}
		if len(f.listPrincipals) == 0 {
			print(byResource)
			break
		}
		for _, p := range f.listPrincipals {
			p = strings.TrimSpace(p)
			fmt.Fprintf(out, "ACLs for principal `%s`\n", p)
			mine := map[aclResource][]aclEntry{}
			for r, es := range byResource {
				for _, e := range es {
					if e.principal == p {
						mine[r] = append(mine[r], e)
					}
				}
			}
			print(mine)
		}
	}
	return nil
}

// resources are the resources (or filters) the flags name.
func (f *aclsFlags) resources(pattern int8) []aclResource {
	var out []aclResource
	add := func(rt int8, names []string) {
		for _, n := range names {
			out = append(out, aclResource{rt, strings.TrimSpace(n), pattern})
		}
	}
	add(acl.ResourceTopic, f.topics)
	if pattern == acl.PatternLiteral && (f.cluster || f.idempotent) {
		out = append(out, aclResource{acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral})
	}
	add(acl.ResourceGroup, f.groups)
	add(acl.ResourceTransactionalID, f.txnIDs)
	add(acl.ResourceDelegationToken, f.tokens)
	add(acl.ResourceUser, f.users)
	return out
}

// entries are the ACLs to add or remove on each resource: the flags', or
// the --producer and --consumer conveniences'.
func (f *aclsFlags) entries(resources []aclResource) (map[aclResource][]aclEntry, error) {
	hosts := func(hosts, principals []string) []string {
		if len(hosts) > 0 {
			return hosts
		}
		if len(principals) > 0 {
			return []string{acl.Wildcard}
		}
		return nil
	}
	entries := func(ops []int8) []aclEntry {
		var out []aclEntry
		for _, side := range []struct {
			principals, hosts []string
			perm              int8
		}{{f.allowPrincipals, hosts(f.allowHosts, f.allowPrincipals), acl.PermAllow}, {f.denyPrincipals, hosts(f.denyHosts, f.denyPrincipals), acl.PermDeny}} {
			for _, p := range side.principals {
				for _, op := range ops {
					for _, h := range side.hosts {
						e := aclEntry{strings.TrimSpace(p), strings.TrimSpace(h), op, side.perm}
						if !slices.Contains(out, e) {
							out = append(out, e)
						}
					}
				}
			}
		}
		return sortedEntries(out)
	}
	out := map[aclResource][]aclEntry{}
	if !f.producer && !f.consumer {
		var ops []int8
		for _, s := range f.operations {
			op, ok := acl.ParseOperation(s)
			if !ok || op == acl.OpAny {
				return nil, fmt.Errorf("Unknown operation: %s", s)
			}
			ops = append(ops, op)
		}
		for _, r := range resources {
			out[r] = entries(ops)
		}
	}
	if f.producer {
		for _, r := range resources {
			switch r.rt {
			case acl.ResourceTopic:
				out[r] = entries([]int8{acl.OpWrite, acl.OpDescribe, acl.OpCreate})
			case acl.ResourceTransactionalID:
				out[r] = entries([]int8{acl.OpWrite, acl.OpDescribe})
			case acl.ResourceCluster:
				if f.idempotent {
					out[r] = entries([]int8{acl.OpIdempotentWrite})
				}
			}
		}
	}
	if f.consumer {
		for _, r := range resources {
			switch r.rt {
			case acl.ResourceTopic:
				out[r] = sortedEntries(append(out[r], entries([]int8{acl.OpRead, acl.OpDescribe})...))
			case acl.ResourceGroup:
				out[r] = entries([]int8{acl.OpRead})
			}
		}
	}
	for r, es := range out {
		if len(es) == 0 {
			if f.add {
				return nil, fmt.Errorf("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
			}
			continue
		}
		valid := append([]int8{acl.OpAll}, supportedOperations[r.rt]...)
		for _, e := range es {
			if !slices.Contains(valid, e.op) {
				names := make([]string, len(valid))
				for i, op := range valid {
					names[i] = acl.OperationName(op)
				}
				return nil, fmt.Errorf("ResourceType %s only supports operations [%s]", acl.ResourceTypeName(r.rt), strings.Join(names, ", "))
			}
		}
	}
	return out, nil
}

func sortedResources(m map[aclResource][]aclEntry) []aclResource {
	out := make([]aclResource, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b aclResource) int {
		if a.rt != b.rt {
			return int(a.rt) - int(b.rt)
		}
		if a.pattern != b.pattern {
			return int(a.pattern) - int(b.pattern)
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

func sortedEntries(es []aclEntry) []aclEntry {
	slices.SortFunc(es, func(a, b aclEntry) int {
		switch {
		case a.principal != b.principal:
			return strings.Compare(a.principal, b.principal)
		case a.perm != b.perm:
			return int(b.perm) - int(a.perm) // ALLOW first
		case a.op != b.op:
			return int(a.op) - int(b.op)
		}
		return strings.Compare(a.host, b.host)
	})
	return es
}

// aclError ends the command with Kafka's tool's message and exit code 1.
func aclError(cmd *cobra.Command, msg string) error {
	fmt.Fprintln(cmd.OutOrStdout(), "Error while executing ACL command: "+msg)
	return tool.ExitCode(1)
}

// aclFailed is aclError for an error of a request, shown as the exception
// Kafka's admin client raises.
func aclFailed(cmd *cobra.Command, err error) error {
	if je, ok := err.(*tool.JavaError); ok {
		return aclError(cmd, je.String())
	}
	return aclError(cmd, err.Error())
}
