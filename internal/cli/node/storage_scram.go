package node

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"weir/internal/metadata"
	"weir/internal/sasl"
)

// parseAddScram reads one --add-scram value, Kafka's syntax:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,salt="<base64>",saltedpassword="<base64>"]
//
// and returns the user's credential record. A password is salted with a
// random salt (or the given one); iterations default to 4096.
func parseAddScram(s string) (*metadata.UserScramCredentialRecord, error) {
	mech, body, ok := strings.Cut(s, "=")
	id := sasl.ScramID(strings.TrimSpace(mech))
	if !ok || id == 0 {
		return nil, fmt.Errorf("--add-scram %q: expected SCRAM-SHA-256=[...] or SCRAM-SHA-512=[...]", s)
	}
	body = strings.TrimSpace(body)
	if !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		return nil, fmt.Errorf("--add-scram %q: the credential must be in brackets: %s=[name=...,password=...]", s, mech)
	}
	opts := map[string]string{}
	for _, kv := range strings.Split(body[1:len(body)-1], ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			return nil, fmt.Errorf("--add-scram %q: %q is not key=value", s, kv)
		}
		switch k {
		case "name", "password", "iterations", "salt", "saltedpassword":
		default:
			return nil, fmt.Errorf("--add-scram %q: unknown key %q (name, password, iterations, salt, saltedpassword)", s, k)
		}
		opts[k] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	r := &metadata.UserScramCredentialRecord{Name: opts["name"], Mechanism: id, Iterations: sasl.MinIterations}
	if r.Name == "" {
		return nil, fmt.Errorf("--add-scram %q: name= is required", s)
	}
	if v, ok := opts["iterations"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < sasl.MinIterations || n > sasl.MaxIterations {
			return nil, fmt.Errorf("--add-scram %q: iterations must be %d to %d", s, sasl.MinIterations, sasl.MaxIterations)
		}
		r.Iterations = int32(n)
	}
	salt := sasl.RandomSalt()
	if v, ok := opts["salt"]; ok {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("--add-scram %q: salt must be base64", s)
		}
		salt = b
	}
	var salted []byte
	switch pw, spw := opts["password"], opts["saltedpassword"]; {
	case pw != "" && spw != "":
		return nil, fmt.Errorf("--add-scram %q: give password or saltedpassword, not both", s)
	case pw != "":
		var err error
		if salted, err = sasl.SaltedPassword(id, pw, salt, int(r.Iterations)); err != nil {
			return nil, err
		}
	case spw != "":
		if _, ok := opts["salt"]; !ok {
			return nil, fmt.Errorf("--add-scram %q: saltedpassword needs its salt", s)
		}
		b, err := base64.StdEncoding.DecodeString(spw)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("--add-scram %q: saltedpassword must be base64", s)
		}
		salted = b
	default:
		return nil, fmt.Errorf("--add-scram %q: password= is required", s)
	}
	cred := sasl.NewCredential(id, salted, salt, int(r.Iterations))
	r.Salt, r.StoredKey, r.ServerKey = cred.Salt, cred.StoredKey, cred.ServerKey
	return r, nil
}
