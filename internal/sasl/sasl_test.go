package sasl

import (
	"context"
	"errors"
	"strings"
	"testing"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// exchange runs franz-go's client mechanism against srv and returns the
// server's error.
func exchange(t *testing.T, m kgosasl.Mechanism, srv Server) error {
	t.Helper()
	sess, tok, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for {
		answer, done, err := srv.Step(tok)
		if err != nil {
			return err
		}
		cdone, next, cerr := sess.Challenge(answer)
		if cerr != nil {
			t.Fatalf("client refused the server's answer: %v", cerr)
		}
		if done {
			if !cdone {
				t.Fatal("the server finished before the client")
			}
			return nil
		}
		tok = next
	}
}

func authError(t *testing.T, err error, want string) {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) || !strings.Contains(ae.Msg, want) {
		t.Errorf("error %v, want an AuthError saying %q", err, want)
	}
}

func TestPlain(t *testing.T) {
	users := map[string]string{"alice": "alice-secret", "bob": "b"}
	srv := NewPlain(users)
	if err := exchange(t, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), srv); err != nil || srv.User() != "alice" {
		t.Fatalf("alice: %v, user %q", err, srv.User())
	}
	authError(t, exchange(t, plain.Auth{User: "alice", Pass: "bob"}.AsMechanism(), NewPlain(users)), "Invalid username or password")
	authError(t, exchange(t, plain.Auth{User: "carol", Pass: "x"}.AsMechanism(), NewPlain(users)), "Invalid username or password")
	authError(t, exchange(t, plain.Auth{Zid: "bob", User: "alice", Pass: "alice-secret"}.AsMechanism(), NewPlain(users)), "authorization id that is different")
	_, _, err := NewPlain(users).Step([]byte("alice\x00alice-secret"))
	authError(t, err, "expected 3 tokens, got 2")
}

func TestScram(t *testing.T) {
	for _, id := range []int8{ScramSHA256ID, ScramSHA512ID} {
		salt := RandomSalt()
		salted, err := SaltedPassword(id, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		creds := map[string]Credential{"user,1": NewCredential(id, salted, salt, 4096)}
		lookup := func(u string) (Credential, bool) { c, ok := creds[u]; return c, ok }
		mech := func(user, pass string) kgosasl.Mechanism {
			a := scram.Auth{User: user, Pass: pass}
			if id == ScramSHA512ID {
				return a.AsSha512Mechanism()
			}
			return a.AsSha256Mechanism()
		}
		name := ScramName(id)
		srv := NewScram(id, lookup)
		if err := exchange(t, mech("user,1", "pencil"), srv); err != nil || srv.User() != "user,1" {
			t.Fatalf("%s: %v, user %q", name, err, srv.User())
		}
		want := "invalid credentials with SASL mechanism " + name
		authError(t, exchange(t, mech("user,1", "pen"), NewScram(id, lookup)), want)
		authError(t, exchange(t, mech("nobody", "pencil"), NewScram(id, lookup)), want)
		// The other mechanism's credential does not fit.
		other := ScramSHA512ID
		if id == ScramSHA512ID {
			other = ScramSHA256ID
		}
		authError(t, exchange(t, mech("user,1", "pencil"), NewScram(other, lookup)), "invalid credentials")
	}
}

func TestScramRFC7677Credential(t *testing.T) {
	// RFC 7677's example: user "user", password "pencil", salt
	// W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations; its server signature
	// over the example's AuthMessage is
	// 6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=.
	salt := []byte{0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e, 0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81}
	salted, _ := SaltedPassword(ScramSHA256ID, "pencil", salt, 4096)
	c := NewCredential(ScramSHA256ID, salted, salt, 4096)
	authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	got := mac(hashOf(ScramSHA256ID), c.ServerKey, authMessage)
	if want := "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; b64(got) != want {
		t.Fatalf("server signature %s, want %s", b64(got), want)
	}
}

func TestParseJAAS(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a\"b;c" debug=true;`)
	if err != nil {
		t.Fatal(err)
	}
	if j.Module != PlainLoginModule || j.Flag != "required" || j.Options["username"] != "admin" || j.Options["debug"] != "true" {
		t.Errorf("parsed %+v", j)
	}
	if u := j.PlainUsers(); len(u) != 2 || u["admin"] != "admin-secret" || u["alice"] != `a"b;c` {
		t.Errorf("users %v", u)
	}
	for _, bad := range []string{"", "Module", "Module required user_a=\"x\"", "Module maybe;", "Module required a=\"x;", "Module required; Other required;"} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
