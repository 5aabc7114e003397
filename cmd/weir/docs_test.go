package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docBlock is a ```sh block of a document and the marker before it.
type docBlock struct {
	line   int    // of the opening fence
	marker string // "run", "run, needs kcat", "run, needs server", "skip (reason)"
	script string
}

var (
	markerRE   = regexp.MustCompile(`^<!-- test: (.*) -->$`)
	serverRE   = regexp.MustCompile(`(?:go run \./cmd/weir|weir) server\b`)
	bgServerRE = regexp.MustCompile(`(?m)^(.*weir server\b.*)&(\s*)(#.*)?$`)
)

// docBlocks returns the sh blocks of a Markdown file with the HTML comment
// on the line before each ("" when there is none).
func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	var blocks []docBlock
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		start, lang := i, strings.TrimPrefix(lines[i], "```")
		for i++; i < len(lines) && lines[i] != "```"; i++ {
		}
		if lang != "sh" {
			continue
		}
		b := docBlock{line: start + 1, script: strings.Join(lines[start+1:i], "\n")}
		if start > 0 {
			if m := markerRE.FindStringSubmatch(lines[start-1]); m != nil {
				b.marker = m[1]
			}
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// TestDocCommands runs the command blocks of README.md and
// docs/OPERATIONS.md, so that they cannot rot. Every ```sh block needs a
// marker on the line before it: <!-- test: run --> (optionally ", needs
// kcat": skipped, with the blocks after it, when kcat is not installed;
// ", needs server": a single-node server is started first if no block has)
// or <!-- test: skip (why) -->. Each document's blocks run in order, in
// bash with -e, in one fresh directory with the built weir on PATH, each
// within 30 s; `go run ./cmd/weir` is the built binary, servers listen on
// free ports in place of 9092 and 9093 and are killed at the end.
func TestDocCommands(t *testing.T) {
	for _, doc := range []string{"README.md", "docs/OPERATIONS.md"} {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			runDocBlocks(t, filepath.Join("..", "..", doc))
		})
	}
}

func runDocBlocks(t *testing.T, path string) {
	dir := t.TempDir()
	port, cport := freePort(t), freePort(t)
	server := fmt.Sprintf("weir server --override listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d --override controller.quorum.voters=1@127.0.0.1:%d", port, cport, cport)
	prelude := fmt.Sprintf("waitport() { until (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null; do sleep 0.1; done; }\n", port)
	env := append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var groups []int
	t.Cleanup(func() {
		for _, pgid := range groups {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	run := func(name, script string) {
		t.Helper()
		out, err := os.CreateTemp(dir, "out")
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", prelude+script)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		groups = append(groups, cmd.Process.Pid)
		err = cmd.Wait()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("still running after 30 s")
		}
		text, _ := os.ReadFile(out.Name())
		if err != nil {
			t.Fatalf("%s: %v\n%s\noutput:\n%s", name, err, script, text)
		}
		t.Logf("%s ran:\n%s", name, text)
	}
	serving := false
	for _, b := range docBlocks(t, path) {
		name := fmt.Sprintf("%s:%d", path, b.line)
		marker, needs, _ := strings.Cut(b.marker, ", needs ")
		switch {
		case strings.HasPrefix(marker, "skip (") && strings.HasSuffix(marker, ")") && len(marker) > len("skip ()"):
			continue
		case marker != "run":
			t.Errorf("%s: a sh block needs <!-- test: run --> or <!-- test: skip (why) --> on the line before it; it has %q", name, b.marker)
			continue
		case needs == "kcat":
			if _, err := exec.LookPath("kcat"); err != nil {
				t.Skipf("%s needs kcat, which is not installed: it and the blocks after it are not run", name)
			}
		case needs == "server" && !serving:
			run(name+" (its server)", server+" >server.log 2>&1 &\nwaitport")
			serving = true
		case needs != "" && needs != "server":
			t.Errorf("%s: unknown need %q", name, needs)
			continue
		}
		script := bgServerRE.ReplaceAllString(b.script, "$1& waitport$2$3")
		script = serverRE.ReplaceAllLiteralString(script, server)
		script = strings.ReplaceAll(script, "go run ./cmd/weir", "weir")
		script = strings.ReplaceAll(script, "localhost:9092", fmt.Sprintf("localhost:%d", port))
		if bgServerRE.MatchString(b.script) {
			serving = true
		}
		run(name, script)
	}
}
