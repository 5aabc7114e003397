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
