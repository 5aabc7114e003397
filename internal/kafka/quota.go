package kafka

// Client quotas, enforced as Kafka's brokers do (quota.Clients measures
// them): a Produce's request bytes count against producer_byte_rate once
// it is handled, a consumer's Fetch response bytes against
// consumer_byte_rate, and the time a handler runs against
// request_percentage. A client over a quota gets the time its rate needs
// to fall back within it in the response's throttle_time_ms, and its
// connection is muted that long: the next request is not handled before.
// A fetch that would put the client over its quota is answered empty
// (its bytes taken back), and a fetch is never larger than the quota lets
// through in one window. Followers' fetches, the cluster's own APIs, the
// SASL login and clients whose id starts with "__" (Kafka's internal
// clients) are never throttled by the request quota.

import (
	"strings"
	"time"

	"weir/internal/quota"
)

// quotaExempt are the APIs the request quota leaves alone, as Kafka's
// cluster actions and the SASL exchange: WriteTxnMarkers, SaslHandshake,
// SaslAuthenticate, AlterPartition, FetchSnapshot, BrokerRegistration,
// BrokerHeartbeat, AllocateProducerIds.
var quotaExempt = map[int16]bool{27: true, 17: true, 36: true, 56: true, 59: true, 62: true, 63: true, 67: true}

// quotaUser is the user and client id a request's quotas are found for;
// ok is false when the request is exempt.
func (s *Server) quotaUser(req *Request) (user string, ok bool) {
	if s.deps.ClientQuotas == nil || req.conn == nil || req.Raw != nil || strings.HasPrefix(req.ClientID, "__") {
		return "", false
	}
	return quota.UserOf(req.conn.principal), true
}

// recordQuotas charges a handled request to its client's quotas: its
// bytes for a Produce, handler time for the request quota. It runs in
// the reader goroutine once the handler has returned.
func (s *Server) recordQuotas(req *Request, rep *Reply, size int, handled time.Duration) {
	user, ok := s.quotaUser(req)
	if !ok {
		return
	}
	q := s.deps.ClientQuotas
	var d time.Duration
	if req.Key == produceKey {
		d = q.Record(quota.Produce, user, req.ClientID, int64(size))
	}
	if !quotaExempt[req.Key] && !(req.Key == 24 && req.Version >= 4) && !isFollowerFetch(req) {
		d = max(d, q.Record(quota.Request, user, req.ClientID, handled.Nanoseconds()))
	}
	if d > 0 {
		rep.reqThrottle = d
		req.conn.mute(d)
	}
}

// mute keeps the connection's next request waiting for d.
func (c *conn) mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.muteUntil.Load()
		if cur >= until || c.muteUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// awaitUnmuted waits until the connection is no longer muted; false if
// it closed meanwhile.
func (c *conn) awaitUnmuted() bool {
	d := time.Until(time.Unix(0, c.muteUntil.Load()))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}
