// Package tlsconf builds the TLS configurations of a node from Kafka's
// ssl.* settings (config.SSL): PEM key and trust stores from files or
// inline, PKCS12 ones from files, client certificates none, requested or required, TLS 1.2 and
// 1.3. A Store reloads its files when they change, without a restart:
// new connections get the new material, open ones keep theirs. The
// principal of a TLS client is its certificate's distinguished name, as
// Kafka's default principal builder makes it, mapped by
// ssl.principal.mapping.rules.
package tlsconf

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"software.sslmate.com/src/go-pkcs12"

	"weir/internal/config"
	"weir/internal/sslprincipal"
)

// ReloadCheckInterval is how often, at most, a Store looks at its files
// for changes (on the next handshake after that).
const ReloadCheckInterval = time.Second

// Store holds a node's TLS material and reloads it when its files change.
type Store struct {
	cfg        config.SSL
	lg         *slog.Logger
	minV, maxV uint16
	// every is ReloadCheckInterval (tests shorten it).
	every time.Duration

	mu      sync.Mutex
	cur     *material
	checked time.Time
	stamp   string // the files' digest at the last check
}

// material is one loaded key store and trust store.
type material struct {
	cert *tls.Certificate // nil: no key store
	pool *x509.CertPool   // nil: the system's roots
	// servers are the listener configurations of this material, by
	// ssl.client.auth.
	servers map[string]*tls.Config
}

// New loads the key and trust stores of cfg. An unreadable file, a file
// with no certificate or key, or an encrypted key is an error.
func New(cfg config.SSL, lg *slog.Logger) (*Store, error) {
	s := &Store{cfg: cfg, lg: lg, minV: version(cfg.MinVersion), maxV: version(cfg.MaxVersion), every: ReloadCheckInterval}
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cur, s.checked, s.stamp = m, time.Now(), s.fileStamp()
	return s, nil
}

func version(v string) uint16 {
	if v == "TLSv1.2" {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

// Server returns the configuration of a listener that asks clients for
// certificates as clientAuth ("none", "requested" or "required") says.
func (s *Store) Server(clientAuth string) *tls.Config {
	return &tls.Config{
		MinVersion: s.minV,
		MaxVersion: s.maxV,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current().servers[clientAuth], nil
		},
	}
}

// Client returns the configuration of a connection to host: the key
// store's certificate is presented if the server asks, the trust store
// verifies the server, and its certificate must name host when
// ssl.endpoint.identification.algorithm is https.
func (s *Store) Client(host string) *tls.Config {
	m := s.current()
	c := &tls.Config{MinVersion: s.minV, MaxVersion: s.maxV, RootCAs: m.pool, ServerName: host}
	if m.cert != nil {
		c.Certificates = []tls.Certificate{*m.cert}
	}
	if !s.cfg.VerifyHostname {
		// The chain is still verified, without the host name.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			opts := x509.VerifyOptions{Roots: m.pool, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return c
}

// Dialer wraps dial so that its connections run TLS as Client(host) for
// the dialled host; the handshake completes before it returns.
func (s *Store) Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(nc, s.Client(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}

// Principal is the principal of a TLS connection, as Kafka's default
// principal builder names it: User:<the name ssl.principal.mapping.rules
// (m) maps the client certificate's DN in RFC 2253 form to>, or
// User:ANONYMOUS without a client certificate. A nil m is DEFAULT (the
// DN). An error (no rule applies) leaves the connection without a
// principal: Kafka then closes it.
func Principal(cs tls.ConnectionState, m *sslprincipal.Mapper) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "User:ANONYMOUS", nil
	}
	dn := DN(cs.PeerCertificates[0])
	if m == nil {
		return "User:" + dn, nil
	}
	name, err := m.Name(dn)
	if err != nil {
		return "", fmt.Errorf("failed to map name for '%s' based on SSL principal mapping rules: %w", dn, err)
	}
	return "User:" + name, nil
}

// DN returns the certificate's subject in RFC 2253 form, in the order the
// certificate holds it (as Java's X500Principal.getName does).
func DN(c *x509.Certificate) string {
	var rdn pkix.RDNSequence
	if _, err := asn1.Unmarshal(c.RawSubject, &rdn); err != nil {
		return c.Subject.String()
	}
	return rdn.String()
}

// current returns the material, reloading it first if a file changed.
func (s *Store) current() *material {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); now.Sub(s.checked) >= s.every {
		s.checked = now
		if stamp := s.fileStamp(); stamp != s.stamp {
			s.stamp = stamp
			s.reload()
		}
	}
	return s.cur
}

// reload replaces the material with the files' new contents, unless they
// cannot be read or change the certificate's names when that is not
// allowed: then the old material stays and the error is logged.
func (s *Store) reload() {
	m, err := s.load()
	if err == nil {
		err = s.allowedChange(s.cur.cert, m.cert)
	}
	if err != nil {
		s.lg.Error("TLS key or trust store changed but was not reloaded; the previous one stays in use", "err", err)
		return
	}
	s.cur = m
	s.lg.Info("TLS key and trust stores reloaded", "keystore", s.cfg.KeystoreLocation, "truststore", s.cfg.TruststoreLocation)
}

// allowedChange refuses a new certificate whose subject or alternative
// names differ from the old one's unless ssl.allow.dn.changes or
// ssl.allow.san.changes allows it (Kafka's rule for a reconfigured key
// store).
func (s *Store) allowedChange(old, cur *tls.Certificate) error {
	if old == nil || cur == nil {
		return nil
	}
	o, n := old.Leaf, cur.Leaf
	if !s.cfg.AllowDNChanges && DN(o) != DN(n) {
		return fmt.Errorf("the new certificate's subject %q differs from %q (ssl.allow.dn.changes=false)", DN(n), DN(o))
	}
	if !s.cfg.AllowSANChanges && !sameSANs(o, n) {
		return errors.New("the new certificate's subject alternative names differ from the old one's (ssl.allow.san.changes=false)")
	}
	return nil
}

