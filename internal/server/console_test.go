package server_test

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"weir/internal/server"
	"weir/internal/tlsconf/tlstest"
)

// consoleStartErr starts a node with overrides and weir.console.listener
// on a free loopback port, and returns its start's error; the console's
// port must not be bound after a refused start.
func consoleStartErr(t *testing.T, overrides map[string]string) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	overrides["weir.console.listener"] = "http://" + addr
	dir := t.TempDir()
	props := map[string]string{"controller.quorum.voters": "1@127.0.0.1:0", "log.dirs": dir + "/logs", "metadata.log.dir": dir + "/metadata"}
	for k, v := range overrides {
		props[k] = v
	}
	cfg, _, err := server.LoadConfig(props)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	s := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AutoFormat: true})
	err = s.Start()
	if err == nil {
		s.Shutdown()
		return nil
	}
	if c, derr := net.Dial("tcp", addr); derr == nil {
		c.Close()
		t.Errorf("the console's port %s is bound after a refused start", addr)
	}
	return err
}

// TestConsoleRefusesSSLOnlyBroker: with only SSL broker listeners the
// console would act with the node's own certificate: the node refuses to
// start.
func TestConsoleRefusesSSLOnlyBroker(t *testing.T) {
	ca, dir := tlstest.NewCA(t, "test CA"), t.TempDir()
	err := consoleStartErr(t, map[string]string{
		"listeners":                      "SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":           "SSL://127.0.0.1:0",
		"listener.security.protocol.map": "SSL:SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "SSL",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          ca.Issue("broker", "", "127.0.0.1").KeystoreFile(t, dir, "broker.pem"),
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        tlstest.WriteFile(t, dir, "ca.pem", ca.PEM),
	})
	if err == nil || !strings.Contains(err.Error(), "weir.console.listener: the console needs a PLAINTEXT, SASL_PLAINTEXT or SASL_SSL broker listener") {
		t.Fatalf("start with only an SSL broker listener: %v", err)
	}
}

// TestConsoleRefusesControllerOnlyNode: the console is a client of the
// node's broker listener; a controller-only node has none.
func TestConsoleRefusesControllerOnlyNode(t *testing.T) {
	err := consoleStartErr(t, map[string]string{
		"process.roles": "controller",
		"listeners":     "CONTROLLER://127.0.0.1:0",
	})
	if err == nil || !strings.Contains(err.Error(), "weir.console.listener: the console is a client of the node's broker listener, and this node is not a broker (process.roles=controller)") {
		t.Fatalf("start of a controller-only node: %v", err)
	}
}
