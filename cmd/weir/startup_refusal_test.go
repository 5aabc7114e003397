package main_test

// Start-up refusals of a node that is to join a multi-node quorum: each
// bad input stops `weir server` at once, with exit status 1 and a message
// that names what is wrong.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeProps writes a server.properties for node 1 of a three-voter quorum
// (the other voters need not run), with lines overriding the defaults, and
// returns its path and the node's directory.
func nodeProps(t *testing.T, lines ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	conf := append([]string{
		"process.roles=broker,controller",
		"node.id=1",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", freePort(t), freePort(t)),
		fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d,2@127.0.0.1:%d,3@127.0.0.1:%d", freePort(t), freePort(t), freePort(t)),
		"log.dirs=" + filepath.Join(dir, "a") + "," + filepath.Join(dir, "b"),
		"metadata.log.dir=" + filepath.Join(dir, "meta"),
	}, lines...)
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return props, dir
}

// refused runs `weir server -c props` and checks that it exits with
// status 1 within limit and that stderr says every one of want.
func refused(t *testing.T, props string, limit time.Duration, want ...string) {
	t.Helper()
	start := time.Now()
	_, stderr, err := runWeir(t, "server", "-c", props)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("weir server started and exited cleanly; stderr:\n%s", stderr)
	}
	if code := exitCode(err); code != 1 {
		t.Errorf("exit status %d (%v), want 1; stderr:\n%s", code, err, stderr)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("weir crashed instead of refusing:\n%s", stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("the refusal does not say %q:\n%s", w, stderr)
		}
	}
	if took > limit {
		t.Errorf("refusing took %v, more than %v", took, limit)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func format(t *testing.T, props, clusterID string) {
	t.Helper()
	if _, stderr, err := runWeir(t, "storage", "format", "-t", clusterID, "-c", props); err != nil {
		t.Fatalf("format: %v\n%s", err, stderr)
	}
}

func randomUUID(t *testing.T) string {
	t.Helper()
	out, _, err := runWeir(t, "storage", "random-uuid")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// A server.properties copied from a secured Kafka cluster using Kerberos
// between brokers and an authorizer, neither of which weir implements: it
// refuses to start rather than run with less protection than configured,
// naming each setting and what it supports instead.
func TestStartRefusesSecuritySettings(t *testing.T) {
	props, _ := nodeProps(t,
		fmt.Sprintf("listeners=SASL_SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", freePort(t), freePort(t)),
		"listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=SASL_SSL",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;")
	refused(t, props, 10*time.Second,
		`sasl.mechanism.inter.broker.protocol="GSSAPI"`, "weir logs in with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, not GSSAPI",
		"a listener serves TLS", "needs a key store")
}

// An authorizer other than Kafka's StandardAuthorizer is refused, not
// replaced by weir's.
func TestStartRefusesAnotherAuthorizer(t *testing.T) {
	props, _ := nodeProps(t, "authorizer.class.name=kafka.security.authorizer.AclAuthorizer")
	refused(t, props, 10*time.Second, "authorizer.class.name", "weir implements only Kafka's StandardAuthorizer")
}

// A node of a multi-node quorum does not format its own storage.
func TestStartRefusesUnformattedStorage(t *testing.T) {
	props, _ := nodeProps(t)
	refused(t, props, 10*time.Second, "meta.properties", "weir storage format")
}

// One of the node's directories was formatted for another cluster.
func TestStartRefusesDirectoriesOfTwoClusters(t *testing.T) {
	props, dir := nodeProps(t)
	ours, theirs := randomUUID(t), randomUUID(t)
	format(t, props, ours)
	meta := filepath.Join(dir, "b", "meta.properties")
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, []byte(strings.Replace(string(data), "cluster.id="+ours, "cluster.id="+theirs, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, props, 10*time.Second, filepath.Join(dir, "b"), ours, theirs)
}

// A controller must be one of the voters it is configured with.
func TestStartRefusesAControllerThatIsNotAVoter(t *testing.T) {
	// (Subtests are named without commas: their names are in the paths
	// of log.dirs, a comma-separated list.)
	for name, roles := range map[string]string{"combined": "broker,controller", "controller-only": "controller"} {
		t.Run(name, func(t *testing.T) {
			lines := []string{"process.roles=" + roles, "node.id=4"}
			if roles == "controller" {
				lines = append(lines, fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", freePort(t)))
			}
			props, _ := nodeProps(t, lines...)
			refused(t, props, 10*time.Second, "node.id", "node id 4 must be one of the controller.quorum.voters")
		})
	}
}

// A broker-only node whose controllers cannot be reached gives up after
// initial.broker.registration.timeout.ms, saying so, rather than hanging
// or crashing.
func TestStartOfABrokerWithNoReachableControllerFails(t *testing.T) {
	props, _ := nodeProps(t, "process.roles=broker", "node.id=4",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", freePort(t)),
		"controller.listener.names=CONTROLLER",
		"initial.broker.registration.timeout.ms=2000")
	format(t, props, randomUUID(t))
	refused(t, props, 15*time.Second, "quorum")
}
