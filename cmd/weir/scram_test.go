package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The first SCRAM user of a cluster whose only client listener needs a
// SCRAM login: weir storage format --add-scram, as kafka-storage.sh's.
func TestFormatAddScram(t *testing.T) {
	dir := t.TempDir()
	port, iport, cport := freePort(t), freePort(t), freePort(t)
	props := filepath.Join(dir, "server.properties")
	write := func(interBroker string) {
		os.WriteFile(props, []byte(strings.Join([]string{
			"process.roles=broker,controller", "node.id=1",
			fmt.Sprintf("listeners=SASL_PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, iport, cport),
			fmt.Sprintf("advertised.listeners=SASL_PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d", port, iport),
			"listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"inter.broker.listener.name=" + interBroker,
			fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", cport),
			"sasl.enabled.mechanisms=SCRAM-SHA-512",
			"log.dirs=" + filepath.Join(dir, "logs"), "metadata.log.dir=" + filepath.Join(dir, "meta"),
		}, "\n")+"\n"), 0o644)
	}
	// A SASL inter-broker listener needs a mechanism weir logs in with
	// (Kafka's default is GSSAPI); INTERNAL is the inter-broker listener
	// instead.
	write("SASL_PLAINTEXT")
	if _, stderr, err := runWeir(t, "server", "-c", props); err == nil || !strings.Contains(stderr, "not GSSAPI") {
		t.Fatalf("a SASL inter-broker listener with GSSAPI: %v\n%s", err, stderr)
	}
	write("INTERNAL")

	for _, bad := range []string{"SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-512=[password=b]", "SCRAM-SHA-512=[name=a]",
		"SCRAM-SHA-512=[name=a,password=b,iterations=100]", "SCRAM-SHA-512=[name=a,pass=b]"} {
		if _, stderr, err := runWeir(t, "storage", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", props, "--add-scram", bad); err == nil || !strings.Contains(stderr, "--add-scram") {
			t.Errorf("--add-scram %s: %v %s", bad, err, stderr)
		}
	}
	if out, stderr, err := runWeir(t, "storage", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", props,
		"--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]"); err != nil {
		t.Fatalf("format: %v\n%s%s", err, out, stderr)
	}
	p := launch(t, fmt.Sprintf("127.0.0.1:%d", port), "server", "-c", props)
	defer p.signal(t, 15)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	login := func(pass string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", port)), kgo.RequestRetries(0),
			kgo.SASL(scram.Auth{User: "admin", Pass: pass}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.Ping(ctx)
	}
	if err := login("admin-secret"); err != nil {
		t.Fatalf("the --add-scram user could not log in: %v\n%s", err, p.stderr.String())
	}
	if err := login("wrong"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v", err)
	}
}
