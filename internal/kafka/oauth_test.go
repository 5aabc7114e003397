package kafka_test

// OAUTHBEARER with franz-go's sasl/oauth: signed JWTs against a JWKS
// served over HTTP (KIP-768's validator), unsecured JWTs (Kafka's default
// handler, for tests), and a refused token answered as Kafka does
// (RFC 7628's JSON error, then SASL_AUTHENTICATION_FAILED); and KIP-368
// re-authentication.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/sasl/jwttest"
	"weir/internal/testwait"
)

const oauthValidator = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"

func oauthClient(t *testing.T, addr, token string, opts ...kgo.Opt) *kgo.Client {
	return saslClient(t, addr, oauth.Auth{Token: token}.AsMechanism(), opts...)
}

func TestOAuthBearerJWKS(t *testing.T) {
	ctx := cliCtx(t)
	rsaKey, ecKey := jwttest.RSA(t, "k1"), jwttest.EC(t, "k2")
	jwks := jwttest.JWKS(t, rsaKey, ecKey)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(jwks) }))
	defer idp.Close()
	_, addr := saslNode(t, "SASL_PLAINTEXT", map[string]string{
		"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
		"listener.name.sasl.oauthbearer.sasl.server.callback.handler.class": oauthValidator,
		"sasl.oauthbearer.jwks.endpoint.url":                                idp.URL,
		"sasl.oauthbearer.expected.audience":                                "weir",
		"sasl.oauthbearer.expected.issuer":                                  "https://idp.test",
		"sasl.oauthbearer.sub.claim.name":                                   "client_id",
	})
	now := time.Now()
	claims := map[string]any{"client_id": "svc-orders", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "iss": "https://idp.test", "aud": "weir"}

	first := oauthClient(t, addr, rsaKey.Sign(t, claims), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("oauth-topic"))
	if err := first.ProduceSync(ctx, kgo.StringRecord("rs256")).FirstErr(); err != nil {
		t.Fatalf("produce with an RS256 token: %v", err)
	}
	if err := oauthClient(t, addr, ecKey.Sign(t, claims)).Ping(ctx); err != nil {
		t.Fatalf("ES256 token: %v", err)
	}
	stranger := jwttest.RSA(t, "k1")
	for what, tok := range map[string]string{
		"expired":        rsaKey.Sign(t, jwttest.With(jwttest.With(claims, "iat", now.Add(-2*time.Hour).Unix()), "exp", now.Add(-time.Hour).Unix())),
		"wrong audience": rsaKey.Sign(t, jwttest.With(claims, "aud", "kafka")),
		"wrong issuer":   rsaKey.Sign(t, jwttest.With(claims, "iss", "https://other.test")),
		"bad signature":  stranger.Sign(t, claims),
		"unknown kid":    jwttest.RSA(t, "k9").Sign(t, claims),
		"unsecured":      jwttest.Unsecured(t, claims),
		"no subject":     rsaKey.Sign(t, jwttest.With(claims, "client_id", nil)),
	} {
		err := oauthClient(t, addr, tok).Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with the JSON status", what, err)
		}
	}
	if err := first.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("produce after refused tokens: %v", err)
	}
}

// A file:// JWKS is read at start-up.
func TestOAuthBearerJWKSFile(t *testing.T) {
	ctx := cliCtx(t)
	key := jwttest.EC(t, "file-key")
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwttest.JWKS(t, key), 0o600); err != nil {
		t.Fatal(err)
	}
	_, addr := saslNode(t, "SASL_PLAINTEXT", map[string]string{
		"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
		"listener.name.sasl.oauthbearer.sasl.server.callback.handler.class": oauthValidator,
		"sasl.oauthbearer.jwks.endpoint.url":                                "file://" + path,
	})
	now := time.Now()
	claims := map[string]any{"sub": "svc-file", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if err := oauthClient(t, addr, key.Sign(t, claims)).Ping(ctx); err != nil {
		t.Fatalf("a token of the file's key: %v", err)
	}
	if err := oauthClient(t, addr, jwttest.EC(t, "file-key").Sign(t, claims)).Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a token of another key: %v", err)
	}
}

