// Package servertest starts weir nodes inside a test process: a real
// server on a loopback port with its data in a temporary directory. It is
// imported by tests only.
package servertest

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"weir/internal/config"
	"weir/internal/kafka"
	"weir/internal/server"
	"weir/internal/vfs"
)

// Options configure a test node.
type Options struct {
	// Overrides are server.properties keys, applied over the test defaults.
	Overrides map[string]string
	// Dir holds the node's data; a new temporary directory when empty.
	// Reusing a Dir restarts a node on its old data.
	Dir string
	// FS is the filesystem under the logs (fault injection); nil is the OS.
	FS vfs.FS
	// Logs shows the server's log in the test output.
	Logs bool
	// LogOutput, if set, receives the server's log as text at INFO (the
	// level of weir server's --log-level default) instead: the level its
	// loggers start at, which the BROKER_LOGGER config resource changes.
	LogOutput io.Writer
	// TxnVerifier replaces the KIP-890 check with the transaction
	// coordinator; nil is the real one.
	TxnVerifier kafka.TxnVerifier
	// ServeWhileLoading returns from Start and Restart as soon as the
	// server serves, while its logs may still be opening (each partition
	// answers NOT_LEADER_OR_FOLLOWER until its log is open). By default
	// they also wait until every log found on disk is open, so that a
	// test's first request to a partition after a restart is served.
	ServeWhileLoading bool
}

// Node is a running single-node weir server.
type Node struct {
	Server *server.Server
	// Addr is the host:port of the PLAINTEXT listener.
	Addr string
	Dir  string
	t    testing.TB
	opts Options
}

// Start runs a single node (broker and controller) on 127.0.0.1 with a
// random port and stops it when the test ends.
func Start(t testing.TB, opts Options) *Node {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	n := &Node{Dir: opts.Dir, t: t, opts: opts}
	if err := n.start(); err != nil {
		t.Fatalf("starting weir: %v", err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

// Config returns the broker configuration a node with these options runs.
func Config(dir string, overrides map[string]string) (*config.Broker, error) {
	props := map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":     "PLAINTEXT://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:0",
		"log.dirs":                 dir + "/logs",
		"metadata.log.dir":         dir + "/metadata",
	}
	for k, v := range overrides {
		props[k] = v
	}
	cfg, _, err := server.LoadConfig(props)
	return cfg, err
}

func (n *Node) start() error {
	cfg, err := Config(n.Dir, n.opts.Overrides)
	if err != nil {
		return err
	}
	var lg *slog.Logger
	switch {
	case n.opts.LogOutput != nil:
		lg = slog.New(slog.NewTextHandler(n.opts.LogOutput, &slog.HandlerOptions{Level: slog.LevelInfo}))
	case n.opts.Logs:
		lg = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	default:
		lg = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n.Server = server.New(cfg, server.Options{Logger: lg, AutoFormat: true, FS: n.opts.FS, TxnVerifier: n.opts.TxnVerifier})
	if err := n.Server.Start(); err != nil {
		return err
	}
	n.Addr = n.Server.Addr("PLAINTEXT").String()
	if !n.opts.ServeWhileLoading {
		select {
		case <-n.Server.LogsLoaded():
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("the logs found on disk were not all open 2 minutes after the start")
		}
	}
	return nil
}

// Stop shuts the node down cleanly (as SIGTERM does); stopping twice is
// harmless.
func (n *Node) Stop() {
	if n.Server != nil {
		if err := n.Server.Shutdown(); err != nil {
			n.t.Errorf("shutting down weir: %v", err)
		}
		n.Server = nil
	}
}

// Restart stops the node and starts it again on the same data. The new
// node listens on a new port: read Addr again.
func (n *Node) Restart() {
	n.t.Helper()
	n.Stop()
	if err := n.start(); err != nil {
		n.t.Fatalf("restarting weir: %v", err)
	}
}

// String names the node for test messages.
func (n *Node) String() string { return fmt.Sprintf("weir@%s", n.Addr) }
