package tlsconf

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/internal/config"
	"weir/internal/sslprincipal"
	"weir/internal/tlsconf/tlstest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newStore(t *testing.T, cfg config.SSL) *Store {
	t.Helper()
	if cfg.MinVersion == "" {
		cfg.MinVersion, cfg.MaxVersion = "TLSv1.2", "TLSv1.3"
	}
	if cfg.ClientAuth == "" {
		cfg.ClientAuth = "none"
	}
	s, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	s.every = 0 // look at the files at every handshake
	return s
}

// handshake runs a TLS handshake between server and client over loopback
// TCP and returns the server's view of it, the server's error and the
// client's.
func handshake(server, client *tls.Config) (tls.ConnectionState, error, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tls.ConnectionState{}, err, err
	}
	defer ln.Close()
	type result struct {
		cs  tls.ConnectionState
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		sc := tls.Server(nc, server)
		err = sc.Handshake()
		if err == nil {
			// TLS 1.3 reports a refused client certificate on the
			// first read.
			_, err = sc.Read(make([]byte, 1))
		}
		done <- result{sc.ConnectionState(), err}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return tls.ConnectionState{}, err, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	cc := tls.Client(nc, client)
	cerr := cc.Handshake()
	if cerr == nil {
		cc.Write([]byte{1})
	} else {
		nc.Close()
	}
	r := <-done
	return r.cs, r.err, cerr
}

func TestClientAuthAndPrincipal(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	server := newStore(t, config.SSL{KeystoreLocation: ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
		TruststoreLocation: tlstest.WriteFile(t, dir, "ca.pem", ca.PEM), VerifyHostname: true})
	cl := ca.Issue("alice", "eng")
	withCert := newStore(t, config.SSL{KeystoreKey: string(cl.Key), KeystoreCertificateChain: string(cl.Cert),
		TruststoreCertificates: string(ca.PEM), VerifyHostname: true})
	noCert := newStore(t, config.SSL{TruststoreCertificates: string(ca.PEM), VerifyHostname: true})

	for _, tc := range []struct {
		auth      string
		client    *Store
		principal string // "" : refused
	}{
		{"none", withCert, "User:ANONYMOUS"},
		{"none", noCert, "User:ANONYMOUS"},
		{"requested", withCert, "User:CN=alice,OU=eng"},
		{"requested", noCert, "User:ANONYMOUS"},
		{"required", withCert, "User:CN=alice,OU=eng"},
		{"required", noCert, ""},
	} {
		cs, serr, cerr := handshake(server.Server(tc.auth), tc.client.Client("127.0.0.1"))
		if tc.principal == "" {
			if serr == nil || !strings.Contains(serr.Error(), "certificate") {
				t.Errorf("%s, no client certificate: server error %v, want a refusal", tc.auth, serr)
			}
			continue
		}
		if serr != nil || cerr != nil {
			t.Errorf("%s: handshake failed: server %v, client %v", tc.auth, serr, cerr)
			continue
		}
		if p, err := Principal(cs, nil); err != nil || p != tc.principal {
			t.Errorf("%s: principal %q, %v; want %q", tc.auth, p, err, tc.principal)
		}
		if tc.principal == "User:ANONYMOUS" {
			continue
		}
		// ssl.principal.mapping.rules: the mapped name, or no principal
		// when no rule applies.
		m, _ := sslprincipal.Parse("RULE:^CN=([^,]+),OU=eng$/$1/U")
		if p, err := Principal(cs, m); err != nil || p != "User:ALICE" {
			t.Errorf("%s: mapped principal %q, %v; want User:ALICE", tc.auth, p, err)
		}
		m, _ = sslprincipal.Parse("RULE:^CN=([^,]+),OU=ops$/$1/")
		if p, err := Principal(cs, m); !errors.Is(err, sslprincipal.ErrNoMatchingRule) {
			t.Errorf("%s: no rule applies, got principal %q, %v", tc.auth, p, err)
		}
	}
}

