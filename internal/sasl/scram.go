package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Kafka's SCRAM mechanism ids (ScramMechanism), as in
// UserScramCredentialRecord and the SCRAM credential APIs.
const (
	ScramSHA256ID int8 = 1
	ScramSHA512ID int8 = 2
)

// Iteration bounds Kafka accepts for a SCRAM credential.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// ScramID returns Kafka's id of a SCRAM mechanism name (0: not one).
func ScramID(name string) int8 {
	switch name {
	case ScramSHA256:
		return ScramSHA256ID
	case ScramSHA512:
		return ScramSHA512ID
	}
	return 0
}

// ScramName returns the name of a SCRAM mechanism id ("" if unknown).
func ScramName(id int8) string {
	switch id {
	case ScramSHA256ID:
		return ScramSHA256
	case ScramSHA512ID:
		return ScramSHA512
	}
	return ""
}

func hashOf(id int8) func() hash.Hash {
	if id == ScramSHA512ID {
		return sha512.New
	}
	return sha256.New
}

// Credential is a SCRAM credential as the metadata log stores it.
type Credential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

// SaltedPassword derives Hi(password, salt, iterations) (RFC 5802).
func SaltedPassword(mechanism int8, password string, salt []byte, iterations int) ([]byte, error) {
	h := hashOf(mechanism)
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// NewCredential derives the credential of a salted password.
func NewCredential(mechanism int8, salted, salt []byte, iterations int) Credential {
	h := hashOf(mechanism)
	clientKey := mac(h, salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return Credential{Salt: salt, StoredKey: stored.Sum(nil), ServerKey: mac(h, salted, "Server Key"), Iterations: int32(iterations)}
}

// RandomSalt returns a new salt.
func RandomSalt() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

func mac(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// scramServer is the server side of one SCRAM exchange: client-first,
// server-first, client-final, server-final.
type scramServer struct {
	id     int8
	lookup func(user string) (Credential, bool)
	step   int
	user   string
	cred   Credential
	// gs2 is the client's GS2 header, clientFirstBare and serverFirst
	// the messages of the first round, nonce the combined nonce.
	gs2, clientFirstBare, serverFirst, nonce string
}

// NewScram returns a SCRAM server of mechanism id that finds users'
// credentials with lookup.
func NewScram(id int8, lookup func(user string) (Credential, bool)) Server {
	return &scramServer{id: id, lookup: lookup}
}

func (s *scramServer) User() string                { return s.user }
func (s *scramServer) CredentialExpiry() time.Time { return time.Time{} }

func (s *scramServer) Step(token []byte) ([]byte, bool, error) {
	defer func() { s.step++ }()
	switch s.step {
	case 0:
		return s.first(string(token))
	case 1:
		return s.final(string(token))
	}
	return nil, false, errDone
}

func (s *scramServer) fail() ([]byte, bool, error) {
	return nil, false, invalidCredentials(ScramName(s.id))
}

func (s *scramServer) first(msg string) ([]byte, bool, error) {
	// gs2-header: "n," [ "a=" authzid ] "," ; weir (as Kafka) does no
	// channel binding.
	if !strings.HasPrefix(msg, "n,") {
		return s.fail()
	}
	i := strings.Index(msg[2:], ",")
	if i < 0 {
		return s.fail()
	}
	authz := msg[2 : 2+i]
	s.gs2, s.clientFirstBare = msg[:3+i], msg[3+i:]
	attrs, ok := scramAttrs(s.clientFirstBare)
	if !ok || attrs[0].k != 'n' || len(attrs) < 2 || attrs[1].k != 'r' || attrs[1].v == "" {
		return s.fail()
	}
	if len(attrs) > 2 {
		// Extensions (tokenauth: delegation tokens) are not
		// implemented.
		return s.fail()
	}
	user, ok := saslName(attrs[0].v)
	if !ok || user == "" {
		return s.fail()
	}
	if authz != "" {
		if a, ok := saslName(strings.TrimPrefix(authz, "a=")); !ok || !strings.HasPrefix(authz, "a=") || a != user {
			return s.fail()
		}
	}
	cred, found := s.lookup(user)
	if !found || cred.Iterations < MinIterations {
		return s.fail()
	}
	s.user, s.cred = user, cred
	b := make([]byte, 24)
	rand.Read(b)
	s.nonce = attrs[1].v + base64.RawURLEncoding.EncodeToString(b)
	s.serverFirst = "r=" + s.nonce + ",s=" + b64(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	return []byte(s.serverFirst), false, nil
}

func (s *scramServer) final(msg string) ([]byte, bool, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return s.fail()
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs, ok := scramAttrs(withoutProof)
	if !ok || len(attrs) < 2 || attrs[0].k != 'c' || attrs[1].k != 'r' {
		return s.fail()
	}
	if attrs[0].v != base64.StdEncoding.EncodeToString([]byte(s.gs2)) || attrs[1].v != s.nonce {
		return s.fail()
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	h := hashOf(s.id)
	if err != nil || len(proof) != h().Size() {
		return s.fail()
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	sig := mac(h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ sig[j]
	}
	stored := h()
	stored.Write(clientKey)
	if !constantEqual(stored.Sum(nil), s.cred.StoredKey) {
		s.user = ""
		return s.fail()
	}
	return []byte("v=" + b64(mac(h, s.cred.ServerKey, authMessage))), true, nil
}

type scramAttr struct {
	k byte
	v string
}

// scramAttrs splits a,b=... messages into their attributes.
func scramAttrs(msg string) ([]scramAttr, bool) {
	var out []scramAttr
	for _, part := range strings.Split(msg, ",") {
		if len(part) < 2 || part[1] != '=' {
			return nil, false
		}
		out = append(out, scramAttr{part[0], part[2:]})
	}
	return out, true
}

// saslName decodes RFC 5802's saslname (=2C is ',', =3D is '=').
func saslName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

func constantEqual(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
