// Package jwttest is a test identity provider: keys that sign JWTs, their
// JWKS, and unsecured (alg none) tokens.
package jwttest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
)

// Key signs tokens as one entry (kid) of a JWKS.
type Key struct {
	Kid, Alg string
	key      crypto.Signer
}

// RSA returns a new 2048-bit RS256 key.
func RSA(t testing.TB, kid string) Key {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return Key{Kid: kid, Alg: "RS256", key: k}
}

// EC returns a new P-256 ES256 key.
func EC(t testing.TB, kid string) Key {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Key{Kid: kid, Alg: "ES256", key: k}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func b64JSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b64(b)
}

func (k Key) jwk() map[string]string {
	switch p := k.key.Public().(type) {
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "kid": k.Kid, "use": "sig", "alg": k.Alg, "n": b64(p.N.Bytes()), "e": b64(big.NewInt(int64(p.E)).Bytes())}
	case *ecdsa.PublicKey:
		return map[string]string{"kty": "EC", "kid": k.Kid, "crv": "P-256", "x": b64(p.X.FillBytes(make([]byte, 32))), "y": b64(p.Y.FillBytes(make([]byte, 32)))}
	}
	panic("unknown key type")
}

// JWKS returns the key set of keys, as JSON.
func JWKS(t testing.TB, keys ...Key) []byte {
	var set []map[string]string
	for _, k := range keys {
		set = append(set, k.jwk())
	}
	b, err := json.Marshal(map[string]any{"keys": set})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sign returns the JWS compact serialization of claims.
func (k Key) Sign(t testing.TB, claims map[string]any) string {
	in := b64JSON(t, map[string]string{"alg": k.Alg, "kid": k.Kid, "typ": "JWT"}) + "." + b64JSON(t, claims)
	d := sha256.Sum256([]byte(in))
	var sig []byte
	switch p := k.key.(type) {
	case *rsa.PrivateKey:
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, p, crypto.SHA256, d[:]); err != nil {
			t.Fatal(err)
		}
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, p, d[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	return in + "." + b64(sig)
}

// Unsecured returns an unsecured JWT (alg none, empty signature) of
// claims, as Kafka's OAuthBearerUnsecuredLoginCallbackHandler makes.
func Unsecured(t testing.TB, claims map[string]any) string {
	return b64JSON(t, map[string]string{"alg": "none"}) + "." + b64JSON(t, claims) + "."
}

// Header returns a token of the given header and claims with signature
// sig, for malformed tokens.
func Header(t testing.TB, header map[string]any, claims map[string]any, sig []byte) string {
	return b64JSON(t, header) + "." + b64JSON(t, claims) + "." + b64(sig)
}

// With returns a copy of claims with k set to v, or removed if v is nil.
func With(claims map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range claims {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}
