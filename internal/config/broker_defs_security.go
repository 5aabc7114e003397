package config

import (
	"fmt"
	"strings"
)

// Broker key registry, part 3: security. weir serves PLAINTEXT and SSL
// listeners (TLS 1.2 and 1.3 with PEM and PKCS12 key and trust stores, optional or
// required client certificates); the keys of those features are honoured
// and read at start-up (the store files are reloaded when they change, see
// internal/tlsconf). Every other security key carries Kafka's type and
// default so that a file holding Kafka's defaults still loads (with a
// warning), but is Refused: an operator must never believe a weir cluster
// is protected when it is not. Keys of these families that are not defined
// here (for example listener.name.<listener>.ssl.keystore.location) are
// refused too, whatever their value; see refusedFamily. The authorizer
// (authorizer.class.name, super.users, allow.everyone.if.no.acl.found)
// is Kafka's StandardAuthorizer (internal/acl).

// Why each family of security settings is refused, and what weir does
// instead.
const (
	reasonTLS         = "weir does not implement this TLS setting; it serves TLS from PEM and PKCS12 key and trust stores, configured with the ssl.* keys documented as honoured"
	reasonSASL        = "weir does not implement this SASL setting; it serves SASL listeners with the PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER mechanisms (users in listener.name.<listener>.plain.sasl.jaas.config and in the metadata log, JWTs checked against sasl.oauthbearer.jwks.endpoint.url), and logs in to other nodes with sasl.mechanism.inter.broker.protocol and sasl.mechanism.controller.protocol"
	reasonAuthn       = "weir does not load Java security classes; a connection's principal is its SASL user, its TLS certificate's DN or User:ANONYMOUS, as with Kafka's default principal builder"
	reasonToken       = "weir does not implement delegation tokens"
	reasonPerListener = "listener-prefixed settings (listener.name.<listener>.<key>) are not implemented, " +
		"but for listener.name.<listener>.<mechanism>.sasl.jaas.config; weir applies the broker-wide settings to each listener"
)

// StandardAuthorizer is the one authorizer.class.name weir implements
// (internal/acl); "" turns authorization off.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

var authorizerClass validator = check{"\"\" or " + StandardAuthorizer, func(v any) error {
	if s, _ := v.(string); s != "" && s != StandardAuthorizer {
		return fmt.Errorf("weir implements only Kafka's StandardAuthorizer: set %s, or leave it empty for no authorization", StandardAuthorizer)
	}
	return nil
}}

// superUsers checks super.users: principals (Type:name) separated by ';'.
var superUsers validator = check{"principals (Type:name) separated by ';'", func(v any) error {
	s, _ := v.(string)
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" && !strings.Contains(p, ":") {
			return fmt.Errorf("expected a string in format principalType:principalName but got %s", p)
		}
	}
	return nil
}}

// authorizerWarnings says when authorizer settings are set without an
// authorizer to read them.
func (b *Broker) authorizerWarnings() []string {
	var out []string
	if b.Values["authorizer.class.name"] == "" {
		for _, k := range []string{"super.users", "allow.everyone.if.no.acl.found"} {
			if b.Set[k] {
				out = append(out, fmt.Sprintf("%s has no effect: authorizer.class.name is not set, so every client may perform every operation", k))
			}
		}
	}
	return out
}

// DefaultPrincipalBuilder is Kafka's principal.builder.class default.
const DefaultPrincipalBuilder = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"

