package links

import (
	"context"
	"crypto/tls"
	"maps"
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
		if r := weir.Run(t, args...); r.Code != 0 {
			t.Fatalf("weir %v: %s%s", args, r.Out, r.Err)
		}
	}
	if r := weir.Run(t, "cluster-links", "--bootstrap-server", db, "--create", "--link", "bad", "--config-file", badProps); r.Code == 0 ||
		!strings.Contains(r.Err, "GSSAPI is not supported") {
		t.Fatalf("a link with GSSAPI: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	r := weir.Run(t, "cluster-links", "--bootstrap-server", db, "--describe", "--link", "sasl")
	if r.Code != 0 || strings.Contains(r.Out, "link-secret") || !strings.Contains(r.Out, "sasl.jaas.config=[hidden]") {
		t.Fatalf("describe shows:\n%s%s", r.Out, r.Err)
	}
	sameLogsWith(t, saslOpts, saslSrc.Node(0).Addr, "orders", db, "sasl-orders", 2)
	sameLogsWith(t, tlsOpts, tlsSrc.Node(0).Addr, "orders", db, "tls-orders", 2)

	produceN(t, newClient(t, saslSrc.Node(0).Addr, saslOpts...), "orders", 40, 20, saslOpts...)
	if r := weir.Run(t, "mirrors", "--bootstrap-server", db, "--promote", "--topics", "sasl-orders"); r.Code != 0 {
		t.Fatalf("promote: %s%s", r.Out, r.Err)
	}
	sameLogsWith(t, saslOpts, saslSrc.Node(0).Addr, "orders", db, "sasl-orders", 2)
	if r := weir.Run(t, "mirrors", "--bootstrap-server", db, "--describe", "--topics", "tls-orders"); r.Code != 0 || !strings.Contains(r.Out, "Lag: 0") {
		t.Fatalf("describe: %s%s", r.Out, r.Err)
	}
}

// cluster-links and mirrors reach a destination whose only client listener
// is SASL_PLAINTEXT (PLAIN) with the client properties of
// --command-config, for the admin API's connections and the offsets they
// read; without them, or with a wrong password, they fail at once and say
// why.
func TestClusterLinkToolsCommandConfig(t *testing.T) {
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_admin="admin-secret";`
	src := clustertest.New(t, clustertest.Options{Nodes: 1})
	dst := clustertest.New(t, clustertest.Options{Nodes: 1, Overrides: map[string]string{
		"listener.security.protocol.map":                 "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                        "PLAIN",
		"sasl.mechanism.inter.broker.protocol":           "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": users,
	}})
	sb, db := src.Node(0).Addr, dst.Node(0).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scl := newClient(t, sb)
	if _, err := kadm.NewClient(scl).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	produceN(t, scl, "orders", 0, 30)

	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	linkProps := write("link.properties", "bootstrap.servers="+sb+"\n")
	admin := func(password string) string {
		return write(password+".properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="`+password+`";`+"\n")
	}
	good, wrong := admin("admin-secret"), admin("wrong")

	// Without the SASL settings, and with a wrong password: a clear error,
	// and nothing created.
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", linkProps},
		{"cluster-links", "--bootstrap-server", db, "--list"},
		{"mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "orders", "--link", "dr"},
		{"mirrors", "--bootstrap-server", db, "--describe"},
		{"mirrors", "--bootstrap-server", db, "--promote", "--topics", "orders"},
	} {
		if r := weir.Run(t, args...); r.Code == 0 || !strings.Contains(r.Err, "cannot reach "+db) || !strings.Contains(r.Err, "--command-config") {
			t.Errorf("weir %v without --command-config: exit %d\n%s%s", args, r.Code, r.Out, r.Err)
		}
		args = append(args, "--command-config", wrong)
		if r := weir.Run(t, args...); r.Code == 0 || !strings.Contains(r.Err, "SASL_AUTHENTICATION_FAILED") {
			t.Errorf("weir %v with a wrong password: exit %d\n%s%s", args, r.Code, r.Out, r.Err)
		}
	}

	mustRun := func(want string, args ...string) string {
		t.Helper()
		args = append(args, "--command-config", good)
		r := weir.Run(t, args...)
		if r.Code != 0 || !strings.Contains(r.Out, want) {
			t.Fatalf("weir %v: exit %d, want %q in\n%s%s", args, r.Code, want, r.Out, r.Err)
		}
		return r.Out
	}
	if out := mustRun("", "cluster-links", "--bootstrap-server", db, "--list"); out != "" {
		t.Fatalf("links before any was created:\n%s", out)
	}
	mustRun("Cluster link 'dr' creation successfully completed.", "cluster-links", "--bootstrap-server", db, "--create", "--link", "dr", "--config-file", linkProps)
	mustRun("Link name: 'dr'", "cluster-links", "--bootstrap-server", db, "--list")
	mustRun("Created topic orders.", "mirrors", "--bootstrap-server", db, "--create", "--mirror-topic", "orders", "--link", "dr")
	// The mirror's high watermarks come from the tool's own kgo client.
	if out := mustRun("MirrorHighWatermark: ", "mirrors", "--bootstrap-server", db, "--describe", "--topics", "orders"); strings.Contains(out, "unavailable") {
		t.Fatalf("describe:\n%s", out)
	}
	mustRun("Mirror topic orders promoted", "mirrors", "--bootstrap-server", db, "--promote", "--topics", "orders")

	// The promotion waited for the source's high watermarks, and the topic
	// takes writes now.
	saslOpts := []kgo.Opt{kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}
	dcl := newClient(t, db, saslOpts...)
	if got, want := endsOf(t, kadm.NewClient(dcl), "orders"), endsOf(t, kadm.NewClient(scl), "orders"); !maps.Equal(got, want) {
		t.Fatalf("promoted mirror ends at %v, source at %v", got, want)
	}
	if err := dcl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce to the promoted mirror: %v", err)
	}
}

// cluster-links and mirrors reach a destination whose only client listener
// is SSL with the trust store of --command-config; without it they fail at
// once.
func TestClusterLinkToolsOverTLS(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "destination CA"), t.TempDir()
	dst := clustertest.New(t, clustertest.Options{Nodes: 1, Overrides: map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
	}})
	db := dst.Node(0).Addr
	conf := tlstest.WriteFile(t, dir, "tls.properties", []byte("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+
		tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)+"\n"))
	for _, args := range [][]string{
		{"cluster-links", "--bootstrap-server", db, "--list"},
		{"mirrors", "--bootstrap-server", db, "--describe"},
	} {
		if r := weir.Run(t, args...); r.Code == 0 || !strings.Contains(r.Err, "cannot reach "+db) || !strings.Contains(r.Err, "--command-config") {
			t.Errorf("weir %v without --command-config: exit %d\n%s%s", args, r.Code, r.Out, r.Err)
		}
		if r := weir.Run(t, append(args, "--command-config", conf)...); r.Code != 0 || r.Out != "" {
			t.Errorf("weir %v over TLS: exit %d\n%s%s", args, r.Code, r.Out, r.Err)
		}
	}
}
