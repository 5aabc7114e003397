// Package clustertest runs clusters of weir nodes inside a test process:
// N combined nodes (broker and controller, the voters of the metadata
// quorum) and M broker-only nodes, on 127.0.0.1 with real listeners,
// their data in temporary directories, and a network between them that
// tests can cut. It is imported by tests only.
//
//	c := clustertest.New(t, clustertest.Options{Nodes: 3, Brokers: 1})
//	c.Isolate(1)         // node 1 can reach no other node, nor they it
//	c.Heal()
//	c.Kill(c.Leader())   // crash the active controller
//	c.Restart(0, false)  // node 0 again, on a wiped (re-formatted) disk
//	cl := c.Client(t)    // a franz-go client seeded with the live brokers
//
// Nodes are named by index, the combined nodes first (0 to N-1), then the
// broker-only ones (N to N+M-1); node i has node.id i+1. A node keeps its
// ports and its directory across restarts.
//
// Faults are between nodes: every connection a node opens to another goes
// through the cluster's network (server.Options.Dial), which refuses new
// connections across a cut link and closes the open ones. Clients' own
// connections are never cut.
package clustertest

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/server"
	"weir/internal/testport"
	"weir/internal/testwait"
	"weir/internal/vfs"
)

// Options configure a cluster.
type Options struct {
	// Nodes is the number of combined nodes, every one broker and
	// controller and a voter of the metadata quorum (3 when zero).
	Nodes int
	// Brokers is the number of broker-only nodes (process.roles=broker),
	// which follow the metadata log as observers.
	Brokers int
	// Overrides are server.properties keys for every node, applied over
	// Defaults (and over the listeners, quorum and directories the
	// harness sets).
	Overrides map[string]string
	// NodeOverrides are keys for one node, by node.id, applied last (a
	// broker.rack per node, say).
	NodeOverrides map[int32]map[string]string
	// NodeFS is the filesystem under one node's logs, by node.id (fault
	// injection); the OS when absent.
	NodeFS map[int32]vfs.FS
	// Logs shows the nodes' logs (debug level) on stderr.
	Logs bool
	// ClientOpts are given to every client of Client (TLS for a cluster
	// whose listeners run SSL).
	ClientOpts []kgo.Opt
}

// Defaults are the keys every node gets unless Overrides sets them:
// timeouts short enough that fencing and elections take a test a second or
// two rather than Kafka's nine, and internal topics with one replica.
var Defaults = map[string]string{
	"broker.heartbeat.interval.ms":             "200",
	"broker.session.timeout.ms":                "1500",
	"controller.quorum.election.timeout.ms":    "500",
	"initial.broker.registration.timeout.ms":   "30000",
	"offsets.topic.replication.factor":         "1",
	"transaction.state.log.replication.factor": "1",
	"transaction.state.log.min.isr":            "1",
	"group.initial.rebalance.delay.ms":         "0",
}

// Cluster is a running cluster. Its methods are called from the test's
// goroutine.
type Cluster struct {
	t         testing.TB
	opts      Options
	clusterID string
	net       *network
	nodes     []*Node
}

// Node is one node of a cluster.
type Node struct {
	Index int
	ID    int32 // node.id
	// Controller is true for the combined nodes, false for broker-only
	// ones.
	Controller bool
	// Addr and ControllerAddr are the PLAINTEXT and CONTROLLER
	// listeners' host:port, the same across restarts (ControllerAddr is
	// empty on a broker-only node).
	Addr           string
	ControllerAddr string
	// Dir holds the node's log dirs (Dir/logs) and metadata log dir
	// (Dir/metadata).
	Dir string
	// Server is the running node, nil while it is down.
	Server *server.Server
}

// Up reports whether the node is running.
func (n *Node) Up() bool { return n.Server != nil }

// MetadataDir is the node's metadata.log.dir.
func (n *Node) MetadataDir() string { return filepath.Join(n.Dir, "metadata") }

