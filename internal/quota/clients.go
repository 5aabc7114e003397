package quota

import (
	"math"
	"strings"
	"sync"
	"time"

	"weir/internal/metadata"
)

// Kind is one of the client quotas, as Kafka's ClientQuotaType.
type Kind int

const (
	Produce  Kind = iota // producer_byte_rate: request bytes of Produce
	Fetch                // consumer_byte_rate: response bytes of a consumer's Fetch
	Request              // request_percentage: handler time, in percent of one thread
	Mutation             // controller_mutation_rate: partitions created or deleted per second
)

// Key is the quota configuration key of a kind.
func (k Kind) Key() string {
	return [...]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}[k]
}

// Clients enforces the client quotas of the metadata image on one broker
// as Kafka's ClientQuotaManagers do. A request's quota is found for its
// user (the principal's name) and client id with Kafka's precedence
// (Resolve), and the quota is shared by every connection with the same
// "metric tags": the user, the client id or both, depending on which
// entity set it. Byte rates and request time are measured with Rate over
// quota.window.num samples of quota.window.size.seconds; the mutation
// rate with Kafka's token bucket (KIP-599), whose burst is the rate times
// the samples' whole span.
type Clients struct {
	samples int
	window  time.Duration
	image   func() *metadata.Image
	Now     func() time.Time

	mu        sync.Mutex
	sensors   [4]map[Tags]*sensor
	lastSweep time.Time
}

// Tags are the user and client id a quota sensor is shared by ("" for
// a part the quota does not depend on), Kafka's quota metric tags.
type Tags struct{ User, ClientID string }

type sensor struct {
	rate      *Rate
	throttled time.Duration // throttle time given, in total
	tokens    float64       // the mutation token bucket
	filled    time.Time
	used      time.Time
}

// sensorExpiry is how long an unused sensor is kept (Kafka's
// inactiveSensorExpirationTimeSeconds).
const sensorExpiry = time.Hour

// NewClients returns the client quotas of the images image returns,
// measured over samples windows of window (quota.window.num,
// quota.window.size.seconds).
func NewClients(samples int, window time.Duration, image func() *metadata.Image) *Clients {
	c := &Clients{samples: max(samples, 2), window: window, image: image, Now: time.Now}
	for i := range c.sensors {
		c.sensors[i] = map[Tags]*sensor{}
	}
	return c
}

// Resolve finds the quota of kind for user and clientID in quotas, in
// Kafka's order: the user's quota for the client id, for the default
// client id, the user's own; then the same for the default user; then
// the client id's, the default client id's. ok is false when none sets
// the key.
func Resolve(quotas map[metadata.QuotaEntity]map[string]float64, key, user, clientID string) (limit float64, tags Tags, ok bool) {
	u, c := metadata.Named(user), metadata.Named(clientID)
	d := metadata.DefaultName
	for _, cand := range []struct {
		e metadata.QuotaEntity
		t Tags
	}{
		{metadata.QuotaEntity{User: u, ClientID: c}, Tags{user, clientID}},
		{metadata.QuotaEntity{User: u, ClientID: d}, Tags{user, clientID}},
		{metadata.QuotaEntity{User: u}, Tags{user, ""}},
		{metadata.QuotaEntity{User: d, ClientID: c}, Tags{user, clientID}},
		{metadata.QuotaEntity{User: d, ClientID: d}, Tags{user, clientID}},
		{metadata.QuotaEntity{User: d}, Tags{user, ""}},
		{metadata.QuotaEntity{ClientID: c}, Tags{"", clientID}},
		{metadata.QuotaEntity{ClientID: d}, Tags{"", clientID}},
	} {
		if v, ok := quotas[cand.e][key]; ok {
			return v, cand.t, true
		}
	}
	return 0, Tags{}, false
}

// UserOf is the quota user of a principal ("User:alice" is "alice").
func UserOf(principal string) string {
	_, name, ok := strings.Cut(principal, ":")
	if !ok {
		return principal
	}
	return name
}

// limit returns the quota of kind for the request's user and client id,
// and its sensor; nil when no quota applies. c.mu is held.
func (c *Clients) limit(kind Kind, user, clientID string, now time.Time) (float64, *sensor) {
	if c == nil || c.image == nil {
		return 0, nil
	}
	img := c.image()
	if img == nil || len(img.ClientQuotas) == 0 {
		return 0, nil
	}
	v, tags, ok := Resolve(img.ClientQuotas, kind.Key(), user, clientID)
	if !ok {
		return 0, nil
	}
	c.sweep(now)
	s := c.sensors[kind][tags]
	if s == nil {
		s = &sensor{rate: NewRate(c.samples, c.window)}
		c.sensors[kind][tags] = s
	}
	s.used = now
	if kind == Request {
		// Recorded in nanoseconds of handler time per second.
		v *= float64(time.Second) / 100
	}
	return v, s
}

func (c *Clients) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < time.Minute {
		return
	}
	c.lastSweep = now
	for _, m := range c.sensors {
		for t, s := range m {
			if now.Sub(s.used) > sensorExpiry {
				delete(m, t)
			}
		}
	}
}

