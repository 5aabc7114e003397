// Package clientsec turns the TLS and SASL client properties of Kafka's
// clients (security.protocol, ssl.*, sasl.*) into franz-go client options,
// for weir's tools and its mirror: TLS with PEM or PKCS12 stores, as weir's listeners,
// and SASL with PLAIN or SCRAM. A property it cannot honour is an error,
// never ignored.
package clientsec

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/internal/config"
	"weir/internal/sasl"
	"weir/internal/tlsconf"
)

// Properties are the client properties of TLS and SASL honoured here, as
// Kafka's clients name them.
var Properties = map[string]bool{
	"security.protocol": true,
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.key": true, "ssl.keystore.certificate.chain": true,
	"ssl.keystore.password": true, "ssl.key.password": true,
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.certificates": true, "ssl.truststore.password": true,
	"ssl.endpoint.identification.algorithm": true, "ssl.enabled.protocols": true,
	"sasl.mechanism": true, "sasl.jaas.config": true,
}

// Opts turns the security properties of props (other keys are not looked
// at) into client options: TLS for SSL and SASL_SSL (PEM and PKCS12 stores, as the broker), a
// SASL login for SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512, with the username and password of sasl.jaas.config).
func Opts(props map[string]string) ([]kgo.Opt, error) {
	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if proto == "" {
		proto = "PLAINTEXT"
	}
	tls, saslOn := config.UsesTLS(proto), strings.HasPrefix(proto, "SASL_")
	if !tls && !saslOn && proto != "PLAINTEXT" {
		return nil, fmt.Errorf("client property security.protocol: unknown protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", proto)
	}
	for k := range props {
		if !Properties[k] || k == "security.protocol" {
			continue
		}
		if strings.HasPrefix(k, "ssl.") && !tls || strings.HasPrefix(k, "sasl.") && !saslOn {
			return nil, fmt.Errorf("client property %s has no effect with security.protocol=%s", k, proto)
		}
	}
	tc, m, err := resolve(props, tls, saslOn)
	if err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if tc != nil {
		// kgo names each broker's host as the server name.
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// resolve returns the TLS configuration and the SASL mechanism the
// properties ask for (nil when not).
func resolve(props map[string]string, withTLS, withSASL bool) (*tls.Config, kgosasl.Mechanism, error) {
	var tc *tls.Config
	var m kgosasl.Mechanism
	var err error
	if withTLS {
		if tc, err = tlsConfig(props); err != nil {
			return nil, nil, err
		}
	}
	if withSASL {
		if m, err = saslMechanism(props); err != nil {
			return nil, nil, err
		}
	}
	return tc, m, nil
}

// Dialer returns a dialer of connections set up as the security properties
// of props ask (TLS, then the SASL login as clientID), for code that talks
// to brokers over its own connections rather than a kgo client's.
func Dialer(props map[string]string, clientID string) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	if _, err := Opts(props); err != nil {
		return nil, err
	}
	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	tc, m, err := resolve(props, config.UsesTLS(proto), strings.HasPrefix(proto, "SASL_"))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil || (tc == nil && m == nil) {
			return nc, err
		}
		if tc != nil {
			c := tc.Clone()
			if c.ServerName == "" {
				c.ServerName, _, _ = net.SplitHostPort(addr)
			}
			tlsConn := tls.Client(nc, c)
			if err := tlsConn.HandshakeContext(ctx); err != nil {
				nc.Close()
				return nil, err
			}
			nc = tlsConn
		}
		if m != nil {
			if err := sasl.Login(ctx, nc, m, clientID); err != nil {
				nc.Close()
				return nil, err
			}
		}
		return nc, nil
	}, nil
}

