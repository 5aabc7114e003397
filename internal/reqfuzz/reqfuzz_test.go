package reqfuzz

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	seedFlag     = flag.Uint64("seed", 0, "seed of the request fuzzer (0: from the clock)")
	durationFlag = flag.Duration("duration", 90*time.Second, "how long TestRequests fuzzes")
	requestsFlag = flag.Int("requests", 0, "stop TestRequests after this many requests (0: no limit)")
	nodesFlag    = flag.Int("nodes", 1, "nodes of TestRequests' cluster")
)

var weirBinary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "reqfuzz-bin")
	if err != nil {
		panic(err)
	}
	weirBinary = filepath.Join(dir, "weir")
	if out, err := exec.Command("go", "build", "-o", weirBinary, "weir/cmd/weir").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building weir: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestRequests fuzzes a weir node with hostile requests for -duration
// (CI: the default), then restarts it and checks the canary's data, a
// consumer group and transactions. A failure prints the seed: rerun with
// -seed (and -requests to stop where it failed).
func TestRequests(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d", seed)
	dir, err := os.MkdirTemp("", "reqfuzz")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the nodes' data and logs are kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	c, err := StartCluster(weirBinary, dir, *nodesFlag)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	stats, err := Run(context.Background(), c, Config{Seed: seed, Duration: *durationFlag, Requests: *requestsFlag,
		Restart: true, Log: testWriter{t}})
	if stats != nil {
		t.Logf("%v", stats)
	}
	if err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// The frames depend only on the seed: a failure's seed replays its run.
// Every advertised API is sent, and some frames are mutated.
func TestGeneratorIsDeterministic(t *testing.T) {
	var apis []API
	for _, key := range []int16{0, 1, 3, 8, 19, 22, 68} {
		apis = append(apis, API{key, 0, kmsg.RequestForKey(key).MaxVersion()})
	}
	a, b := NewGenerator(7, apis), NewGenerator(7, apis)
	keys, mutated := map[int16]bool{}, 0
	for range 2000 {
		fa, fb := a.Next(), b.Next()
		if !bytes.Equal(fa.Bytes, fb.Bytes) || fa.Mutation != fb.Mutation {
			t.Fatalf("frame %d differs between two generators of one seed", fa.Seq)
		}
		keys[fa.Req.Key()] = true
		if !fa.Clean() {
			mutated++
		}
	}
	if len(keys) != len(apis) || mutated == 0 {
		t.Fatalf("2000 frames: %d of %d APIs, %d mutated", len(keys), len(apis), mutated)
	}
	c, d := NewGenerator(7, apis), NewGenerator(8, apis)
	same := 0
	for range 20 {
		if bytes.Equal(c.Next().Bytes, d.Next().Bytes) {
			same++
		}
	}
	if same == 20 {
		t.Fatal("seeds 7 and 8 made the same 20 frames")
	}
}
