package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/acl"
	"weir/internal/testwait"
)

// With the authorizer on, the nodes' own traffic (replica fetches, ISR
// changes, registration and heartbeats, forwarding, the Raft quorum, the
// broker-only node's metadata fetches) runs as User:broker, a super user,
// over SASL listeners, as Kafka's documentation advises; replication keeps
// working, and an ACL created through the broker-only node (forwarded to
// the active controller) applies on every node.
func TestAuthorizerCluster(t *testing.T) {
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" ` +
		`user_broker="broker-secret" user_admin="admin-secret" user_alice="alice-secret";`
	c := New(t, Options{Nodes: 3, Brokers: 1, Overrides: map[string]string{
		"listener.security.protocol.map":                  "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                         "PLAIN",
		"sasl.mechanism.inter.broker.protocol":            "PLAIN",
		"sasl.mechanism.controller.protocol":              "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config":  users,
		"listener.name.controller.plain.sasl.jaas.config": users,
		"authorizer.class.name":                           acl.ClassName,
		"super.users":                                     "User:broker;User:admin",
	}, ClientOpts: []kgo.Opt{kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}})

	createReplicated(t, c, "guarded", 2, 3, map[string]*string{"min.insync.replicas": ptr("3")})
	sent := produceAll(t, c, "guarded", 50)
	sameRecords(t, sent, consumeAll(t, c, "guarded", 50))
	testwait.For(t, 30*time.Second, "every replica in the ISR", func() error {
		for _, i := range c.Live() {
			for p := int32(0); p < 2; p++ {
				if _, isr, _ := partitionState(c, i, "guarded", p); len(isr) != 3 {
					return fmt.Errorf("node %d: partition %d ISR %v", i, p, isr)
				}
			}
		}
		return nil
	})

	// alice may do nothing yet.
	broker := c.Node(c.Size() - 1)
	if broker.Controller {
		t.Fatal("the last node should be broker-only")
	}
	aliceOn := func(n *Node) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
			kgo.DefaultProduceTopic("guarded"), kgo.RequestRetries(0), kgo.RecordRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := aliceOn(broker).ProduceSync(ctx, kgo.StringRecord("no")).FirstErr(); err != kerr.TopicAuthorizationFailed {
		t.Fatalf("alice producing without ACLs: %v", err)
	}

	// The admin grants WRITE through the broker-only node.
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer adminCl.Close()
	res, err := kadm.NewClient(adminCl).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").
		Topics("guarded").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("creating the ACL: %v %+v", err, res)
	}
	for _, i := range c.Live() {
		n := c.Node(i)
		testwait.For(t, 30*time.Second, fmt.Sprintf("node %d sees the ACL", n.ID), func() error {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
			if err != nil {
				return err
			}
			defer cl.Close()
			resp, err := cl.SeedBrokers()[0].Request(ctx, req)
			if err != nil {
				return err
			}
			if r := resp.(*kmsg.DescribeACLsResponse); len(r.Resources) != 1 || r.Resources[0].ResourceName != "guarded" {
				return fmt.Errorf("ACLs %+v", r.Resources)
			}
			return nil
		})
		if err := aliceOn(n).ProduceSync(ctx, kgo.StringRecord("yes")).FirstErr(); err != nil {
			t.Fatalf("alice producing through node %d: %v", n.ID, err)
		}
	}
}
