package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// otherValue returns a valid value of d other than its default.
func otherValue(t *testing.T, d Def) string {
	t.Helper()
	var candidates []string
	switch d.Type {
	case TypeBoolean:
		candidates = []string{"true", "false"}
	case TypeShort, TypeInt, TypeLong:
		n, _ := strconv.ParseInt(d.Default, 10, 64)
		candidates = []string{strconv.FormatInt(n-1, 10), "1"}
		if n < math.MaxInt64 {
			candidates = append([]string{strconv.FormatInt(n+1, 10)}, candidates...)
		}
	case TypeDouble:
		candidates = []string{"0.5", "0.25"}
	default:
		candidates = []string{"x", "required", "compact", "gzip", "LogAppendTime"}
	}
	for _, c := range candidates {
		if norm, err := d.Normalize(c); err == nil && (!d.HasDefault || norm != d.Default) {
			return c
		}
	}
	t.Fatalf("%s: no valid value other than the default %q", d.Name, d.Default)
	return ""
}

// wantUnsupported checks that err is one *Error of Kind Unsupported naming
// key, whose message contains every part and never a hidden value.
func wantUnsupported(t *testing.T, err error, key, hidden string, parts ...string) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != Unsupported || ce.Name != key {
		t.Fatalf("%s: want an Unsupported *Error naming it, got %v", key, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q should contain %q", key, err, p)
		}
	}
	if hidden != "" && strings.Contains(err.Error(), hidden) {
		t.Errorf("%s: error %q shows the sensitive value", key, err)
	}
}

