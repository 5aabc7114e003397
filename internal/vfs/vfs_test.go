package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The real filesystem's files behave as os.OpenFile's: errors wrap the
// cause, O_EXCL and O_APPEND hold, and directories list sorted.
func TestOSOpenFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "b")
	if _, err := OS.OpenFile(name, os.O_RDWR, 0); !os.IsNotExist(err) {
		t.Fatalf("open of a missing file: %v", err)
	}
	f, err := OS.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(*os.File); !ok {
		t.Fatalf("a %T, not an *os.File", f)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(name); err != nil || st.Mode().Perm() != 0o644&^umask(t) || st.Size() != 5 {
		t.Fatalf("stat: %v %v", st, err)
	}
	if _, err := OS.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL over a file: %v", err)
	}
	a, err := OS.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("WriteAt on an O_APPEND file succeeded")
	}
	a.Close()
	if data, err := ReadFile(OS, name); err != nil || string(data) != "hello" {
		t.Fatalf("read %q %v", data, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ents, err := OS.ReadDir(dir)
	if err != nil || len(ents) != 2 || ents[0].Name() != "a" || ents[1].Name() != "b" {
		t.Fatalf("readdir: %v %v", ents, err)
	}
	if _, err := OS.ReadDir(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Fatalf("readdir of a missing directory: %v", err)
	}
	if err := OS.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

func umask(t *testing.T) fs.FileMode {
	name := filepath.Join(t.TempDir(), "m")
	if err := os.WriteFile(name, nil, 0o777); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return 0o777 &^ st.Mode().Perm()
}

// The real filesystem's MkdirAll behaves as os.MkdirAll: a new directory,
// one that exists, missing parents made, and a file in the way refused.
func TestOSMkdirAll(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		filepath.Join(root, "topic-0"),
		filepath.Join(root, "topic-0"),
		filepath.Join(root, "a", "b", "c"),
	} {
		if err := OS.MkdirAll(p, 0o755); err != nil {
			t.Fatalf("MkdirAll(%s): %v", p, err)
		}
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			t.Fatalf("%s: %v, %v", p, st, err)
		}
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(file, "below")} {
		err := OS.MkdirAll(p, 0o755)
		want := os.MkdirAll(p, 0o755)
		if err == nil || want == nil || errors.Is(err, fs.ErrExist) {
			t.Fatalf("MkdirAll(%s) over a file: %v (os.MkdirAll: %v)", p, err, want)
		}
	}
}
