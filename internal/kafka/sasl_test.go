package kafka_test

// SASL listeners: franz-go's sasl/plain and sasl/scram against a
// SASL_PLAINTEXT and a SASL_SSL listener, users created with kadm
// (AlterUserScramCredentials), wrong passwords refused with Kafka's error
// while other clients carry on, and a connection that has not
// authenticated may send nothing but ApiVersions and the SASL requests.

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/internal/servertest"
	"weir/internal/tlsconf/tlstest"
)

// saslNode starts a node with a PLAINTEXT listener (inter-broker, and the
// test's admin) and a SASL listener "SASL" of protocol proto with PLAIN
// users alice and bob and both SCRAM mechanisms; it returns the node and
// the SASL listener's address. An empty value in extra removes the key.
func saslNode(t *testing.T, proto string, extra map[string]string) (*servertest.Node, string) {
	t.Helper()
	o := map[string]string{
		"listeners":                                 "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":                      "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
		"inter.broker.listener.name":                "PLAINTEXT",
		"listener.security.protocol.map":            "PLAINTEXT:PLAINTEXT,SASL:" + proto + ",CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                   "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";`,
		"connection.failed.authentication.delay.ms": "0",
	}
	for k, v := range extra {
		o[k] = v
		if v == "" {
			delete(o, k)
		}
	}
	n := cliNode(t, o)
	return n, n.Server.Addr("SASL").String()
}

// scramUser creates user with password for both SCRAM mechanisms.
func scramUser(t *testing.T, ctx context.Context, adm *kadm.Client, user, password string) {
	t.Helper()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: user, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: password},
		{User: user + "-512", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: password},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("creating SCRAM users: %v", err)
	}
}

func saslClient(t *testing.T, addr string, m kgosasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return cliFranz(t, addr, append([]kgo.Opt{kgo.SASL(m), kgo.RequestRetries(0)}, opts...)...)
}

func wantAuthFailed(t *testing.T, ctx context.Context, what string, cl *kgo.Client) {
	t.Helper()
	err := cl.Ping(ctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", what, err)
	}
}

func TestSASLPlainAndScram(t *testing.T) {
	ctx := cliCtx(t)
	n, addr := saslNode(t, "SASL_PLAINTEXT", nil)
	adm := cliAdmin(t, n.Addr)
	scramUser(t, ctx, adm, "carol", "carol-secret")

	described, err := adm.DescribeUserSCRAMs(ctx, "carol", "carol-512", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if c := described["carol"]; c.Err != nil || len(c.CredInfos) != 1 || c.CredInfos[0].Mechanism != kadm.ScramSha256 || c.CredInfos[0].Iterations != 4096 {
		t.Errorf("carol described as %+v", c)
	}
	if c := described["carol-512"]; c.Err != nil || len(c.CredInfos) != 1 || c.CredInfos[0].Iterations != 8192 {
		t.Errorf("carol-512 described as %+v", c)
	}
	if c := described["nobody"]; !errors.Is(c.Err, kerr.ResourceNotFound) {
		t.Errorf("nobody described as %+v", c)
	}

	good := map[string]kgosasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "carol-512", Pass: "carol-secret"}.AsSha512Mechanism(),
	}
	bad := map[string]kgosasl.Mechanism{
		"PLAIN, wrong password":          plain.Auth{User: "alice", Pass: "bob-secret"}.AsMechanism(),
		"PLAIN, unknown user":            plain.Auth{User: "carol", Pass: "carol-secret"}.AsMechanism(),
		"SCRAM-SHA-256, wrong password":  scram.Auth{User: "carol", Pass: "alice-secret"}.AsSha256Mechanism(),
		"SCRAM-SHA-512, other mechanism": scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism(),
		"SCRAM-SHA-256, PLAIN user":      scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
	}
	// A client that logged in before the failures keeps working after.
	first := saslClient(t, addr, good["PLAIN"], kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("sasl-topic"))
	if err := first.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatalf("PLAIN produce: %v", err)
	}
	for what, m := range bad {
		wantAuthFailed(t, ctx, what, saslClient(t, addr, m))
	}
	if err := first.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("PLAIN produce after failed logins: %v", err)
	}
	for name, m := range good {
		cl := saslClient(t, addr, m, kgo.ConsumeTopics("sasl-topic"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := 0
		for got < 2 {
			fs := cl.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("%s: consume: %v", name, err)
			}
			got += fs.NumRecords()
		}
	}
	// Without SASL the listener answers nothing but ApiVersions.
	if err := cliFranz(t, addr, kgo.RequestRetries(0)).Ping(ctx); err == nil {
		t.Error("a client without SASL was served")
	}

	// A deleted credential no longer logs in.
	res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || res.Error() != nil {
		t.Fatalf("deleting carol: %v %v", err, res.Error())
	}
	wantAuthFailed(t, ctx, "deleted user", saslClient(t, addr, good["SCRAM-SHA-256"]))
}

