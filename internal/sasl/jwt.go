package sasl

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
)

// JWT validation with the standard library: JWS compact serialization,
// RS*, PS* and ES* signatures, and the claims Kafka's validators check.
// (A JWT library would bring more algorithms than Kafka's brokers see and
// a dependency for about as much code as this file.)

// JWTConfig is the setting of Kafka's OAuthBearerValidatorCallbackHandler.
type JWTConfig struct {
	Keys *JWKS
	// Audience is sasl.oauthbearer.expected.audience: the aud claim must
	// name one of them; when empty, a token must carry no aud claim (as
	// jose4j, which Kafka uses, insists).
	Audience []string
	// Issuer is sasl.oauthbearer.expected.issuer ("" accepts any).
	Issuer string
	// SubClaim and ScopeClaim are sasl.oauthbearer.sub.claim.name and
	// sasl.oauthbearer.scope.claim.name.
	SubClaim, ScopeClaim string
	// ClockSkew is sasl.oauthbearer.clock.skew.seconds.
	ClockSkew time.Duration
	Now       func() time.Time
}

type jwtValidator struct{ cfg JWTConfig }

// NewJWTValidator returns the validator of signed JWTs.
func NewJWTValidator(cfg JWTConfig) Validator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &jwtValidator{cfg: cfg}
}

type jwsHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Crit []string `json:"crit"`
}

func (v *jwtValidator) Validate(token string) (Token, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Token{}, invalidToken("malformed JWT: expected three sections (header, payload and signature), found %d", len(parts))
	}
	var h jwsHeader
	if err := decodeSection(parts[0], &h); err != nil {
		return Token{}, invalidToken("malformed JWT header: %v", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return Token{}, invalidToken("malformed JWT signature: %v", err)
	}
	alg, ok := algorithms[h.Alg]
	if !ok {
		return Token{}, invalidToken("JWS algorithm %q is not accepted", h.Alg)
	}
	if len(h.Crit) > 0 {
		// RFC 7515 4.1.11: a critical extension not understood fails.
		return Token{}, invalidToken("JWS critical header extensions %v are not understood", h.Crit)
	}
	keys := v.cfg.Keys.candidates(h.Kid, alg)
	if len(keys) == 0 {
		return Token{}, invalidToken("no verification key for JWS header kid=%q alg=%q in the JWKS", h.Kid, h.Alg)
	}
	signed := []byte(parts[0] + "." + parts[1])
	if !slices.ContainsFunc(keys, func(k crypto.PublicKey) bool { return alg.verify(k, signed, sig) }) {
		return Token{}, invalidToken("JWS signature (alg %s, kid %q) does not verify", h.Alg, h.Kid)
	}
	var claims map[string]any
	if err := decodeSection(parts[1], &claims); err != nil {
		return Token{}, invalidToken("malformed JWT claims: %v", err)
	}
	return v.checkClaims(claims)
}

