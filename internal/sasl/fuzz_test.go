package sasl

import (
	"bytes"
	"testing"
)

// No token crashes a server or logs in without the password: each
// fuzzed exchange feeds the tokens (split at 0xff) to a PLAIN and a SCRAM
// server in turn.
func FuzzServers(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("n,,n=alice,r=abc\xffc=biws,r=abcdef,p=AAAA"))
	f.Add([]byte("n,a=alice,n=alice,r=x\xffc=biws,r=x,p="))
	f.Add([]byte("n,,n=al=2Cice,r=x,ext=1"))
	salt := []byte("salt")
	salted, _ := SaltedPassword(ScramSHA256ID, "alice-secret", salt, 4096)
	cred := NewCredential(ScramSHA256ID, salted, salt, 4096)
	lookup := func(u string) (Credential, bool) { return cred, u == "alice" }
	f.Fuzz(func(t *testing.T, data []byte) {
		tokens := bytes.Split(data, []byte{0xff})
		for _, srv := range []Server{NewPlain(map[string]string{"alice": "alice-secret"}), NewScram(ScramSHA256ID, lookup)} {
			for _, tok := range tokens {
				_, done, err := srv.Step(tok)
				if done {
					// Only PLAIN with the right password can finish
					// from fuzzed bytes (a SCRAM proof needs the key).
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
