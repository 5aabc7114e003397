package config

import (
	"strings"

	"weir/internal/sslprincipal"
)

// SSL is the broker's TLS settings (the broker-wide ssl.* keys). They
// apply to every SSL listener the node serves and to the node's own
// connections to SSL listeners of other nodes (replica fetches,
// transaction markers, the controller quorum): the key store is then the
// client certificate and the trust store verifies the server.
type SSL struct {
	// KeystoreLocation is a PEM file holding the private key and the
	// certificate chain, or a PKCS12 file (KeystoreType PKCS12) opened
	// with KeystorePassword; or KeystoreKey and KeystoreCertificateChain
	// hold them inline in PEM. All empty: no key store.
	KeystoreType, KeystorePassword string
	KeystoreLocation               string
	KeystoreKey                    string
	KeystoreCertificateChain       string
	// TruststoreLocation is a PEM file of trusted certificates, or a
	// PKCS12 one (TruststoreType PKCS12, opened with TruststorePassword);
	// or TruststoreCertificates holds them inline in PEM. Both empty: the
	// system's trusted roots (as Java's default trust store).
	TruststoreType, TruststorePassword string
	TruststoreLocation                 string
	TruststoreCertificates             string
	// ClientAuth is ssl.client.auth: "none", "requested" or "required".
	ClientAuth string
	// MinVersion and MaxVersion bound the TLS versions
	// (ssl.enabled.protocols), as "TLSv1.2" or "TLSv1.3".
	MinVersion, MaxVersion string
	// VerifyHostname is ssl.endpoint.identification.algorithm=https: a
	// client checks that the server's certificate names the host dialled.
	VerifyHostname bool
	// AllowDNChanges and AllowSANChanges let a reloaded key store change
	// the certificate's subject and subject alternative names.
	AllowDNChanges, AllowSANChanges bool
	// PrincipalMapper maps a client certificate's DN to the principal's
	// name (ssl.principal.mapping.rules); nil (no rules parsed, as in a
	// configuration built by hand) is DEFAULT, the DN itself.
	PrincipalMapper *sslprincipal.Mapper
}

// HasKeystore reports whether a key store is configured.
func (s SSL) HasKeystore() bool { return s.KeystoreLocation != "" || s.KeystoreKey != "" }

// UsesTLS reports whether security protocol p runs over TLS.
func UsesTLS(p string) bool { return p == "SSL" || p == "SASL_SSL" }

func (b *Broker) fillSSL() {
	g := getter(b.Values)
	b.SSL = SSL{
		KeystoreType:             g.str("ssl.keystore.type"),
		KeystorePassword:         g.str("ssl.keystore.password"),
		KeystoreLocation:         g.str("ssl.keystore.location"),
		KeystoreKey:              g.str("ssl.keystore.key"),
		KeystoreCertificateChain: g.str("ssl.keystore.certificate.chain"),
		TruststoreType:           g.str("ssl.truststore.type"),
		TruststorePassword:       g.str("ssl.truststore.password"),
		TruststoreLocation:       g.str("ssl.truststore.location"),
		TruststoreCertificates:   g.str("ssl.truststore.certificates"),
		ClientAuth:               g.str("ssl.client.auth"),
		VerifyHostname:           strings.EqualFold(g.str("ssl.endpoint.identification.algorithm"), "https"),
		AllowDNChanges:           g.bool("ssl.allow.dn.changes"),
		AllowSANChanges:          g.bool("ssl.allow.san.changes"),
	}
	// A rule Parse refuses is reported by checkSSL.
	b.SSL.PrincipalMapper, _ = sslprincipal.Parse(g.str("ssl.principal.mapping.rules"))
	protos := g.list("ssl.enabled.protocols")
	for _, v := range []string{"TLSv1.2", "TLSv1.3"} {
		if contains(protos, v) {
			if b.SSL.MinVersion == "" {
				b.SSL.MinVersion = v
			}
			b.SSL.MaxVersion = v
		}
	}
}

// servesTLS reports whether one of the node's listeners runs over TLS.
func (b *Broker) servesTLS(protocol string) bool {
	for _, l := range b.Listeners {
		if l.SecurityProtocol == protocol {
			return true
		}
	}
	return false
}

