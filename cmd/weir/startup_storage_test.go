package main_test

// A start that fails leaves the storage directories as they were, and an
// error about a directory names the setting it came from.

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree is every file's mode and content under root, and every
// directory's mode, by path relative to root; nil when root does not
// exist.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	if _, err := os.Lstat(root); os.IsNotExist(err) {
		return nil
	}
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		entry := info.Mode().String()
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			entry += " " + string(data)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out[rel] = entry
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// singleNodeArgs are the arguments of a single node storing under dir,
// with its broker, controller and metrics listeners on the given ports.
func singleNodeArgs(dir string, port, cport, mport int) []string {
	return []string{"server",
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport),
		"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", cport),
		"--override", fmt.Sprintf("weir.metrics.listener=127.0.0.1:%d", mport),
		"--override", "log.dirs=" + filepath.Join(dir, "logs"),
		"--override", "metadata.log.dir=" + filepath.Join(dir, "meta"),
	}
}

// A single node whose port is taken exits with status 1 naming the
// listener and its address, and neither formats its empty storage nor
// touches storage formatted and used before (its clean shutdown marker
// included).
func TestStartWithAPortTakenLeavesStorageAsItWas(t *testing.T) {
	used := t.TempDir()
	p := startServer(t, used)
	produce(t, p.addr, "kept", 10)
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("weir exited with %v after SIGTERM\nstderr:\n%s", err, p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(used, "logs", ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("the clean shutdown left no marker: %v", err)
	}
	// Each case starts from its own copy of the storage.
	storage := map[string]func(t *testing.T) string{
		"empty": func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		},
		"used": func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(used)); err != nil {
				t.Fatal(err)
			}
			return dir
		},
	}
	for name, fresh := range storage {
		for _, taken := range []string{"PLAINTEXT", "CONTROLLER", "metrics"} {
			t.Run(name+"/"+taken, func(t *testing.T) {
				dir := fresh(t)
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				busy := ln.Addr().(*net.TCPAddr).Port
				ports := map[string]int{"PLAINTEXT": freePort(t), "CONTROLLER": freePort(t), "metrics": freePort(t)}
				ports[taken] = busy
				before := tree(t, dir)
				_, stderr, err := runWeir(t, singleNodeArgs(dir, ports["PLAINTEXT"], ports["CONTROLLER"], ports["metrics"])...)
				if code := exitCode(err); code != 1 {
					t.Fatalf("exit status %d (%v), want 1; stderr:\n%s", code, err, stderr)
				}
				addr := fmt.Sprintf("127.0.0.1:%d", busy)
				want := taken + "://" + addr
				if taken == "metrics" {
					want = "weir.metrics.listener " + addr
				}
				if !strings.Contains(stderr, want) || !strings.Contains(stderr, "address already in use") {
					t.Errorf("the error does not name %s and the bind failure:\n%s", want, stderr)
				}
				if after := tree(t, dir); !reflect.DeepEqual(before, after) {
					t.Errorf("the failed start changed the storage:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
	}
}

// A single node whose metadata log cannot be opened, after it formatted
// its storage in the same start, takes the format back: the directories
// it made are gone, and a directory that existed holds what it held.
func TestFailedStartTakesBackItsFormat(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "notes.txt"), []byte("the operator's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The metadata log's directory is taken by a file: meta.properties
	// goes in beside it, then the quorum cannot open its log.
	meta := filepath.Join(dir, "meta")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(meta, "__cluster_metadata-0"), []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	start := time.Now()
	stdout, stderr, err := runWeir(t, singleNodeArgs(dir, freePort(t), freePort(t), freePort(t))...)
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit status %d (%v), want 1; stderr:\n%s", code, err, stderr)
	}
	if !strings.Contains(stdout, "Formatting") || !strings.Contains(stdout, "Took back the formatting of "+meta) {
		t.Errorf("stdout does not say the format was taken back:\n%s", stdout)
	}
	if !strings.Contains(stderr, "directory "+meta+" (metadata.log.dir): opening metadata log") {
		t.Errorf("the error does not name metadata.log.dir and its path:\n%s", stderr)
	}
	if after := tree(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("the failed start left its writes:\nbefore %v\nafter  %v", before, after)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("failing took %v", took)
	}
}

// A directory that cannot hold a log (a file; a path under a file, which
// even root cannot make) stops the start and the format naming the key
// that set it and the path.
func TestBadStorageDirectoryNamesItsSetting(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	under := filepath.Join(file, "logs")
	good := filepath.Join(dir, "good")
	for _, c := range []struct {
		name, key string
		props     []string
		bad       string
	}{
		{"log.dirs-is-a-file", "log.dirs", []string{"log.dirs=" + good + "," + file}, file},
		{"log.dirs-under-a-file", "log.dirs", []string{"log.dirs=" + under}, under},
		{"log.dir-under-a-file", "log.dir", []string{"log.dir=" + under}, under},
		{"metadata.log.dir-under-a-file", "metadata.log.dir", []string{"log.dirs=" + good, "metadata.log.dir=" + under}, under},
		{"both-under-a-file", "log.dirs and metadata.log.dir", []string{"log.dirs=" + under, "metadata.log.dir=" + under}, under},
	} {
		t.Run(c.name, func(t *testing.T) {
			props, _ := nodeProps(t, c.props...)
			if c.key == "log.dir" {
				// log.dir applies only when log.dirs is unset.
				data, err := os.ReadFile(props)
				if err != nil {
					t.Fatal(err)
				}
				var kept []string
				for _, l := range strings.Split(string(data), "\n") {
					if !strings.HasPrefix(l, "log.dirs=") && !strings.HasPrefix(l, "metadata.log.dir=") {
						kept = append(kept, l)
					}
				}
				if err := os.WriteFile(props, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := "directory " + c.bad + " (" + c.key + "): "
			refused(t, props, 10*time.Second, want, "not a directory")
			_, stderr, err := runWeir(t, "storage", "format", "-t", randomUUID(t), "-c", props)
			if err == nil || !strings.Contains(stderr, want) || !strings.Contains(stderr, "not a directory") {
				t.Errorf("storage format: %v, want an error saying %q:\n%s", err, want, stderr)
			}
			if _, err := os.Stat(filepath.Join(good, "meta.properties")); !os.IsNotExist(err) {
				t.Errorf("the failed format left %s/meta.properties (%v)", good, err)
			}
		})
	}
}

// A format that fails in its second directory takes back what it wrote
// into the first.
func TestFailedFormatTakesBackItsWrites(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	// meta.properties is written through meta.properties.tmp: a directory
	// of that name makes the write fail, even for root.
	if err := os.MkdirAll(filepath.Join(second, "meta.properties.tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	props, _ := nodeProps(t, "log.dirs="+first+","+second, "metadata.log.dir="+first)
	before := tree(t, dir)
	_, stderr, err := runWeir(t, "storage", "format", "-t", randomUUID(t), "-c", props)
	if want := "directory " + second + " (log.dirs): "; err == nil || !strings.Contains(stderr, want) {
		t.Fatalf("storage format: %v, want an error saying %q:\n%s", err, want, stderr)
	}
	if after := tree(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("the failed format left its writes:\nbefore %v\nafter  %v", before, after)
	}
}
