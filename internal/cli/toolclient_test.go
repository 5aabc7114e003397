package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir/internal/servertest"
	"weir/internal/tlsconf/tlstest"
)

// Every Kafka-style tool reads --command-config, and refuses what weir's
// client does not do, before connecting.
func TestCommandConfigRefusesSecurity(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	files := map[string]string{
		write("jks.properties", "security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/etc/ts.jks\n"): "ssl.truststore.type: JKS is not supported",
		write("gssapi.properties", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n"):                                "sasl.mechanism: GSSAPI is not supported",
		write("plaintext.properties", "sasl.mechanism=PLAIN\n"):                                                          "sasl.mechanism has no effect with security.protocol=PLAINTEXT",
		write("nojaas.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"):                           "sasl.jaas.config is needed",
		write("other.properties", "security.protocol=SSL\nssl.keymanager.algorithm=SunX509\n"):                           "ssl.keymanager.algorithm is not supported yet",
	}
	bs := "127.0.0.1:1"
	for _, args := range [][]string{
		{"topics", "--bootstrap-server", bs, "--list"},
		{"configs", "--bootstrap-server", bs, "--describe", "--entity-type", "brokers"},
		{"consumer-groups", "--bootstrap-server", bs, "--list"},
		{"leader-election", "--bootstrap-server", bs, "--election-type", "preferred", "--all-topic-partitions"},
		{"transactions", "--bootstrap-server", bs, "list"},
		{"metadata-quorum", "--bootstrap-server", bs, "describe", "--status"},
		{"cluster-links", "--bootstrap-server", bs, "--list"},
		{"mirrors", "--bootstrap-server", bs, "--describe"},
	} {
		for file, want := range files {
			r := weir.Run(t, append(args, "--command-config", file)...)
			if r.Code == 0 || !strings.Contains(r.Err, want) {
				t.Errorf("%v with %s: exit %d, stderr %q, want %q", args, filepath.Base(file), r.Code, r.Err, want)
			}
		}
	}
}

// The tools connect over TLS (with a client certificate) and SASL, as
// Kafka's do with the same client properties.
func TestCommandConfigTLSAndSASL(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"listeners":                                   "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0,MTLS://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":                        "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0,MTLS://127.0.0.1:0",
		"inter.broker.listener.name":                  "PLAINTEXT",
		"listener.security.protocol.map":              "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL,MTLS:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":                           "PEM",
		"ssl.keystore.location":                       ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
		"ssl.truststore.type":                         "PEM",
		"ssl.truststore.certificates":                 string(ca.PEM),
		"ssl.client.auth":                             "required",
		"sasl.enabled.mechanisms":                     "PLAIN",
		"listener.name.secure.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`,
	}})
	addr := n.Server.Addr("SECURE").String()
	caFile := tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)
	conf := func(password string) string {
		return tlstest.WriteFile(t, dir, password+".properties", []byte("security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location="+caFile+
			"\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\""+password+"\";\n"))
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", addr, "--command-config", conf("admin-secret"), "--create", "--topic", "secured",
		"--partitions", "1", "--replication-factor", "1"); r.Code != 0 || !strings.Contains(r.Out, "Created topic secured.") {
		t.Fatalf("create over SASL_SSL: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", addr, "--command-config", conf("admin-secret"), "--list"); r.Code != 0 || r.Out != "secured\n" {
		t.Fatalf("list over SASL_SSL: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", addr, "--command-config", conf("wrong"), "--list"); r.Code == 0 || !strings.Contains(r.Out+r.Err, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("a wrong password: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	// Mutual TLS: the tool presents the certificate of its key store.
	mtls := n.Server.Addr("MTLS").String()
	withCert := tlstest.WriteFile(t, dir, "mtls.properties", []byte("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+caFile+
		"\nssl.keystore.type=PEM\nssl.keystore.location="+ca.Issue("ops", "").KeystoreFile(t, dir, "ops.pem")+"\n"))
	if r := weir.Run(t, "topics", "--bootstrap-server", mtls, "--command-config", withCert, "--list"); r.Code != 0 || r.Out != "secured\n" {
		t.Fatalf("list over mutual TLS: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	noCert := tlstest.WriteFile(t, dir, "nocert.properties", []byte("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+caFile+"\n"))
	if r := weir.Run(t, "topics", "--bootstrap-server", mtls, "--command-config", noCert, "--list"); r.Code == 0 {
		t.Fatalf("listed over mutual TLS without a certificate:\n%s%s", r.Out, r.Err)
	}
}

// kafka-configs.sh's SCRAM users: weir configs --alter --entity-type users
// --add-config 'SCRAM-SHA-512=[...]' creates a login, --delete-config
// removes it.
func TestConfigsScramUsers(t *testing.T) {
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":           "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
		"inter.broker.listener.name":     "PLAINTEXT",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
	}})
	secure := n.Server.Addr("SECURE").String()
	conf := tlstest.WriteFile(t, t.TempDir(), "alice.properties", []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"alice-secret\";\n"))
	if r := weir.Run(t, "configs", "--bootstrap-server", n.Addr, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]"); r.Code != 0 || !strings.Contains(r.Out, "Completed updating config for user alice.") {
		t.Fatalf("adding alice: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", secure, "--command-config", conf, "--list"); r.Code != 0 {
		t.Fatalf("alice's login: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	if r := weir.Run(t, "configs", "--bootstrap-server", n.Addr, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--delete-config", "SCRAM-SHA-512"); r.Code != 0 {
		t.Fatalf("deleting alice: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	if r := weir.Run(t, "topics", "--bootstrap-server", secure, "--command-config", conf, "--list"); r.Code == 0 || !strings.Contains(r.Out+r.Err, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("alice's login after the deletion: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
}
