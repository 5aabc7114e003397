package sasl

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientMechanism returns franz-go's client side of mechanism for user and
// password.
func ClientMechanism(mechanism, user, password string) (kgosasl.Mechanism, error) {
	switch mechanism {
	case Plain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case ScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case ScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %s is not implemented", mechanism)
}

// Login authenticates a new connection to a Kafka listener (weir's own
// connections to other nodes): SaslHandshake v1, then SaslAuthenticate v2
// until the mechanism is done. The connection is then ready for requests.
func Login(ctx context.Context, nc net.Conn, m kgosasl.Mechanism, clientID string) error {
	if d, ok := ctx.Deadline(); ok {
		nc.SetDeadline(d)
		defer nc.SetDeadline(time.Time{})
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	corr := int32(0)
	roundTrip := func(req kmsg.Request, resp kmsg.Response) error {
		corr++
		if _, err := nc.Write(f.AppendRequest(nil, req, corr)); err != nil {
			return err
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n < 4 || n > 1<<20 {
			return fmt.Errorf("SASL answer of %d bytes", n)
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(nc, buf); err != nil {
			return err
		}
		if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
			return fmt.Errorf("SASL answer for request %d, want %d", got, corr)
		}
		body := buf[4:]
		if resp.IsFlexible() {
			// The response header's tagged fields: none are sent.
			if len(body) == 0 || body[0] != 0 {
				return fmt.Errorf("unexpected tagged fields in a SASL answer")
			}
			body = body[1:]
		}
		return resp.ReadFrom(body)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	hsResp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	hsResp.SetVersion(1)
	if err := roundTrip(hs, hsResp); err != nil {
		return fmt.Errorf("SASL handshake: %w", err)
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("SASL handshake for %s: %w (enabled: %v)", m.Name(), err, hsResp.SupportedMechanisms)
	}
	sess, token, err := m.Authenticate(ctx, nc.RemoteAddr().String())
	if err != nil {
		return err
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		req.SASLAuthBytes = token
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.SetVersion(2)
		if err := roundTrip(req, resp); err != nil {
			return fmt.Errorf("SASL authentication: %w", err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("SASL authentication with %s: %w%s", m.Name(), err, msg)
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		token = next
	}
}
