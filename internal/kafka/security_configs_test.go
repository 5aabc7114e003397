package kafka_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/servertest"
)

// Security settings weir does not implement (and keys it reads only at
// start-up) are INVALID_CONFIG through AlterConfigs and
// IncrementalAlterConfigs, with a message naming the key and what weir
// supports, and nothing of the request is applied.
func TestSecurityConfigsRefusedChangeNothing(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate})
	w := dial(t, n.Addr)
	w.createTopic("sec", 1, nil)
	topicBefore := w.describeConfigs(kmsg.ConfigResourceTypeTopic, "sec")
	brokerBefore := w.describeConfigs(kmsg.ConfigResourceTypeBroker, "1")
	defaultsBefore := w.describeConfigs(kmsg.ConfigResourceTypeBroker, "")

	const secret = "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"s3cret\";"
	type op struct {
		name, value string
		op          kmsg.IncrementalAlterConfigOp
	}
	set := func(name, value string) op { return op{name, value, kmsg.IncrementalAlterConfigOpSet} }
	cases := []struct {
		typ  kmsg.ConfigResourceType
		name string
		ops  []op
		key  string // the refused key the message names
		says string // and what it says
	}{
		{kmsg.ConfigResourceTypeBroker, "1", []op{set("log.retention.ms", "5000"), set("ssl.keymanager.algorithm", "PKIX")},
			"ssl.keymanager.algorithm", "weir does not implement this TLS setting"},
		{kmsg.ConfigResourceTypeBroker, "1", []op{set("ssl.keystore.location", "/etc/ks.pem")}, "ssl.keystore.location", "weir reads it only at start-up"},
		{kmsg.ConfigResourceTypeBroker, "1", []op{set("ssl.client.auth", "required")}, "ssl.client.auth", "weir reads it only at start-up"},
		{kmsg.ConfigResourceTypeBroker, "", []op{set("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer")},
			"authorizer.class.name", "it is read-only"},
		{kmsg.ConfigResourceTypeBroker, "", []op{set("super.users", "User:admin")}, "super.users", "it is read-only"},
		{kmsg.ConfigResourceTypeBroker, "1", []op{{"sasl.enabled.mechanisms", "PLAIN", kmsg.IncrementalAlterConfigOpAppend}},
			"sasl.enabled.mechanisms", "weir reads it only at start-up"},
		{kmsg.ConfigResourceTypeBroker, "1", []op{set("sasl.login.class", "com.example.Login")},
			"sasl.login.class", "weir does not implement this SASL setting"},
		{kmsg.ConfigResourceTypeBroker, "1", []op{set("listener.name.sasl_ssl.plain.sasl.jaas.config", secret)},
			"listener.name.sasl_ssl.plain.sasl.jaas.config", "weir reads it only at start-up"},
		{kmsg.ConfigResourceTypeBroker, "1", []op{set("listener.name.sasl_ssl.gssapi.sasl.jaas.config", secret)},
			"listener.name.sasl_ssl.gssapi.sasl.jaas.config", "[hidden]"},
		{kmsg.ConfigResourceTypeBroker, "1", []op{set("listener.security.protocol.map", "PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT")},
			"listener.security.protocol.map", "weir reads it only at start-up"},
		{kmsg.ConfigResourceTypeBroker, "1", []op{set("listeners", "SASL_SSL://127.0.0.1:9094")}, "listeners", "weir reads it only at start-up"},
		{kmsg.ConfigResourceTypeTopic, "sec", []op{set("retention.ms", "5000"), set("remote.storage.enable", "true")},
			"remote.storage.enable", "weir does not implement tiered storage"},
	}
	check := func(t *testing.T, what string, code int16, msg *string, key, says string) {
		t.Helper()
		wantInvalidConfig(t, what, code, msg, key)
		if !strings.Contains(*msg, says) || strings.Contains(*msg, "s3cret") {
			t.Errorf("%s: message %q should say %q and hide secrets", what, *msg, says)
		}
	}
	t.Run("AlterConfigs", func(t *testing.T) {
		for _, tc := range cases {
			req := kmsg.NewPtrAlterConfigsRequest()
			r := kmsg.NewAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = tc.typ, tc.name
			for _, o := range tc.ops {
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = o.name, kmsg.StringPtr(o.value)
				r.Configs = append(r.Configs, c)
			}
			req.Resources = append(req.Resources, r)
			resp := w.do(req).(*kmsg.AlterConfigsResponse)
			if len(resp.Resources) != 1 {
				t.Fatalf("AlterConfigs answered %d resources", len(resp.Resources))
			}
			check(t, fmt.Sprintf("AlterConfigs %s %q", tc.typ, tc.name), resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, tc.key, tc.says)
		}
	})
	t.Run("IncrementalAlterConfigs", func(t *testing.T) {
		for _, tc := range cases {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r := kmsg.NewIncrementalAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = tc.typ, tc.name
			for _, o := range tc.ops {
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Op, c.Value = o.name, o.op, kmsg.StringPtr(o.value)
				r.Configs = append(r.Configs, c)
			}
			req.Resources = append(req.Resources, r)
			resp := w.do(req).(*kmsg.IncrementalAlterConfigsResponse)
			if len(resp.Resources) != 1 {
				t.Fatalf("IncrementalAlterConfigs answered %d resources", len(resp.Resources))
			}
			check(t, fmt.Sprintf("IncrementalAlterConfigs %s %q", tc.typ, tc.name), resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, tc.key, tc.says)
		}
	})
	t.Run("kadm", func(t *testing.T) {
		adm := cliAdmin(t, n.Addr)
		ctx := cliCtx(t)
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "sasl.mechanism.inter.broker.protocol", Value: kadm.StringPtr("SCRAM-SHA-512")}}, 1)
		if err != nil || len(res) != 1 || res[0].Err != kerr.InvalidConfig || !strings.Contains(res[0].ErrMessage, "sasl.mechanism.inter.broker.protocol") {
			t.Fatalf("kadm AlterBrokerConfigs: %v %+v", err, res)
		}
		res, err = adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "allow.everyone.if.no.acl.found", Value: kadm.StringPtr("false")}})
		if err != nil || len(res) != 1 || res[0].Err != kerr.InvalidConfig || !strings.Contains(res[0].ErrMessage, "allow.everyone.if.no.acl.found") {
			t.Fatalf("kadm AlterBrokerConfigsState: %v %+v", err, res)
		}
	})

	sameConfigs(t, "topic sec", topicBefore, w.describeConfigs(kmsg.ConfigResourceTypeTopic, "sec"))
	sameConfigs(t, "broker 1", brokerBefore, w.describeConfigs(kmsg.ConfigResourceTypeBroker, "1"))
	sameConfigs(t, "broker defaults", defaultsBefore, w.describeConfigs(kmsg.ConfigResourceTypeBroker, ""))
	if v := brokerBefore["ssl.client.auth"]; v != "none from DEFAULT_CONFIG" {
		t.Errorf("ssl.client.auth is described as %q", v)
	}
}
