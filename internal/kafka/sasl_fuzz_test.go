package kafka

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/sasl"
)

// FuzzSASLListener feeds byte streams to a connection of a SASL listener
// (PLAIN and unsecured OAUTHBEARER) through what runs before a handler:
// the frame reader, the request decoder, the SASL gate and the SASL
// handlers, bare tokens after a v0 handshake included. No stream may log
// in with PLAIN without alice's password, or reach another API before
// logging in.
func FuzzSASLListener(f *testing.F) {
	s := &Server{cfg: Config{MaxRequestSize: fuzzMaxRequest, SASL: &SASLConfig{
		Mechanisms: []string{sasl.Plain, sasl.OAuthBearer}, PlainUsers: map[string]string{"alice": "alice-secret"},
		OAuth: sasl.NewUnsecuredValidator(sasl.UnsecuredConfig{PrincipalClaim: "sub", ScopeClaim: "scope"}), MaxReceive: 4096,
	}}, lg: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.apis = s.apiTable()
	id := "weir"
	frame := func(req kmsg.Request, v int16) []byte {
		req.SetVersion(v)
		return appendFrame(nil, req, 1, &id)
	}
	hs := func(v int16, m string) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Mechanism = m
		return frame(r, v)
	}
	auth := func(tok string) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte(tok)
		return frame(r, 2)
	}
	av := frame(kmsg.NewPtrApiVersionsRequest(), 3)
	md := frame(kmsg.NewPtrMetadataRequest(), 12)
	unsecured := "eyJhbGciOiJub25lIn0.eyJzdWIiOiJib2IiLCJleHAiOjQxMDI0NDQ4MDB9."
	for _, seed := range [][]byte{
		bytes.Join([][]byte{av, hs(1, "PLAIN"), auth("\x00alice\x00alice-secret"), md, hs(1, "PLAIN")}, nil),
		bytes.Join([][]byte{hs(1, "OAUTHBEARER"), auth("n,,\x01auth=Bearer " + unsecured + "\x01\x01"), md}, nil),
		bytes.Join([][]byte{hs(1, "OAUTHBEARER"), auth("n,,\x01auth=Bearer x.y.\x01\x01"), auth("\x01")}, nil),
		bytes.Join([][]byte{hs(0, "PLAIN"), {0, 0, 0, 4, 0, 'a', 0, 'b'}, md}, nil),
		bytes.Join([][]byte{av, av}, nil),
		bytes.Join([][]byte{auth("\x00alice\x00alice-secret"), md}, nil),
		bytes.Join([][]byte{hs(1, "PLAIN"), hs(1, "PLAIN")}, nil),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nc, peer := net.Pipe()
		defer nc.Close()
		defer peer.Close()
		c := &conn{srv: s, nc: nc, principal: "User:ANONYMOUS"}
		r := bufio.NewReader(bytes.NewReader(data))
		for {
			frame, _, err := c.readFrame(r)
			if err != nil {
				return
			}
			if c.sasl != saslDone && len(frame) > int(s.cfg.SASL.MaxReceive) {
				t.Fatalf("a %d-byte frame read before authentication", len(frame))
			}
			if c.sasl == saslAwaitBareToken {
				if rep := s.saslBareToken(c, frame); rep.closeConn {
					return
				}
				continue
			}
			req, err := c.decode(frame)
			if err != nil {
				return
			}
			authenticated := c.sasl == saslDone
			rep, closeNow := s.saslGate(c, req)
			switch {
			case closeNow:
				return
			case rep != nil:
				if !rep.closeConn {
					t.Fatalf("the SASL gate answered %s without closing", kmsg.NameForKey(req.Key))
				}
				return
			case !authenticated && req.Key != apiVersionsKey && req.Key != saslHandshakeKey && req.Key != saslAuthenticateKey:
				t.Fatalf("%s passed the SASL gate before authentication", kmsg.NameForKey(req.Key))
			case req.Key == saslHandshakeKey && req.Body != nil:
				rep = s.handleSaslHandshake(req)
			case req.Key == saslAuthenticateKey && req.Body != nil:
				rep = s.handleSaslAuthenticate(req)
			}
			// Any unsecured token logs in; PLAIN only with the password.
			if c.sasl == saslDone && !authenticated && c.saslMechanism == sasl.Plain &&
				(c.principal != "User:alice" || !bytes.Contains(data, []byte("alice-secret"))) {
				t.Fatalf("logged in as %s with PLAIN without the password", c.principal)
			}
			if rep != nil && rep.closeConn {
				return
			}
		}
	})
}
