package cli

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"weir/internal/cli/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the commands print")

// toolRun is one run of a Kafka-style tool: what it printed and its exit
// code.
type toolRun struct {
	out, err string
	code     int
}

// runTool runs `weir ARGS...` and returns its output and exit code (as
// Execute would return it).
func runTool(t *testing.T, args ...string) toolRun {
	t.Helper()
	return runToolIn(t, "", args...)
}

// runToolIn is runTool with stdin.
func runToolIn(t *testing.T, stdin string, args ...string) toolRun {
	t.Helper()
	root := newRootCommand()
	var outBuf, errBuf bytes.Buffer
	root.SetOut(&outBuf)
	root.SetErr(&errBuf)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	tool.Invocation = args
	err := root.Execute()
	r := toolRun{out: outBuf.String(), err: errBuf.String()}
	var code tool.ExitCode
	switch {
	case err == nil:
	case errors.As(err, &code):
		r.code = int(code)
	default:
		r.code, r.err = 1, r.err+"Error: "+err.Error()+"\n"
	}
	return r
}

// transcript records commands and what they printed, for a golden file.
type transcript struct {
	b    strings.Builder
	subs []string // pairs: replace the first by the second
}

// sub makes the transcript print placeholder where the output has value
// (ids that change from run to run).
func (tr *transcript) sub(value, placeholder string) { tr.subs = append(tr.subs, value, placeholder) }

// topicID names a topic's id in the transcript.
func (tr *transcript) topicID(name string, id [16]byte) {
	tr.sub(base64.RawURLEncoding.EncodeToString(id[:]), "<id of "+name+">")
}

// run runs a command and appends "$ args", its stdout, its stderr (lines
// prefixed "stderr: ", usage text left out) and a non-zero exit code.
func (tr *transcript) run(t *testing.T, args ...string) toolRun {
	t.Helper()
	return tr.runIn(t, "", args...)
}

// runIn is run with stdin, shown as "< stdin" after the command.
func (tr *transcript) runIn(t *testing.T, stdin string, args ...string) toolRun {
	t.Helper()
	r := runToolIn(t, stdin, args...)
	shown := args
	if len(args) > 2 && args[1] == "--bootstrap-server" {
		shown = append([]string{args[0]}, args[3:]...)
	}
	tr.b.WriteString("$ weir " + strings.Join(shown, " "))
	if stdin != "" {
		tr.b.WriteString(" <<< " + strings.TrimSuffix(stdin, "\n"))
	}
	tr.b.WriteString("\n")
	tr.b.WriteString(r.out)
	errText := r.err
	if i := strings.Index(errText, "Usage:\n"); i >= 0 {
		errText = errText[:i]
	}
	for _, l := range strings.SplitAfter(errText, "\n") {
		if l != "" {
			tr.b.WriteString("stderr: " + l)
		}
	}
	if r.code != 0 {
		tr.b.WriteString("exit " + tool.Itoa(int64(r.code)) + "\n")
	}
	return r
}

func (tr *transcript) String() string {
	s := tr.b.String()
	for i := 0; i+1 < len(tr.subs); i += 2 {
		s = strings.ReplaceAll(s, tr.subs[i], tr.subs[i+1])
	}
	return s
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