func sameSANs(a, b *x509.Certificate) bool {
	ips := func(c *x509.Certificate) []string {
		var out []string
		for _, ip := range c.IPAddresses {
			out = append(out, ip.String())
		}
		return out
	}
	uris := func(c *x509.Certificate) []string {
		var out []string
		for _, u := range c.URIs {
			out = append(out, u.String())
		}
		return out
	}
	return slices.Equal(a.DNSNames, b.DNSNames) && slices.Equal(a.EmailAddresses, b.EmailAddresses) &&
		slices.Equal(ips(a), ips(b)) && slices.Equal(uris(a), uris(b))
}

// fileStamp is a digest of the store files' contents (a file's
// modification time can stay the same across quick rewrites).
func (s *Store) fileStamp() string {
	h := sha256.New()
	for _, f := range []string{s.cfg.KeystoreLocation, s.cfg.TruststoreLocation} {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			data = []byte("unreadable: " + err.Error())
		}
		fmt.Fprintf(h, "%s:%d:", f, len(data))
		h.Write(data)
	}
	return string(h.Sum(nil))
}

// load reads the key and trust stores and builds the listener
// configurations.
func (s *Store) load() (*material, error) {
	m := &material{servers: map[string]*tls.Config{}}
	var err error
	switch {
	case s.cfg.KeystoreLocation != "":
		data, rerr := os.ReadFile(s.cfg.KeystoreLocation)
		if rerr != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", rerr)
		}
		what := "ssl.keystore.location " + s.cfg.KeystoreLocation
		if s.cfg.KeystoreType == "PKCS12" {
			m.cert, err = pkcs12KeyPair(what, data, s.cfg.KeystorePassword)
		} else {
			m.cert, err = keyPair(what, data, data)
		}
	case s.cfg.KeystoreKey != "":
		m.cert, err = keyPair("ssl.keystore.key and ssl.keystore.certificate.chain",
			[]byte(s.cfg.KeystoreCertificateChain), []byte(s.cfg.KeystoreKey))
	}
	if err != nil {
		return nil, err
	}
	switch {
	case s.cfg.TruststoreLocation != "":
		data, rerr := os.ReadFile(s.cfg.TruststoreLocation)
		if rerr != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", rerr)
		}
		what := "ssl.truststore.location " + s.cfg.TruststoreLocation
		if s.cfg.TruststoreType == "PKCS12" {
			m.pool, err = pkcs12Pool(what, data, s.cfg.TruststorePassword)
		} else {
			m.pool, err = certPool(what, data)
		}
	case s.cfg.TruststoreCertificates != "":
		m.pool, err = certPool("ssl.truststore.certificates", []byte(s.cfg.TruststoreCertificates))
	}
	if err != nil {
		return nil, err
	}
	clientCAs := m.pool
	if clientCAs == nil {
		if clientCAs, err = x509.SystemCertPool(); err != nil {
			return nil, fmt.Errorf("no trust store is configured and the system's roots cannot be read: %w", err)
		}
	}
	for auth, mode := range map[string]tls.ClientAuthType{
		"none": tls.NoClientCert, "requested": tls.VerifyClientCertIfGiven, "required": tls.RequireAndVerifyClientCert,
	} {
		c := &tls.Config{MinVersion: s.minV, MaxVersion: s.maxV, ClientAuth: mode, ClientCAs: clientCAs}
		if m.cert != nil {
			c.Certificates = []tls.Certificate{*m.cert}
		}
		m.servers[auth] = c
	}
	return m, nil
}

// keyPair parses a PEM certificate chain and private key.
func keyPair(what string, chain, key []byte) (*tls.Certificate, error) {
	for rest := key; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, fmt.Errorf("%s: the private key is encrypted; weir reads unencrypted PEM keys only (ssl.key.password works with PKCS12 key stores): protect the file with its permissions, or use a PKCS12 key store", what)
		}
	}
	c, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return &c, nil
}

// pkcs12KeyPair reads a PKCS12 key store (as Java's keytool writes it:
// PBES2 with AES or the older PBE ciphers, an HMAC over the whole) holding
// one private key and its certificate chain; the store's password opens
// both the store and the key, as keytool requires for PKCS12.
func pkcs12KeyPair(what string, data []byte, password string) (*tls.Certificate, error) {
	key, first, rest, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		return nil, fmt.Errorf("%s (PKCS12): %w", what, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s (PKCS12): unsupported private key type %T", what, key)
	}
	// The leaf is the certificate of the key, the others its chain.
	chain := append([]*x509.Certificate{first}, rest...)
	leaf := slices.IndexFunc(chain, func(c *x509.Certificate) bool {
		pub, ok := c.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
		return ok && pub.Equal(signer.Public())
	})
	if leaf < 0 {
		return nil, fmt.Errorf("%s (PKCS12): no certificate matches the private key", what)
	}
	chain[0], chain[leaf] = chain[leaf], chain[0]
	c := &tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, cert := range chain {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	return c, nil
}

// pkcs12Pool reads a PKCS12 trust store: the certificates Java's keytool
// imported as trusted (-importcert). An empty password opens a store
// written without one.
func pkcs12Pool(what string, data []byte, password string) (*x509.CertPool, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err != nil {
		return nil, fmt.Errorf("%s (PKCS12): %w", what, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s (PKCS12) holds no trusted certificate", what)
	}
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p, nil
}

// certPool parses PEM certificates.
func certPool(what string, data []byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", what)
	}
	return p, nil
}
