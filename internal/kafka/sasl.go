package kafka

// SASL authentication on SASL_PLAINTEXT and SASL_SSL listeners, as
// Kafka's SaslServerAuthenticator: SaslHandshake picks an enabled
// mechanism, then SaslAuthenticate (v0-2) carries its tokens until the
// client is authenticated; after a v0 handshake (before KIP-152) the
// tokens come and go as bare size-prefixed frames instead, without a
// Kafka header. Before the handshake a connection may send ApiVersions
// (once it is answered) and SaslHandshake; any other request, or a second
// ApiVersions, closes it at once, unanswered (Kafka's
// InvalidRequestException and IllegalStateException, which are not
// authentication failures). After the handshake only SaslAuthenticate: a
// failed login, an unsupported mechanism or another request fails the
// authentication; the answer (another request's error response with
// ILLEGAL_SASL_STATE, see saslStateError) waits
// connection.failed.authentication.delay.ms, then the connection closes.
//
// A session ends with its credential (an OAUTHBEARER token's exp) or
// after connections.max.reauth.ms, whichever comes first (KIP-368);
// SaslAuthenticate v1+ tells the client how long it has. Its next
// SaslHandshake then re-authenticates the open connection (at most once a
// second, with the same mechanism and principal: another mechanism's
// handshake is answered, then its next request fails); any other request
// after the end closes it unanswered. Without a session end, and on other
// listeners, SaslHandshake and SaslAuthenticate answer ILLEGAL_SASL_STATE.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/sasl"
)

// SASLConfig is the SASL setting of a listener.
type SASLConfig struct {
	// Mechanisms are the enabled mechanisms (sasl.enabled.mechanisms).
	Mechanisms []string
	// PlainUsers are the PLAIN users and passwords (the listener's
	// PlainLoginModule user_<name> options).
	PlainUsers map[string]string
	// FailedDelay is connection.failed.authentication.delay.ms.
	FailedDelay time.Duration
	// MaxReceive is sasl.server.max.receive.size: the largest request
	// before authentication.
	MaxReceive int32
	// OAuth validates OAUTHBEARER tokens (nil: the mechanism is not
	// enabled).
	OAuth sasl.Validator
	// MaxReauth is connections.max.reauth.ms (0: a session lasts as long
	// as its credential).
	MaxReauth time.Duration
}

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// saslState is where a connection of a SASL listener is in its login.
type saslState int8

const (
	saslAwaitHandshake     saslState = iota
	saslAwaitHandshakeOnly           // ApiVersions answered
	saslAwaitAuthenticate
	saslAwaitBareToken     // after a SaslHandshake v0
	saslReauthBadMechanism // re-authenticating with another mechanism
	saslDone
)

// minReauthInterval is Kafka's shortest time between two
// re-authentications of a connection.
const minReauthInterval = time.Second

// saslGate runs before a request of a connection on a SASL listener is
// dispatched. It returns nil to dispatch it, or the reply that answers it
// instead (closing the connection); closeNow closes it without a reply.
func (s *Server) saslGate(c *conn, req *Request) (rep *Reply, closeNow bool) {
	remote := c.nc.RemoteAddr().String()
	switch c.sasl {
	case saslDone:
		if c.sessionExpiry.IsZero() {
			return nil, false
		}
		now := time.Now()
		if req.Key == saslHandshakeKey && (c.reauthStart.IsZero() || now.Sub(c.reauthStart) >= minReauthInterval) {
			c.reauthStart, c.reauthenticating, c.sasl = now, true, saslAwaitHandshake
			return nil, false
		}
		if now.After(c.sessionExpiry) {
			s.lg.Info("closing connection: its SASL session expired", "remote", remote, "principal", c.principal, "api", kmsg.NameForKey(req.Key))
			return nil, true
		}
		return nil, false
	case saslAwaitHandshake, saslAwaitHandshakeOnly:
		switch {
		case req.Key == saslHandshakeKey:
			return nil, false
		case req.Key == apiVersionsKey && c.sasl == saslAwaitHandshakeOnly:
			s.lg.Info("closing connection: a second ApiVersions request during SASL authentication", "remote", remote)
			return nil, true
		case req.Key == apiVersionsKey:
			if req.Body != nil {
				c.sasl = saslAwaitHandshakeOnly
			}
			return nil, false
		}
		s.lg.Info("closing connection: unexpected request during SASL handshake", "remote", remote, "api", kmsg.NameForKey(req.Key))
		return nil, true
	case saslReauthBadMechanism:
		s.lg.Info("failed re-authentication: "+c.badMechanism, "remote", remote)
		return s.failLater(nil), false
	default: // saslAwaitAuthenticate
		if req.Key == saslAuthenticateKey {
			return nil, false
		}
		s.lg.Info("failed "+c.authText()+": unexpected request during SASL authentication", "remote", remote, "api", kmsg.NameForKey(req.Key))
		return s.failLater(saslStateError(req)), false
	}
}