// New formats and starts a cluster and stops it when the test ends. It
// returns once every node serves clients (registered and unfenced).
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes <= 0 {
		opts.Nodes = 3
	}
	c := &Cluster{t: t, opts: opts, clusterID: server.RandomUUID(), net: newNetwork()}
	ports, err := freePorts(2*opts.Nodes + opts.Brokers)
	if err != nil {
		t.Fatalf("reserving ports: %v", err)
	}
	root := t.TempDir()
	for i := 0; i < opts.Nodes+opts.Brokers; i++ {
		n := &Node{Index: i, ID: int32(i + 1), Controller: i < opts.Nodes,
			Addr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
			Dir:  filepath.Join(root, fmt.Sprintf("node%d", i)),
		}
		ports = ports[1:]
		c.net.listen(i, n.Addr)
		if n.Controller {
			n.ControllerAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
			ports = ports[1:]
			c.net.listen(i, n.ControllerAddr)
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		if err := c.format(n); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.stopAll)
	if err := c.start(c.all()...); err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	return c
}

// freePorts returns n distinct loopback ports for nodes (see testport).
func freePorts(n int) ([]int, error) { return testport.Free(n) }

// ClusterID is the cluster id every node was formatted with.
func (c *Cluster) ClusterID() string { return c.clusterID }

// Size is the number of nodes, up or down.
func (c *Cluster) Size() int { return len(c.nodes) }

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// all lists every node's index.
func (c *Cluster) all() []int {
	out := make([]int, len(c.nodes))
	for i := range out {
		out[i] = i
	}
	return out
}

// Live lists the indexes of the running nodes.
func (c *Cluster) Live() []int {
	var out []int
	for _, n := range c.nodes {
		if n.Up() {
			out = append(out, n.Index)
		}
	}
	return out
}

// props are node n's server.properties.
func (c *Cluster) props(n *Node) map[string]string {
	var voters []string
	for _, m := range c.nodes {
		if m.Controller {
			voters = append(voters, fmt.Sprintf("%d@%s", m.ID, m.ControllerAddr))
		}
	}
	p := map[string]string{}
	for k, v := range Defaults {
		p[k] = v
	}
	for k, v := range map[string]string{
		"process.roles":             "broker,controller",
		"node.id":                   fmt.Sprint(n.ID),
		"listeners":                 "PLAINTEXT://" + n.Addr + ",CONTROLLER://" + n.ControllerAddr,
		"advertised.listeners":      "PLAINTEXT://" + n.Addr,
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  strings.Join(voters, ","),
		"log.dirs":                  filepath.Join(n.Dir, "logs"),
		"metadata.log.dir":          n.MetadataDir(),
	} {
		p[k] = v
	}
	if !n.Controller {
		p["process.roles"], p["listeners"] = "broker", "PLAINTEXT://"+n.Addr
	}
	for k, v := range c.opts.Overrides {
		p[k] = v
	}
	for k, v := range c.opts.NodeOverrides[n.ID] {
		p[k] = v
	}
	return p
}

// format writes meta.properties for the cluster into n's directories.
func (c *Cluster) format(n *Node) error {
	p := c.props(n)
	dirs := append(strings.Split(p["log.dirs"], ","), p["metadata.log.dir"])
	if _, err := server.Format(dirs, c.clusterID, n.ID, false); err != nil {
		return fmt.Errorf("formatting node %d: %w", n.Index, err)
	}
	return nil
}

