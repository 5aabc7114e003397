// Package tlstest makes certificate authorities and certificates for tests
// (tests only): a CA made in the test with crypto/x509, leaf certificates
// it signs for 127.0.0.1 and localhost, as PEM files and values.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// CA is a test certificate authority.
type CA struct {
	t    testing.TB
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA's certificate.
	PEM []byte
}

// NewCA makes a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"weir tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{t: t, cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Leaf is a certificate and its private key, in PEM.
type Leaf struct {
	Cert, Key []byte
}

// Issue signs a certificate with subject CN=cn,OU=<ou> (no OU when ou is
// empty) for servers and clients, valid for hosts (IP addresses or names;
// 127.0.0.1 and localhost when none).
func (ca *CA) Issue(cn, ou string, hosts ...string) Leaf {
	ca.t.Helper()
	key := newKey(ca.t)
	subj := pkix.Name{CommonName: cn}
	if ou != "" {
		subj.OrganizationalUnit = []string{ou}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(ca.t),
		Subject:      subj,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1", "localhost"}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return Leaf{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}
}

// KeystoreFile writes the leaf as a PEM key store (key, then certificate)
// at dir/name and returns the path.
func (l Leaf) KeystoreFile(t testing.TB, dir, name string) string {
	t.Helper()
	return WriteFile(t, dir, name, append(append([]byte{}, l.Key...), l.Cert...))
}

// TLS returns the leaf as a tls.Certificate.
func (l Leaf) TLS(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(l.Cert, l.Key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Pool returns a pool holding the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// WriteFile writes data at dir/name (replacing it atomically) and returns
// the path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Keytool runs the JDK's keytool in dir, skipping the test when keytool
// is not on PATH.
func Keytool(t testing.TB, dir string, args ...string) {
	t.Helper()
	path, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (JDK) not on PATH")
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("keytool %v: %v\n%s", args, err, out)
	}
}

// KeytoolPair makes a PKCS12 key store file (name.p12, password pw) with
// a self-signed key pair for CN=cn,OU=ou valid for 127.0.0.1 and
// localhost, and exports its certificate to name.crt, as an operator
// does with Java's keytool (PBES2 with AES-256 and HMAC-SHA256 since
// Java 17). It returns the key store's path.
func KeytoolPair(t testing.TB, dir, name, cn, ou, pw string) string {
	t.Helper()
	ks := filepath.Join(dir, name+".p12")
	Keytool(t, dir, "-genkeypair", "-storetype", "PKCS12", "-keystore", ks, "-storepass", pw, "-alias", name,
		"-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2", "-dname", "CN="+cn+",OU="+ou,
		"-ext", "SAN=ip:127.0.0.1,dns:localhost")
	Keytool(t, dir, "-exportcert", "-rfc", "-keystore", ks, "-storepass", pw, "-alias", name, "-file", filepath.Join(dir, name+".crt"))
	return ks
}

// KeytoolTrust imports the certificates exported by KeytoolPair (by
// name) into the PKCS12 trust store file (password pw) and returns its
// path.
func KeytoolTrust(t testing.TB, dir, file, pw string, names ...string) string {
	t.Helper()
	ts := filepath.Join(dir, file)
	for _, n := range names {
		Keytool(t, dir, "-importcert", "-noprompt", "-storetype", "PKCS12", "-keystore", ts, "-storepass", pw,
			"-alias", n, "-file", filepath.Join(dir, n+".crt"))
	}
	return ts
}
