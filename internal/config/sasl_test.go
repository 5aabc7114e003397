package config

import (
	"strings"
	"testing"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="b";`

// saslProps are the keys of a node with a SASL_PLAINTEXT client listener
// beside its PLAINTEXT inter-broker listener, with extra key-value pairs
// (a value of "-" removes the key).
func saslProps(extra ...string) map[string]string {
	p := map[string]string{
		KeyListeners:                                   "PLAINTEXT://:9092,CLIENTS://:9094,CONTROLLER://:9093",
		KeyListenerSecurityMap:                         "PLAINTEXT:PLAINTEXT,CLIENTS:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                      "PLAIN,SCRAM-SHA-512",
		"listener.name.clients.plain.sasl.jaas.config": plainJAAS,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "-" {
			delete(p, extra[i])
		} else {
			p[extra[i]] = extra[i+1]
		}
	}
	return p
}

func TestSASLSettings(t *testing.T) {
	b := mustLoad(t, saslProps("listener.name.CLIENTS.scram-sha-512.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"sasl.server.max.receive.size", "4096"))
	if got := b.SASL.PlainUsers("CLIENTS"); len(got) != 2 || got["alice"] != "alice-secret" {
		t.Errorf("PLAIN users %v", got)
	}
	if strings.Join(b.SASL.Mechanisms, ",") != "PLAIN,SCRAM-SHA-512" || b.Values["sasl.server.max.receive.size"] != "4096" {
		t.Errorf("mechanisms %v, values %v", b.SASL.Mechanisms, b.Values["sasl.server.max.receive.size"])
	}
	for _, tc := range []struct {
		name    string
		props   map[string]string
		key     string
		want    string
		refused bool
	}{
		{"GSSAPI", saslProps("sasl.enabled.mechanisms", "GSSAPI,PLAIN"), "sasl.enabled.mechanisms", "not GSSAPI", true},
		{"Kafka's default mechanism", saslProps("sasl.enabled.mechanisms", "-"), "sasl.enabled.mechanisms", "not GSSAPI", true},
		{"no mechanism", saslProps("sasl.enabled.mechanisms", ""), "sasl.enabled.mechanisms", "needs at least one mechanism", false},
		{"PLAIN without users", saslProps("listener.name.clients.plain.sasl.jaas.config", "-"),
			"listener.name.clients.plain.sasl.jaas.config", "whose users must be set here", false},
		{"wrong module", saslProps("listener.name.clients.plain.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"),
			"listener.name.clients.plain.sasl.jaas.config", "needs login module " + "org.apache.kafka.common.security.plain.PlainLoginModule", false},
		{"bad JAAS", saslProps("listener.name.clients.plain.sasl.jaas.config", `PlainLoginModule required user_a="x"`),
			"listener.name.clients.plain.sasl.jaas.config", "not a JAAS login module entry", false},
		{"JAAS of a PLAINTEXT listener", saslProps("listener.name.plaintext.plain.sasl.jaas.config", plainJAAS),
			"listener.name.plaintext.plain.sasl.jaas.config", "would have no effect", true},
		{"JAAS of a mechanism not enabled", saslProps("listener.name.clients.scram-sha-256.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required;"),
			"listener.name.clients.scram-sha-256.sasl.jaas.config", "would have no effect", true},
	} {
		_, _, err := LoadBroker(tc.props)
		var found *Error
		for _, e := range unjoin(err) {
			if ce, ok := e.(*Error); ok && ce.Name == tc.key {
				found = ce
			}
		}
		if found == nil || !strings.Contains(found.Error(), tc.want) || (found.Kind == Unsupported) != tc.refused {
			t.Errorf("%s: error %v, want one naming %s with %q (refused: %v)", tc.name, err, tc.key, tc.want, tc.refused)
		}
		if err != nil && strings.Contains(err.Error(), "alice-secret") {
			t.Errorf("%s: the error shows a password: %v", tc.name, err)
		}
	}
}

func TestOAuthSettings(t *testing.T) {
	b := mustLoad(t, saslProps("sasl.enabled.mechanisms", "PLAIN,OAUTHBEARER",
		"listener.name.clients.oauthbearer.sasl.server.callback.handler.class", OAuthValidatorHandler,
		"sasl.oauthbearer.jwks.endpoint.url", "https://idp.example/jwks", "sasl.oauthbearer.expected.audience", "weir,kafka",
		"sasl.oauthbearer.expected.issuer", "https://idp.example", "sasl.oauthbearer.sub.claim.name", "client_id",
		"sasl.oauthbearer.clock.skew.seconds", "5", "connections.max.reauth.ms", "60000"))
	o := b.SASL.OAuth
	if !o.Secured["CLIENTS"] || o.JWKSURL != "https://idp.example/jwks" || strings.Join(o.Audience, ",") != "weir,kafka" || o.Issuer != "https://idp.example" ||
		o.SubClaim != "client_id" || o.ScopeClaim != "scope" || o.ClockSkew.Seconds() != 5 || o.JWKSRefresh.Hours() != 1 || b.SASL.MaxReauth.Seconds() != 60 {
		t.Errorf("OAuth setting %+v, reauth %v", o, b.SASL.MaxReauth)
	}
	// Without the validator class: unsecured tokens, with the JAAS
	// entry's unsecuredValidator* options.
	b = mustLoad(t, saslProps("sasl.enabled.mechanisms", "OAUTHBEARER", "listener.name.clients.plain.sasl.jaas.config", "-",
		"listener.name.clients.oauthbearer.sasl.jaas.config", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required `+
			`unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="a b" unsecuredValidatorAllowableClockSkewMs="2000";`))
	u, err := b.SASL.UnsecuredOAuth("CLIENTS")
	if b.SASL.OAuth.Secured["CLIENTS"] || err != nil || u.PrincipalClaim != "sub" || strings.Join(u.RequiredScope, ",") != "a,b" || u.ClockSkew.Seconds() != 2 {
		t.Errorf("unsecured setting %+v %v", u, err)
	}
	interBrokerSASL := saslProps(KeyListenerSecurityMap, "PLAINTEXT:SASL_PLAINTEXT,CLIENTS:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.mechanism.inter.broker.protocol", "PLAIN", "listener.name.plaintext.plain.sasl.jaas.config",
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" user_a="b";`)
	for _, tc := range []struct {
		name    string
		props   map[string]string
		key     string
		want    string
		refused bool
	}{
		{"validator without a JWKS", saslProps("sasl.enabled.mechanisms", "OAUTHBEARER",
			"listener.name.clients.oauthbearer.sasl.server.callback.handler.class", OAuthValidatorHandler),
			"sasl.oauthbearer.jwks.endpoint.url", "needs the JWKS URL", false},
		{"another handler class", saslProps("sasl.enabled.mechanisms", "OAUTHBEARER",
			"listener.name.clients.oauthbearer.sasl.server.callback.handler.class", "com.example.Handler"),
			"listener.name.clients.oauthbearer.sasl.server.callback.handler.class", "it runs no other class", true},
		{"handler without OAUTHBEARER", saslProps("listener.name.clients.oauthbearer.sasl.server.callback.handler.class", OAuthValidatorHandler,
			"sasl.oauthbearer.jwks.endpoint.url", "file:///jwks.json"),
			"listener.name.clients.oauthbearer.sasl.server.callback.handler.class", "would have no effect", true},
		{"wrong module", saslProps("sasl.enabled.mechanisms", "OAUTHBEARER", "listener.name.clients.oauthbearer.sasl.jaas.config", plainJAAS),
			"listener.name.clients.oauthbearer.sasl.jaas.config", "needs login module " + "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", false},
		{"bad clock skew option", saslProps("sasl.enabled.mechanisms", "OAUTHBEARER", "listener.name.clients.oauthbearer.sasl.jaas.config",
			`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorAllowableClockSkewMs="-1";`),
			"listener.name.clients.oauthbearer.sasl.jaas.config", "unsecuredValidatorAllowableClockSkewMs", false},
		{"OAUTHBEARER between nodes", saslProps(KeyListenerSecurityMap, "PLAINTEXT:SASL_PLAINTEXT,CLIENTS:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
			"sasl.enabled.mechanisms", "PLAIN,OAUTHBEARER", "sasl.mechanism.inter.broker.protocol", "OAUTHBEARER"),
			"sasl.mechanism.inter.broker.protocol", "weir logs in with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, not OAUTHBEARER", true},
		{"reauthentication with SASL between nodes", withKey(interBrokerSASL, "connections.max.reauth.ms", "60000"),
			"connections.max.reauth.ms", "do not re-authenticate", true},
	} {
		_, _, err := LoadBroker(tc.props)
		var found *Error
		for _, e := range unjoin(err) {
			if ce, ok := e.(*Error); ok && ce.Name == tc.key {
				found = ce
			}
		}
		if found == nil || !strings.Contains(found.Error(), tc.want) || (found.Kind == Unsupported) != tc.refused {
			t.Errorf("%s: error %v, want one naming %s with %q (refused: %v)", tc.name, err, tc.key, tc.want, tc.refused)
		}
	}
	mustLoad(t, interBrokerSASL)
}

func withKey(p map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for kk, vv := range p {
		if kk != k {
			out[kk] = vv
		}
	}
	return out
}