func (v *jwtValidator) checkClaims(c map[string]any) (Token, error) {
	now, skew := v.cfg.Now(), v.cfg.ClockSkew
	exp, ok := numericDate(c["exp"])
	if !ok {
		return Token{}, invalidToken("no valid exp claim")
	}
	if _, ok := numericDate(c["iat"]); !ok {
		return Token{}, invalidToken("no valid iat claim")
	}
	if !now.Before(exp.Add(skew)) {
		return Token{}, invalidToken("the JWT expired at %s (clock skew %s)", exp.UTC().Format(time.RFC3339), skew)
	}
	if nbf, ok := numericDate(c["nbf"]); c["nbf"] != nil && (!ok || now.Add(skew).Before(nbf)) {
		return Token{}, invalidToken("the JWT is not valid before %v (clock skew %s)", c["nbf"], skew)
	}
	if v.cfg.Issuer != "" {
		if iss, _ := c["iss"].(string); iss != v.cfg.Issuer {
			return Token{}, invalidToken("issuer %q is not the expected %q", c["iss"], v.cfg.Issuer)
		}
	}
	if aud, present := c["aud"]; present || len(v.cfg.Audience) > 0 {
		auds, ok := stringList(aud, false)
		if !ok || !slices.ContainsFunc(auds, func(a string) bool { return slices.Contains(v.cfg.Audience, a) }) {
			return Token{}, invalidToken("audience %v is not one of the expected %v", aud, v.cfg.Audience)
		}
	}
	sub, _ := c[v.cfg.SubClaim].(string)
	if sub = strings.TrimSpace(sub); sub == "" {
		return Token{}, invalidToken("no %s claim with a non-empty string", v.cfg.SubClaim)
	}
	var scopes []string
	if raw, present := c[v.cfg.ScopeClaim]; present {
		if scopes, ok = stringList(raw, false); !ok {
			return Token{}, invalidToken("the %s claim is neither a string nor a list of strings", v.cfg.ScopeClaim)
		}
		for _, s := range scopes {
			if strings.TrimSpace(s) == "" {
				return Token{}, invalidToken("the %s claim holds an empty scope", v.cfg.ScopeClaim)
			}
		}
	}
	return Token{Principal: sub, Scopes: scopes, Expiry: exp}, nil
}

// UnsecuredConfig is the setting of Kafka's
// OAuthBearerUnsecuredValidatorCallbackHandler, from the listener's
// OAuthBearerLoginModule options unsecuredValidator*.
type UnsecuredConfig struct {
	PrincipalClaim, ScopeClaim string
	RequiredScope              []string
	ClockSkew                  time.Duration
	Now                        func() time.Time
}

// Options of the unsecured validator in the JAAS entry, and their defaults.
const (
	UnsecuredPrincipalClaimOption = "unsecuredValidatorPrincipalClaimName"
	UnsecuredScopeClaimOption     = "unsecuredValidatorScopeClaimName"
	UnsecuredRequiredScopeOption  = "unsecuredValidatorRequiredScope"
	UnsecuredClockSkewOption      = "unsecuredValidatorAllowableClockSkewMs"
)

// UnsecuredConfigOf reads the unsecuredValidator* options of a JAAS entry.
func UnsecuredConfigOf(j JAAS) (UnsecuredConfig, error) {
	c := UnsecuredConfig{PrincipalClaim: "sub", ScopeClaim: "scope"}
	if v := strings.TrimSpace(j.Options[UnsecuredPrincipalClaimOption]); v != "" {
		c.PrincipalClaim = v
	}
	if v := strings.TrimSpace(j.Options[UnsecuredScopeClaimOption]); v != "" {
		c.ScopeClaim = v
	}
	c.RequiredScope = strings.Fields(j.Options[UnsecuredRequiredScopeOption])
	if v := strings.TrimSpace(j.Options[UnsecuredClockSkewOption]); v != "" {
		var ms int64
		if _, err := fmt.Sscan(v, &ms); err != nil || ms < 0 || fmt.Sprint(ms) != v {
			return UnsecuredConfig{}, fmt.Errorf("%s=%q is not a non-negative number of milliseconds", UnsecuredClockSkewOption, v)
		}
		c.ClockSkew = time.Duration(ms) * time.Millisecond
	}
	return c, nil
}

type unsecuredValidator struct{ cfg UnsecuredConfig }

// NewUnsecuredValidator returns the validator of unsecured JWTs (alg
// none, no signature), meant for tests as in Kafka.
func NewUnsecuredValidator(cfg UnsecuredConfig) Validator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &unsecuredValidator{cfg: cfg}
}

