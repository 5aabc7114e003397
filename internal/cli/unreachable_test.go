package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/internal/cli/help"
	"weir/internal/cli/tool"
	"weir/internal/testport"
	"weir/internal/testwait"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}

// unreachableWarning matches the warning of a tool that cannot reach addr.
func unreachableWarning(prefix, addr string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] WARN ` + regexp.QuoteMeta(prefix+"Connection to node -1 (/"+addr+
		") could not be established. Node may not be available. (org.apache.kafka.clients.NetworkClient)") + `$`)
}

// The admin tools, against a cluster they cannot reach, warn of it at once
// and give up after default.api.timeout.ms with Kafka's admin client's
// TimeoutException and exit code 1.
func TestAdminToolsUnreachable(t *testing.T) {
	addr := closedAddr(t)
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("default.api.timeout.ms=400\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		clientID, call string
		args           []string
	}{
		{"weir-topics", "listTopics", []string{"topics", "--list"}},
		{"weir-topics", "createTopics", []string{"topics", "--create", "--topic", "t"}},
		{"weir-configs", "describeConfigs", []string{"configs", "--describe", "--entity-type", "brokers"}},
		{"weir-consumer-groups", "findAllBrokers", []string{"consumer-groups", "--list"}},
		{"weir-leader-election", "electLeaders", []string{"leader-election", "--election-type", "preferred", "--all-topic-partitions"}},
		{"log-dirs-tool", "describeCluster", []string{"log-dirs", "--describe"}},
		{"weir-features", "describeFeatures", []string{"features", "describe"}},
		{"weir-cluster", "describeCluster", []string{"cluster", "cluster-id"}},
		{"weir-transactions", "listTransactions", []string{"transactions", "list"}},
		{"reassign-partitions-tool", "listPartitionReassignments", []string{"reassign-partitions", "--list"}},
		{"weir-metadata-quorum", "describeMetadataQuorum", []string{"metadata-quorum", "describe", "--status"}},
		{"weir-acls", "describeAcls", []string{"acls", "--list"}},
		{"weir-cluster-links", "describeClusterLinks", []string{"cluster-links", "--list"}},
		{"weir-mirrors", "describeMirrors", []string{"mirrors", "--describe"}},
		{"weir-doctor", "describeCluster", []string{"doctor"}},
	} {
		start := time.Now()
		r := weir.Run(t, append(c.args, "--bootstrap-server", addr, "--command-config", props)...)
		took := time.Since(start)
		if !unreachableWarning("[AdminClient clientId="+c.clientID+"] ", addr).MatchString(r.Err) {
			t.Errorf("%v: no warning of %s on stderr:\n%s", c.args, addr, r.Err)
		}
		if want := "Timed out waiting for a node assignment. Call: " + c.call; r.Code == 0 || !strings.Contains(r.Out+r.Err, want) {
			t.Errorf("%v: exit %d, want non-zero and %q:\n%s%s", c.args, r.Code, want, r.Out, r.Err)
		}
		if took < 400*time.Millisecond || took > 10*time.Second {
			t.Errorf("%v took %v, want about default.api.timeout.ms (400ms)", c.args, took)
		}
	}
}

// syncBuffer is a bytes.Buffer written by a running command and read by
// the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The clients that keep retrying (console-consumer, console-producer,
// perf produce and consume) warn within a few seconds that they cannot
// reach the cluster, and go on trying until they are stopped.
func TestRetryingToolsWarnUnreachable(t *testing.T) {
	addr := closedAddr(t)
	for _, c := range []struct {
		prefix *regexp.Regexp
		args   []string
	}{
		{regexp.MustCompile(`\[Consumer clientId=console-consumer, groupId=console-consumer-\d+\] `), []string{"console-consumer", "--topic", "t"}},
		{regexp.MustCompile(`\[Consumer clientId=console-consumer, groupId=null\] `), []string{"console-consumer", "--topic", "t", "--partition", "0"}},
		{regexp.MustCompile(`\[Producer clientId=console-producer\] `), []string{"console-producer", "--topic", "t"}},
		{regexp.MustCompile(`\[Producer clientId=perf-producer-client\] `), []string{"perf", "produce", "--topic", "t", "--num-records", "10", "--record-size", "10", "--throughput", "-1"}},
		{regexp.MustCompile(`\[Consumer clientId=perf-consumer-client, groupId=null\] `), []string{"perf", "consume", "--topic", "t", "--messages", "10"}},
	} {
		root := help.Root(commands...)
		var stdout, stderr syncBuffer
		stdin, feed := net.Pipe() // a producer's stdin that stays open
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		root.SetIn(stdin)
		args := append(c.args, "--bootstrap-server", addr)
		root.SetArgs(args)
		tool.Invocation = args
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- root.ExecuteContext(ctx) }()
		if c.args[0] == "console-producer" {
			go fmt.Fprintln(feed, "a record")
		}
		warning := regexp.MustCompile(`(?m)^\[[^]]+\] WARN ` + c.prefix.String() + regexp.QuoteMeta("Connection to node -1 (/"+addr+") could not be established. Node may not be available. (org.apache.kafka.clients.NetworkClient)") + `$`)
		testwait.Until(t, 5*time.Second, fmt.Sprintf("%v to warn of %s", c.args, addr), func() bool { return warning.MatchString(stderr.String()) })
		select {
		case err := <-done:
			t.Errorf("%v ended (%v) instead of retrying:\n%s%s", c.args, err, stdout.String(), stderr.String())
		default:
		}
		cancel()
		feed.Close()
		testwait.Until(t, 10*time.Second, fmt.Sprintf("%v to stop", c.args), func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		})
		stdin.Close()
	}
}