// A node that connects to SASL listeners of other nodes (the inter-broker
// and controller listeners) logs in with a mechanism weir implements and
// the credentials of that listener's JAAS setting.
func TestRefusedListenersAtStartup(t *testing.T) {
	plainLogin := `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="pw" user_broker="pw";`
	tests := []struct {
		name       string
		props      map[string]string
		key, value string
		want       string
		refused    bool
	}{
		{"SASL inter-broker listener with Kafka's default mechanism", map[string]string{KeyListeners: "SASL_SSL://127.0.0.1:9094,CONTROLLER://:9093",
			KeyListenerSecurityMap: "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT", KeyInterBrokerListenerName: "SASL_SSL", "sasl.enabled.mechanisms": "PLAIN",
			"ssl.keystore.type": "PEM", "ssl.keystore.location": "/ks.pem", "listener.name.sasl_ssl.plain.sasl.jaas.config": plainLogin},
			"sasl.mechanism.inter.broker.protocol", "GSSAPI", "weir logs in with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, not GSSAPI", true},
		{"controller listener with Kafka's default mechanism", map[string]string{KeyListenerSecurityMap: "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
			"sasl.enabled.mechanisms": "PLAIN", "listener.name.controller.plain.sasl.jaas.config": plainLogin},
			"sasl.mechanism.controller.protocol", "GSSAPI", "not GSSAPI", true},
		{"controller listener a broker dials, without credentials", map[string]string{KeyProcessRoles: "broker", KeyNodeID: "2", KeyListeners: "PLAINTEXT://:9092",
			KeyListenerSecurityMap: "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT", "sasl.mechanism.controller.protocol": "SCRAM-SHA-512"},
			"listener.name.controller.scram-sha-512.sasl.jaas.config", "", `set username="..." password="..." here`, false},
		{"inter-broker mechanism not enabled", map[string]string{KeyListeners: "PLAINTEXT://:9092,SASL_PLAINTEXT://:9094,CONTROLLER://:9093",
			KeyInterBrokerProtocol: "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config":         plainLogin,
			"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="b" password="p";`},
			"sasl.mechanism.inter.broker.protocol", "", "must be one of sasl.enabled.mechanisms", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadBroker(tt.props)
			var found *Error
			for _, e := range unjoin(err) {
				var ce *Error
				if errors.As(e, &ce) && ce.Name == tt.key {
					found = ce
				}
			}
			if found == nil || (found.Kind == Unsupported) != tt.refused || !strings.Contains(found.Error(), tt.want) ||
				tt.value != "" && !strings.Contains(found.Error(), tt.key+"=\""+tt.value+"\"") {
				t.Errorf("error %v, want one naming %s with %q (refused: %v)", err, tt.key, tt.want, tt.refused)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("a password is shown: %v", err)
			}
		})
	}
	// Kafka's identity mapping of the secure protocols is harmless while
	// no listener uses them.
	mustLoad(t, map[string]string{KeyListenerSecurityMap: DefaultSecurityProtocolMap, KeyInterBrokerProtocol: "PLAINTEXT"})
	// SASL everywhere, the node logging in to itself and its peers.
	b := mustLoad(t, map[string]string{KeyListeners: "SASL_PLAINTEXT://:9092,CONTROLLER://:9093", KeyListenerSecurityMap: "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		KeyInterBrokerListenerName: "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol": "PLAIN", "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainLogin, "listener.name.controller.plain.sasl.jaas.config": plainLogin,
		"listener.name.controller.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="ctl" password="ctl-pw";`})
	if b.SASL.InterBroker != (Login{"PLAIN", "broker", "pw"}) || b.SASL.Controller != (Login{"SCRAM-SHA-512", "ctl", "ctl-pw"}) {
		t.Errorf("logins %+v %+v", b.SASL.InterBroker, b.SASL.Controller)
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestRefusedKeysAtStartup(t *testing.T) {
	n := 0
	for _, d := range BrokerDefs() {
		if d.Support != Refused {
			continue
		}
		n++
		v := otherValue(t, d)
		_, _, err := LoadBroker(map[string]string{d.Name: v})
		hidden := ""
		if d.Sensitive() {
			hidden = v
		}
		wantUnsupported(t, err, d.Name, hidden, "unsupported configuration "+d.Name+"=", d.Reason)
		if d.HasDefault {
			wantUnsupported(t, err, d.Name, hidden, "only Kafka's default")
			// Kafka's default changes nothing: accepted, with a warning.
			_, warnings, err := LoadBroker(map[string]string{d.Name: d.Default})
			if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], d.Name) || !strings.Contains(warnings[0], "has no effect") {
				t.Errorf("%s=%s (Kafka's default): %v, warnings %q", d.Name, d.Default, err, warnings)
			}
		}
	}
	if n < 35 {
		t.Fatalf("only %d refused broker keys", n)
	}
	// The keys the issue names.
	for name, value := range map[string]string{
		"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256",
		"sasl.jaas.config":  "x", "sasl.login.class": "com.example.Login", "ssl.keymanager.algorithm": "PKIX",
		"principal.builder.class": "com.example.Builder", "security.providers": "com.example.Provider",
		"delegation.token.secret.key": "s3cret", "sasl.server.callback.handler.class": "com.example.Handler",
	} {
		d, _ := BrokerDef(name)
		if d.Support != Refused {
			t.Errorf("%s is %s, want refused", name, d.Support)
		}
		_, _, err := LoadBroker(map[string]string{name: value})
		hidden := ""
		if d.Sensitive() {
			hidden = value
		}
		wantUnsupported(t, err, name, hidden, d.Reason)
	}
}

func TestAuthorizerSettings(t *testing.T) {
	b, _, err := LoadBroker(map[string]string{"authorizer.class.name": StandardAuthorizer, "super.users": "User:admin;User:broker",
		"allow.everyone.if.no.acl.found": "true"})
	if err != nil || b.Values["authorizer.class.name"] != StandardAuthorizer || b.Values["super.users"] != "User:admin;User:broker" ||
		b.Values["allow.everyone.if.no.acl.found"] != "true" {
		t.Fatalf("StandardAuthorizer: %v %v", err, b)
	}
	if _, _, err := LoadBroker(map[string]string{"super.users": "admin"}); err == nil ||
		!strings.Contains(err.Error(), "expected a string in format principalType:principalName but got admin") {
		t.Fatalf("a super user without a type: %v", err)
	}
	if _, warnings, err := LoadBroker(map[string]string{"super.users": "User:admin"}); err != nil || len(warnings) != 1 ||
		!strings.Contains(warnings[0], "super.users has no effect: authorizer.class.name is not set") {
		t.Fatalf("super.users without an authorizer: %v %q", err, warnings)
	}
	_, _, err = LoadBroker(map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
	if err == nil || !strings.Contains(err.Error(), "weir implements only Kafka's StandardAuthorizer: set "+StandardAuthorizer) {
		t.Fatalf("another authorizer: %v", err)
	}
}

func TestRefusedFamiliesAtStartup(t *testing.T) {
	tests := []struct {
		key, value string
		hidden     bool
		reason     string
	}{
		{"listener.name.sasl_ssl.scram-sha-512.sasl.server.callback.handler.class", "com.example.Handler", false, reasonPerListener},
		{"listener.name.ssl.ssl.keystore.location", "/etc/ks.jks", false, reasonPerListener},
		{"listener.name.ssl.ssl.keystore.password", "pw", true, reasonPerListener},
		{"listener.name.internal.max.connections", "10", false, reasonPerListener},
		{"ssl.some.future.key", "x", false, reasonTLS},
		{"sasl.oauthbearer.client.credentials.client.secret", "s3cret", true, reasonSASL},
		{"delegation.token.master.key", "k", false, reasonToken},
	}
	for _, tt := range tests {
		_, _, err := LoadBroker(map[string]string{tt.key: tt.value})
		hidden, shown := "", `="`+tt.value+`"`
		if tt.hidden {
			hidden, shown = tt.value, "=[hidden]"
		}
		wantUnsupported(t, err, tt.key, hidden, tt.key+shown, tt.reason)
	}
	// Keys of no refused family stay unknown: a warning.
	if _, warnings, err := LoadBroker(map[string]string{"sslx.foo": "1", "listener.names": "x"}); err != nil || len(warnings) != 2 {
		t.Errorf("unknown keys: %v %q", err, warnings)
	}
}

func TestIgnoredKeysWarn(t *testing.T) {
	n := 0
	for _, d := range BrokerDefs() {
		if d.Support != Ignored {
			continue
		}
		n++
		v := otherValue(t, d)
		_, warnings, err := LoadBroker(map[string]string{d.Name: v})
		if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], d.Name) || !strings.Contains(warnings[0], d.Reason) {
			t.Errorf("%s=%s: %v, warnings %q", d.Name, v, err, warnings)
		}
	}
	if n < 20 {
		t.Fatalf("only %d ignored broker keys", n)
	}
	_, warnings, _ := LoadBroker(map[string]string{"num.io.threads": "8"})
	if want := "configuration num.io.threads=8 has no effect in weir: weir runs goroutines, not Kafka's thread pools; there is no pool to size"; len(warnings) != 1 || warnings[0] != want {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	// Kafka's log.cleaner.threads=0 runs no cleaner; weir's one would still
	// compact.
	if _, _, err := LoadBroker(map[string]string{"log.cleaner.threads": "0"}); err == nil || !strings.Contains(err.Error(), "log.cleaner.enable=false") {
		t.Errorf("log.cleaner.threads=0: %v", err)
	}
}

func TestRefusedDynamically(t *testing.T) {
	for _, d := range BrokerDefs() {
		if d.Support != Refused {
			continue
		}
		for _, v := range []string{otherValue(t, d), d.Default} {
			for _, validate := range []func(string, string) error{ValidateBrokerDynamic, ValidateBrokerDynamicDefault} {
				hidden := ""
				if d.Sensitive() {
					hidden = v
				}
				wantUnsupported(t, validate(d.Name, v), d.Name, hidden, d.Reason)
			}
		}
	}
	for _, key := range []string{"listener.name.plaintext.ssl.client.auth", "sasl.new.key", "ssl.new.key"} {
		wantUnsupported(t, ValidateBrokerDynamic(key, "x"), key, "", "weir")
	}
	wantUnsupported(t, ValidateBrokerDynamic("listener.name.sasl_ssl.gssapi.sasl.jaas.config", "secret-jaas"), "listener.name.sasl_ssl.gssapi.sasl.jaas.config", "secret-jaas", "=[hidden]")
	if err := ValidateBrokerDynamic("listener.name.sasl_ssl.plain.sasl.jaas.config", "secret-jaas"); err == nil || strings.Contains(err.Error(), "secret-jaas") ||
		!strings.Contains(err.Error(), "weir reads it only at start-up") {
		t.Errorf("a listener's PLAIN users changed at run time: %v", err)
	}
	// Topic keys: only Kafka's default of a refused key passes.
	wantUnsupported(t, ValidateTopicConfigs(map[string]string{TopicRemoteStorageEnable: "true"}), TopicRemoteStorageEnable, "", reasonTieredStorage)
	if err := ValidateTopicConfigs(map[string]string{TopicRemoteStorageEnable: "false", TopicPreallocate: "true"}); err != nil {
		t.Errorf("default of a refused key, ignored key: %v", err)
	}
}

func TestSupportReasons(t *testing.T) {
	for _, d := range append(BrokerDefs(), TopicDefs()...) {
		if d.Support == Refused && d.Dynamic() {
			t.Errorf("%s is refused but dynamic", d.Name)
		}
		if d.Support != Honoured && (len(d.Reason) < 20 || strings.HasSuffix(d.Reason, ".")) {
			t.Errorf("%s: reason %q should be a clause, without a final period", d.Name, d.Reason)
		}
		if d.Update != d.KafkaUpdate && d.Update != ReadOnly {
			t.Errorf("%s: weir may only narrow Kafka's update mode", d.Name)
		}
	}
}
