package config

import (
	"strings"
	"testing"
)

// sslProps are the keys of a node whose client listener serves SSL, with
// extra key-value pairs (a value of "-" removes the key).
func sslProps(extra ...string) map[string]string {
	p := map[string]string{
		KeyListenerSecurityMap:  "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":     "PEM",
		"ssl.keystore.location": "/etc/weir/broker.pem",
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

func TestSSLSettings(t *testing.T) {
	b := mustLoad(t, sslProps("ssl.client.auth", "required", "ssl.truststore.type", "PEM",
		"ssl.truststore.location", "/etc/weir/ca.pem", "ssl.enabled.protocols", "TLSv1.3",
		"ssl.endpoint.identification.algorithm", "", "ssl.allow.dn.changes", "true",
		"ssl.principal.mapping.rules", "RULE:^CN=([^,]+),OU=eng$/$1/L, DEFAULT"))
	if n, err := b.SSL.PrincipalMapper.Name("CN=Alice,OU=eng"); err != nil || n != "alice" {
		t.Errorf("ssl.principal.mapping.rules maps CN=Alice,OU=eng to %q, %v", n, err)
	}
	b.SSL.PrincipalMapper = nil
	want := SSL{KeystoreType: "PEM", KeystoreLocation: "/etc/weir/broker.pem", TruststoreType: "PEM", TruststoreLocation: "/etc/weir/ca.pem", ClientAuth: "required",
		MinVersion: "TLSv1.3", MaxVersion: "TLSv1.3", AllowDNChanges: true}
	if b.SSL != want {
		t.Errorf("SSL:\n got %+v\nwant %+v", b.SSL, want)
	}
	if b.Listeners[0].SecurityProtocol != "SSL" {
		t.Errorf("listener %v", b.Listeners[0])
	}
	inline := mustLoad(t, sslProps("ssl.keystore.location", "-", "ssl.keystore.key", "KEY", "ssl.keystore.certificate.chain", "CHAIN",
		"ssl.truststore.certificates", "CA"))
	if n, _ := inline.SSL.PrincipalMapper.Name("CN=Alice,OU=eng"); n != "CN=Alice,OU=eng" {
		t.Errorf("the default ssl.principal.mapping.rules maps CN=Alice,OU=eng to %q, not the DN", n)
	}
	if s := inline.SSL; s.KeystoreKey != "KEY" || s.KeystoreCertificateChain != "CHAIN" || s.TruststoreCertificates != "CA" ||
		!s.VerifyHostname || s.MinVersion != "TLSv1.2" || s.MaxVersion != "TLSv1.3" || s.ClientAuth != "none" {
		t.Errorf("inline stores: %+v", s)
	}
	p12 := mustLoad(t, sslProps("ssl.keystore.type", "PKCS12", "ssl.keystore.location", "/etc/weir/broker.p12",
		"ssl.keystore.password", "ks-pw", "ssl.key.password", "ks-pw", "ssl.truststore.type", "PKCS12",
		"ssl.truststore.location", "/etc/weir/ca.p12", "ssl.truststore.password", "ts-pw"))
	if s := p12.SSL; s.KeystoreType != "PKCS12" || s.KeystoreLocation != "/etc/weir/broker.p12" || s.KeystorePassword != "ks-pw" ||
		s.TruststoreType != "PKCS12" || s.TruststoreLocation != "/etc/weir/ca.p12" || s.TruststorePassword != "ts-pw" {
		t.Errorf("PKCS12 stores: %+v", s)
	}
	// A PKCS12 trust store written without a password.
	mustLoad(t, sslProps("ssl.truststore.type", "PKCS12", "ssl.truststore.location", "/etc/weir/ca.p12"))
	// A broker-only node dialling SSL controllers needs no key store.
	mustLoad(t, map[string]string{KeyProcessRoles: "broker", KeyNodeID: "2", KeyListeners: "PLAINTEXT://:9092",
		KeyListenerSecurityMap: "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"})

	for _, tc := range []struct {
		name  string
		props map[string]string
		key   string
		want  string
		// refused: weir lacks the feature (Unsupported), else a
		// configuration mistake.
		refused bool
	}{
		{"JKS key store", sslProps("ssl.keystore.type", "JKS"), "ssl.keystore.type", "weir reads PEM and PKCS12 keystores only", true},
		{"JKS trust store", sslProps("ssl.truststore.type", "JKS", "ssl.truststore.location", "/ca.jks"), "ssl.truststore.type", "weir reads PEM and PKCS12 truststores only", true},
		{"PKCS12 key store without password", sslProps("ssl.keystore.type", "PKCS12", "ssl.keystore.location", "/ks.p12"), "ssl.keystore.password", "needs its password", false},
		{"PKCS12 key password of its own", sslProps("ssl.keystore.type", "PKCS12", "ssl.keystore.location", "/ks.p12", "ssl.keystore.password", "a", "ssl.key.password", "b"),
			"ssl.key.password", "protected by the store's password", true},
		{"PKCS12 inline", sslProps("ssl.truststore.type", "PKCS12", "ssl.truststore.certificates", "C"), "ssl.truststore.certificates", "is PEM", false},
		{"encrypted PEM key", sslProps("ssl.key.password", "pw"), "ssl.key.password", "unencrypted PEM keys only", true},
		{"PEM store password", sslProps("ssl.keystore.password", "pw"), "ssl.keystore.password", "has no password", false},
		{"no key store", sslProps("ssl.keystore.location", "-"), "ssl.keystore.location", "needs a key store", false},
		{"key store twice", sslProps("ssl.keystore.key", "K", "ssl.keystore.certificate.chain", "C"), "ssl.keystore.key", "set one", false},
		{"key without chain", sslProps("ssl.keystore.location", "-", "ssl.keystore.key", "K"), "ssl.keystore.key", "must be set together", false},
		{"trust store twice", sslProps("ssl.truststore.location", "/ca.pem", "ssl.truststore.certificates", "C"), "ssl.truststore.certificates", "set one", false},
		{"TLSv1.1", sslProps("ssl.enabled.protocols", "TLSv1.1,TLSv1.2"), "ssl.enabled.protocols", "TLSv1.1 is obsolete", true},
		{"unknown protocol", sslProps("ssl.enabled.protocols", "TLSv9"), "ssl.enabled.protocols", "unknown TLS protocol", false},
		{"bad mapping rule", sslProps("ssl.principal.mapping.rules", "RULE:^CN=(.*)$/$1/X"), "ssl.principal.mapping.rules", "unmatched substring", false},
		{"ldaps", sslProps("ssl.endpoint.identification.algorithm", "ldaps"), "ssl.endpoint.identification.algorithm", "weir implements https", true},
		{"client auth without SSL", map[string]string{"ssl.client.auth": "required"}, "ssl.client.auth", "KIP-684", true},
		{"client auth on SASL_SSL only", sslProps(KeyListenerSecurityMap, "PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT", "ssl.client.auth", "requested"),
			"ssl.client.auth", "SSL listeners only", true},
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
}
