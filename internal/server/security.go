package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"time"

	"weir/internal/acl"
	"weir/internal/config"
	"weir/internal/kafka"
	"weir/internal/metadata"
	"weir/internal/nodeclient"
	"weir/internal/sasl"
	"weir/internal/tlsconf"
)

// openSecurity loads the node's TLS material when a listener it serves or
// dials runs TLS, and sets the dialers of its connections to other nodes:
// TLS, then the SASL login, as the inter-broker and controller listeners'
// protocols ask.
func (s *Server) openSecurity() error {
	brokerTLS := s.cfg.HasRole("broker") && config.UsesTLS(s.cfg.DialProtocol(true))
	controllerTLS := config.UsesTLS(s.cfg.DialProtocol(false))
	serves := false
	for _, l := range s.cfg.Listeners {
		serves = serves || config.UsesTLS(l.SecurityProtocol)
	}
	if serves || brokerTLS || controllerTLS {
		st, err := tlsconf.New(s.cfg.SSL, s.lg.With("component", "tls"))
		if err != nil {
			return fmt.Errorf("TLS: %w", err)
		}
		s.tls = st
	}
	if err := s.openOAuth(); err != nil {
		return err
	}
	s.openAuthorizer()
	var err error
	if s.dialBroker, err = s.dialer(brokerTLS, s.cfg.SASL.InterBroker); err != nil {
		return err
	}
	s.dialController, err = s.dialer(controllerTLS, s.cfg.SASL.Controller)
	return err
}

// openAuthorizer sets up the authorizer when authorizer.class.name names
// it (config refuses any other class). The node's own requests to other
// nodes run as its principal on their listeners, which needs
// CLUSTER_ACTION (and more): as Kafka's documentation advises, that
// principal belongs in super.users; a warning says when a SASL or
// PLAINTEXT login's principal is not there.
func (s *Server) openAuthorizer() {
	if s.cfg.Values["authorizer.class.name"] == "" {
		return
	}
	cfg := acl.Config{SuperUsers: acl.ParseSuperUsers(s.cfg.Values["super.users"]),
		AllowIfNoACL: s.cfg.Values["allow.everyone.if.no.acl.found"] == "true"}
	s.authz = acl.New(cfg, func() *metadata.Image { return s.publisher.Image() })
	for _, dial := range []struct {
		protocol string
		login    config.Login
	}{{s.cfg.DialProtocol(true), s.cfg.SASL.InterBroker}, {s.cfg.DialProtocol(false), s.cfg.SASL.Controller}} {
		principal := acl.Anonymous
		switch {
		case dial.login.Mechanism != "":
			principal = "User:" + dial.login.User
		case config.UsesTLS(dial.protocol):
			continue // the certificate's DN
		}
		if !cfg.SuperUsers[principal] {
			s.lg.Warn("the authorizer is on and the node's principal on the other nodes' listeners is not in super.users: "+
				"their requests to each other need ACLs (CLUSTER_ACTION on the cluster and more)", "principal", principal)
		}
	}
}

// dialer returns the dialer of connections that run TLS (withTLS) and log
// in with login (when it has a mechanism).
func (s *Server) dialer(withTLS bool, login config.Login) (nodeclient.Dialer, error) {
	dial := s.opts.Dial
	if withTLS {
		dial = s.tls.Dialer(dial)
	}
	if login.Mechanism == "" {
		return dial, nil
	}
	m, err := sasl.ClientMechanism(login.Mechanism, login.User, login.Password)
	if err != nil {
		return nil, err
	}
	clientID := fmt.Sprintf("weir-node-%d", s.cfg.NodeID)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := sasl.Login(ctx, nc, m, clientID); err != nil {
			nc.Close()
			return nil, fmt.Errorf("logging in to %s: %w", addr, err)
		}
		return nc, nil
	}, nil
}

// listenerTLS returns the TLS configuration of the named listener, or nil
// when it does not run TLS. As in Kafka (KIP-684), ssl.client.auth applies
// to SSL listeners only: a SASL_SSL client authenticates with SASL.
func (s *Server) listenerTLS(name string) *tls.Config {
	switch s.cfg.ListenerSecurityProtocols[name] {
	case "SSL":
		return s.tls.Server(s.cfg.SSL.ClientAuth)
	case "SASL_SSL":
		return s.tls.Server("none")
	}
	return nil
}

// listenerSASL returns the SASL setting of the named listener, or nil
// when its clients do not authenticate with SASL.
func (s *Server) listenerSASL(name string) *kafka.SASLConfig {
	if p := s.cfg.ListenerSecurityProtocols[name]; p != "SASL_PLAINTEXT" && p != "SASL_SSL" {
		return nil
	}
	return &kafka.SASLConfig{
		Mechanisms:  s.cfg.SASL.Mechanisms,
		PlainUsers:  s.cfg.SASL.PlainUsers(name),
		FailedDelay: s.cfg.SASL.FailedAuthDelay,
		MaxReceive:  s.cfg.SASL.MaxReceive,
		OAuth:       s.oauth[name],
		MaxReauth:   s.cfg.SASL.MaxReauth,
	}
}

// openOAuth builds the OAUTHBEARER validator of each SASL listener that
// enables the mechanism: signed JWTs against the JWKS (loaded now, and
// kept fresh until shutdown), or unsecured JWTs.
func (s *Server) openOAuth() error {
	if !slices.Contains(s.cfg.SASL.Mechanisms, sasl.OAuthBearer) {
		return nil
	}
	o := s.cfg.SASL.OAuth
	s.oauth = map[string]sasl.Validator{}
	for _, l := range s.cfg.Listeners {
		if p := l.SecurityProtocol; p != "SASL_PLAINTEXT" && p != "SASL_SSL" {
			continue
		}
		if !o.Secured[l.Name] {
			u, err := s.cfg.SASL.UnsecuredOAuth(l.Name)
			if err != nil {
				return err
			}
			s.lg.Warn("listener accepts unsecured OAUTHBEARER tokens (unsigned JWTs, for tests only): set listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class to validate signed ones",
				"listener", l.Name)
			s.oauth[l.Name] = sasl.NewUnsecuredValidator(u)
			continue
		}
		if s.jwks == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			jwks, err := sasl.OpenJWKS(ctx, o.JWKSURL, sasl.JWKSConfig{Refresh: o.JWKSRefresh, Backoff: o.JWKSBackoff, BackoffMax: o.JWKSBackoffMax},
				s.lg.With("component", "jwks"))
			cancel()
			if err != nil {
				return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
			}
			s.jwks = jwks
		}
		s.oauth[l.Name] = sasl.NewJWTValidator(sasl.JWTConfig{Keys: s.jwks, Audience: o.Audience, Issuer: o.Issuer,
			SubClaim: o.SubClaim, ScopeClaim: o.ScopeClaim, ClockSkew: o.ClockSkew})
	}
	return nil
}
