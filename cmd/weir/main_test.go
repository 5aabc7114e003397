package main_test

// Process-level tests: they build the weir binary and run it as operators
// do, with signals.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"weir/internal/testport"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weir-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "weir")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building weir: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort returns a loopback port for a node (see testport).
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// proc is a running weir server process.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	stdout lockedBuffer
	stderr lockedBuffer
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startServer(t *testing.T, dir string, extra ...string) *proc {
	t.Helper()
	port, cport := freePort(t), freePort(t)
	args := []string{"server",
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport),
		"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", cport),
		"--override", "log.dirs=" + filepath.Join(dir, "logs"),
		"--override", "metadata.log.dir=" + filepath.Join(dir, "meta"),
	}
	return launch(t, fmt.Sprintf("127.0.0.1:%d", port), append(args, extra...)...)
}

// launch runs weir with args and waits until it listens on addr.
func launch(t *testing.T, addr string, args ...string) *proc {
	t.Helper()
	return launchCmd(t, addr, exec.Command(binary, args...))
}

// launchCmd runs cmd, which starts weir, and waits until it listens on addr.
func launchCmd(t *testing.T, addr string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, addr: addr}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("weir did not listen on %s: %v\nstderr:\n%s", p.addr, err, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("weir did not exit after %v\nstderr:\n%s", sig, p.stderr.String())
		return nil
	}
}

func produce(t *testing.T, addr, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, kgo.StringRecord(fmt.Sprintf("record-%d", i)), func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func endOffset(t *testing.T, addr, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s-%d: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.Offset
	})
	return total
}

// SIGTERM stops the server cleanly: exit status 0, checkpoints written,
// and the next start finds every record.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir, "--override", "num.partitions=3")
	if !strings.Contains(p.stdout.String(), "Formatting") {
		t.Errorf("first start did not say it formatted the storage; stdout:\n%s", p.stdout.String())
	}
	produce(t, p.addr, "events", 3000)
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("weir exited with %v after SIGTERM\nstderr:\n%s", err, p.stderr.String())
	}
	for _, f := range []string{"recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "replication-offset-checkpoint"} {
		data, err := os.ReadFile(filepath.Join(dir, "logs", f))
		if err != nil {
			t.Fatalf("checkpoint %s: %v", f, err)
		}
		if !strings.Contains(string(data), "events") {
			t.Errorf("checkpoint %s does not list the topic:\n%s", f, data)
		}
	}
	// A producer snapshot per partition holding records (none for an
	// empty one, as Kafka; one never written has no segment file yet).
	for part := range 3 {
		pdir := filepath.Join(dir, "logs", fmt.Sprintf("events-%d", part))
		var size int64
		st, err := os.Stat(filepath.Join(pdir, "00000000000000000000.log"))
		if err == nil {
			size = st.Size()
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
		snaps, _ := filepath.Glob(filepath.Join(pdir, "*.snapshot"))
		if (size > 0) != (len(snaps) == 1) || len(snaps) > 1 {
			t.Errorf("events-%d holds %d bytes and the producer snapshots %v after a clean shutdown", part, size, snaps)
		}
	}
	p = startServer(t, dir)
	if got := endOffset(t, p.addr, "events"); got != 3000 {
		t.Fatalf("after restart the topic holds %d records, want 3000", got)
	}
	if strings.Contains(p.stderr.String(), "torn") {
		t.Errorf("a clean restart recovered a torn tail:\n%s", p.stderr.String())
	}
}

// SIGKILL loses nothing acknowledged: the page cache outlives the process.
func TestSIGKILLKeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir)
	produce(t, p.addr, "kill", 5000)
	p.signal(t, syscall.SIGKILL)
	p = startServer(t, dir)
	if got := endOffset(t, p.addr, "kill"); got != 5000 {
		t.Fatalf("after SIGKILL and restart the topic holds %d records, want 5000", got)
	}
}

