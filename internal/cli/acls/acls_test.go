package acls

import (
	"strings"
	"testing"

	"weir/internal/acl"
	"weir/internal/cli/clitest"
	"weir/internal/servertest"
	"weir/internal/tlsconf/tlstest"
)

// weir acls against a node with the authorizer on: ANONYMOUS (the
// PLAINTEXT listener) is a super user, bob logs in on a SASL listener.
func TestACLsTool(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"listeners":                                   "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":                        "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
		"inter.broker.listener.name":                  "PLAINTEXT",
		"listener.security.protocol.map":              "PLAINTEXT:PLAINTEXT,SECURE:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                     "PLAIN",
		"listener.name.secure.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";`,
		"authorizer.class.name":                       acl.ClassName,
		"super.users":                                 "User:ANONYMOUS",
	}})
	want := func(r clitest.Result, code int, out string) {
		t.Helper()
		if r.Code != code || r.Out != out {
			t.Fatalf("exit %d, want %d\n--- got\n%s\n--- want\n%s\n--- stderr\n%s", r.Code, code, r.Out, out, r.Err)
		}
	}
	acls := func(args ...string) clitest.Result {
		t.Helper()
		return weir.Run(t, append([]string{"acls", "--bootstrap-server", n.Addr}, args...)...)
	}
	const payments = "ResourcePattern(resourceType=TOPIC, name=payments, patternType=LITERAL)"
	want(acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write", "--topic", "payments"), 0,
		"Adding ACLs for resource `"+payments+"`: \n \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"+
			"\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n\n")
	want(acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "payments"), 0,
		"Acl (pattern="+payments+", entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)) already exists.\n")
	want(acls("--add", "--allow-principal", "User:bob", "--consumer", "--topic", "orders-", "--resource-pattern-type", "prefixed", "--group", "billing"), 0,
		"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders-, patternType=PREFIXED)`: \n"+
			" \t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n\t(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n"+
			"Adding ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, patternType=PREFIXED)`: \n"+
			" \t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n\n")
	want(acls("--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--operation", "Describe", "--cluster"), 0,
		"Adding ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: \n"+
			" \t(principal=User:bob, host=10.0.0.9, operation=DESCRIBE, permissionType=DENY)\n\n")
	cluster := "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`:\n" +
		"\t(principal=User:bob, host=10.0.0.9, operation=DESCRIBE, permissionType=DENY)\n\n"
	topicPayments := "Current ACLs for resource `" + payments + "`:\n" +
		"\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n\n"
	orders := "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders-, patternType=PREFIXED)`:\n" +
		"\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n\t(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n"
	billing := "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, patternType=PREFIXED)`:\n" +
		"\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n\n"
	want(acls("--list"), 0, topicPayments+orders+billing+cluster)
	want(acls("--list", "--topic", "orders-eu", "--resource-pattern-type", "match"), 0, orders)
	want(weir.Run(t, "acls", "--bootstrap-controller", n.Server.Addr("CONTROLLER").String(), "--list"), 0, topicPayments+orders+billing+cluster)
	want(acls("--list", "--principal", "User:alice"), 0, "ACLs for principal `User:alice`\n"+topicPayments)

	// bob is no super user: ALTER on the cluster is missing.
	bob := tlstest.WriteFile(t, t.TempDir(), "bob.properties", []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"bob\" password=\"bob-secret\";\n"))
	r := weir.Run(t, "acls", "--bootstrap-server", n.Server.Addr("SECURE").String(), "--command-config", bob, "--add", "--allow-principal", "User:bob",
		"--operation", "All", "--topic", "payments")
	if r.Code != 1 || !strings.HasSuffix(r.Out, "Error while executing ACL command: org.apache.kafka.common.errors.ClusterAuthorizationException: Cluster authorization failed.\n") {
		t.Fatalf("bob adding ACLs: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}

	// Removing asks first; n keeps them, --force does not ask.
	r = weir.RunIn(t, "n\n", "acls", "--bootstrap-server", n.Addr, "--remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "payments")
	want(r, 0, "Are you sure you want to remove ACLs: \n \t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n from resource filter `"+payments+"`? (y/n)\n")
	want(acls("--remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "payments", "--force"), 0, "")
	want(acls("--remove", "--consumer", "--allow-principal", "User:bob", "--topic", "orders-", "--resource-pattern-type", "prefixed", "--group", "billing", "--force"), 0, "")
	want(acls("--list"), 0, "Current ACLs for resource `"+payments+"`:\n\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n\n"+cluster)

	// Command line errors, as kafka-acls.sh's.
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--topic", "t"}, "Command must include exactly one action: --list, --add, --remove. "},
		{[]string{"--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"}, "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."},
		{[]string{"--add", "--operation", "Read", "--topic", "t"}, "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."},
		{[]string{"--add", "--allow-principal", "User:a", "--operation", "IdempotentWrite", "--topic", "t"}, "ResourceType TOPIC only supports operations [ALL, READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS]"},
		{[]string{"--add", "--allow-principal", "User:a"}, "You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>"},
		{[]string{"--add", "--producer", "--allow-principal", "User:a"}, "With --producer you must specify a --topic"},
		{[]string{"--add", "--consumer", "--allow-principal", "User:a", "--topic", "t"}, "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified."},
		{[]string{"--remove", "--principal", "User:a", "--topic", "t"}, "The --principal option is only available if --list is set"},
	} {
		r := acls(tc.args...)
		if r.Code != 1 || !strings.HasPrefix(r.Err, tc.msg+"\n") {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, r.Code, firstLine(r.Err), tc.msg)
		}
	}

	// Without an authorizer, as Kafka: SECURITY_DISABLED.
	plain := servertest.Start(t, servertest.Options{})
	r = weir.Run(t, "acls", "--bootstrap-server", plain.Addr, "--list")
	if r.Code != 1 || r.Out != "Error while executing ACL command: org.apache.kafka.common.errors.SecurityDisabledException: No Authorizer is configured on the broker\n" {
		t.Fatalf("no authorizer: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// weir is the command line these tests run.
var weir = clitest.Weir{NewCommand}
