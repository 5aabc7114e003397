package clustertest

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testwait"
	"weir/internal/tlsconf/tlstest"
)

// Every listener runs SSL with client certificates required: the
// controllers' quorum, the brokers' registrations and heartbeats, a
// broker-only node's metadata fetches, replica fetches and transaction
// markers all go over TLS, each node presenting its certificate as a
// client and checking the other's name (ssl.endpoint.identification.algorithm=https).
func TestTLSCluster(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "cluster CA"), t.TempDir()
	c := New(t, Options{Nodes: 3, Brokers: 1, Overrides: map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:SSL",
		"ssl.client.auth":                "required",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          ca.Issue("broker", "").KeystoreFile(t, dir, "broker.pem"),
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        tlstest.WriteFile(t, dir, "ca.pem", ca.PEM),
	}, ClientOpts: []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(),
		Certificates: []tls.Certificate{ca.Issue("client", "").TLS(t)}})}})

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

	// A committed transaction: its markers go to the partitions' leaders
	// over the inter-broker listener.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	txn := c.Client(t, kgo.TransactionalID("tls-txn"), kgo.DefaultProduceTopic("secure"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := txn.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("txn-%d", i))).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	rc := c.Client(t, kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := 0
	for got < 110 {
		fs := rc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed consumer got %d of 110 records", got)
		}
		got += fs.NumRecords()
	}
}
