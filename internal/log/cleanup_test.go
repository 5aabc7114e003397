package log

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"weir/internal/vfs"
)

// removeAllFails is a filesystem whose RemoveAll fails.
type removeAllFails struct{ vfs.FS }

func (removeAllFails) RemoveAll(string) error { return errors.New("disk says no") }

// TestDeleteReportsCleanupErrors checks that a deleted log whose directory
// cannot be removed says so, rather than leaving it behind silently.
func TestDeleteReportsCleanupErrors(t *testing.T) {
	e := newEnv(t)
	var logged bytes.Buffer
	o := e.opts()
	o.FS = removeAllFails{e.fs}
	o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	l := e.openWith(smallConfig(), o)
	if err := l.Delete("abc"); err != nil {
		t.Fatal(err)
	}
	if n := e.delay.run(); n != 1 {
		t.Fatalf("%d delayed removals, want 1", n)
	}
	if out := logged.String(); !strings.Contains(out, "removing deleted log") || !strings.Contains(out, "disk says no") {
		t.Errorf("log output %q does not report the failed removal", out)
	}
}
