package clustertest

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/testwait"
	"weir/internal/tlsconf/tlstest"
)

// Every listener needs a SASL login: the brokers log in to each other
// (SASL_SSL, PLAIN) and to the controllers (SASL_PLAINTEXT, SCRAM would
// need users before the quorum exists, so PLAIN too), and a broker-only
// node follows the metadata log through its login.
func TestSASLCluster(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "cluster CA"), t.TempDir()
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_client="client-secret";`
	c := New(t, Options{Nodes: 3, Brokers: 1, Overrides: map[string]string{
		"listener.security.protocol.map":                  "PLAINTEXT:SASL_SSL,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                         "PLAIN",
		"sasl.mechanism.inter.broker.protocol":            "PLAIN",
		"sasl.mechanism.controller.protocol":              "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config":  users,
		"listener.name.controller.plain.sasl.jaas.config": users,
		"ssl.keystore.type":                               "PEM",
		"ssl.keystore.location":                           ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
		"ssl.truststore.type":                             "PEM",
		"ssl.truststore.location":                         tlstest.WriteFile(t, dir, "ca.pem", ca.PEM),
	}, ClientOpts: []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}),
		kgo.SASL(plain.Auth{User: "client", Pass: "client-secret"}.AsMechanism())}})

	createReplicated(t, c, "secure", 2, 3, map[string]*string{"min.insync.replicas": ptr("3")})
	sent := produceAll(t, c, "secure", 100)
	sameRecords(t, sent, consumeAll(t, c, "secure", 100))
	testwait.For(t, 15*time.Second, "every replica in the ISR", func() error {
		for _, i := range c.Live() {
			for p := int32(0); p < 2; p++ {
				if _, isr, _ := partitionState(c, i, "secure", p); len(isr) != 3 {
					return fmt.Errorf("node %d: partition %d ISR %v", i, p, isr)
				}
			}
		}
		return nil
	})
}