func (v *unsecuredValidator) Validate(token string) (Token, error) {
	// Two sections, the signature being empty (Java's split, which drops
	// trailing empty strings, as Kafka's OAuthBearerUnsecuredJws).
	parts := strings.Split(strings.TrimRight(token, "."), ".")
	if len(parts) != 2 {
		return Token{}, invalidToken("an unsecured JWS compact serialization must have 3 dot-separated Base64URL-encoded values, the last one empty")
	}
	var header, claims map[string]any
	if err := decodeSection(parts[0], &header); err != nil {
		return Token{}, invalidToken("malformed JWT header: %v", err)
	}
	if err := decodeSection(parts[1], &claims); err != nil {
		return Token{}, invalidToken("malformed JWT claims: %v", err)
	}
	now, skew := v.cfg.Now(), v.cfg.ClockSkew
	sub, ok := claims[v.cfg.PrincipalClaim].(string)
	if !ok || strings.TrimSpace(sub) == "" {
		return Token{}, invalidToken("no %s claim with a non-empty string", v.cfg.PrincipalClaim)
	}
	iat, hasIat := numericDate(claims["iat"])
	if claims["iat"] != nil && !hasIat {
		return Token{}, invalidToken("the iat claim is not a number")
	}
	if hasIat && now.Add(skew).Before(iat) {
		return Token{}, invalidToken("issued at %s, after now plus the allowed clock skew %s", iat.UTC().Format(time.RFC3339), skew)
	}
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return Token{}, invalidToken("no valid exp claim")
	}
	if !now.Add(-skew).Before(exp) {
		return Token{}, invalidToken("expired at %s (clock skew %s)", exp.UTC().Format(time.RFC3339), skew)
	}
	if hasIat && !exp.After(iat) {
		return Token{}, invalidToken("the exp claim is not after the iat claim")
	}
	scopes, _ := stringList(claims[v.cfg.ScopeClaim], true)
	for _, s := range v.cfg.RequiredScope {
		if !slices.Contains(scopes, s) {
			return Token{}, &TokenError{Status: "insufficient_scope", Scope: "[" + strings.Join(v.cfg.RequiredScope, ", ") + "]",
				Reason: fmt.Sprintf("the token's scope %v lacks %q", scopes, s)}
		}
	}
	return Token{Principal: sub, Scopes: scopes, Expiry: exp}, nil
}

// decodeSection decodes a base64url section holding one JSON object.
func decodeSection(s string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(into)
}

// numericDate reads a JSON NumericDate (seconds since the epoch).
func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.Abs(f) > 1e11 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(f * 1000)), true
}

// stringList reads a claim holding a string or a list of strings; split
// cuts a string at spaces (an unsecured token's scope).
func stringList(v any, split bool) ([]string, bool) {
	switch x := v.(type) {
	case string:
		if split {
			return strings.Fields(x), true
		}
		return []string{x}, true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// jwsAlg is a JWS signature algorithm (RFC 7518).
type jwsAlg struct {
	kty  string // the key type it needs: RSA or EC
	hash crypto.Hash
	pss  bool
	crv  string // EC: the curve
}

var algorithms = map[string]jwsAlg{
	"RS256": {kty: "RSA", hash: crypto.SHA256}, "RS384": {kty: "RSA", hash: crypto.SHA384}, "RS512": {kty: "RSA", hash: crypto.SHA512},
	"PS256": {kty: "RSA", hash: crypto.SHA256, pss: true}, "PS384": {kty: "RSA", hash: crypto.SHA384, pss: true}, "PS512": {kty: "RSA", hash: crypto.SHA512, pss: true},
	"ES256": {kty: "EC", hash: crypto.SHA256, crv: "P-256"}, "ES384": {kty: "EC", hash: crypto.SHA384, crv: "P-384"}, "ES512": {kty: "EC", hash: crypto.SHA512, crv: "P-521"},
}

func (a jwsAlg) verify(key crypto.PublicKey, signed, sig []byte) bool {
	var digest []byte
	switch a.hash {
	case crypto.SHA256:
		d := sha256.Sum256(signed)
		digest = d[:]
	case crypto.SHA384:
		d := sha512.Sum384(signed)
		digest = d[:]
	default:
		d := sha512.Sum512(signed)
		digest = d[:]
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		if a.pss {
			return rsa.VerifyPSS(k, a.hash, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
		return rsa.VerifyPKCS1v15(k, a.hash, digest, sig) == nil
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(k, digest, r, s)
	}
	return false
}