// kafkaPerBroker are the security keys Kafka can update at runtime for one
// broker (DynamicBrokerConfig: the listeners' reconfigurable SSL and SASL
// settings).
var kafkaPerBroker = map[string]bool{
	"principal.builder.class": true, "ssl.protocol": true, "ssl.provider": true, "ssl.cipher.suites": true,
	"ssl.enabled.protocols": true, "ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true,
	"ssl.key.password": true, "ssl.keystore.key": true, "ssl.keystore.certificate.chain": true, "ssl.truststore.type": true,
	"ssl.truststore.location": true, "ssl.truststore.password": true, "ssl.truststore.certificates": true,
	"ssl.keymanager.algorithm": true, "ssl.trustmanager.algorithm": true, "ssl.endpoint.identification.algorithm": true,
	"ssl.secure.random.implementation": true, "ssl.client.auth": true, "ssl.engine.factory.class": true,
	"sasl.mechanism.inter.broker.protocol": true, "sasl.jaas.config": true, "sasl.enabled.mechanisms": true,
	"sasl.kerberos.service.name": true, "sasl.kerberos.kinit.cmd": true, "sasl.kerberos.ticket.renew.window.factor": true,
	"sasl.kerberos.ticket.renew.jitter": true, "sasl.kerberos.min.time.before.relogin": true,
	"sasl.kerberos.principal.to.local.rules": true, "sasl.login.refresh.window.factor": true,
	"sasl.login.refresh.window.jitter": true, "sasl.login.refresh.min.period.seconds": true,
	"sasl.login.refresh.buffer.seconds": true,
}

// security defines a refused security key with Kafka's update mode.
func security(name string, t Type, dflt string, v validator, reason, doc string) Def {
	mode := ReadOnly
	if kafkaPerBroker[name] {
		mode = PerBroker
	}
	return refused(def(name, t, dflt, v, mode, doc), reason)
}

func tls(name string, t Type, dflt string, v validator, doc string) Def {
	return security(name, t, dflt, v, reasonTLS, doc)
}

// honouredTLS defines an ssl.* key weir implements; weir reads it at
// start-up only (Kafka can change it at runtime per broker).
func honouredTLS(name string, t Type, dflt string, v validator, doc string) Def {
	return startupOnly(def(name, t, dflt, v, PerBroker, doc))
}

func refusedSASL(name string, t Type, dflt string, doc string) Def {
	return security(name, t, dflt, nil, reasonSASL, doc)
}