// Kafka's default OAUTHBEARER handler validates unsecured JWTs; a refused
// one is answered with the JSON error as a challenge, then, once the
// client acknowledges it with 0x01, with SASL_AUTHENTICATION_FAILED.
func TestOAuthBearerUnsecured(t *testing.T) {
	ctx := cliCtx(t)
	_, addr := saslNode(t, "SASL_PLAINTEXT", map[string]string{
		"sasl.enabled.mechanisms": "OAUTHBEARER",
		"listener.name.sasl.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";`,
		"listener.name.sasl.plain.sasl.jaas.config": "",
	})
	now := time.Now()
	claims := map[string]any{"sub": "admin", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "kafka admin"}
	cl := oauthClient(t, addr, jwttest.Unsecured(t, claims), kgo.AllowAutoTopicCreation(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	roundTrip(t, ctx, cl, "unsecured-topic")

	w := dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "OAUTHBEARER"
	if r := w.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %+v", r)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + jwttest.Unsecured(t, jwttest.With(claims, "scope", "admin")) + "\x01\x01")
	want := `{"status":"insufficient_scope", "scope":"[kafka]"}`
	if r := w.do(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 || string(r.SASLAuthBytes) != want {
		t.Fatalf("refused token: error %d, challenge %q, want %s", r.ErrorCode, r.SASLAuthBytes, want)
	}
	auth.SASLAuthBytes = []byte{1}
	if r := w.do(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || str(r.ErrorMessage) != want {
		t.Fatalf("after 0x01: error %d %q", r.ErrorCode, str(r.ErrorMessage))
	}
	w.expectClosed()
}

// reauthLog counts franz-go's re-authentications.
type reauthLog struct{ n atomic.Int32 }

func (l *reauthLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (l *reauthLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.Contains(msg, "reauthenticating") {
		l.n.Add(1)
	}
}

// connections.max.reauth.ms (KIP-368): SaslAuthenticate tells the client
// its session's lifetime; SaslHandshake on the open connection
// re-authenticates it (same mechanism and principal, at most once a
// second); a session ended by its token's expiry closes the connection
// at the next request.
func TestSASLReauthentication(t *testing.T) {
	ctx := cliCtx(t)
	_, addr := saslNode(t, "SASL_PLAINTEXT", map[string]string{
		"connections.max.reauth.ms": "3000",
		"sasl.enabled.mechanisms":   "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
	})
	login := func(w *wire, mechanism string, token []byte) (*kmsg.SASLHandshakeResponse, *kmsg.SASLAuthenticateResponse) {
		t.Helper()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = mechanism
		hr := w.do(hs).(*kmsg.SASLHandshakeResponse)
		if hr.ErrorCode != 0 {
			return hr, nil
		}
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = token
		return hr, w.do(auth).(*kmsg.SASLAuthenticateResponse)
	}
	alice := []byte("\x00alice\x00alice-secret")
	w := dial(t, addr)
	if _, r := login(w, "PLAIN", alice); r == nil || r.ErrorCode != 0 || r.SessionLifetimeMillis <= 0 || r.SessionLifetimeMillis > 3000 {
		t.Fatalf("login: %+v", r)
	}
	// The first re-authentication may come at once; the next within a
	// second is answered as on a connection that cannot re-authenticate
	// (checked when the test itself took less than a second over both).
	start := time.Now()
	if _, r := login(w, "PLAIN", alice); r == nil || r.ErrorCode != 0 || r.SessionLifetimeMillis <= 0 {
		t.Fatalf("re-authentication: %+v", r)
	}
	hr, r := login(w, "PLAIN", alice)
	switch {
	case time.Since(start) < time.Second && hr.ErrorCode != kerr.IllegalSaslState.Code:
		t.Fatalf("a second re-authentication within a second: %+v", hr)
	case hr.ErrorCode == 0 && (r == nil || r.ErrorCode != 0):
		t.Fatalf("a second re-authentication after a second: %+v", r)
	}
	if r := w.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
		t.Fatalf("metadata after re-authentication: %+v", r)
	}

	// Another principal, or another mechanism, fails the
	// re-authentication and closes the connection.
	w = dial(t, addr)
	login(w, "PLAIN", alice)
	_, r = login(w, "PLAIN", []byte("\x00bob\x00bob-secret"))
	if r == nil || r.ErrorCode != kerr.SaslAuthenticationFailed.Code || str(r.ErrorMessage) != "Cannot change principals during re-authentication from User.alice: User.bob" {
		t.Fatalf("re-authentication as bob: %+v", r)
	}
	w.expectClosed()
	w = dial(t, addr)
	login(w, "PLAIN", alice)
	// Another enabled mechanism's handshake is answered (as Kafka's);
	// the next request fails the re-authentication unanswered.
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "SCRAM-SHA-256"
	if hr := w.do(hs).(*kmsg.SASLHandshakeResponse); hr.ErrorCode != 0 {
		t.Fatalf("re-authentication handshake with another mechanism: %+v", hr)
	}
	w.send(kmsg.NewPtrSASLAuthenticateRequest())
	w.expectClosed()

	// A token's expiry ends its session before connections.max.reauth.ms:
	// a request after it closes the connection unanswered.
	now := time.Now()
	exp := now.Add(5 * time.Second).Truncate(time.Second)
	tok := jwttest.Unsecured(t, map[string]any{"sub": "alice", "iat": now.Unix(), "exp": exp.Unix()})
	w = dial(t, addr)
	if _, r := login(w, "OAUTHBEARER", []byte("n,,\x01auth=Bearer "+tok+"\x01\x01")); r == nil || r.ErrorCode != 0 || r.SessionLifetimeMillis > time.Until(exp).Milliseconds()+1 {
		t.Fatalf("OAUTHBEARER login: %+v", r)
	}
	testwait.Until(t, 30*time.Second, "the token expired", func() bool { return time.Now().After(exp.Add(50 * time.Millisecond)) })
	w.send(kmsg.NewPtrMetadataRequest())
	w.expectClosed()

	// franz-go re-authenticates before the session ends, on the same
	// connections, and keeps producing.
	var reauths reauthLog
	var connects atomic.Int32
	cl := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), kgo.WithLogger(&reauths),
		kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("reauth-topic"), kgo.WithHooks(connectHook{&connects}))
	if err := cl.ProduceSync(ctx, kgo.StringRecord("first")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := connects.Load()
	i := 0
	testwait.Until(t, 60*time.Second, "two re-authentications by franz-go", func() bool {
		i++
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		return reauths.n.Load() >= 2
	})
	if connects.Load() != before {
		t.Fatalf("franz-go opened %d connections while re-authenticating, want none (a session closed by the broker)", connects.Load()-before)
	}
}

type connectHook struct{ n *atomic.Int32 }

func (h connectHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.n.Add(1)
	}
}
