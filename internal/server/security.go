package server

import (
	"crypto/tls"
	"fmt"

	"weir/internal/config"
	"weir/internal/kafka"
	"weir/internal/tlsconf"
)

// openTLS loads the node's TLS material when a listener it serves or dials
// runs TLS, and sets the dialers of its connections to other nodes.
func (s *Server) openTLS() error {
	s.dialBroker, s.dialController = s.opts.Dial, s.opts.Dial
	brokerTLS := s.cfg.HasRole("broker") && config.UsesTLS(s.cfg.DialProtocol(true))
	controllerTLS := config.UsesTLS(s.cfg.DialProtocol(false))
	serves := false
	for _, l := range s.cfg.Listeners {
		serves = serves || config.UsesTLS(l.SecurityProtocol)
	}
	if !serves && !brokerTLS && !controllerTLS {
		return nil
	}
	st, err := tlsconf.New(s.cfg.SSL, s.lg.With("component", "tls"))
	if err != nil {
		return fmt.Errorf("TLS: %w", err)
	}
	s.tls = st
	if brokerTLS {
		s.dialBroker = st.Dialer(s.opts.Dial)
	}
	if controllerTLS {
		s.dialController = st.Dialer(s.opts.Dial)
	}
	return nil
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
	}
}