// Record adds n (bytes, or nanoseconds of handler time for Request) to
// the user's and client id's quota of kind and returns how long the
// client is to be throttled: none while the rate is within the quota,
// else the time for it to fall back to the quota with nothing more
// recorded (Kafka's QuotaUtils.throttleTime: (rate-quota)/quota times
// the measured span), at most one window for Request.
func (c *Clients) Record(kind Kind, user, clientID string, n int64) time.Duration {
	if c == nil {
		return 0
	}
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	limit, s := c.limit(kind, user, clientID, now)
	if s == nil {
		return 0
	}
	s.rate.Record(n, now)
	v, span := s.rate.Measure(now)
	if v <= limit {
		return 0
	}
	d := time.Duration((v - limit) / limit * float64(span))
	if kind == Request {
		d = min(d, c.window)
	}
	d = d.Round(time.Millisecond)
	s.throttled += d
	return d
}

// Unrecord takes back n recorded by Record (a throttled fetch whose data
// is not sent).
func (c *Clients) Unrecord(kind Kind, user, clientID string, n int64) {
	if c == nil {
		return
	}
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, s := c.limit(kind, user, clientID, now); s != nil {
		s.rate.Record(-n, now)
	}
}

// MaxInWindow is the most a quota of kind lets through in one quota
// window (Kafka's getMaxValueInQuotaWindow: the quota times samples-1
// windows), math.MaxInt64 when no quota applies. A fetch is cut to it.
func (c *Clients) MaxInWindow(kind Kind, user, clientID string) int64 {
	if c == nil {
		return math.MaxInt64
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	limit, s := c.limit(kind, user, clientID, c.Now())
	if s == nil {
		return math.MaxInt64
	}
	return int64(min(limit*float64(c.samples-1)*c.window.Seconds(), math.MaxInt64/2))
}

// Mutate charges n partition mutations to the controller mutation quota
// (KIP-599's token bucket: tokens refill at the quota's rate up to a
// burst of the rate times samples x window; a mutation takes n tokens).
// A strict quota (CreateTopics v6+, CreatePartitions v3+, DeleteTopics
// v5+) refuses the mutation, charging nothing, while the bucket is
// below zero, and returns the time until it is back at zero; a permissive
// one (older versions) always charges and returns that time once below
// zero.
func (c *Clients) Mutate(user, clientID string, n int, strict bool) (throttle time.Duration, refused bool) {
	if c == nil {
		return 0, false
	}
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	rate, s := c.limit(Mutation, user, clientID, now)
	if s == nil {
		return 0, false
	}
	burst := rate * float64(c.samples) * c.window.Seconds()
	if s.filled.IsZero() {
		s.tokens = burst
	} else {
		s.tokens = min(burst, s.tokens+rate*now.Sub(s.filled).Seconds())
	}
	s.filled = now
	below := func() time.Duration {
		d := time.Duration(-s.tokens / rate * float64(time.Second)).Round(time.Millisecond)
		s.throttled += d
		return d
	}
	if strict && s.tokens < 0 {
		return below(), true
	}
	s.tokens = min(burst, s.tokens-float64(n))
	s.rate.Record(int64(n), now)
	if !strict && s.tokens < 0 {
		return below(), false
	}
	return 0, false
}

// Refund gives back n mutations charged by Mutate that did not happen
// (the controller refused the topic).
func (c *Clients) Refund(user, clientID string, n int) {
	if c == nil || n == 0 {
		return
	}
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	rate, s := c.limit(Mutation, user, clientID, now)
	if s != nil {
		s.tokens = min(rate*float64(c.samples)*c.window.Seconds(), s.tokens+float64(n))
		s.rate.Record(-int64(n), now)
	}
}

// Applies reports whether a quota of kind applies to user and clientID.
func (c *Clients) Applies(kind Kind, user, clientID string) bool {
	if c == nil || c.image == nil {
		return false
	}
	img := c.image()
	if img == nil {
		return false
	}
	_, _, ok := Resolve(img.ClientQuotas, kind.Key(), user, clientID)
	return ok
}

// Stat is one quota sensor's measure, as Kafka's client quota metrics
// (kafka.server:type=Produce|Fetch|Request|ControllerMutation, with the
// user and client-id tags of the quota that applies).
type Stat struct {
	Kind Kind
	Tags
	// Rate is bytes per second (Produce, Fetch), percent of one thread's
	// time (Request) or partition mutations per second (Mutation), over
	// the quota's windows.
	Rate float64
	// Throttled is the throttle time the sensor's clients were given, in
	// total.
	Throttled time.Duration
}

// Stats are the measures of every sensor in use: those of clients a
// quota applies to, until unused for an hour.
func (c *Clients) Stats() []Stat {
	if c == nil {
		return nil
	}
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Stat
	for kind, m := range c.sensors {
		for tags, s := range m {
			v := s.rate.Value(now)
			if Kind(kind) == Request {
				v /= float64(time.Second) / 100 // nanoseconds per second to percent
			}
			out = append(out, Stat{Kind: Kind(kind), Tags: tags, Rate: v, Throttled: s.throttled})
		}
	}
	return out
}
