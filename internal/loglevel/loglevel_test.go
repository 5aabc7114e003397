package loglevel

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

// Components' loggers appear as sub-loggers are made, follow the root
// until given their own level, and go back to it on Unset; the inner
// handler's level is only the root's initial one.
func TestLevels(t *testing.T) {
	var buf bytes.Buffer
	ls, h := Wrap(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lg := slog.New(h).With("node", 1)
	if got := ls.Loggers(); !reflect.DeepEqual(got, []Logger{{"root", "WARN"}}) {
		t.Fatalf("loggers at start: %v", got)
	}
	gc := lg.With("component", "group-coordinator")
	raft := lg.With("component", "raft").With("peer", 2)
	if ls.Exists("quorum") || !ls.Exists("raft") || !ls.Exists(Root) {
		t.Fatalf("exists: quorum %t raft %t root %t", ls.Exists("quorum"), ls.Exists("raft"), ls.Exists(Root))
	}
	gc.Info("gc info 1")
	if !ls.Set("group-coordinator", slog.LevelDebug-4) || ls.Set("quorum", slog.LevelDebug) {
		t.Fatal("Set of an existing logger failed, or of a missing one succeeded")
	}
	gc.Log(context.Background(), slog.LevelDebug-4, "gc trace")
	raft.Info("raft info")
	lg.Info("root info")
	if !ls.Set(Root, slog.LevelInfo) {
		t.Fatal("Set root")
	}
	raft.Info("raft info 2")
	if got := ls.Loggers(); !reflect.DeepEqual(got, []Logger{{"root", "INFO"}, {"group-coordinator", "TRACE"}, {"raft", "INFO"}}) {
		t.Fatalf("loggers: %v", got)
	}
	if !ls.Unset("group-coordinator") || ls.Unset(Root) || ls.Unset("quorum") {
		t.Fatal("Unset")
	}
	gc.Debug("gc debug")
	gc.Info("gc info 2")
	out := buf.String()
	for _, want := range []string{"gc trace", "raft info 2", "gc info 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q not logged:\n%s", want, out)
		}
	}
	for _, not := range []string{"gc info 1", "raft info\"", "root info", "gc debug"} {
		if strings.Contains(out, not) {
			t.Errorf("%q logged:\n%s", not, out)
		}
	}
	if !strings.Contains(out, `level=DEBUG-4 msg="gc trace" node=1 component=group-coordinator`) {
		t.Errorf("attributes lost:\n%s", out)
	}
}

func TestLevelNames(t *testing.T) {
	for _, n := range strings.Split(ValidLevels, ", ") {
		l, ok := ParseLevel(n)
		if !ok || LevelName(l) != n {
			t.Errorf("%s: %v %t %s", n, l, ok, LevelName(l))
		}
	}
	for _, bad := range []string{"debug", "OFF", "ALL", ""} {
		if _, ok := ParseLevel(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if LevelName(slog.LevelDebug-8) != "TRACE" || LevelName(slog.LevelInfo+2) != "INFO" || LevelName(slog.LevelError+8) != "FATAL" {
		t.Error("names between levels")
	}
}
