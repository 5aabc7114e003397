package sasl

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"weir/internal/sasl/jwttest"
)

// No token crashes a server or logs in without the password: each
// fuzzed exchange feeds the tokens (split at 0xff) to a PLAIN, a SCRAM and
// an OAUTHBEARER server (with a JWKS whose key the fuzzer cannot sign
// with) in turn.
func FuzzServers(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("n,,n=alice,r=abc\xffc=biws,r=abcdef,p=AAAA"))
	f.Add([]byte("n,a=alice,n=alice,r=x\xffc=biws,r=x,p="))
	f.Add([]byte("n,,n=al=2Cice,r=x,ext=1"))
	f.Add([]byte("n,a=alice,\x01auth=Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhIn0.c2ln\x01x=y\x01\x01\xff\x01"))
	salt := []byte("salt")
	salted, _ := SaltedPassword(ScramSHA256ID, "alice-secret", salt, 4096)
	cred := NewCredential(ScramSHA256ID, salted, salt, 4096)
	lookup := func(u string) (Credential, bool) { return cred, u == "alice" }
	keys, err := parseJWKS(jwttest.JWKS(f, jwttest.RSA(f, "k1"), jwttest.EC(f, "k2")))
	if err != nil {
		f.Fatal(err)
	}
	jwt := NewJWTValidator(JWTConfig{Keys: &JWKS{keys: keys}, SubClaim: "sub", ScopeClaim: "scope"})
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		tokens := bytes.Split(data, []byte{0xff})
		for _, srv := range []Server{NewPlain(map[string]string{"alice": "alice-secret"}), NewScram(ScramSHA256ID, lookup), NewOAuthBearer(jwt, lg)} {
			for _, tok := range tokens {
				_, done, err := srv.Step(tok)
				if done {
					// Only PLAIN with the right password can finish
					// from fuzzed bytes (a SCRAM proof needs the key,
					// a JWT the signing key).
					if _, plain := srv.(*plainServer); !plain || !bytes.Contains(tok, []byte("alice-secret")) {
						t.Fatalf("logged in as %q with %q", srv.User(), data)
					}
				}
				if err != nil || done {
					break
				}
			}
		}
	})
}

func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a\"b" debug=true;`)
	f.Add(`M optional;`)
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJAAS(s)
		if err == nil && (j.Module == "" || j.Flag == "") {
			t.Fatalf("%q parsed without a module or flag", s)
		}
	})
}

// FuzzJWT feeds a key set and a token to the JWKS parser and the signed
// and unsecured validators: none may panic, and a token accepted has a
// subject and an expiry.
func FuzzJWT(f *testing.F) {
	k := jwttest.RSA(f, "k1")
	set := jwttest.JWKS(f, k, jwttest.EC(f, "k2"))
	now := time.Unix(1_800_000_000, 0)
	claims := map[string]any{"sub": "alice", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "aud": "weir", "scope": []string{"a", "b"}}
	f.Add(set, k.Sign(f, claims))
	f.Add(set, jwttest.Unsecured(f, claims))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`), "a.b.c")
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`), "..")
	f.Fuzz(func(t *testing.T, jwks []byte, token string) {
		keys, err := parseJWKS(jwks)
		if err != nil {
			return
		}
		for _, v := range []Validator{
			NewJWTValidator(JWTConfig{Keys: &JWKS{keys: keys}, Audience: []string{"weir"}, SubClaim: "sub", ScopeClaim: "scope", Now: func() time.Time { return now }}),
			NewUnsecuredValidator(UnsecuredConfig{PrincipalClaim: "sub", ScopeClaim: "scope", RequiredScope: []string{"a"}, Now: func() time.Time { return now }}),
		} {
			tok, err := v.Validate(token)
			if err == nil && (strings.TrimSpace(tok.Principal) == "" || !tok.Expiry.After(now.Add(-time.Minute))) {
				t.Fatalf("accepted %+v", tok)
			}
			var te *TokenError
			if err != nil && !errors.As(err, &te) {
				t.Fatalf("refused with %T %v, not a *TokenError", err, err)
			}
		}
	})
}
