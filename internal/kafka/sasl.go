package kafka

// SASL authentication on SASL_PLAINTEXT and SASL_SSL listeners:
// SaslHandshake picks an enabled mechanism, then SaslAuthenticate (v0-2)
// carries its tokens until the client is authenticated; after a v0
// handshake (before KIP-152) the tokens come and go as bare size-prefixed
// frames instead, without a Kafka header, and a failed login closes the
// connection without an answer. Before that, a connection may
// send only ApiVersions and these two; anything else closes it, as in
// Kafka. A failed login is answered with SASL_AUTHENTICATION_FAILED after
// connection.failed.authentication.delay.ms, and the connection closed.
// On other listeners, and once authenticated (weir does not
// re-authenticate, connections.max.reauth.ms=0), both APIs answer
// ILLEGAL_SASL_STATE.

import (
	"slices"
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
}

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// saslState is where a connection of a SASL listener is in its login.
type saslState int8

const (
	saslAwaitHandshake saslState = iota
	saslAwaitAuthenticate
	saslAwaitBareToken // after a SaslHandshake v0
	saslDone
)

// beforeAuthentication are the APIs a connection may use before it has
// authenticated.
var beforeAuthentication = map[int16]bool{apiVersionsKey: true, saslHandshakeKey: true, saslAuthenticateKey: true}

func (s *Server) handleSaslHandshake(req *Request) *Reply {
	r := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := respFor(req).(*kmsg.SASLHandshakeResponse)
	c := req.conn
	cfg := s.cfg.SASL
	if cfg == nil || c.sasl != saslAwaitHandshake {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return done(resp)
	}
	resp.SupportedMechanisms = cfg.Mechanisms
	if !slices.Contains(cfg.Mechanisms, r.Mechanism) {
		s.lg.Info("failed authentication (unsupported SASL mechanism)", "remote", req.RemoteAddr, "mechanism", r.Mechanism)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		rep := done(resp)
		rep.closeConn = true
		return rep
	}
	if r.Mechanism == sasl.Plain {
		c.saslServer = sasl.NewPlain(cfg.PlainUsers)
	} else {
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
	if err != nil {
		s.lg.Info("failed authentication", "remote", c.nc.RemoteAddr().String(), "mechanism", c.saslMechanism, "err", err)
		rep := newReply()
		rep.none, rep.closeConn = true, true
		time.AfterFunc(s.cfg.SASL.FailedDelay, func() { rep.complete(nil) })
		return rep
	}
	if finished {
		s.authenticated(c)
	}
	return &Reply{ready: closedChan, raw: answer, bare: true}
}

// authenticated ends a connection's login.
func (s *Server) authenticated(c *conn) {
	c.principal = "User:" + c.saslServer.User()
	c.sasl, c.saslServer = saslDone, nil
	s.lg.Debug("authenticated", "remote", c.nc.RemoteAddr().String(), "mechanism", c.saslMechanism, "principal", c.principal)
}

func (s *Server) handleSaslAuthenticate(req *Request) *Reply {
	r := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := respFor(req).(*kmsg.SASLAuthenticateResponse)
	c := req.conn
	if s.cfg.SASL == nil || c.sasl != saslAwaitAuthenticate {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		if c.sasl == saslAwaitHandshake {
			msg = "Unexpected SaslAuthenticate request: no SASL mechanism was chosen with SaslHandshake"
		}
		resp.ErrorMessage = &msg
		return done(resp)
	}
	answer, finished, err := c.saslServer.Step(r.SASLAuthBytes)
	if err != nil {
		msg := err.Error()
		if _, ok := err.(*sasl.AuthError); !ok {
			msg = "Authentication failed during authentication due to invalid credentials with SASL mechanism " + c.saslMechanism
		}
		s.lg.Info("failed authentication", "remote", req.RemoteAddr, "mechanism", c.saslMechanism, "err", err)
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		// The answer, and the close, wait: a client guessing passwords
		// gets one try per delay and connection.
		rep := newReply()
		rep.closeConn = true
		time.AfterFunc(s.cfg.SASL.FailedDelay, func() { rep.complete(resp) })
		return rep
	}
	resp.SASLAuthBytes = answer
	if finished {
		s.authenticated(c)
	}
	return done(resp)
}
