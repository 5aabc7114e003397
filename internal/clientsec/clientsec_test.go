package clientsec_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/clientsec"
	"weir/internal/servertest"
	"weir/internal/tlsconf/tlstest"
)

// A tool's client with PKCS12 stores written by keytool (skipped without
// it) reaches an SSL listener that requires client certificates; the
// refusals name the property at fault.
func TestPKCS12Stores(t *testing.T) {
	dir := t.TempDir()
	brokerKS := tlstest.KeytoolPair(t, dir, "broker", "broker", "ops", "broker-pw")
	opsKS := tlstest.KeytoolPair(t, dir, "ops", "ops", "tools", "ops-pass")
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":              "PKCS12",
		"ssl.keystore.location":          brokerKS,
		"ssl.keystore.password":          "broker-pw",
		"ssl.truststore.type":            "PKCS12",
		"ssl.truststore.location":        tlstest.KeytoolTrust(t, dir, "broker-trust.p12", "trust-pw", "ops"),
		"ssl.truststore.password":        "trust-pw",
		"ssl.client.auth":                "required",
	}})
	props := map[string]string{
		"security.protocol":       "SSL",
		"ssl.keystore.type":       "PKCS12",
		"ssl.keystore.location":   opsKS,
		"ssl.keystore.password":   "ops-pass",
		"ssl.key.password":        "ops-pass",
		"ssl.truststore.type":     "PKCS12",
		"ssl.truststore.location": tlstest.KeytoolTrust(t, dir, "ops-trust.p12", "trust-pw", "broker"),
		"ssl.truststore.password": "trust-pw",
	}
	opts, err := clientsec.Opts(props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(n.Addr), kgo.RequestRetries(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("a client with PKCS12 stores: %v", err)
	}

	with := func(kv ...string) map[string]string {
		p := map[string]string{}
		for k, v := range props {
			p[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(p, kv[i])
			} else {
				p[kv[i]] = kv[i+1]
			}
		}
		return p
	}
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{with("ssl.truststore.password", "nope"), "ssl.truststore.location"},
		{with("ssl.keystore.password", "nope", "ssl.key.password", "-"), "ssl.keystore.location"},
		{with("ssl.key.password", "other"), "ssl.key.password"},
		{with("ssl.keystore.type", "JKS"), "ssl.keystore.type: JKS is not supported"},
		{with("ssl.truststore.type", "PEM", "ssl.truststore.location", filepath.Join(dir, "broker.crt")), "ssl.truststore.password: a PEM truststore has no password"},
	} {
		if _, err := clientsec.Opts(tc.props); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.props, err, tc.want)
		}
	}
}
