package kafka_test

// SSL listeners: franz-go's kgo over TLS with a CA made in the test, the
// refusals Kafka makes (a server certificate the client does not trust, a
// missing client certificate when ssl.client.auth=required) and that a
// refused connection affects nobody else.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/tlsconf"
	"weir/internal/tlsconf/tlstest"
)

// tlsNode starts a node whose client listener (PLAINTEXT by name) serves
// SSL with a certificate of ca, with extra overrides.
func tlsNode(t *testing.T, ca *tlstest.CA, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	o := map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
	}
	for k, v := range extra {
		o[k] = v
	}
	return cliNode(t, o).Addr
}

func tlsClient(t *testing.T, addr string, cfg *tls.Config, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return cliFranz(t, addr, append([]kgo.Opt{kgo.DialTLSConfig(cfg), kgo.RequestRetries(0)}, opts...)...)
}

// roundTrip produces records (one bigger than the size weir would send
// with sendfile on a plaintext connection) and consumes them back.
func roundTrip(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) {
	t.Helper()
	values := [][]byte{[]byte("small"), bytes.Repeat([]byte("x"), 200<<10), []byte("last")}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatalf("produce over TLS: %v", err)
		}
	}
	cl.AddConsumeTopics(topic)
	var got [][]byte
	for len(got) < len(values) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch over TLS: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Value) })
	}
	for i := range values {
		if !bytes.Equal(got[i], values[i]) {
			t.Fatalf("record %d: got %d bytes, want %d", i, len(got[i]), len(values[i]))
		}
	}
}

func TestTLSListener(t *testing.T) {
	ctx := cliCtx(t)
	ca := tlstest.NewCA(t, "test CA")
	addr := tlsNode(t, ca, nil)

	// A client that does not trust the broker's CA is refused, and so is
	// one speaking plaintext.
	other := tlstest.NewCA(t, "other CA")
	if err := tlsClient(t, addr, &tls.Config{RootCAs: other.Pool()}).Ping(ctx); err == nil {
		t.Fatal("a client trusting another CA connected")
	}
	if err := cliFranz(t, addr, kgo.RequestRetries(0)).Ping(ctx); err == nil {
		t.Fatal("a plaintext client got an answer from an SSL listener")
	}

	good := tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool()}, kgo.AllowAutoTopicCreation(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	roundTrip(t, ctx, good, "tls-topic")
}

func TestTLSClientAuthRequired(t *testing.T) {
	ctx := cliCtx(t)
	ca := tlstest.NewCA(t, "test CA")
	dir := t.TempDir()
	addr := tlsNode(t, ca, map[string]string{
		"ssl.client.auth":         "required",
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": tlstest.WriteFile(t, dir, "ca.pem", ca.PEM),
		"ssl.enabled.protocols":   "TLSv1.3",
	})

	// A client connected before the refusals keeps working after them.
	alice := tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.Issue("alice", "eng").TLS(t)}},
		kgo.AllowAutoTopicCreation(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := alice.Ping(ctx); err != nil {
		t.Fatalf("alice: %v", err)
	}
	if err := tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool()}).Ping(ctx); err == nil {
		t.Fatal("a client without a certificate connected with ssl.client.auth=required")
	}
	// A certificate of a CA the broker does not trust fails the
	// handshake (Kafka's SslAuthenticationException): the broker's TLS
	// alert names it.
	// (GetClientCertificate: Go would otherwise send no certificate the
	// broker's CAs did not sign.)
	stranger := tlstest.NewCA(t, "other CA").Issue("mallory", "").TLS(t)
	err := tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool(), GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &stranger, nil
	}}).Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "tls: unknown certificate authority") && !strings.Contains(err.Error(), "tls: bad certificate") {
		t.Fatalf("a client with a certificate of an untrusted CA: %v, want the broker's TLS alert", err)
	}
	if err := tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{ca.Issue("alice", "").TLS(t)}}).Ping(ctx); err == nil {
		t.Fatal("a TLSv1.2 client connected with ssl.enabled.protocols=TLSv1.3")
	}
	roundTrip(t, ctx, alice, "mtls-topic")
}

