package kafka

// Connection limits, as Kafka's ConnectionQuotas: a node's listeners
// share one ConnQuotas. A listener accepts a connection, then
//
//   - waits while max.connection.creation.rate is exceeded (the rate of
//     new connections over quota.window.num windows of
//     quota.window.size.seconds; the inter-broker listener is exempt),
//     for the time the rate needs to fall back to the limit;
//   - waits while max.connections connections are open (the inter-broker
//     listener is exempt: its connection is accepted, and the least
//     recently active connection of another listener closed instead);
//   - when its IP address is over its connection_creation_rate quota
//     (the ip entity's, else the default ip's, over the same windows;
//     not on the inter-broker listener), closes it once the rate is back
//     within the quota, as Kafka delays closing a throttled connection;
//   - closes it at once when its IP address already has
//     max.connections.per.ip connections (or its count in
//     max.connections.per.ip.overrides).
//
// A waiting listener accepts nothing more meanwhile; new connections
// queue in the kernel's backlog, as with Kafka's blocked acceptor.

import (
	"math"
	"net"
	"sync"
	"time"

	"weir/internal/quota"
)

// ConnLimits are the connection limits in force.
type ConnLimits struct {
	Max            int            // max.connections
	PerIP          int            // max.connections.per.ip
	PerIPOverrides map[string]int // max.connections.per.ip.overrides, by IP address
	CreationRate   int            // max.connection.creation.rate, per second
	// IPRate is the connection_creation_rate quota of an address (ok
	// false: none).
	IPRate func(ip string) (limit float64, ok bool)
}

// ConnQuotas counts a node's connections and enforces ConnLimits.
type ConnQuotas struct {
	limits func() ConnLimits
	// protected is the inter-broker listener.
	protected string
	rate      *quota.Rate
	now       func() time.Time
	samples   int
	window    time.Duration

	mu    sync.Mutex
	total int
	perIP map[string]int
	conns map[*conn]string // open connections and their listeners
	freed chan struct{}    // closed (and replaced) when a connection goes
	// ipRates are the addresses' connection rates, for their quotas.
	ipRates   map[string]*ipRate
	lastSweep time.Time
}

type ipRate struct {
	rate *quota.Rate
	used time.Time
}

// NewConnQuotas returns the quotas of a node whose inter-broker listener
// is protected; limits gives the limits in force (dynamic configs may
// change them), the creation rate is measured over samples windows of
// window.
func NewConnQuotas(protected string, samples int, window time.Duration, limits func() ConnLimits) *ConnQuotas {
	return &ConnQuotas{limits: limits, protected: protected, rate: quota.NewRate(samples, window), now: time.Now,
		samples: samples, window: window, perIP: map[string]int{}, conns: map[*conn]string{}, freed: make(chan struct{}),
		ipRates: map[string]*ipRate{}}
}

// admit waits until a connection from ip may be served on listener and
// counts it; false when it is to be closed (too many from its address,
// or stop closed meanwhile), after closeIn when its address is over its
// connection rate quota. A connection admitted is let go with release.
func (q *ConnQuotas) admit(stop <-chan struct{}, listener, ip string) (ok bool, closeIn time.Duration) {
	if q == nil {
		return true, 0
	}
	protected := listener == q.protected
	if !protected {
		if d := q.creationThrottle(); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return false, 0
			}
		}
		if d := q.ipThrottle(ip); d > 0 {
			return false, d
		}
	}
	for {
		q.mu.Lock()
		l := q.limits()
		if protected || q.total < l.Max {
			max, ok := l.PerIPOverrides[ip]
			if !ok {
				max = l.PerIP
			}
			if q.perIP[ip] >= max {
				q.mu.Unlock()
				return false, 0
			}
			q.perIP[ip]++
			q.total++
			if protected && q.total > l.Max {
				q.closeLeastRecentLocked()
			}
			q.mu.Unlock()
			return true, 0
		}
		freed := q.freed
		q.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false, 0
		}
	}
}

// ipThrottle records a connection from ip against its address's
// connection_creation_rate quota and returns how long until the rate is
// back within it; a throttled connection is not counted (Kafka
// unrecords it).
func (q *ConnQuotas) ipThrottle(ip string) time.Duration {
	l := q.limits()
	if l.IPRate == nil {
		return 0
	}
	limit, ok := l.IPRate(ip)
	if !ok {
		return 0
	}
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if now.Sub(q.lastSweep) > time.Minute {
		q.lastSweep = now
		for a, r := range q.ipRates {
			if now.Sub(r.used) > time.Hour {
				delete(q.ipRates, a)
			}
		}
	}
	r := q.ipRates[ip]
	if r == nil {
		r = &ipRate{rate: quota.NewRate(q.samples, q.window)}
		q.ipRates[ip] = r
	}
	r.used = now
	r.rate.Record(1, now)
	v, span := r.rate.Measure(now)
	if v <= limit {
		return 0
	}
	r.rate.Record(-1, now)
	return max(time.Duration((v-limit)/limit*float64(span)).Round(time.Millisecond), time.Millisecond)
}

// creationThrottle records a new connection and returns how long the
// listener waits before serving it: the time the creation rate needs to
// fall back to its limit (Kafka's QuotaUtils.throttleTime).
func (q *ConnQuotas) creationThrottle() time.Duration {
	limit := q.limits().CreationRate
	if limit >= math.MaxInt32 {
		return 0
	}
	now := q.now()
	q.rate.Record(1, now)
	if limit <= 0 {
		limit = 0
	}
	v, span := q.rate.Measure(now)
	if v <= float64(limit) {
		return 0
	}
	if limit == 0 {
		return span
	}
	return time.Duration((v - float64(limit)) / float64(limit) * float64(span)).Round(time.Millisecond)
}

// track registers an admitted connection, for closing the least recently
// active one.
func (q *ConnQuotas) track(c *conn, listener string) {
	if q == nil {
		return
	}
	q.mu.Lock()
	q.conns[c] = listener
	q.mu.Unlock()
}

// release lets an admitted connection from ip go.
func (q *ConnQuotas) release(c *conn, ip string) {
	if q == nil {
		return
	}
	q.mu.Lock()
	delete(q.conns, c)
	q.total--
	if q.perIP[ip]--; q.perIP[ip] <= 0 {
		delete(q.perIP, ip)
	}
	close(q.freed)
	q.freed = make(chan struct{})
	q.mu.Unlock()
}

// closeLeastRecentLocked closes the connection of an unprotected
// listener that was active least recently.
func (q *ConnQuotas) closeLeastRecentLocked() {
	var oldest *conn
	for c, l := range q.conns {
		if l != q.protected && (oldest == nil || c.lastActive.Load() < oldest.lastActive.Load()) {
			oldest = c
		}
	}
	if oldest != nil {
		delete(q.conns, oldest)
		go oldest.close()
	}
}

// remoteIP is the IP address of a connection's peer.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}
