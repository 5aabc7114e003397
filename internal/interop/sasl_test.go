//go:build cgo

package interop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/servertest"
	"weir/internal/tlsconf/tlstest"
)

// librdkafka (2.6.1 and later send RFC 5802's SCRAM nonce, which Kafka 4
// and weir require) over SASL_SSL with SCRAM-SHA-512: a producer and a
// consumer log in, and a wrong password is refused with Kafka's message.
func TestSASLSSLScramSHA512(t *testing.T) {
	t.Logf("librdkafka %s", func() string { _, v := kafka.LibraryVersion(); return v }())
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	n := servertest.Start(t, servertest.Options{Overrides: map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":           "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
		"inter.broker.listener.name":     "PLAINTEXT",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
	}})
	addr := n.Server.Addr("SASL").String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "erin", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "erin-secret"}})
	if err == nil {
		err = res.Error()
	}
	if err == nil {
		_, err = adm.CreateTopic(ctx, 1, 1, nil, "scram")
	}
	if err != nil {
		t.Fatal(err)
	}
	config := func(password string, more kafka.ConfigMap) *kafka.ConfigMap {
		c := kafka.ConfigMap{"bootstrap.servers": addr, "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
			"sasl.username": "erin", "sasl.password": password, "ssl.ca.location": tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)}
		for k, v := range more {
			c[k] = v
		}
		return &c
	}

	p, err := kafka.NewProducer(config("erin-secret", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	topic := "scram"
	const records = 20
	delivered := make(chan kafka.Event, records)
	for i := range records {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(fmt.Sprintf("v%d", i))}, delivered); err != nil {
			t.Fatal(err)
		}
	}
	for range records {
		select {
		case e := <-delivered:
			if m := e.(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatalf("delivery over SASL_SSL: %v", m.TopicPartition.Error)
			}
		case <-ctx.Done():
			t.Fatal("records not delivered over SASL_SSL before the deadline")
		}
	}

	c, err := kafka.NewConsumer(config("erin-secret", kafka.ConfigMap{"group.id": "scram", "auto.offset.reset": "earliest"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	for i := range records {
		m, err := c.ReadMessage(time.Until(deadline(ctx)))
		if err != nil {
			t.Fatalf("consuming over SASL_SSL after %d records: %v", i, err)
		}
		if want := fmt.Sprintf("v%d", i); string(m.Value) != want {
			t.Fatalf("record %d: %q, want %q", i, m.Value, want)
		}
	}

	// A wrong password: librdkafka reports Kafka's message.
	bad, err := kafka.NewProducer(config("wrong", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	const msg = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
	for {
		select {
		case e := <-bad.Events():
			if ke, ok := e.(kafka.Error); ok && ke.Code() == kafka.ErrAuthentication {
				if !strings.Contains(ke.Error(), msg) {
					t.Fatalf("wrong password: %v, want %q", ke, msg)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("a wrong password reported no authentication error")
		}
	}
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