func runWeir(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func TestInvalidConfigStopsStartupNamingTheKey(t *testing.T) {
	_, stderr, err := runWeir(t, "server", "--override", "num.partitions=many", "--override", "log.dirs="+t.TempDir())
	if err == nil {
		t.Fatal("weir started with num.partitions=many")
	}
	if !strings.Contains(stderr, "num.partitions") {
		t.Fatalf("error does not name the key:\n%s", stderr)
	}
}

// Unknown keys, and a refused security key left at Kafka's default (which
// changes nothing), are warnings.
func TestUnknownConfigIsAWarning(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir, "--override", "no.such.key=1", "--override", "ssl.protocol=TLSv1.3")
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.stderr.String(), "no.such.key") || !strings.Contains(p.stderr.String(), "WARN") {
		t.Fatalf("no warning about the unknown key:\n%s", p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "configuration ssl.protocol=TLSv1.3 (Kafka's default) has no effect") {
		t.Fatalf("no warning about ssl.protocol=TLSv1.3:\n%s", p.stderr.String())
	}
}

func TestStorageCommands(t *testing.T) {
	out, _, err := runWeir(t, "storage", "random-uuid")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out)
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(id) {
		t.Fatalf("random-uuid printed %q", id)
	}
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	os.WriteFile(props, []byte(fmt.Sprintf("process.roles=broker,controller\nnode.id=3\ncontroller.quorum.voters=3@127.0.0.1:%d\nlisteners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d\nlog.dirs=%s/a,%s/b\n",
		freePort(t), freePort(t), freePort(t), dir, dir)), 0o644)
	out, stderr, err := runWeir(t, "storage", "format", "-t", id, "-c", props)
	if err != nil {
		t.Fatalf("format: %v\n%s", err, stderr)
	}
	if strings.Count(out, "Formatting") != 2 {
		t.Fatalf("format output:\n%s", out)
	}
	meta, err := os.ReadFile(filepath.Join(dir, "b", "meta.properties"))
	if err != nil || !strings.Contains(string(meta), "cluster.id="+id) || !strings.Contains(string(meta), "node.id=3") || !strings.Contains(string(meta), "version=1") {
		t.Fatalf("meta.properties: %v\n%s", err, meta)
	}
	if _, stderr, err := runWeir(t, "storage", "format", "-t", id, "-c", props); err == nil || !strings.Contains(stderr, "already formatted") {
		t.Fatalf("formatting twice did not fail: %v %s", err, stderr)
	}
	if out, _, err := runWeir(t, "storage", "format", "-t", id, "-c", props, "--ignore-formatted"); err != nil || !strings.Contains(out, "already formatted") {
		t.Fatalf("--ignore-formatted: %v %s", err, out)
	}
	if _, stderr, err := runWeir(t, "storage", "format", "-t", "not-a-uuid", "-c", props); err == nil || !strings.Contains(stderr, "cluster id") {
		t.Fatalf("a bad cluster id was accepted: %v %s", err, stderr)
	}
	out, _, _ = runWeir(t, "storage", "info", "-c", props)
	if !strings.Contains(out, "cluster.id="+id) {
		t.Fatalf("storage info:\n%s", out)
	}
}

// A node refuses directories formatted for another node or cluster.
func TestStartRefusesForeignStorage(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir)
	p.signal(t, syscall.SIGTERM)
	meta := filepath.Join(dir, "logs", "meta.properties")
	data, _ := os.ReadFile(meta)
	os.WriteFile(meta, bytes.Replace(data, []byte("node.id=1"), []byte("node.id=7"), 1), 0o644)
	_, stderr, err := runWeir(t, "server", "--override", "log.dirs="+filepath.Join(dir, "logs"), "--override", "metadata.log.dir="+filepath.Join(dir, "meta"),
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", freePort(t), freePort(t)))
	if err == nil || !strings.Contains(stderr, "node.id 7") {
		t.Fatalf("weir started on another node's storage: %v\n%s", err, stderr)
	}
}