// saslStateError is Kafka's error response (its getErrorResponse) with
// ILLEGAL_SASL_STATE to a request other than SaslAuthenticate after a
// SaslHandshake, for the APIs whose error response is their top-level
// error code alone; nil (the connection closes unanswered) for the
// others, whose Kafka error response names each resource of the request.
func saslStateError(req *Request) kmsg.Response {
	if req.Body == nil { // an ApiVersions of a version weir does not know
		return nil
	}
	code := kerr.IllegalSaslState.Code
	resp := respFor(req)
	switch r := resp.(type) {
	case *kmsg.SASLHandshakeResponse:
		r.ErrorCode = code
	case *kmsg.ApiVersionsResponse:
		r.ErrorCode = code
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.SyncGroupResponse:
		r.ErrorCode, r.MemberAssignment = code, []byte{}
	case *kmsg.LeaveGroupResponse:
		r.ErrorCode = code
	case *kmsg.ListGroupsResponse:
		r.ErrorCode = code
	case *kmsg.AddOffsetsToTxnResponse:
		r.ErrorCode = code
	case *kmsg.EndTxnResponse:
		r.ErrorCode = code
	default:
		return nil
	}
	return resp
}

// failLater answers a failed authentication with resp (nil: no answer)
// after connection.failed.authentication.delay.ms, then closes the
// connection: a client guessing passwords gets one try per delay and
// connection.
func (s *Server) failLater(resp kmsg.Response) *Reply {
	s.listener.AuthFailed()
	rep := newReply()
	rep.closeConn, rep.none = true, resp == nil
	time.AfterFunc(s.cfg.SASL.FailedDelay, func() { rep.complete(resp) })
	return rep
}

func (s *Server) handleSaslHandshake(req *Request) *Reply {
	r := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := respFor(req).(*kmsg.SASLHandshakeResponse)
	c := req.conn
	cfg := s.cfg.SASL
	if cfg == nil || (c.sasl != saslAwaitHandshake && c.sasl != saslAwaitHandshakeOnly) {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return done(resp)
	}
	resp.SupportedMechanisms = cfg.Mechanisms
	if !slices.Contains(cfg.Mechanisms, r.Mechanism) {
		s.lg.Info("failed authentication (unsupported SASL mechanism)", "remote", req.RemoteAddr, "mechanism", r.Mechanism)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return s.failLater(resp)
	}
	if c.reauthenticating && r.Mechanism != c.saslMechanism {
		// As Kafka: the handshake is answered, the next request fails.
		c.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", r.Mechanism, c.saslMechanism)
		c.sasl = saslReauthBadMechanism
		return done(resp)
	}
	switch r.Mechanism {
	case sasl.Plain:
		c.saslServer = sasl.NewPlain(cfg.PlainUsers)
	case sasl.OAuthBearer:
		c.saslServer = sasl.NewOAuthBearer(cfg.OAuth, s.lg.With("remote", req.RemoteAddr))
	default:
		id := sasl.ScramID(r.Mechanism)
		c.saslServer = sasl.NewScram(id, func(user string) (sasl.Credential, bool) {
			cred, ok := s.deps.Metadata.Image().Scram[metadata.ScramKey{User: user, Mechanism: id}]
			return sasl.Credential{Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations}, ok
		})
	}
	c.saslMechanism, c.sasl = r.Mechanism, saslAwaitAuthenticate
	if req.Version == 0 {
		c.sasl = saslAwaitBareToken
	}
	return done(resp)
}