func TestSASLBeforeAuthentication(t *testing.T) {
	n, addr := saslNode(t, "SASL_PLAINTEXT", map[string]string{"sasl.server.max.receive.size": "1024"})
	// ApiVersions is answered; then any other API closes the
	// connection.
	w := dial(t, addr)
	w.ping()
	w.send(kmsg.NewPtrMetadataRequest())
	w.expectClosed()

	// An unknown mechanism is refused with the enabled ones, then the
	// connection closes.
	w = dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	resp := w.do(hs).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
		t.Errorf("GSSAPI handshake: %+v", resp)
	}
	w.expectClosed()

	// SaslAuthenticate before SaslHandshake is out of order: as in
	// Kafka, the connection closes unanswered.
	w = dial(t, addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	w.send(auth)
	w.expectClosed()

	// A second ApiVersions before the handshake closes the connection.
	w = dial(t, addr)
	w.ping()
	w.send(kmsg.NewPtrApiVersionsRequest())
	w.expectClosed()

	// After the handshake, only SaslAuthenticate: a second handshake is
	// answered ILLEGAL_SASL_STATE, then the connection closes.
	w = dial(t, addr)
	hs.Mechanism = "PLAIN"
	if r := w.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("PLAIN handshake: %+v", r)
	}
	if r := w.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("a second handshake: %+v", r)
	}
	w.expectClosed()
	w = dial(t, addr)
	w.do(hs)
	w.send(kmsg.NewPtrMetadataRequest())
	w.expectClosed()

	// Once authenticated, without re-authentication (connections.max.reauth.ms=0),
	// both SASL requests answer ILLEGAL_SASL_STATE.
	w = dial(t, addr)
	w.do(hs)
	if r := w.do(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 || r.SessionLifetimeMillis != 0 {
		t.Fatalf("PLAIN login: %+v", r)
	}
	if r := w.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("handshake after the login: %+v", r)
	}
	if r := w.do(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.IllegalSaslState.Code ||
		str(r.ErrorMessage) != "SaslAuthenticate request received after successful authentication" {
		t.Errorf("SaslAuthenticate after the login: %+v", r)
	}

	// A request larger than sasl.server.max.receive.size before
	// authentication closes the connection.
	w = dial(t, addr)
	hs.Mechanism = "PLAIN"
	if r := w.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("PLAIN handshake: %+v", r)
	}
	auth.SASLAuthBytes = append([]byte("\x00alice\x00"), make([]byte, 2048)...)
	w.send(auth)
	w.expectClosed()

	// A PLAINTEXT listener has no SASL state to enter.
	w = dial(t, n.Addr)
	if r := w.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("handshake on a PLAINTEXT listener: %+v", r)
	}
}

// connection.failed.authentication.delay.ms holds back the answer to a
// failed login (and the close), while other clients are served.
func TestSASLFailedLoginIsDelayed(t *testing.T) {
	ctx := cliCtx(t)
	_, addr := saslNode(t, "SASL_PLAINTEXT", map[string]string{"connection.failed.authentication.delay.ms": "600000"})
	w := dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	w.do(hs)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00alice\x00wrong")
	w.send(auth)

	cl := saslClient(t, addr, plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism(), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("delayed"))
	if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatalf("another client's produce: %v", err)
	}
	w.nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := w.br.ReadByte()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("the failed login was answered before connection.failed.authentication.delay.ms: %v", err)
	}
}

