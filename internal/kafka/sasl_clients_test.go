package kafka_test

// Real clients over SASL_SSL with SCRAM-SHA-512: IBM/sarama and kcat
// (librdkafka; skipped when kcat is not installed) produce and consume,
// and a client with a wrong password is refused with Kafka's error while
// a client logged in before keeps working.

import (
	"context"
	"crypto/tls"
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/internal/tlsconf/tlstest"
)

// scramNode starts a node with a SASL_SSL listener and the SCRAM-SHA-512
// user dave-512 (password dave-secret), creates topic on it, and returns
// the SASL_SSL address, the CA and a client logged in as dave-512 that
// produced one record to topic.
func scramNode(t *testing.T, ctx context.Context, topic string) (string, *tlstest.CA, *kgo.Client) {
	t.Helper()
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	n, addr := saslNode(t, "SASL_SSL", map[string]string{
		"ssl.keystore.type":     "PEM",
		"ssl.keystore.location": ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
	})
	adm := cliAdmin(t, n.Addr)
	scramUser(t, ctx, adm, "dave", "dave-secret")
	cliCreateTopic(t, ctx, adm, topic, 2, nil)
	first := saslClient(t, addr, scram.Auth{User: "dave-512", Pass: "dave-secret"}.AsSha512Mechanism(),
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}), kgo.DefaultProduceTopic(topic))
	if err := first.ProduceSync(ctx, kgo.StringRecord("first")).FirstErr(); err != nil {
		t.Fatalf("franz-go over SASL_SSL: %v", err)
	}
	return addr, ca, first
}

// saramaSCRAM is sarama's SCRAM client, run by franz-go's SCRAM-SHA-512
// mechanism: Step("") gives the client-first message, the server-first
// the client-final, and the server-final ends it once verified.
type saramaSCRAM struct {
	sess  kgosasl.Session
	first []byte
	done  bool
}

func (c *saramaSCRAM) Begin(user, password, _ string) (err error) {
	c.sess, c.first, err = scram.Auth{User: user, Pass: password}.AsSha512Mechanism().Authenticate(context.Background(), "")
	return err
}

func (c *saramaSCRAM) Step(challenge string) (string, error) {
	if challenge == "" && c.first != nil {
		first := c.first
		c.first = nil
		return string(first), nil
	}
	done, msg, err := c.sess.Challenge([]byte(challenge))
	c.done = done
	return string(msg), err
}

func (c *saramaSCRAM) Done() bool { return c.done }

func TestSASLSSLScramSarama(t *testing.T) {
	ctx := cliCtx(t)
	addr, ca, first := scramNode(t, ctx, "sarama-scram")
	config := func(password string) *sarama.Config {
		cfg := saramaConfig(sarama.V3_6_0_0)
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = &tls.Config{RootCAs: ca.Pool()}
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Version = sarama.SASLHandshakeV1
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.User, cfg.Net.SASL.Password = "dave-512", password
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{} }
		cfg.Metadata.Retry.Max = 0
		return cfg
	}
	cfg := config("dave-secret")
	msgs := saramaMessages("sarama-scram", 2, 40, 0, true)
	saramaSync(t, addr, cfg, msgs)
	// The record franz-go produced first is at offset 0 of its partition.
	counts := map[int32]int{0: 0, 1: 0}
	for _, m := range msgs {
		counts[m.Partition]++
	}
	got := 0
	for _, ms := range saramaConsume(t, ctx, addr, cfg, "sarama-scram", sarama.OffsetOldest, counts) {
		got += len(ms)
	}
	if got != len(msgs) {
		t.Fatalf("sarama consumed %d messages over SASL_SSL, want %d", got, len(msgs))
	}

	_, err := sarama.NewClient([]string{addr}, config("wrong"))
	if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) ||
		!strings.Contains(err.Error(), "invalid credentials with SASL mechanism SCRAM-SHA-512") {
		t.Fatalf("sarama with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := first.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("the client logged in before the failed login: %v", err)
	}
}

// librdkafkaFixedNonce reports whether kcat's librdkafka sends the SCRAM
// client-final nonce as RFC 5802 says: before 2.6.1 it appends its own
// nonce a second time, which Kafka 4 refuses (the fix of CVE-2024-56128
// compares the whole nonce; librdkafka#4895), and so does weir.
func librdkafkaFixedNonce(t *testing.T, kcat string) bool {
	t.Helper()
	out, _ := exec.Command(kcat, "-V").CombinedOutput()
	m := regexp.MustCompile(`librdkafka (\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("kcat -V names no librdkafka version:\n%s", out)
	}
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v[0] > 2 || v[0] == 2 && (v[1] > 6 || v[1] == 6 && v[2] >= 1)
}

// kcat over SASL_SSL: PLAIN and SCRAM-SHA-512 logins produce and consume,
// wrong passwords are refused with Kafka's message, and a client logged
// in before keeps working. A librdkafka older than 2.6.1 is refused even
// with the right SCRAM password, as by Kafka 4.
func TestSASLSSLKcat(t *testing.T) {
	kcat := kcatPath(t)
	ctx := cliCtx(t)
	addr, ca, first := scramNode(t, ctx, "kcat-sasl")
	caFile := tlstest.WriteFile(t, t.TempDir(), "ca.pem", ca.PEM)
	login := func(mechanism, user, password string, args ...string) []string {
		return append([]string{"-b", addr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mechanism,
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + password, "-X", "ssl.ca.location=" + caFile}, args...)
	}
	produced := []string{":first"}
	roundTrip := func(mechanism, user, password, tag string) {
		t.Helper()
		lines := kcatLines(50, tag)
		runKcat(t, ctx, kcat, []byte(strings.Join(lines, "\n")+"\n"), login(mechanism, user, password, "-P", "-t", "kcat-sasl", "-K:")...)
		produced = append(produced, lines...)
		out := runKcat(t, ctx, kcat, nil, login(mechanism, user, password, "-C", "-t", "kcat-sasl", "-o", "beginning", "-e", "-q",
			"-X", "fetch.wait.max.ms=50", "-f", "%k:%s\n")...)
		got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		want := slices.Clone(produced)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("kcat (%s) consumed %d lines over SASL_SSL, want %d:\n%s", mechanism, len(got), len(want), out)
		}
	}
	// Kafka's messages for a failed PLAIN and SCRAM login.
	const plainFailed = "Authentication failed: Invalid username or password"
	const scramFailed = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
	refused := func(what string, args []string, msg string) {
		t.Helper()
		out, err := exec.CommandContext(ctx, kcat, append(args, "-L", "-m", "5")...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), msg) {
			t.Fatalf("kcat, %s: %v, want %q\n%s", what, err, msg, out)
		}
	}

	roundTrip("PLAIN", "alice", "alice-secret", "plain")
	refused("PLAIN, wrong password", login("PLAIN", "alice", "wrong"), plainFailed)
	refused("SCRAM-SHA-512, wrong password", login("SCRAM-SHA-512", "dave-512", "wrong"), scramFailed)
	if librdkafkaFixedNonce(t, kcat) {
		roundTrip("SCRAM-SHA-512", "dave-512", "dave-secret", "scram")
	} else {
		refused("librdkafka's doubled SCRAM nonce", login("SCRAM-SHA-512", "dave-512", "dave-secret"), scramFailed)
	}
	if err := first.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("the client logged in before the failed logins: %v", err)
	}
	if !librdkafkaFixedNonce(t, kcat) {
		t.Skip("kcat's librdkafka is older than 2.6.1: its SCRAM login is refused as by Kafka 4 (checked), so only PLAIN produced and consumed")
	}
}