func TestServerVerification(t *testing.T) {
	ca, other, dir := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA"), t.TempDir()
	server := newStore(t, config.SSL{KeystoreLocation: ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem")})
	for _, tc := range []struct {
		name     string
		ca       []byte
		verify   bool
		host     string
		wantFail string
	}{
		{"host named by the certificate", ca.PEM, true, "127.0.0.1", ""},
		{"host not named", ca.PEM, true, "10.9.9.9", "10.9.9.9"},
		{"host not checked", ca.PEM, false, "10.9.9.9", ""},
		{"unknown CA", other.PEM, true, "127.0.0.1", "unknown authority"},
		{"unknown CA, host not checked", other.PEM, false, "127.0.0.1", "unknown authority"},
	} {
		client := newStore(t, config.SSL{TruststoreCertificates: string(tc.ca), VerifyHostname: tc.verify})
		_, _, cerr := handshake(server.Server("none"), client.Client(tc.host))
		if tc.wantFail == "" && cerr != nil || tc.wantFail != "" && (cerr == nil || !strings.Contains(cerr.Error(), tc.wantFail)) {
			t.Errorf("%s: client error %v, want %q", tc.name, cerr, tc.wantFail)
		}
	}
}

func TestVersions(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	ks := ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem")
	only13 := newStore(t, config.SSL{KeystoreLocation: ks, MinVersion: "TLSv1.3", MaxVersion: "TLSv1.3"})
	only12 := newStore(t, config.SSL{TruststoreCertificates: string(ca.PEM), VerifyHostname: true, MinVersion: "TLSv1.2", MaxVersion: "TLSv1.2"})
	if _, _, cerr := handshake(only13.Server("none"), only12.Client("127.0.0.1")); cerr == nil {
		t.Error("a TLSv1.2-only client got through to a TLSv1.3-only listener")
	}
	both := newStore(t, config.SSL{TruststoreCertificates: string(ca.PEM), VerifyHostname: true})
	cs, serr, cerr := handshake(only13.Server("none"), both.Client("127.0.0.1"))
	if serr != nil || cerr != nil || cs.Version != tls.VersionTLS13 {
		t.Errorf("TLSv1.3: version %x, errors %v %v", cs.Version, serr, cerr)
	}
}

// serverSerial returns the serial number of the certificate the store's
// listener presents now.
func serverSerial(t *testing.T, s *Store, ca *tlstest.CA) string {
	t.Helper()
	client := newStore(t, config.SSL{TruststoreCertificates: string(ca.PEM), VerifyHostname: true})
	var got string
	cfg := client.Client("127.0.0.1")
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		got = cs.PeerCertificates[0].SerialNumber.String()
		return nil
	}
	if _, serr, cerr := handshake(s.Server("none"), cfg); serr != nil || cerr != nil {
		t.Fatalf("handshake: %v %v", serr, cerr)
	}
	return got
}

func TestReloadWhenTheFilesChange(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	first := ca.Issue("broker", "")
	ks := first.KeystoreFile(t, dir, "broker.pem")
	s := newStore(t, config.SSL{KeystoreLocation: ks})
	s1 := serverSerial(t, s, ca)

	// A renewed certificate (same names) is served from the next
	// handshake on.
	ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem")
	s2 := serverSerial(t, s, ca)
	if s2 == s1 {
		t.Fatal("the renewed certificate was not reloaded")
	}
	// A file being written (unreadable) keeps the old one.
	tlstest.WriteFile(t, dir, "broker.pem", []byte("-----BEGIN PRIVATE KEY-----\n"))
	if got := serverSerial(t, s, ca); got != s2 {
		t.Fatalf("a broken key store replaced the certificate: serial %s, want %s", got, s2)
	}
	// A different subject is refused unless ssl.allow.dn.changes.
	ca.Issue("intruder", "").KeystoreFile(t, dir, "broker.pem")
	if got := serverSerial(t, s, ca); got != s2 {
		t.Fatalf("a certificate with another DN was reloaded with ssl.allow.dn.changes=false")
	}
	s.cfg.AllowDNChanges = true
	ca.Issue("renamed", "").KeystoreFile(t, dir, "broker.pem")
	s3 := serverSerial(t, s, ca)
	if s3 == s2 {
		t.Fatalf("a certificate with another DN was not reloaded with ssl.allow.dn.changes=true")
	}
	// So are other subject alternative names, unless
	// ssl.allow.san.changes.
	ca.Issue("renamed", "", "127.0.0.1", "broker.example").KeystoreFile(t, dir, "broker.pem")
	if got := serverSerial(t, s, ca); got != s3 {
		t.Fatalf("a certificate with other SANs was reloaded with ssl.allow.san.changes=false")
	}
	s.cfg.AllowSANChanges = true
	ca.Issue("renamed", "", "127.0.0.1", "broker2.example").KeystoreFile(t, dir, "broker.pem")
	if got := serverSerial(t, s, ca); got == s3 {
		t.Fatalf("a certificate with other SANs was not reloaded with ssl.allow.san.changes=true")
	}
}

func TestStoreErrors(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	leaf := ca.Issue("broker", "")
	enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}})
	for _, tc := range []struct {
		name string
		cfg  config.SSL
		want string
	}{
		{"missing file", config.SSL{KeystoreLocation: dir + "/nope.pem"}, "ssl.keystore.location"},
		{"encrypted key", config.SSL{KeystoreKey: string(enc), KeystoreCertificateChain: string(leaf.Cert)}, "encrypted"},
		{"no key", config.SSL{KeystoreLocation: tlstest.WriteFile(t, dir, "cert.pem", leaf.Cert)}, "ssl.keystore.location"},
		{"empty trust store", config.SSL{TruststoreLocation: tlstest.WriteFile(t, dir, "empty.pem", []byte("x"))}, "holds no PEM certificate"},
	} {
		if _, err := New(tc.cfg, quiet); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// PKCS12 key and trust stores written by Java's keytool: mutual TLS with
// them, the refusal of a wrong password, and a renewed key store reloaded
// as a PEM one is.
func TestPKCS12Stores(t *testing.T) {
	dir := t.TempDir()
	brokerKS := tlstest.KeytoolPair(t, dir, "broker", "broker", "ops", "broker-pw")
	aliceKS := tlstest.KeytoolPair(t, dir, "alice", "alice", "eng", "alice-pw")
	serverTS := tlstest.KeytoolTrust(t, dir, "server-trust.p12", "trust-pw", "alice")
	clientTS := tlstest.KeytoolTrust(t, dir, "client-trust.p12", "trust-pw", "broker")

	p12 := func(ks, pw, ts string) config.SSL {
		return config.SSL{KeystoreType: "PKCS12", KeystoreLocation: ks, KeystorePassword: pw,
			TruststoreType: "PKCS12", TruststoreLocation: ts, TruststorePassword: "trust-pw", VerifyHostname: true}
	}
	server := newStore(t, p12(brokerKS, "broker-pw", serverTS))
	client := newStore(t, p12(aliceKS, "alice-pw", clientTS))
	cs, serr, cerr := handshake(server.Server("required"), client.Client("127.0.0.1"))
	if serr != nil || cerr != nil {
		t.Fatalf("handshake with PKCS12 stores: server %v, client %v", serr, cerr)
	}
	if p, _ := Principal(cs, nil); p != "User:CN=alice,OU=eng" {
		t.Fatalf("principal %q", p)
	}
	// A client whose certificate the server's trust store lacks.
	tlstest.KeytoolPair(t, dir, "mallory", "mallory", "eng", "mallory-pw")
	mallory := newStore(t, p12(filepath.Join(dir, "mallory.p12"), "mallory-pw", clientTS))
	if _, serr, _ := handshake(server.Server("required"), mallory.Client("127.0.0.1")); serr == nil {
		t.Fatal("a client certificate missing from the PKCS12 trust store was accepted")
	}

	for _, tc := range []struct {
		name string
		cfg  config.SSL
	}{
		{"wrong key store password", p12(brokerKS, "nope", serverTS)},
		{"wrong trust store password", config.SSL{TruststoreType: "PKCS12", TruststoreLocation: serverTS, TruststorePassword: "nope"}},
		{"a key store as trust store", config.SSL{TruststoreType: "PKCS12", TruststoreLocation: brokerKS, TruststorePassword: "broker-pw"}},
	} {
		if _, err := New(tc.cfg, quiet); err == nil || !strings.Contains(err.Error(), "(PKCS12)") {
			t.Errorf("%s: error %v", tc.name, err)
		}
	}

	// A renewed key store (a new key, the same names) replaces the old
	// one from the next handshake on; the client trusts the new
	// certificate once its trust store has it.
	before := serverLeaf(t, server, client)
	os.Remove(brokerKS)
	tlstest.KeytoolPair(t, dir, "broker", "broker", "ops", "broker-pw")
	os.Remove(clientTS)
	tlstest.KeytoolTrust(t, dir, "client-trust.p12", "trust-pw", "broker")
	if after := serverLeaf(t, server, client); bytes.Equal(after, before) {
		t.Fatal("the renewed PKCS12 key store was not reloaded")
	}
}

// serverLeaf returns the certificate the server presents to client.
func serverLeaf(t *testing.T, server, client *Store) []byte {
	t.Helper()
	var leaf []byte
	cfg := client.Client("127.0.0.1")
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		leaf = cs.PeerCertificates[0].Raw
		return nil
	}
	if _, serr, cerr := handshake(server.Server("none"), cfg); serr != nil || cerr != nil {
		t.Fatalf("handshake: server %v, client %v", serr, cerr)
	}
	return leaf
}
