package cli

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/clustertest"
	"weir/internal/tlsconf/tlstest"
)

// A cluster link reaches its source over SASL_PLAINTEXT (PLAIN) and over
// SSL with the client settings of Kafka's clients in the link's
// properties; the SASL password is not shown back; a promotion reads the
// source's offsets through the link.
func TestClusterLinkOverSASLAndTLS(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "source CA"), t.TempDir()
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_link="link-secret";`
	saslSrc := clustertest.New(t, clustertest.Options{Nodes: 1, Overrides: map[string]string{
		"listener.security.protocol.map":                 "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                        "PLAIN",
		"sasl.mechanism.inter.broker.protocol":           "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": users,
	}})
	saslOpts := []kgo.Opt{kgo.SASL(plain.Auth{User: "link", Pass: "link-secret"}.AsMechanism())}
	tlsSrc := clustertest.New(t, clustertest.Options{Nodes: 1, Overrides: map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
	}})
	tlsOpts := []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})}
	dst := clustertest.New(t, clustertest.Options{Nodes: 1})
	db := dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, src := range []struct {
		bootstrap string
		opts      []kgo.Opt
	}{{saslSrc.Node(0).Addr, saslOpts}, {tlsSrc.Node(0).Addr, tlsOpts}} {
		cl := newClient(t, src.bootstrap, src.opts...)
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
			t.Fatal(err)
		}
		produceN(t, cl, "orders", 0, 40, src.opts...)
	}
	saslProps := filepath.Join(dir, "sasl.properties")
	os.WriteFile(saslProps, []byte("bootstrap.servers="+saslSrc.Node(0).Addr+"\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="link" password="link-secret";`+"\n"), 0o644)
	tlsProps := filepath.Join(dir, "tls.properties")
	os.WriteFile(tlsProps, []byte("bootstrap.servers="+tlsSrc.Node(0).Addr+"\nsecurity.protocol=SSL\nssl.truststore.type=PEM\n"+
		"ssl.truststore.location="+tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)+"\n"), 0o644)
	badProps := filepath.Join(dir, "bad.properties")
	os.WriteFile(badProps, []byte("bootstrap.servers=x:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n"), 0o644)
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "sasl", "--config-file", saslProps},
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "tls", "--config-file", tlsProps},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "sasl-orders", "--source-topic", "orders", "--link", "sasl"},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "tls-orders", "--source-topic", "orders", "--link", "tls"},
	} {
		if r := runTool(t, args...); r.code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.out, r.err)
		}
	}
	if r := runTool(t, "cluster-links", "--bootstrap-server", db, "--create", "--link", "bad", "--config-file", badProps); r.code == 0 ||
		!strings.Contains(r.err, "GSSAPI is not supported") {
		t.Fatalf("a link with GSSAPI: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r := runTool(t, "cluster-links", "--bootstrap-server", db, "--describe", "--link", "sasl")
	if r.code != 0 || strings.Contains(r.out, "link-secret") || !strings.Contains(r.out, "sasl.jaas.config=[hidden]") {
		t.Fatalf("describe shows:\n%s%s", r.out, r.err)
	}
	sameLogsWith(t, saslOpts, saslSrc.Node(0).Addr, "orders", db, "sasl-orders", 2)
	sameLogsWith(t, tlsOpts, tlsSrc.Node(0).Addr, "orders", db, "tls-orders", 2)

	produceN(t, newClient(t, saslSrc.Node(0).Addr, saslOpts...), "orders", 40, 20, saslOpts...)
	if r := runTool(t, "mirrors", "--bootstrap-server", db, "--promote", "--topics", "sasl-orders"); r.code != 0 {
		t.Fatalf("promote: %s%s", r.out, r.err)
	}
	sameLogsWith(t, saslOpts, saslSrc.Node(0).Addr, "orders", db, "sasl-orders", 2)
	if r := runTool(t, "mirrors", "--bootstrap-server", db, "--describe", "--topics", "tls-orders"); r.code != 0 || !strings.Contains(r.out, "Lag: 0") {
		t.Fatalf("describe: %s%s", r.out, r.err)
	}
}
