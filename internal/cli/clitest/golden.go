// Package clitest runs weir's commands in tests as Execute runs them, with
// their output captured, and compares transcripts of them with golden files
// (tests only).
package clitest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"weir/internal/cli/help"
	"weir/internal/cli/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the commands print")

// Result is one run of a Kafka-style tool: what it printed and its exit
// code.
type Result struct {
	Out, Err string
	Code     int
}

// Weir is a weir command line over some commands, built as Execute
// builds it (the help and suggestions included).
type Weir []func() *cobra.Command

// Run runs `weir ARGS...` and returns its output and exit code (as
// Execute would return it).
func (w Weir) Run(t *testing.T, args ...string) Result {
	t.Helper()
	return w.RunIn(t, "", args...)
}

// RunIn is run with stdin.
func (w Weir) RunIn(t *testing.T, stdin string, args ...string) Result {
	t.Helper()
	out, errOut, err := w.execute(stdin, args)
	r := Result{Out: out, Err: errOut}
	var code tool.ExitCode
	switch {
	case err == nil:
	case errors.As(err, &code):
		r.Code = int(code)
	default:
		r.Code, r.Err = 1, r.Err+"Error: "+err.Error()+"\n"
	}
	return r
}

// Execute runs `weir ARGS...` and returns its stdout, its stderr and the
// command's error.
func (w Weir) Execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return w.execute("", args)
}

func (w Weir) execute(stdin string, args []string) (stdout, stderr string, err error) {
	root := help.Root(w...)
	var outBuf, errBuf bytes.Buffer
	root.SetOut(&outBuf)
	root.SetErr(&errBuf)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	tool.Invocation = args
	err = root.Execute()
	return outBuf.String(), errBuf.String(), err
}

// Transcript records commands and what they printed, for a golden file.
type Transcript struct {
	Weir Weir // the commands it runs
	b    strings.Builder
	subs []string // pairs: replace the first by the second
}

// Sub makes the transcript print placeholder where the output has value
// (ids that change from run to run).
func (tr *Transcript) Sub(value, placeholder string) { tr.subs = append(tr.subs, value, placeholder) }

// TopicID names a topic's id in the transcript.
func (tr *Transcript) TopicID(name string, id [16]byte) {
	tr.Sub(base64.RawURLEncoding.EncodeToString(id[:]), "<id of "+name+">")
}

// Run runs a command and appends "$ args", its stdout, its stderr (lines
// prefixed "stderr: ", usage text left out) and a non-zero exit code.
func (tr *Transcript) Run(t *testing.T, args ...string) Result {
	t.Helper()
	return tr.RunIn(t, "", args...)
}

// RunIn is run with stdin, shown as "< stdin" after the command.
func (tr *Transcript) RunIn(t *testing.T, stdin string, args ...string) Result {
	t.Helper()
	r := tr.Weir.RunIn(t, stdin, args...)
	shown := args
	if len(args) > 2 && args[1] == "--bootstrap-server" {
		shown = append([]string{args[0]}, args[3:]...)
	}
	tr.b.WriteString("$ weir " + strings.Join(shown, " "))
	if stdin != "" {
		tr.b.WriteString(" <<< " + strings.TrimSuffix(stdin, "\n"))
	}
	tr.b.WriteString("\n")
	tr.b.WriteString(r.Out)
	errText := r.Err
	if i := strings.Index(errText, "Usage:\n"); i >= 0 {
		errText = errText[:i]
	}
	for _, l := range strings.SplitAfter(errText, "\n") {
		if l != "" {
			tr.b.WriteString("stderr: " + l)
		}
	}
	if r.Code != 0 {
		tr.b.WriteString("exit " + tool.Itoa(int64(r.Code)) + "\n")
	}
	return r
}

func (tr *Transcript) String() string {
	s := tr.b.String()
	for i := 0; i+1 < len(tr.subs); i += 2 {
		s = strings.ReplaceAll(s, tr.subs[i], tr.subs[i+1])
	}
	return s
}

// CheckGolden compares got with testdata/name, or rewrites it with -update.
func CheckGolden(t *testing.T, name, got string) {
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
