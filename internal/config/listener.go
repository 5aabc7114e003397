package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Security protocols known to Kafka.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	Name string // upper-case listener name, e.g. "PLAINTEXT"
	// Host is empty to bind all interfaces (or, when advertised, to let the
	// server pick its host name). IPv6 addresses are stored without brackets.
	Host string
	Port int
	// SecurityProtocol is filled in by LoadBroker from
	// listener.security.protocol.map; ParseListener leaves it empty.
	SecurityProtocol string
}

// Address returns host:port, bracketing IPv6 hosts (":9092" for an empty
// host), suitable for net.Listen.
func (l Listener) Address() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// String returns the listener in NAME://host:port form.
func (l Listener) String() string { return l.Name + "://" + l.Address() }

// ParseListener parses NAME://host:port. The name is upper-cased; the host may
// be empty, a name, an IPv4 address or a bracketed IPv6 address; the port must
// be in 0-65535.
func ParseListener(s string) (Listener, error) {
	name, addr, ok := strings.Cut(strings.TrimSpace(s), "://")
	if !ok || name == "" {
		return Listener{}, fmt.Errorf("listener %q is not of the form NAME://host:port", s)
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return Listener{}, fmt.Errorf("listener %q has an invalid name", s)
		}
	}
	host, port, err := splitHostPort(addr)
	if err != nil {
		return Listener{}, fmt.Errorf("listener %q: %v", s, err)
	}
	return Listener{Name: strings.ToUpper(name), Host: host, Port: port}, nil
}

// ParseListeners parses a comma-separated listener list ("" gives none).
func ParseListeners(s string) ([]Listener, error) {
	var out []Listener
	for _, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		l, err := ParseListener(item)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// ParseMetricsListener parses weir.metrics.listener: empty (no metrics
// endpoint), host:port, or http://host:port. It returns the address to bind
// as host:port (brackets around IPv6), or "" when empty; an empty host binds
// all interfaces.
func ParseMetricsListener(s string) (string, error) {
	return parseHTTPListener("metrics listener", "the path is always /metrics", s)
}

// ParseConsoleListener parses weir.console.listener as ParseMetricsListener
// parses weir.metrics.listener.
func ParseConsoleListener(s string) (string, error) {
	return parseHTTPListener("console listener", "the console is served at /", s)
}

// parseHTTPListener parses an HTTP endpoint's host:port or
// http://host:port; what names it in errors, pathNote says why it has no
// path.
func parseHTTPListener(what, pathNote, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	addr := s
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if !strings.EqualFold(scheme, "http") {
			return "", fmt.Errorf("%s %q: the scheme must be http", what, s)
		}
		addr = rest
	}
	if strings.Contains(addr, "/") {
		return "", fmt.Errorf("%s %q is not of the form host:port or http://host:port (%s)", what, s, pathNote)
	}
	host, port, err := splitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s %q: %v", what, s, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// splitHostPort splits host:port where host may be empty or a bracketed IPv6
// address.
func splitHostPort(s string) (string, int, error) {
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, errors.New("missing port")
	}
	host, portStr := s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") {
		ip, _, _ := strings.Cut(host[1:max(1, len(host)-1)], "%") // drop a zone index
		if !strings.HasSuffix(host, "]") || net.ParseIP(ip) == nil {
			return "", 0, fmt.Errorf("invalid IPv6 address %q", host)
		}
		host = host[1 : len(host)-1]
	} else if strings.ContainsAny(host, ":[]") {
		return "", 0, fmt.Errorf("IPv6 address %q must be enclosed in brackets", host)
	}
	for _, c := range host {
		if !(c == '-' || c == '.' || c == '_' || c == '%' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", 0, fmt.Errorf("invalid host %q", host)
		}
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 || !isDigits(portStr) {
		return "", 0, fmt.Errorf("invalid port %q", portStr)
	}
	return host, port, nil
}

// Voter is one entry of controller.quorum.voters.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Address returns host:port for dialing the voter.
func (v Voter) Address() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

// ParseVoter parses an {id}@{host}:{port} entry; the host must not be empty.
func ParseVoter(s string) (Voter, error) {
	idStr, addr, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok {
		return Voter{}, fmt.Errorf("voter %q is not of the form id@host:port", s)
	}
	id, err := strconv.ParseInt(idStr, 10, 32)
	if err != nil || id < 0 {
		return Voter{}, fmt.Errorf("voter %q has an invalid id", s)
	}
	host, port, err := splitHostPort(addr)
	if err != nil {
		return Voter{}, fmt.Errorf("voter %q: %v", s, err)
	}
	if host == "" {
		return Voter{}, fmt.Errorf("voter %q has no host", s)
	}
	return Voter{ID: int32(id), Host: host, Port: port}, nil
}

// ParseSecurityProtocolMap parses listener.security.protocol.map, a
// comma-separated list of LISTENER:PROTOCOL pairs. Names and protocols are
// upper-cased; each listener may appear once and each protocol must be one of
// PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL.
func ParseSecurityProtocolMap(s string) (map[string]string, error) {
	out := make(map[string]string)
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, proto, ok := strings.Cut(item, ":")
		name = strings.ToUpper(strings.TrimSpace(name))
		proto = strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %q is not of the form LISTENER:PROTOCOL", item)
		}
		if !contains(securityProtocols, proto) {
			return nil, fmt.Errorf("unknown security protocol %q for listener %s (valid: %s)",
				proto, name, strings.Join(securityProtocols, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener %s is mapped more than once", name)
		}
		out[name] = proto
	}
	return out, nil
}