func TestSASLSSL(t *testing.T) {
	ctx := cliCtx(t)
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	n, addr := saslNode(t, "SASL_SSL", map[string]string{
		"ssl.keystore.type":     "PEM",
		"ssl.keystore.location": ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
	})
	scramUser(t, ctx, cliAdmin(t, n.Addr), "dave", "dave-secret")
	tlsCfg := &tls.Config{RootCAs: ca.Pool()}
	cl := saslClient(t, addr, scram.Auth{User: "dave-512", Pass: "dave-secret"}.AsSha512Mechanism(), kgo.DialTLSConfig(tlsCfg),
		kgo.AllowAutoTopicCreation(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	roundTrip(t, ctx, cl, "sasl-ssl-topic")
	wantAuthFailed(t, ctx, "wrong password over TLS", saslClient(t, addr,
		scram.Auth{User: "dave-512", Pass: "nope"}.AsSha512Mechanism(), kgo.DialTLSConfig(tlsCfg)))
}

// After a SaslHandshake v0 (clients before KIP-152: kafka-python 2.0,
// older Sarama) the tokens travel as bare frames; a failed login closes
// the connection.
func TestSASLHandshakeV0(t *testing.T) {
	ctx := cliCtx(t)
	n, addr := saslNode(t, "SASL_PLAINTEXT", nil)
	scramUser(t, ctx, cliAdmin(t, n.Addr), "erin", "erin-secret")
	bare := func(w *wire, token []byte) ([]byte, error) {
		w.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
		w.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		var size [4]byte
		if _, err := io.ReadFull(w.br, size[:]); err != nil {
			return nil, err
		}
		answer := make([]byte, binary.BigEndian.Uint32(size[:]))
		_, err := io.ReadFull(w.br, answer)
		return answer, err
	}
	login := func(m kgosasl.Mechanism) (*wire, error) {
		w := dial(t, addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(0)
		hs.Mechanism = m.Name()
		if r := w.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
			t.Fatalf("v0 handshake: %+v", r)
		}
		sess, tok, err := m.Authenticate(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		for {
			answer, err := bare(w, tok)
			if err != nil {
				return w, err
			}
			done, next, err := sess.Challenge(answer)
			if err != nil {
				return w, err
			}
			if done {
				return w, nil
			}
			tok = next
		}
	}
	for _, m := range []kgosasl.Mechanism{plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		scram.Auth{User: "erin", Pass: "erin-secret"}.AsSha256Mechanism()} {
		w, err := login(m)
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		w.ping()
		if r := w.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
			t.Fatalf("%s: metadata after a v0 login: %+v", m.Name(), r)
		}
	}
	w, err := login(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())
	if err == nil {
		t.Fatal("a wrong password logged in after a v0 handshake")
	}
	w.expectClosed()
}

// Out-of-order requests during a login, as Kafka's
// SaslServerAuthenticator: before the handshake they close the connection
// at once (not an authentication failure, so without
// connection.failed.authentication.delay.ms); after it, in a login or a
// re-authentication, they are answered with their error response carrying
// ILLEGAL_SASL_STATE, then the connection closes.
func TestSASLOutOfOrderRequests(t *testing.T) {
	_, slow := saslNode(t, "SASL_PLAINTEXT", map[string]string{"connection.failed.authentication.delay.ms": "600000"})
	w := dial(t, slow)
	w.send(kmsg.NewPtrMetadataRequest())
	w.expectClosed() // within ioTimeout, far below the delay
	w = dial(t, slow)
	w.ping()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "g", "m"
	w.send(hb)
	w.expectClosed()

	_, addr := saslNode(t, "SASL_PLAINTEXT", map[string]string{"connections.max.reauth.ms": "600000"})
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID = "tx", 1
	for _, reauth := range []bool{false, true} {
		for _, req := range []kmsg.Request{hb, end} {
			w = dial(t, addr)
			if reauth {
				w.do(hs)
				if r := w.do(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 || r.SessionLifetimeMillis == 0 {
					t.Fatalf("PLAIN login: %+v", r)
				}
			}
			if r := w.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
				t.Fatalf("reauth %v: PLAIN handshake: %+v", reauth, r)
			}
			var code int16
			switch r := w.do(req).(type) {
			case *kmsg.HeartbeatResponse:
				code = r.ErrorCode
			case *kmsg.EndTxnResponse:
				code = r.ErrorCode
			}
			if code != kerr.IllegalSaslState.Code {
				t.Errorf("reauth %v: %s after the handshake: %v, want ILLEGAL_SASL_STATE", reauth, kmsg.NameForKey(req.Key()), kerr.ErrorForCode(code))
			}
			w.expectClosed()
		}
	}
}