func tlsConfig(props map[string]string) (*tls.Config, error) {
	cfg := config.SSL{
		KeystoreLocation: props["ssl.keystore.location"], KeystoreKey: props["ssl.keystore.key"],
		KeystoreCertificateChain: props["ssl.keystore.certificate.chain"], KeystorePassword: props["ssl.keystore.password"],
		TruststoreLocation: props["ssl.truststore.location"], TruststoreCertificates: props["ssl.truststore.certificates"],
		TruststorePassword: props["ssl.truststore.password"],
		ClientAuth:         "none", MinVersion: "TLSv1.2", MaxVersion: "TLSv1.3", VerifyHostname: true,
	}
	// Kafka's clients default to JKS; weir's to PEM, the one format that
	// needs no type.
	for _, store := range []string{"keystore", "truststore"} {
		t := strings.TrimSpace(props["ssl."+store+".type"])
		switch t {
		case "", "PEM":
			if _, ok := props["ssl."+store+".password"]; ok {
				return nil, fmt.Errorf("client property ssl.%s.password: a PEM %s has no password (Kafka refuses it too)", store, store)
			}
		case "PKCS12":
			if props["ssl."+store+".location"] == "" {
				return nil, fmt.Errorf("client property ssl.%s.type: a PKCS12 %s is a file: set ssl.%s.location", store, store, store)
			}
		default:
			return nil, fmt.Errorf("client property ssl.%s.type: %s is not supported: weir reads PEM and PKCS12 %ss", store, t, store)
		}
		if store == "keystore" {
			cfg.KeystoreType = t
		} else {
			cfg.TruststoreType = t
		}
	}
	if kp, ok := props["ssl.key.password"]; ok && (cfg.KeystoreType != "PKCS12" || kp != cfg.KeystorePassword) {
		return nil, errors.New("client property ssl.key.password: weir reads unencrypted PEM keys, and PKCS12 keys protected by the store's password (ssl.keystore.password), as keytool writes them")
	}
	if a, ok := props["ssl.endpoint.identification.algorithm"]; ok {
		switch a = strings.TrimSpace(a); {
		case a == "":
			cfg.VerifyHostname = false
		case !strings.EqualFold(a, "https"):
			return nil, fmt.Errorf("client property ssl.endpoint.identification.algorithm: %s is not supported (https, or empty for no host name check)", a)
		}
	}
	if v, ok := props["ssl.enabled.protocols"]; ok {
		cfg.MinVersion, cfg.MaxVersion = "", ""
		for _, p := range strings.Split(v, ",") {
			switch p = strings.TrimSpace(p); p {
			case "TLSv1.2", "TLSv1.3":
				if cfg.MinVersion == "" || p == "TLSv1.2" {
					cfg.MinVersion = p
				}
				if cfg.MaxVersion == "" || p == "TLSv1.3" {
					cfg.MaxVersion = p
				}
			default:
				return nil, fmt.Errorf("client property ssl.enabled.protocols: %s is not supported (TLSv1.2, TLSv1.3)", p)
			}
		}
	}
	st, err := tlsconf.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, fmt.Errorf("client TLS settings: %w", err)
	}
	return st.Client(""), nil
}

func saslMechanism(props map[string]string) (kgosasl.Mechanism, error) {
	mech := strings.TrimSpace(props["sasl.mechanism"])
	if mech == "" {
		mech = "GSSAPI" // Kafka's default
	}
	if !slices.Contains(sasl.LoginMechanisms, mech) {
		return nil, fmt.Errorf("client property sasl.mechanism: %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech)
	}
	raw, ok := props["sasl.jaas.config"]
	if !ok {
		return nil, fmt.Errorf("client property sasl.jaas.config is needed for sasl.mechanism=%s (username and password)", mech)
	}
	j, err := sasl.ParseJAAS(raw)
	if err != nil {
		return nil, fmt.Errorf("client property sasl.jaas.config: %v", err)
	}
	want := sasl.ScramLoginModule
	if mech == sasl.Plain {
		want = sasl.PlainLoginModule
	}
	user, pass := j.Options["username"], j.Options["password"]
	switch {
	case j.Module != want:
		return nil, fmt.Errorf("client property sasl.jaas.config: sasl.mechanism=%s needs login module %s", mech, want)
	case user == "" || pass == "":
		return nil, fmt.Errorf("client property sasl.jaas.config: username and password are needed")
	}
	switch mech {
	case sasl.Plain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case sasl.ScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	}
	return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
}
