package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"weir/internal/config"
	"weir/internal/console"
)

// consoleListener picks the broker listener the console's clients use: a
// SASL one when the node has one (so the console's users log in and the
// brokers check their rights), else a PLAINTEXT one. An SSL listener is
// never used: the console's clients would present the node's own
// certificate and act with its principal.
func (s *Server) consoleListener() (config.Listener, error) {
	var plain *config.Listener
	for i, l := range s.cfg.Listeners {
		if s.isControllerListener(l.Name) {
			continue
		}
		switch l.SecurityProtocol {
		case "SASL_PLAINTEXT", "SASL_SSL":
			return l, nil
		case "PLAINTEXT":
			if plain == nil {
				plain = &s.cfg.Listeners[i]
			}
		}
	}
	if plain == nil {
		return config.Listener{}, fmt.Errorf("%s: the console needs a PLAINTEXT, SASL_PLAINTEXT or SASL_SSL broker listener to connect to (on an SSL listener it would act with the node's own certificate)", config.KeyConsoleListener)
	}
	return *plain, nil
}

// consoleLogin is consoleListener and the SASL mechanisms the console's
// users log in with there (none on a PLAINTEXT listener).
func (s *Server) consoleLogin() (config.Listener, []string, error) {
	l, err := s.consoleListener()
	if err != nil || l.SecurityProtocol == "PLAINTEXT" {
		return l, nil, err
	}
	var mechanisms []string
	for _, m := range console.Mechanisms {
		if slices.Contains(s.cfg.SASL.Mechanisms, m) {
			mechanisms = append(mechanisms, m)
		}
	}
	if len(mechanisms) == 0 {
		return l, nil, fmt.Errorf("%s: listener %s enables none of the SASL mechanisms the console logs in with (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", config.KeyConsoleListener, l.Name)
	}
	return l, mechanisms, nil
}

// startConsole serves the web console on weir.console.listener (bound by
// bind), if set, as a client of the broker listener consoleListener
// picks. Call it once the listeners serve.
func (s *Server) startConsole() error {
	if s.consoleLn == nil {
		return nil
	}
	l, mechanisms, err := s.consoleLogin()
	if err != nil {
		return err
	}
	addr := s.listeners[l.Name].Addr().(*net.TCPAddr)
	host := addr.IP
	if host.IsUnspecified() {
		host = net.IPv4(127, 0, 0, 1)
		if addr.IP.To4() == nil && len(addr.IP) == net.IPv6len && !addr.IP.Equal(net.IPv4zero) {
			host = net.IPv6loopback
		}
	}
	cfg := console.Config{Bootstrap: net.JoinHostPort(host.String(), fmt.Sprint(addr.Port)), Dial: s.opts.Dial,
		Mechanisms: mechanisms, Logger: s.lg.With("component", "console")}
	if l.SecurityProtocol == "SASL_SSL" {
		cfg.Dial = s.tls.Dialer(s.opts.Dial)
	}
	c, err := console.New(cfg)
	if err != nil {
		return err
	}
	s.console = c
	s.consoleHTTP = &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ln := s.consoleLn
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.consoleHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.lg.Error("console listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.lg.Info("console serving", "addr", ln.Addr().String(), "kafka_listener", l.Name, "login", len(cfg.Mechanisms) > 0)
	return nil
}

// stopConsole closes the console's endpoint, its connections and its
// clients.
func (s *Server) stopConsole() {
	if s.consoleHTTP != nil {
		s.consoleHTTP.Close()
	}
	if s.consoleLn != nil {
		s.consoleLn.Close()
	}
	if s.console != nil {
		s.console.Close()
	}
}

// ConsoleAddr is the bound address of the web console, or nil when
// weir.console.listener is not set (or before Start).
func (s *Server) ConsoleAddr() net.Addr {
	if s.consoleLn == nil {
		return nil
	}
	return s.consoleLn.Addr()
}
