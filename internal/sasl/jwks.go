package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// JWKS is the key set tokens are verified with
// (sasl.oauthbearer.jwks.endpoint.url). A file:// URL is read once, at
// start-up, as Kafka's; an http(s) URL is fetched at start-up, then again
// every refresh period (failed fetches retried with a backoff, the last
// keys kept meanwhile), and sooner when a token names a key id the set
// lacks (at most once a minute per key id, as Kafka's
// RefreshingHttpsJwks; that token still fails).
type JWKS struct {
	url string
	cfg JWKSConfig
	lg  *slog.Logger

	mu      sync.Mutex
	keys    []jwk
	missed  map[string]time.Time // key ids that asked for a refresh
	wake    chan struct{}
	stop    context.CancelFunc
	stopped chan struct{}
}

// JWKSConfig is the refresh setting of an http(s) JWKS.
type JWKSConfig struct {
	// Refresh is sasl.oauthbearer.jwks.endpoint.refresh.ms.
	Refresh time.Duration
	// Backoff and BackoffMax are sasl.oauthbearer.jwks.endpoint.retry.backoff.ms
	// and .max.ms.
	Backoff, BackoffMax time.Duration
	// Client fetches the set (nil: a client with a 10 s timeout).
	Client *http.Client
}

type jwk struct {
	kid, alg, use string
	key           crypto.PublicKey
}

// Kafka's limits on refreshes asked for by unknown key ids.
const (
	missedKidInterval = time.Minute
	missedKidMaxLen   = 1000
	missedKidMax      = 16
)

// OpenJWKS loads the key set at rawURL. For an http(s) URL it then keeps
// it fresh until Close.
func OpenJWKS(ctx context.Context, rawURL string, cfg JWKSConfig, lg *slog.Logger) (*JWKS, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	s := &JWKS{url: rawURL, cfg: cfg, lg: lg, missed: map[string]time.Time{}, wake: make(chan struct{}, 1)}
	switch u.Scheme {
	case "file":
		b, err := os.ReadFile(u.Path)
		if err != nil {
			return nil, err
		}
		if s.keys, err = parseJWKS(b); err != nil {
			return nil, fmt.Errorf("%s: %w", rawURL, err)
		}
		return s, nil
	case "http", "https":
	default:
		return nil, fmt.Errorf("%s: the JWKS URL must be file://, http:// or https://", rawURL)
	}
	if s.cfg.Client == nil {
		s.cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	s.cfg.Backoff = max(s.cfg.Backoff, time.Millisecond)
	s.cfg.BackoffMax = max(s.cfg.BackoffMax, s.cfg.Backoff)
	if s.keys, err = s.fetch(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	s.stop, s.stopped = cancel, make(chan struct{})
	go s.refresher(rctx)
	return s, nil
}

// Close stops the refreshes.
func (s *JWKS) Close() {
	if s.stop != nil {
		s.stop()
		<-s.stopped
	}
}

// candidates returns the keys that may have signed a token with this key
// id (any, when empty) and algorithm. An unknown key id asks for a
// refresh.
func (s *JWKS) candidates(kid string, alg jwsAlg) []crypto.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []crypto.PublicKey
	known := false
	for _, k := range s.keys {
		if kid != "" && k.kid != kid {
			continue
		}
		known = true
		if (k.use == "" || k.use == "sig") && fits(k.key, alg) && (k.alg == "" || algorithms[k.alg] == alg) {
			out = append(out, k.key)
		}
	}
	if !known && kid != "" && s.stop != nil && len(kid) <= missedKidMaxLen {
		now := time.Now()
		for id, at := range s.missed {
			if now.Sub(at) >= missedKidInterval {
				delete(s.missed, id)
			}
		}
		if _, recent := s.missed[kid]; !recent && len(s.missed) < missedKidMax {
			s.missed[kid] = now
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
	return out
}

func fits(key crypto.PublicKey, alg jwsAlg) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return alg.kty == "RSA"
	case *ecdsa.PublicKey:
		return alg.kty == "EC" && k.Curve.Params().Name == alg.crv
	}
	return false
}

func (s *JWKS) refresher(ctx context.Context) {
	defer close(s.stopped)
	next := s.cfg.Refresh
	backoff := s.cfg.Backoff
	for {
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-s.wake:
			t.Stop()
		}
		keys, err := s.fetch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.lg.Warn("refreshing the JWKS failed; the previous keys stay in use", "url", s.url, "err", err, "retry_in", backoff)
			next, backoff = backoff, min(2*backoff, s.cfg.BackoffMax)
			continue
		}
		s.mu.Lock()
		s.keys = keys
		s.mu.Unlock()
		next, backoff = s.cfg.Refresh, s.cfg.Backoff
	}
}

func (s *JWKS) fetch(ctx context.Context) ([]jwk, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP status %s", s.url, resp.Status)
	}
	keys, err := parseJWKS(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.url, err)
	}
	return keys, nil
}

// parseJWKS reads a JSON Web Key Set (RFC 7517): its RSA and EC public
// keys; keys of other types are skipped, as verification cannot use them.
func parseJWKS(b []byte) ([]jwk, error) {
	var set struct {
		Keys []struct {
			Kty, Kid, Alg, Use, Crv string
			N, E, X, Y              string
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var out []jwk
	for i, k := range set.Keys {
		var key crypto.PublicKey
		switch k.Kty {
		case "RSA":
			n, e := b64int(k.N), b64int(k.E)
			if n == nil || e == nil || !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31 || n.BitLen() < 1024 {
				return nil, fmt.Errorf("key %d (kid %q): invalid RSA key", i, k.Kid)
			}
			key = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			var c elliptic.Curve
			switch k.Crv {
			case "P-256":
				c = elliptic.P256()
			case "P-384":
				c = elliptic.P384()
			case "P-521":
				c = elliptic.P521()
			default:
				continue
			}
			x, y := b64int(k.X), b64int(k.Y)
			if x == nil || y == nil {
				return nil, fmt.Errorf("key %d (kid %q): invalid EC key", i, k.Kid)
			}
			pk := &ecdsa.PublicKey{Curve: c, X: x, Y: y}
			if _, err := pk.ECDH(); err != nil {
				return nil, fmt.Errorf("key %d (kid %q): invalid EC key: %v", i, k.Kid, err)
			}
			key = pk
		default:
			continue
		}
		out = append(out, jwk{kid: k.Kid, alg: k.Alg, use: k.Use, key: key})
	}
	return out, nil
}

func b64int(s string) *big.Int {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil
	}
	return new(big.Int).SetBytes(b)
}
