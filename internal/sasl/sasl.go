// Package sasl is the broker side of Kafka's SASL mechanisms: PLAIN with
// the users of the JAAS configuration, SCRAM-SHA-256 and SCRAM-SHA-512
// (RFC 5802, as Kafka's ScramSaslServer) with credentials kept in the
// metadata log, the credentials' derivation from a password, OAUTHBEARER
// (RFC 7628) with JWTs validated against a JWKS or unsecured, and Kafka's
// JAAS configuration syntax; and the login of weir's own connections to
// SASL listeners of other nodes (client.go, with franz-go's mechanisms).
package sasl

import (
	"errors"
	"fmt"
	"time"
)

// Mechanism names.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
)

// Mechanisms are the mechanisms weir serves.
var Mechanisms = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// LoginMechanisms are the mechanisms weir's own connections log in with.
var LoginMechanisms = []string{Plain, ScramSHA256, ScramSHA512}

// Server authenticates one client. Step takes the client's next token and
// returns the answer; done is set once the client is authenticated as
// User(). An error ends the exchange: an *AuthError is a failed login
// whose message the client may read, any other error a malformed
// exchange. CredentialExpiry, once done, is when the credential the
// client logged in with expires (zero: never; an OAUTHBEARER token's
// exp), which ends its session (KIP-368).
type Server interface {
	Step(token []byte) (answer []byte, done bool, err error)
	User() string
	CredentialExpiry() time.Time
}

// AuthError is a failed authentication, with the message Kafka sends.
type AuthError struct{ Msg string }

func (e *AuthError) Error() string { return e.Msg }

// invalidCredentials is Kafka's message for a SCRAM login that fails for
// any reason (SaslServerAuthenticator hides which).
func invalidCredentials(mechanism string) error {
	return &AuthError{Msg: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism}
}

// plainServer is SASL/PLAIN (RFC 4616): one token, authzid NUL user NUL
// password.
type plainServer struct {
	users map[string]string
	user  string
}

// NewPlain returns a PLAIN server checking passwords against users.
func NewPlain(users map[string]string) Server { return &plainServer{users: users} }

func (p *plainServer) User() string                { return p.user }
func (p *plainServer) CredentialExpiry() time.Time { return time.Time{} }

func (p *plainServer) Step(token []byte) ([]byte, bool, error) {
	parts := splitNUL(token)
	if len(parts) != 3 {
		return nil, false, &AuthError{Msg: fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))}
	}
	authz, user, pass := parts[0], parts[1], parts[2]
	switch {
	case user == "":
		return nil, false, &AuthError{Msg: "Authentication failed: username not specified"}
	case pass == "":
		return nil, false, &AuthError{Msg: "Authentication failed: password not specified"}
	}
	want, ok := p.users[user]
	if !ok || !constantEqual([]byte(want), []byte(pass)) {
		return nil, false, &AuthError{Msg: "Authentication failed: Invalid username or password"}
	}
	if authz != "" && authz != user {
		return nil, false, &AuthError{Msg: "Authentication failed: Client requested an authorization id that is different from username"}
	}
	p.user = user
	return nil, true, nil
}

func splitNUL(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return append(out, string(b[start:]))
}

var errDone = errors.New("the authentication exchange is over")