var brokerSecurityDefs = []Def{
	// TLS (Kafka's SslConfigs and BrokerSecurityConfigs).
	tls("ssl.protocol", TypeString, "TLSv1.3", nil, "TLS protocol used to build the SSLContext."),
	tls("ssl.provider", TypeString, nullDefault, nil, "Security provider of the SSLContext."),
	honouredTLS("ssl.enabled.protocols", TypeList, "TLSv1.2,TLSv1.3", nil, "TLS protocols enabled for connections."),
	tls("ssl.cipher.suites", TypeList, "", nil, "Cipher suites enabled for TLS connections."),
	honouredTLS("ssl.keystore.type", TypeString, "JKS", nil, "File format of the key store."),
	honouredTLS("ssl.keystore.location", TypeString, nullDefault, nil, "Path of the key store."),
	honouredTLS("ssl.keystore.password", TypePassword, nullDefault, nil, "Password of the key store."),
	honouredTLS("ssl.key.password", TypePassword, nullDefault, nil, "Password of the private key in the key store."),
	honouredTLS("ssl.keystore.key", TypePassword, nullDefault, nil, "Private key in PEM format."),
	honouredTLS("ssl.keystore.certificate.chain", TypePassword, nullDefault, nil, "Certificate chain in PEM format."),
	honouredTLS("ssl.truststore.type", TypeString, "JKS", nil, "File format of the trust store."),
	honouredTLS("ssl.truststore.location", TypeString, nullDefault, nil, "Path of the trust store."),
	honouredTLS("ssl.truststore.password", TypePassword, nullDefault, nil, "Password of the trust store."),
	honouredTLS("ssl.truststore.certificates", TypePassword, nullDefault, nil, "Trusted certificates in PEM format."),
	tls("ssl.keymanager.algorithm", TypeString, "SunX509", nil, "Key manager factory algorithm."),
	tls("ssl.trustmanager.algorithm", TypeString, "PKIX", nil, "Trust manager factory algorithm."),
	honouredTLS("ssl.endpoint.identification.algorithm", TypeString, "https", nil, "Endpoint identification algorithm checking the server host name."),
	tls("ssl.secure.random.implementation", TypeString, nullDefault, nil, "SecureRandom implementation of TLS."),
	tls("ssl.engine.factory.class", TypeClass, nullDefault, nil, "Class that builds SSLEngine objects."),
	honouredTLS("ssl.client.auth", TypeString, "none", in("required", "requested", "none"), "Whether TLS clients must present certificates: required, requested or none."),
	def("ssl.principal.mapping.rules", TypeString, "DEFAULT", nil, ReadOnly, "Rules mapping the DN of a client certificate to a principal name: DEFAULT (the DN) and RULE:pattern/replacement/[LU], comma-separated, the first that matches the whole DN applies."),
	honouredTLS("ssl.allow.dn.changes", TypeBoolean, "false", nil, "Allow a reloaded key store to change the certificate's DN."),
	honouredTLS("ssl.allow.san.changes", TypeBoolean, "false", nil, "Allow a reloaded key store to change the certificate's SAN."),

	// SASL (Kafka's SaslConfigs, BrokerSecurityConfigs and KRaftConfigs).
	startupOnly(def("sasl.enabled.mechanisms", TypeList, "GSSAPI", nil, PerBroker, "SASL mechanisms enabled on the broker's SASL listeners.")),
	startupOnly(def("sasl.mechanism.inter.broker.protocol", TypeString, "GSSAPI", nil, PerBroker, "SASL mechanism of inter-broker connections.")),
	def("sasl.mechanism.controller.protocol", TypeString, "GSSAPI", nil, ReadOnly, "SASL mechanism of connections to controllers."),
	refusedSASL("sasl.jaas.config", TypePassword, nullDefault, "JAAS login context parameters."),
	refusedSASL("sasl.server.callback.handler.class", TypeClass, nullDefault, "Server callback handler of SASL mechanisms."),
	refusedSASL("sasl.client.callback.handler.class", TypeClass, nullDefault, "Client callback handler of SASL mechanisms."),
	refusedSASL("sasl.login.class", TypeClass, nullDefault, "Login class of SASL mechanisms."),
	refusedSASL("sasl.login.callback.handler.class", TypeClass, nullDefault, "Login callback handler of SASL mechanisms."),
	refusedSASL("sasl.kerberos.service.name", TypeString, nullDefault, "Kerberos principal name Kafka runs as."),
	refusedSASL("sasl.kerberos.kinit.cmd", TypeString, "/usr/bin/kinit", "Kerberos kinit command path."),
	refusedSASL("sasl.kerberos.ticket.renew.window.factor", TypeDouble, "0.8", "Fraction of a ticket's lifetime after which it is renewed."),
	refusedSASL("sasl.kerberos.ticket.renew.jitter", TypeDouble, "0.05", "Random jitter added to the renewal time."),
	refusedSASL("sasl.kerberos.min.time.before.relogin", TypeLong, "60000", "Minimum time between refresh attempts."),
	refusedSASL("sasl.kerberos.principal.to.local.rules", TypeList, "DEFAULT", "Rules mapping Kerberos principals to short names."),
	refusedSASL("sasl.login.refresh.window.factor", TypeDouble, "0.8", "Fraction of a credential's lifetime after which it is refreshed."),
	refusedSASL("sasl.login.refresh.window.jitter", TypeDouble, "0.05", "Random jitter added to the refresh time."),
	refusedSASL("sasl.login.refresh.min.period.seconds", TypeShort, "60", "Minimum time between credential refreshes."),
	refusedSASL("sasl.login.refresh.buffer.seconds", TypeShort, "300", "Time kept before a credential expires when refreshing it."),
	refusedSASL("sasl.login.connect.timeout.ms", TypeInt, nullDefault, "Connect timeout of the external authentication provider."),
	refusedSASL("sasl.login.read.timeout.ms", TypeInt, nullDefault, "Read timeout of the external authentication provider."),
	refusedSASL("sasl.login.retry.backoff.max.ms", TypeLong, "10000", "Maximum wait between login attempts."),
	refusedSASL("sasl.login.retry.backoff.ms", TypeLong, "100", "Initial wait between login attempts."),
	def("sasl.oauthbearer.scope.claim.name", TypeString, "scope", nil, ReadOnly, "Name of the OAuth scope claim."),
	def("sasl.oauthbearer.sub.claim.name", TypeString, "sub", nil, ReadOnly, "Name of the OAuth subject claim."),
	refusedSASL("sasl.oauthbearer.token.endpoint.url", TypeString, nullDefault, "URL of the OAuth token endpoint."),
	def("sasl.oauthbearer.jwks.endpoint.url", TypeString, nullDefault, nil, ReadOnly, "URL of the OAuth JWKS endpoint."),
	def("sasl.oauthbearer.jwks.endpoint.refresh.ms", TypeLong, "3600000", atLeast(1), ReadOnly, "How often the JWKS cache is refreshed."),
	def("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", TypeLong, "10000", nil, ReadOnly, "Maximum wait between JWKS retrieval attempts."),
	def("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", TypeLong, "100", nil, ReadOnly, "Initial wait between JWKS retrieval attempts."),
	def("sasl.oauthbearer.clock.skew.seconds", TypeInt, "30", atLeast(0), ReadOnly, "Allowed clock skew between the broker and the OAuth provider."),
	def("sasl.oauthbearer.expected.audience", TypeList, nullDefault, nil, ReadOnly, "Audiences a JWT must name."),
	def("sasl.oauthbearer.expected.issuer", TypeString, nullDefault, nil, ReadOnly, "Issuer a JWT must name."),
	def("sasl.server.max.receive.size", TypeInt, "524288", nil, ReadOnly, "Largest request accepted before authentication on a SASL listener."),
	def("connections.max.reauth.ms", TypeLong, "0", nil, ReadOnly, "Lifetime of an authenticated session before re-authentication; 0 disables."),

	// Authentication, authorization, delegation tokens.
	security("principal.builder.class", TypeClass, DefaultPrincipalBuilder, nil, reasonAuthn, "Class that builds the principal of a connection."),
	refused(def("security.providers", TypeString, nullDefault, nil, ReadOnly, "Classes that provide security algorithms."), reasonAuthn),
	def("authorizer.class.name", TypeString, "", authorizerClass, ReadOnly, "Authorizer class; empty for none."),
	def("super.users", TypeString, "", superUsers, ReadOnly, "Principals (User:name) separated by ';' that the authorizer allows everything."),
	def("allow.everyone.if.no.acl.found", TypeBoolean, "false", nil, ReadOnly, "Whether the authorizer allows an operation on a resource no ACL applies to."),
	refused(def("delegation.token.secret.key", TypePassword, nullDefault, nil, ReadOnly, "Secret that signs delegation tokens."), reasonToken),
	refused(def("delegation.token.max.lifetime.ms", TypeLong, "604800000", atLeast(1), ReadOnly, "Longest lifetime of a delegation token."), reasonToken),
	refused(def("delegation.token.expiry.time.ms", TypeLong, "86400000", atLeast(1), ReadOnly, "Validity of a delegation token before it must be renewed."), reasonToken),
	refused(def("delegation.token.expiry.check.interval.ms", TypeLong, "3600000", atLeast(1), ReadOnly, "How often expired delegation tokens are removed."), reasonToken),
}