// start starts the given nodes at once (each waits for a quorum, which
// may need the others) and returns when all serve clients.
func (c *Cluster) start(idx ...int) error {
	type started struct {
		i   int
		srv *server.Server
		err error
	}
	for _, i := range idx {
		if c.nodes[i].Up() {
			return fmt.Errorf("node %d is already running", i)
		}
	}
	out := make(chan started, len(idx))
	for _, i := range idx {
		n := c.nodes[i]
		props := c.props(n)
		dial := c.net.dialer(i)
		lg := c.logger(n)
		fs := c.opts.NodeFS[n.ID]
		go func() {
			srv, err := startServer(props, dial, lg, fs)
			out <- started{i, srv, err}
		}()
	}
	var errs []string
	for range idx {
		s := <-out
		if s.err != nil {
			errs = append(errs, fmt.Sprintf("node %d: %v", s.i, s.err))
			continue
		}
		c.nodes[s.i].Server = s.srv
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func startServer(props map[string]string, dial dialFunc, lg *slog.Logger, fs vfs.FS) (*server.Server, error) {
	cfg, _, err := server.LoadConfig(props)
	if err != nil {
		return nil, err
	}
	srv := server.New(cfg, server.Options{Logger: lg, Dial: dial, FS: fs})
	if err := srv.Start(); err != nil {
		return nil, err
	}
	return srv, nil
}

func (c *Cluster) logger(n *Node) *slog.Logger {
	if !c.opts.Logs {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", n.ID)
}

// Kill crashes node i (server.Server.Kill): no controlled shutdown, and
// nothing flushed or checkpointed.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	n := c.nodes[i]
	if !n.Up() {
		c.t.Fatalf("killing node %d: it is not running", i)
	}
	n.Server.Kill()
	n.Server = nil
}

// Stop stops node i cleanly, as SIGTERM does (a controlled shutdown first).
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	n := c.nodes[i]
	if !n.Up() {
		c.t.Fatalf("stopping node %d: it is not running", i)
	}
	if err := n.Server.Shutdown(); err != nil {
		c.t.Errorf("stopping node %d: %v", i, err)
	}
	n.Server = nil
}

// Restart starts node i again with the same node id and ports, stopping
// it cleanly first if it runs. With keepDisk false its directories are
// wiped and formatted again for the cluster, so it rejoins empty. It
// returns when the node serves clients, which needs a quorum.
func (c *Cluster) Restart(i int, keepDisk bool) {
	c.t.Helper()
	n := c.nodes[i]
	if n.Up() {
		c.Stop(i)
	}
	if !keepDisk {
		if err := os.RemoveAll(n.Dir); err != nil {
			c.t.Fatal(err)
		}
		if err := c.format(n); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := c.start(i); err != nil {
		c.t.Fatalf("restarting node %d: %v", i, err)
	}
}

// RestartAll stops every running node cleanly, one after another (the
// broker-only ones first, while there is a quorum for their controlled
// shutdown), then starts every node at once on its data.
func (c *Cluster) RestartAll() {
	c.t.Helper()
	live := c.Live()
	slices.Reverse(live)
	for _, i := range live {
		c.Stop(i)
	}
	if err := c.start(c.all()...); err != nil {
		c.t.Fatalf("restarting the cluster: %v", err)
	}
}

// stopAll stops the running nodes at the end of the test.
func (c *Cluster) stopAll() {
	for _, n := range slices.Backward(c.nodes) {
		if n.Up() {
			if err := n.Server.Shutdown(); err != nil {
				c.t.Errorf("stopping node %d: %v", n.Index, err)
			}
			n.Server = nil
		}
	}
}

// Cut severs the link between nodes a and b, both ways: their open
// connections are closed and new ones refused until Heal.
func (c *Cluster) Cut(a, b int) { c.net.setCut(a, b, true) }

// Isolate cuts node a off from every other node.
func (c *Cluster) Isolate(a int) {
	for b := range c.nodes {
		c.net.setCut(a, b, true)
	}
}

// Mend restores the link between nodes a and b.
func (c *Cluster) Mend(a, b int) { c.net.setCut(a, b, false) }

// Heal restores every link.
func (c *Cluster) Heal() { c.net.heal() }

// Leader returns the index of the active controller, waiting up to ten
// seconds for the live nodes to have one. When two nodes both believe
// they are active (an isolated leader that has not yet stepped down), the
// one of the later term wins.
func (c *Cluster) Leader() int {
	c.t.Helper()
	leader := -1
	testwait.For(c.t, 10*time.Second, "an active controller", func() error {
		var term uint64
		leader = -1
		for _, i := range c.Live() {
			st := c.nodes[i].Server.QuorumStatus()
			if st.Active && (leader < 0 || st.Term > term) {
				leader, term = i, st.Term
			}
		}
		if leader < 0 {
			return fmt.Errorf("no live node is the active controller (live: %v)", c.Live())
		}
		return nil
	})
	return leader
}

// Seeds returns every node's broker listener, up or not: a client that
// outlives restarts can be seeded with them all, since a node keeps its
// ports.
func (c *Cluster) Seeds() []string {
	seeds := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		seeds[i] = n.Addr
	}
	return seeds
}

// Client returns a franz-go client seeded with every live node's broker
// listener, closed when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	var seeds []string
	for _, i := range c.Live() {
		seeds = append(seeds, c.nodes[i].Addr)
	}
	base := append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, c.opts.ClientOpts...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