// ssl.principal.mapping.rules names the principal of a client
// certificate: the authorizer sees the mapped name (alice is a super
// user, bob has no ACL: DescribeAcls, which needs DESCRIBE on the
// cluster, tells them apart), and a certificate no rule maps is closed, as
// Kafka does, without affecting the other clients.
func TestTLSPrincipalMappingRules(t *testing.T) {
	ctx := cliCtx(t)
	ca := tlstest.NewCA(t, "test CA")
	dir := t.TempDir()
	addr := tlsNode(t, ca, map[string]string{
		"ssl.client.auth":                "required",
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        tlstest.WriteFile(t, dir, "ca.pem", ca.PEM),
		"ssl.principal.mapping.rules":    "RULE:^CN=([^,]+),OU=eng$/$1/L",
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                    "User:alice;User:ANONYMOUS", // ANONYMOUS: the node's own PLAINTEXT controller link
		"allow.everyone.if.no.acl.found": "false",
	})
	client := func(cn, ou string, opts ...kgo.Opt) *kgo.Client {
		return tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.Issue(cn, ou).TLS(t)}}, opts...)
	}
	alice := client("Alice", "eng", kgo.AllowAutoTopicCreation(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	roundTrip(t, ctx, alice, "mapped")

	describe := func(cl *kgo.Client) error {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	if err := describe(alice); err != nil {
		t.Fatalf("User:alice (mapped from CN=Alice,OU=eng), a super user, cannot describe ACLs: %v", err)
	}
	if err := describe(client("Bob", "eng")); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("User:bob (mapped from CN=Bob,OU=eng) described ACLs without an ACL: %v", err)
	}
	if err := client("carol", "ops").Ping(ctx); err == nil {
		t.Fatal("a client whose DN no rule maps got an answer")
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "mapped", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("alice after the refusals: %v", err)
	}
}

// A broker serving TLS from PKCS12 key and trust stores written by Java's
// keytool (the test is skipped without keytool), with mutual TLS.
func TestTLSPKCS12Stores(t *testing.T) {
	ctx := cliCtx(t)
	dir := t.TempDir()
	ks := tlstest.KeytoolPair(t, dir, "broker", "broker", "ops", "broker-pw")
	tlstest.KeytoolPair(t, dir, "alice", "alice", "eng", "alice-pw")
	addr := cliNode(t, map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":              "PKCS12",
		"ssl.keystore.location":          ks,
		"ssl.keystore.password":          "broker-pw",
		"ssl.truststore.type":            "PKCS12",
		"ssl.truststore.location":        tlstest.KeytoolTrust(t, dir, "trust.p12", "trust-pw", "alice"),
		"ssl.truststore.password":        "trust-pw",
		"ssl.client.auth":                "required",
	}).Addr
	// The client's side in PEM: keytool's exported certificates, and
	// alice's key converted by the store itself.
	roots := x509.NewCertPool()
	brokerCert, err := os.ReadFile(filepath.Join(dir, "broker.crt"))
	if err != nil || !roots.AppendCertsFromPEM(brokerCert) {
		t.Fatalf("broker.crt: %v", err)
	}
	st, err := tlsconf.New(config.SSL{KeystoreType: "PKCS12", KeystoreLocation: filepath.Join(dir, "alice.p12"),
		KeystorePassword: "alice-pw", MinVersion: "TLSv1.2", MaxVersion: "TLSv1.3"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	alice := st.Client("127.0.0.1").Certificates
	if err := tlsClient(t, addr, &tls.Config{RootCAs: roots}).Ping(ctx); err == nil {
		t.Fatal("a client without a certificate connected with ssl.client.auth=required")
	}
	cl := tlsClient(t, addr, &tls.Config{RootCAs: roots, Certificates: alice},
		kgo.AllowAutoTopicCreation(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	roundTrip(t, ctx, cl, "p12-topic")
}