// refusedFamilies are settings refused whatever their value although they
// have no definition: listener-prefixed keys exist for any listener name.
// A name matches an entry ending in '.' by prefix, any other exactly.
var refusedFamilies = []struct{ pattern, reason string }{
	{"listener.name.", reasonPerListener},
	{"ssl.", reasonTLS},
	{"sasl.", reasonSASL},
	{"delegation.token.", reasonToken},
}

// refusedFamily returns why an undefined broker key is refused, or "" if it
// is not (it is merely unknown).
func refusedFamily(name string) string {
	for _, f := range refusedFamilies {
		if name == f.pattern || strings.HasSuffix(f.pattern, ".") && strings.HasPrefix(name, f.pattern) {
			return f.reason
		}
	}
	return ""
}

// familySensitive reports whether the value of an undefined, refused key
// must be hidden: a key ending in the name of a password key (such as
// listener.name.sasl_ssl.plain.sasl.jaas.config), or naming a password,
// secret or JAAS configuration.
func familySensitive(name string) bool {
	for _, w := range []string{"password", "secret", "jaas"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	for i := 0; i < len(name); i++ {
		if i == 0 || name[i-1] == '.' {
			if d, ok := brokerRegistry.byName[name[i:]]; ok {
				return d.Sensitive()
			}
		}
	}
	return false
}