// checkSSL refuses the TLS settings weir does not implement (JKS key and
// trust stores, encrypted PEM keys, TLS versions before 1.2, endpoint
// identification other than https) and applies Kafka's key store rules
// when a listener serves TLS.
func (b *Broker) checkSSL() []error {
	var errs []error
	g := getter(b.Values)
	refuse := func(key, reason string) {
		errs = append(errs, unsupported(key, g.str(key), reason, familySensitive(key)))
	}
	add := func(key, format string, args ...any) {
		errs = append(errs, combinationError(key, format, args...))
	}
	for _, store := range []string{"keystore", "truststore"} {
		key := "ssl." + store + ".type"
		switch t := g.str(key); t {
		case "PEM":
			if p := "ssl." + store + ".password"; b.Set[p] {
				add(p, "a PEM %s has no password (Kafka refuses it too); a password-protected store is PKCS12 (ssl.%s.type=PKCS12)", store, store)
			}
		case "PKCS12":
			inline := map[string]string{"keystore": "ssl.keystore.key", "truststore": "ssl.truststore.certificates"}[store]
			if g.str(inline) != "" {
				add(inline, "%s is PEM: it needs ssl.%s.type=PEM (a PKCS12 %s is a file, ssl.%s.location)", inline, store, store, store)
			}
		case "JKS":
			if b.Set[key] || b.Set["ssl."+store+".location"] {
				refuse(key, "weir reads PEM and PKCS12 "+store+"s only; convert the JKS file with keytool -importkeystore -deststoretype PKCS12")
			}
		default:
			add(key, "unknown %s type %q (Kafka knows JKS, PKCS12 and PEM; weir reads PEM and PKCS12)", store, t)
		}
	}
	if g.str("ssl.keystore.type") == "PKCS12" {
		switch kp := g.str("ssl.key.password"); {
		case g.str("ssl.keystore.location") != "" && g.str("ssl.keystore.password") == "":
			add("ssl.keystore.password", "a PKCS12 key store needs its password (ssl.keystore.password)")
		case kp != "" && kp != g.str("ssl.keystore.password"):
			refuse("ssl.key.password", "weir reads PKCS12 key stores whose key is protected by the store's password, as keytool writes them; set ssl.key.password to ssl.keystore.password or leave it unset")
		}
	} else if b.Set["ssl.key.password"] {
		refuse("ssl.key.password", "weir reads unencrypted PEM keys only; protect the key file with its permissions, or use a PKCS12 key store")
	}
	s := b.SSL
	if s.KeystoreLocation != "" && (s.KeystoreKey != "" || s.KeystoreCertificateChain != "") {
		add("ssl.keystore.key", "the key store is set both as a file (ssl.keystore.location) and inline (ssl.keystore.key, ssl.keystore.certificate.chain); set one")
	}
	if (s.KeystoreKey == "") != (s.KeystoreCertificateChain == "") {
		add("ssl.keystore.key", "ssl.keystore.key and ssl.keystore.certificate.chain must be set together")
	}
	if s.TruststoreLocation != "" && s.TruststoreCertificates != "" {
		add("ssl.truststore.certificates", "the trust store is set both as a file (ssl.truststore.location) and inline (ssl.truststore.certificates); set one")
	}
	for _, p := range g.list("ssl.enabled.protocols") {
		switch p {
		case "TLSv1.2", "TLSv1.3":
		case "TLSv1", "TLSv1.1", "SSLv3":
			refuse("ssl.enabled.protocols", "weir serves TLSv1.2 and TLSv1.3 only; "+p+" is obsolete")
		default:
			add("ssl.enabled.protocols", "unknown TLS protocol %q (weir serves TLSv1.2 and TLSv1.3)", p)
		}
	}
	if s.MinVersion == "" && len(errs) == 0 {
		add("ssl.enabled.protocols", "must name TLSv1.2 or TLSv1.3")
	}
	if _, err := sslprincipal.Parse(g.str("ssl.principal.mapping.rules")); err != nil {
		add("ssl.principal.mapping.rules", "%v", err)
	}
	if a := g.str("ssl.endpoint.identification.algorithm"); a != "" && !strings.EqualFold(a, "https") {
		refuse("ssl.endpoint.identification.algorithm", "weir implements https (the server's certificate must name the host dialled) or empty (no host check)")
	}
	if b.servesTLS("SSL") || b.servesTLS("SASL_SSL") {
		if !s.HasKeystore() {
			add("ssl.keystore.location", "a listener serves TLS (%s), which needs a key store: ssl.keystore.type=PEM or PKCS12 with ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain", b.tlsListeners())
		}
	}
	if s.ClientAuth != "none" && !b.servesTLS("SSL") {
		refuse("ssl.client.auth", "no listener uses security protocol SSL, and weir (as Kafka since KIP-684) applies ssl.client.auth to SSL listeners only, not to SASL_SSL ones")
	}
	return errs
}

func (b *Broker) tlsListeners() string {
	var out []string
	for _, l := range b.Listeners {
		if UsesTLS(l.SecurityProtocol) {
			out = append(out, l.String())
		}
	}
	return strings.Join(out, ",")
}

// DialProtocol returns the security protocol of the listener the node
// dials to reach other brokers (interBroker) or the controllers.
func (b *Broker) DialProtocol(interBroker bool) string {
	name := b.InterBrokerListenerName
	if !interBroker {
		if len(b.ControllerListenerNames) == 0 {
			return "PLAINTEXT"
		}
		name = b.ControllerListenerNames[0]
	}
	if p, ok := b.ListenerSecurityProtocols[name]; ok {
		return p
	}
	return "PLAINTEXT"
}