// saslBareToken answers a token sent after a SaslHandshake v0: the
// server's token as a bare frame, or, on a failed login, the close of the
// connection after the delay.
func (s *Server) saslBareToken(c *conn, token []byte) *Reply {
	answer, finished, err := c.saslServer.Step(token)
	if err == nil && finished {
		_, err = s.authenticated(c)
	}
	if err != nil {
		s.lg.Info("failed "+c.authText(), "remote", c.nc.RemoteAddr().String(), "mechanism", c.saslMechanism, "err", err)
		return s.failLater(nil)
	}
	return &Reply{ready: closedChan, raw: answer, bare: true}
}

// authText names what the connection is doing, for messages.
func (c *conn) authText() string {
	if c.reauthenticating {
		return "re-authentication"
	}
	return "authentication"
}

// authenticated ends a connection's login: it sets the principal and
// returns the session's lifetime (0: unbounded). A re-authentication
// must keep the principal.
func (s *Server) authenticated(c *conn) (time.Duration, error) {
	principal := "User:" + c.saslServer.User()
	if c.reauthenticating && principal != c.principal {
		// Kafka prints a principal as <type>.<name> here.
		dotted := func(p string) string { return strings.Replace(p, ":", ".", 1) }
		return 0, &sasl.AuthError{Msg: fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", dotted(c.principal), dotted(principal))}
	}
	now := time.Now()
	var lifetime time.Duration
	credential, maxReauth := c.saslServer.CredentialExpiry(), s.cfg.SASL.MaxReauth
	switch {
	case credential.IsZero() && maxReauth <= 0:
	case credential.IsZero():
		lifetime = maxReauth
	case maxReauth <= 0:
		lifetime = max(0, credential.Sub(now))
	default:
		lifetime = max(0, min(credential.Sub(now), maxReauth))
	}
	lifetime = lifetime.Truncate(time.Millisecond)
	c.sessionExpiry = time.Time{}
	if lifetime > 0 || !credential.IsZero() {
		c.sessionExpiry = now.Add(lifetime)
	}
	s.lg.Debug("authenticated", "remote", c.nc.RemoteAddr().String(), "mechanism", c.saslMechanism, "principal", principal,
		"reauthentication", c.reauthenticating, "session_lifetime", lifetime)
	c.principal = principal
	c.sasl, c.saslServer, c.reauthenticating = saslDone, nil, false
	s.listener.Authenticated()
	return lifetime, nil
}

func (s *Server) handleSaslAuthenticate(req *Request) *Reply {
	r := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := respFor(req).(*kmsg.SASLAuthenticateResponse)
	c := req.conn
	if s.cfg.SASL == nil || c.sasl != saslAwaitAuthenticate {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return done(resp)
	}
	answer, finished, err := c.saslServer.Step(r.SASLAuthBytes)
	var lifetime time.Duration
	if err == nil && finished {
		lifetime, err = s.authenticated(c)
	}
	if err != nil {
		msg := err.Error()
		if ae, ok := err.(*sasl.AuthError); ok {
			msg = ae.Msg
		} else {
			msg = "Authentication failed during " + c.authText() + " due to invalid credentials with SASL mechanism " + c.saslMechanism
		}
		s.lg.Info("failed "+c.authText(), "remote", req.RemoteAddr, "mechanism", c.saslMechanism, "err", err)
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		return s.failLater(resp)
	}
	resp.SASLAuthBytes = answer
	resp.SessionLifetimeMillis = lifetime.Milliseconds()
	return done(resp)
}
