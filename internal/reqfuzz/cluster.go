package reqfuzz

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"weir/internal/testport"
)

// Cluster is n combined weir nodes (broker and controller), each its own
// process of the weir binary, listening on 127.0.0.1 only. Processes give
// the fuzzer an honest RSS and survive nothing the fuzzer does to them: a
// crash is seen as an exit, not as the fuzzer dying with the node.
type Cluster struct {
	Binary string
	Dir    string
	Nodes  []*Node
}

// Node is one weir process of a Cluster.
type Node struct {
	ID    int
	Addr  string // PLAINTEXT listener, 127.0.0.1:port
	props string
	log   *os.File
	cmd   *exec.Cmd
	exit  chan struct{} // closed when the process has exited
	mu    sync.Mutex
	err   error // the process's exit status, once exited
}

// NodeConfig is the server.properties of a fuzzed node, beyond listeners,
// quorum and directories: internal topics fit the cluster size, groups
// rebalance without the initial delay, and requests are limited to 8 MiB so
// that frames over the limit are cheap to send.
func NodeConfig(nodes int) map[string]string {
	rf := strconv.Itoa(min(nodes, 3))
	return map[string]string{
		"offsets.topic.replication.factor":         rf,
		"transaction.state.log.replication.factor": rf,
		"transaction.state.log.min.isr":            strconv.Itoa(min(nodes, 2)),
		"offsets.topic.num.partitions":             "10",
		"transaction.state.log.num.partitions":     "10",
		"group.initial.rebalance.delay.ms":         "0",
		"socket.request.max.bytes":                 strconv.Itoa(MaxRequestBytes),
		"broker.session.timeout.ms":                "6000",
		"broker.heartbeat.interval.ms":             "500",
	}
}

// MaxRequestBytes is socket.request.max.bytes of the fuzzed nodes.
const MaxRequestBytes = 8 << 20

// StartCluster formats and starts n nodes under dir with the weir binary
// and waits until every node listens.
func StartCluster(binary, dir string, n int) (*Cluster, error) {
	c := &Cluster{Binary: binary, Dir: dir}
	out, err := exec.Command(binary, "storage", "random-uuid").Output()
	if err != nil {
		return nil, fmt.Errorf("weir storage random-uuid: %w", err)
	}
	clusterID := strings.TrimSpace(string(out))
	ports := make([]int, 2*n)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[n+i]))
	}
	conf := NodeConfig(n)
	for i := range n {
		nd := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return nil, err
		}
		props := map[string]string{
			"process.roles":            "broker,controller",
			"node.id":                  strconv.Itoa(i + 1),
			"listeners":                fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[i], ports[n+i]),
			"controller.quorum.voters": strings.Join(voters, ","),
			"log.dirs":                 filepath.Join(nd, "logs"),
			"metadata.log.dir":         filepath.Join(nd, "meta"),
		}
		maps.Copy(props, conf)
		var text strings.Builder
		for _, k := range slices.Sorted(maps.Keys(props)) {
			fmt.Fprintf(&text, "%s=%s\n", k, props[k])
		}
		node := &Node{ID: i + 1, Addr: fmt.Sprintf("127.0.0.1:%d", ports[i]), props: filepath.Join(nd, "server.properties")}
		if err := os.WriteFile(node.props, []byte(text.String()), 0o644); err != nil {
			return nil, err
		}
		if out, err := exec.Command(binary, "storage", "format", "-t", clusterID, "-c", node.props).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("formatting node %d: %v\n%s", i+1, err, out)
		}
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		if err := node.start(c); err != nil {
			c.Kill()
			return nil, err
		}
	}
	return c, nil
}

func freePort() (int, error) {
	ports, err := testport.Free(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// start runs the node's process, its output appended to node<id>.log, and
// waits until it accepts connections.
func (n *Node) start(c *Cluster) error {
	var err error
	n.log, err = os.OpenFile(filepath.Join(c.Dir, fmt.Sprintf("node%d.log", n.ID)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.cmd = exec.Command(c.Binary, "server", "-c", n.props)
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	n.exit = make(chan struct{})
	if err := n.cmd.Start(); err != nil {
		return err
	}
	go func(cmd *exec.Cmd, exit chan struct{}) {
		err := cmd.Wait()
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
		close(exit)
	}(n.cmd, n.exit)
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", n.Addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		if e := n.Exited(); e != nil {
			return fmt.Errorf("node %d exited at start: %v", n.ID, e)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d does not listen on %s: %v", n.ID, n.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Exited returns nil while the process runs, else why it ended.
func (n *Node) Exited() error {
	select {
	case <-n.exit:
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.err == nil {
			return errors.New("exited with status 0")
		}
		return n.err
	default:
		return nil
	}
}

// RSS returns the resident set size of the process in bytes (VmRSS).
func (n *Node) RSS() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// stop sends SIGTERM and waits for a clean exit.
func (n *Node) stop() error {
	defer n.log.Close()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-n.exit:
	case <-time.After(60 * time.Second):
		n.cmd.Process.Kill()
		<-n.exit
		return fmt.Errorf("node %d did not stop within 60s of SIGTERM", n.ID)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil {
		return fmt.Errorf("node %d exited with %v after SIGTERM", n.ID, n.err)
	}
	return nil
}

// Restart stops every node cleanly and starts them again on their data.
func (c *Cluster) Restart() error {
	for _, n := range c.Nodes {
		if err := n.stop(); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		if err := n.start(c); err != nil {
			return err
		}
	}
	return nil
}

// Dead returns the first node whose process has exited, with why.
func (c *Cluster) Dead() error {
	for _, n := range c.Nodes {
		if err := n.Exited(); err != nil {
			return fmt.Errorf("node %d died: %v", n.ID, err)
		}
	}
	return nil
}

// Addrs lists the PLAINTEXT listeners.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, n := range c.Nodes {
		a = append(a, n.Addr)
	}
	return a
}

// LogTail returns the last max bytes of node id's output.
func (c *Cluster) LogTail(id, max int) string {
	data, _ := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("node%d.log", id)))
	if len(data) > max {
		data = data[len(data)-max:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}

// Kill ends every process still running, without waiting for a clean stop.
func (c *Cluster) Kill() {
	for _, n := range c.Nodes {
		if n.cmd != nil && n.cmd.Process != nil && n.Exited() == nil {
			n.cmd.Process.Kill()
			<-n.exit
			n.log.Close()
		}
	}
}
