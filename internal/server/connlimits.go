package server

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"weir/internal/config"
	"weir/internal/kafka"
	"weir/internal/metadata"
)

// connLimits holds the last parsed max.connections.per.ip.overrides, so
// host names are resolved when the setting changes, not at every accept.
type connLimits struct {
	mu        sync.Mutex
	raw       string
	overrides map[string]int
}

// connLimits are the connection limits as now configured: this broker's
// dynamic values, else the cluster-wide dynamic defaults, else the static
// ones.
func (s *Server) connLimits() kafka.ConnLimits {
	img := s.publisher.Image()
	val := func(key string) string {
		return config.BrokerValue(key, img.BrokerConfig(strconv.Itoa(int(s.cfg.NodeID))), img.BrokerConfig(""), s.cfg)
	}
	num := func(key string) int {
		n, _ := strconv.Atoi(val(key))
		return n
	}
	return kafka.ConnLimits{Max: num("max.connections"), PerIP: num("max.connections.per.ip"),
		CreationRate: num("max.connection.creation.rate"), PerIPOverrides: s.conns.parse(val("max.connections.per.ip.overrides"), s),
		IPRate: func(ip string) (float64, bool) { return ipConnectionRate(img, ip) }}
}

// ipConnectionRate is an address's connection_creation_rate quota: its
// own, else the default ip's.
func ipConnectionRate(img *metadata.Image, ip string) (float64, bool) {
	for _, e := range []metadata.QuotaEntity{{IP: metadata.Named(ip)}, {IP: metadata.DefaultName}} {
		if v, ok := img.ClientQuotas[e]["connection_creation_rate"]; ok {
			return v, true
		}
	}
	return 0, false
}

// parse returns the overrides of raw by IP address; a host name counts
// for each of its addresses (as Kafka resolves it), one that does not
// resolve is logged and skipped.
func (c *connLimits) parse(raw string, s *Server) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if raw == c.raw && c.overrides != nil {
		return c.overrides
	}
	byHost, err := config.ParseConnectionOverrides(raw)
	if err != nil {
		s.lg.Warn("ignoring bad max.connections.per.ip.overrides", "value", raw, "err", err)
	}
	out := map[string]int{}
	for host, n := range byHost {
		if a, err := netip.ParseAddr(host); err == nil {
			out[a.Unmap().String()] = n
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		cancel()
		if err != nil {
			s.lg.Warn("max.connections.per.ip.overrides: cannot resolve host", "host", host, "err", err)
			continue
		}
		for _, ip := range ips {
			out[ip.IP.String()] = n
		}
	}
	c.raw, c.overrides = raw, out
	return out
}
