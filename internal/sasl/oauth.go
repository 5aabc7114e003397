package sasl

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"
)

// OAUTHBEARER (RFC 7628) as Kafka's OAuthBearerSaslServer: the client's
// first message carries a bearer token, which a Validator checks. A token
// refused is answered with RFC 7628's JSON error as a server challenge;
// the client acknowledges it with a single 0x01 and the login then fails
// with that JSON as its message.

// OAuthBearerLoginModule is Kafka's login module of OAUTHBEARER.
const OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

// Token is a validated bearer token.
type Token struct {
	// Principal is the token's subject (the principal name).
	Principal string
	Scopes    []string
	// Expiry ends the session the token opened (its exp claim).
	Expiry time.Time
}

// TokenError is a token refused. Status and Scope are what the client
// sees (RFC 6750's error code, and the scope needed when it is
// "insufficient_scope"); Reason is for the broker's log only, as in Kafka.
type TokenError struct{ Status, Scope, Reason string }

func (e *TokenError) Error() string { return e.Status + ": " + e.Reason }

func invalidToken(format string, args ...any) error {
	return &TokenError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// A Validator checks a bearer token: Kafka's server callback handlers
// (OAuthBearerValidatorCallbackHandler against a JWKS, or the unsecured
// one). A refused token is a *TokenError.
type Validator interface {
	Validate(token string) (Token, error)
}

type oauthServer struct {
	v       Validator
	lg      *slog.Logger
	user    string
	expiry  time.Time
	failure string // the JSON error sent, awaiting the client's 0x01
}

// NewOAuthBearer returns an OAUTHBEARER server checking tokens with v and
// logging why a token is refused to lg (the client only sees the status).
func NewOAuthBearer(v Validator, lg *slog.Logger) Server { return &oauthServer{v: v, lg: lg} }

func (o *oauthServer) User() string { return o.user }

// CredentialExpiry is the token's expiry: the session ends there.
func (o *oauthServer) CredentialExpiry() time.Time { return o.expiry }

func (o *oauthServer) Step(msg []byte) ([]byte, bool, error) {
	if len(msg) == 1 && msg[0] == kvsep && o.failure != "" {
		return nil, false, &AuthError{Msg: o.failure}
	}
	o.failure = ""
	authzid, bearer, err := parseClientFirst(msg)
	if err != nil {
		return nil, false, err
	}
	tok, err := o.v.Validate(bearer)
	if err != nil {
		te := &TokenError{Status: "invalid_token", Reason: err.Error()}
		errors.As(err, &te)
		o.lg.Info("OAUTHBEARER token refused", "status", te.Status, "reason", te.Reason)
		o.failure = jsonError(te)
		return []byte(o.failure), false, nil
	}
	if authzid != "" && authzid != tok.Principal {
		return nil, false, &AuthError{Msg: fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			authzid, tok.Principal)}
	}
	o.user, o.expiry = tok.Principal, tok.Expiry
	return nil, true, nil
}

// jsonError is Kafka's RFC 7628 error message.
func jsonError(e *TokenError) string {
	s := fmt.Sprintf(`{"status":"%s"`, e.Status)
	if e.Scope != "" {
		s += fmt.Sprintf(`, "scope":"%s"`, e.Scope)
	}
	return s + "}"
}

const kvsep = 0x01

// clientFirst is the grammar of the client's first message (RFC 7628
// section 3.1, as Kafka's OAuthBearerClientInitialResponse reads it): the
// GS2 header with an optional authzid, then key=value pairs each ended by
// 0x01, then 0x01.
var clientFirst = regexp.MustCompile("^n,(?:a=((?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01)*)\x01$")

// authValue is the auth pair's value: a scheme and a token.
var authValue = regexp.MustCompile(`^(\w+) +([-_.a-zA-Z0-9]+)$`)

var errClientFirst = errors.New("Invalid OAUTHBEARER client first message")

// parseClientFirst returns the authzid and the bearer token of the
// client's first message. Extensions (the other pairs) are accepted and
// unused, as Kafka's validator callback handlers accept them.
func parseClientFirst(msg []byte) (authzid, token string, err error) {
	m := clientFirst.FindSubmatch(msg)
	if m == nil {
		return "", "", errClientFirst
	}
	auth := ""
	for _, kv := range strings.Split(strings.TrimSuffix(string(m[2]), "\x01"), "\x01") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "auth" {
			auth = v
		}
	}
	if auth == "" {
		return "", "", fmt.Errorf("%w: 'auth' not specified", errClientFirst)
	}
	a := authValue.FindStringSubmatch(auth)
	if a == nil {
		return "", "", fmt.Errorf("%w: invalid auth value", errClientFirst)
	}
	if !strings.EqualFold(a[1], "bearer") {
		return "", "", fmt.Errorf("%w: invalid scheme %q", errClientFirst, a[1])
	}
	return string(m[1]), a[2], nil
}
