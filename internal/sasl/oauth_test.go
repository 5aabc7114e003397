package sasl

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"weir/internal/sasl/jwttest"
	"weir/internal/testwait"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func claimsAt(now time.Time, sub string) map[string]any {
	return map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "iss": "https://idp.example", "aud": []string{"weir", "other"}}
}

func clientFirstOf(token string) []byte { return []byte("n,,\x01auth=Bearer " + token + "\x01\x01") }

func TestJWTValidation(t *testing.T) {
	rsaKey, ecKey, stranger := jwttest.RSA(t, "r1"), jwttest.EC(t, "e1"), jwttest.RSA(t, "r1")
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwttest.JWKS(t, rsaKey, ecKey), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := OpenJWKS(context.Background(), "file://"+path, JWKSConfig{}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	v := NewJWTValidator(JWTConfig{Keys: keys, Audience: []string{"weir"}, Issuer: "https://idp.example", SubClaim: "sub", ScopeClaim: "scope",
		ClockSkew: 30 * time.Second, Now: func() time.Time { return now }})
	good := claimsAt(now, "alice")
	for _, s := range []jwttest.Key{rsaKey, ecKey} {
		tok, err := v.Validate(s.Sign(t, jwttest.With(good, "scope", "read write")))
		if err != nil || tok.Principal != "alice" || !tok.Expiry.Equal(now.Add(time.Hour)) || len(tok.Scopes) != 1 {
			t.Errorf("%s: %+v %v", s.Alg, tok, err)
		}
	}
	past := now.Add(-2 * time.Hour)
	bad := map[string]string{
		"expired":           rsaKey.Sign(t, jwttest.With(claimsAt(past, "alice"), "exp", now.Add(-31*time.Second).Unix())),
		"not yet valid":     rsaKey.Sign(t, jwttest.With(good, "nbf", now.Add(time.Minute).Unix())),
		"no exp":            rsaKey.Sign(t, jwttest.With(good, "exp", nil)),
		"no iat":            rsaKey.Sign(t, jwttest.With(good, "iat", nil)),
		"wrong audience":    rsaKey.Sign(t, jwttest.With(good, "aud", "someone-else")),
		"no audience":       rsaKey.Sign(t, jwttest.With(good, "aud", nil)),
		"wrong issuer":      rsaKey.Sign(t, jwttest.With(good, "iss", "https://evil.example")),
		"no subject":        rsaKey.Sign(t, jwttest.With(good, "sub", "  ")),
		"bad signature":     stranger.Sign(t, good),
		"unknown kid":       jwttest.RSA(t, "r2").Sign(t, good),
		"alg none":          jwttest.Unsecured(t, good),
		"HS256":             jwttest.Header(t, map[string]any{"alg": "HS256", "kid": "r1"}, good, []byte("x")),
		"two sections":      "a.b",
		"critical header":   jwttest.Header(t, map[string]any{"alg": "RS256", "kid": "r1", "crit": []string{"exp"}}, good, []byte("x")),
		"garbage":           "!!!.???.###",
		"claims not object": strings.Join([]string{strings.Split(rsaKey.Sign(t, good), ".")[0], base64.RawURLEncoding.EncodeToString([]byte("[1]")), "x"}, "."),
	}
	for what, tok := range bad {
		var te *TokenError
		if _, err := v.Validate(tok); !errors.As(err, &te) || te.Status != "invalid_token" {
			t.Errorf("%s: %v, want invalid_token", what, err)
		}
	}
	// Within the clock skew, an expired token still passes.
	if _, err := v.Validate(rsaKey.Sign(t, jwttest.With(good, "exp", now.Add(-20*time.Second).Unix()))); err != nil {
		t.Errorf("expired within the clock skew: %v", err)
	}
	// Without an expected audience, a token naming one is refused (as
	// jose4j's default), one naming none accepted.
	noAud := NewJWTValidator(JWTConfig{Keys: keys, SubClaim: "sub", ScopeClaim: "scope", Now: func() time.Time { return now }})
	if _, err := noAud.Validate(rsaKey.Sign(t, good)); err == nil {
		t.Error("a token with an aud claim passed a validator expecting none")
	}
	if _, err := noAud.Validate(rsaKey.Sign(t, jwttest.With(good, "aud", nil))); err != nil {
		t.Errorf("no aud claim, none expected: %v", err)
	}
	// The subject claim's name is configurable.
	custom := NewJWTValidator(JWTConfig{Keys: keys, Audience: []string{"weir"}, SubClaim: "client_id", ScopeClaim: "scope", Now: func() time.Time { return now }})
	if tok, err := custom.Validate(rsaKey.Sign(t, jwttest.With(good, "client_id", "svc-1"))); err != nil || tok.Principal != "svc-1" {
		t.Errorf("client_id as subject: %+v %v", tok, err)
	}
}

func TestOAuthBearerServer(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	v := NewUnsecuredValidator(UnsecuredConfig{PrincipalClaim: "sub", ScopeClaim: "scope", RequiredScope: []string{"kafka"}, Now: func() time.Time { return now }})
	unsecured := func(claims map[string]any) string { return jwttest.Unsecured(t, claims) }
	good := map[string]any{"sub": "bob", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "scope": "kafka other"}

	s := NewOAuthBearer(v, quiet)
	if _, done, err := s.Step([]byte("n,a=bob,\x01auth=Bearer " + unsecured(good) + "\x01ext=v a=l\x01\x01")); !done || err != nil || s.User() != "bob" ||
		!s.CredentialExpiry().Equal(now.Add(time.Minute)) {
		t.Fatalf("login: done=%v err=%v user=%q", done, err, s.User())
	}

	// A refused token: the JSON error as a challenge, then the failure
	// once the client acknowledges it.
	for claims, want := range map[*map[string]any]string{
		ptr(jwttest.With(good, "exp", now.Add(-time.Second).Unix())): `{"status":"invalid_token"}`,
		ptr(jwttest.With(good, "scope", "other")):                    `{"status":"insufficient_scope", "scope":"[kafka]"}`,
		ptr(jwttest.With(good, "sub", nil)):                          `{"status":"invalid_token"}`,
	} {
		s := NewOAuthBearer(v, quiet)
		answer, done, err := s.Step(clientFirstOf(unsecured(*claims)))
		if done || err != nil || string(answer) != want {
			t.Errorf("%v: answer %q done=%v err=%v, want %s", *claims, answer, done, err, want)
		}
		_, _, err = s.Step([]byte{1})
		var ae *AuthError
		if !errors.As(err, &ae) || ae.Msg != want {
			t.Errorf("%v: after 0x01: %v", *claims, err)
		}
	}

	s = NewOAuthBearer(v, quiet)
	if _, _, err := s.Step([]byte("n,a=mallory,\x01auth=Bearer " + unsecured(good) + "\x01\x01")); err == nil || !strings.Contains(err.Error(), "authorization id (mallory)") {
		t.Errorf("another authzid: %v", err)
	}
	for _, msg := range []string{"", "\x01", "n,,\x01\x01", "n,,\x01auth=Basic abc\x01\x01", "n,,\x01auth=Bearer a b\x01\x01", "y,,\x01auth=Bearer abc\x01\x01",
		"n,,\x01auth=Bearer abc\x01", "n,,auth=Bearer abc\x01\x01"} {
		var ae *AuthError
		if _, _, err := NewOAuthBearer(v, quiet).Step([]byte(msg)); err == nil || errors.As(err, &ae) {
			t.Errorf("%q: %v, want a malformed message", msg, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// An http(s) JWKS is refreshed when a token names an unknown key id; that
// token fails, a later one with the new key passes.
func TestJWKSRefresh(t *testing.T) {
	old, rotated := jwttest.RSA(t, "k1"), jwttest.EC(t, "k2")
	var current atomic.Pointer[[]byte]
	current.Store(ptr(jwttest.JWKS(t, old)))
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Write(*current.Load())
	}))
	defer srv.Close()
	keys, err := OpenJWKS(context.Background(), srv.URL, JWKSConfig{Refresh: time.Hour, Backoff: 10 * time.Millisecond, BackoffMax: time.Second}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	v := NewJWTValidator(JWTConfig{Keys: keys, SubClaim: "sub", ScopeClaim: "scope"})
	claims := jwttest.With(claimsAt(time.Now(), "carol"), "aud", nil)
	if _, err := v.Validate(old.Sign(t, claims)); err != nil {
		t.Fatalf("the first key: %v", err)
	}
	current.Store(ptr(jwttest.JWKS(t, rotated)))
	if _, err := v.Validate(rotated.Sign(t, claims)); err == nil {
		t.Fatal("a token of a key not fetched yet passed")
	}
	testwait.Until(t, 30*time.Second, "the JWKS refetched", func() bool { return fetches.Load() >= 2 })
	testwait.Until(t, 30*time.Second, "the rotated key accepted", func() bool {
		_, err := v.Validate(rotated.Sign(t, claims))
		return err == nil
	})
	if _, err := v.Validate(old.Sign(t, claims)); err == nil {
		t.Error("a key no longer in the set still verifies")
	}
	// A server that fails the first fetch fails the start.
	down := httptest.NewServer(http.NotFoundHandler())
	defer down.Close()
	if _, err := OpenJWKS(context.Background(), down.URL, JWKSConfig{Refresh: time.Hour}, quiet); err == nil {
		t.Error("a JWKS URL answering 404 opened")
	}
}
