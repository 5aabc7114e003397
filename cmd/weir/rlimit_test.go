package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker whose RLIMIT_NOFILE is 1,024 (soft and hard, so Go cannot raise
// it) hosts 20,000 partitions: it creates them, takes one record in each
// and serves them all back, and after a SIGKILL it recovers them all and
// serves them again. The segment file cache keeps under the limit.
func TestTwentyThousandPartitionsUnderALowFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 partitions")
	}
	const (
		topics, perTopic = 200, 100
		limit            = 1024
	)
	dir := t.TempDir()
	port, cport := freePort(t), freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	start := func() *proc {
		t.Helper()
		args := []string{"server",
			"--override", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, cport),
			"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", cport),
			"--override", "log.dirs=" + filepath.Join(dir, "logs"),
			"--override", "metadata.log.dir=" + filepath.Join(dir, "meta"),
			// A restarted broker re-registers once its old session ends.
			"--override", "broker.session.timeout.ms=3000",
			"--override", "broker.heartbeat.interval.ms=500",
		}
		// ulimit -n sets both the soft and the hard limit.
		cmd := exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, limit), binary}, args...)...)
		p := launchCmd(t, addr, cmd)
		if got := openFileLimit(t, p.cmd.Process.Pid); got != limit {
			t.Fatalf("weir runs with an open-file limit of %d, want %d", got, limit)
		}
		return p
	}
	began := time.Now()
	phase := func(what string) {
		t.Logf("%s after %.1f s", what, time.Since(began).Seconds())
	}
	p := start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(topics*perTopic), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%d", i)
	}
	for i := 0; i < topics; i += 50 {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 300_000
		for _, n := range names[i : i+50] {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, perTopic, 1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v\nstderr:\n%s", err, tail(p.stderr.String()))
		}
		for _, rt := range resp.Topics {
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
				t.Fatalf("creating %s: %v", rt.Topic, err)
			}
		}
	}
	phase("created 20,000 partitions")
	var recs []*kgo.Record
	for _, n := range names {
		for part := range int32(perTopic) {
			recs = append(recs, &kgo.Record{Topic: n, Partition: part, Value: []byte(fmt.Sprintf("%s/%d", n, part))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing one record to each partition: %v\nstderr:\n%s", err, tail(p.stderr.String()))
	}
	phase("produced one record to each")
	readAll(ctx, t, addr, names, perTopic)
	phase("read them back")
	if n := openFiles(t, p.cmd.Process.Pid); n >= limit {
		t.Fatalf("%d files open, at the limit", n)
	}
	if !strings.Contains(p.stderr.String()+p.stdout.String(), "open-file limit too low") {
		t.Error("no warning that the open-file limit is too low for log.open.files.max")
	}

	if err := p.signal(t, syscall.SIGKILL); err == nil {
		t.Fatal("weir exited cleanly after SIGKILL")
	}
	p = start()
	phase("restarted after SIGKILL")
	readAll(ctx, t, addr, names, perTopic)
	phase("read them back again")
	if out := p.stdout.String() + p.stderr.String(); strings.Contains(out, "partition offline") {
		t.Fatalf("partitions went offline after the restart:\n%s", tail(out))
	}
}

// readAll consumes every partition of topics from the start and checks
// that each holds its one record.
func readAll(ctx context.Context, t *testing.T, addr string, topics []string, perTopic int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(1<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	for len(seen) < len(topics)*perTopic {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", len(seen), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			key := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if string(r.Value) != key || r.Offset != 0 || seen[key] {
				t.Fatalf("read %q at %s offset %d (seen before: %v)", r.Value, key, r.Offset, seen[key])
			}
			seen[key] = true
		})
	}
}

// openFileLimit reads the soft RLIMIT_NOFILE of process pid.
func openFileLimit(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			n, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no open-file limit in /proc/PID/limits")
	return 0
}

func openFiles(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// tail is the end of a process's output, for failure messages.
func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}
