package vfstest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"weir/internal/vfs"
)

func mustWrite(t *testing.T, fsys vfs.FS, name string, data []byte, sync bool) vfs.File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func read(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

func exists(fsys vfs.FS, name string) bool {
	_, err := fsys.Stat(name)
	return err == nil
}

func TestMemBasics(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d/e", 0o755); err != nil {
		t.Fatal(err)
	}
	f := mustWrite(t, m, "/d/e/a", []byte("hello"), false)
	if _, err := f.WriteAt([]byte("J"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("!"), 7); err != nil {
		t.Fatal(err)
	}
	if got := read(t, m, "d/e/a"); !bytes.Equal(got, []byte("Jello\x00\x00!")) {
		t.Fatalf("content %q", got)
	}
	buf := make([]byte, 4)
	if n, err := f.ReadAt(buf, 6); n != 2 || err != io.EOF {
		t.Fatalf("ReadAt at end: %d %v", n, err)
	}
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil || st.Size() != 2 || st.Name() != "a" {
		t.Fatalf("stat %v %v", st, err)
	}
	if off, err := f.Seek(0, io.SeekEnd); off != 2 || err != nil {
		t.Fatalf("seek %d %v", off, err)
	}
	if _, err := m.OpenFile("/d/e/a", os.O_CREATE|os.O_EXCL|os.O_RDWR, 0); !errors.Is(err, os.ErrExist) {
		t.Fatalf("O_EXCL: %v", err)
	}
	if _, err := m.OpenFile("/d/missing", os.O_RDONLY, 0); !os.IsNotExist(err) {
		t.Fatalf("missing: %v", err)
	}
	if err := m.Remove("/d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("remove non-empty dir: %v", err)
	}
	// An open handle keeps working after its file is removed.
	if err := m.Remove("/d/e/a"); err != nil {
		t.Fatal(err)
	}
	if n, err := f.ReadAt(buf[:2], 0); n != 2 || err != nil || string(buf[:2]) != "Je" {
		t.Fatalf("read removed: %d %v %q", n, err, buf[:2])
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read closed: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("sync closed: %v", err)
	}
	ents, err := m.ReadDir("/d/e")
	if err != nil || len(ents) != 0 {
		t.Fatalf("readdir %v %v", ents, err)
	}
	if err := m.RemoveAll("/d"); err != nil || exists(m, "/d") {
		t.Fatalf("RemoveAll: %v", err)
	}
	if err := m.RemoveAll("/nothing/here"); err != nil {
		t.Fatalf("RemoveAll missing: %v", err)
	}
}

func TestMemRenameAndReadDir(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/a", 0o755)
	m.MkdirAll("/b", 0o755)
	mustWrite(t, m, "/a/x", []byte("x"), false).Close()
	mustWrite(t, m, "/a/y", []byte("y"), false).Close()
	if err := m.Rename("/a/x", "/a/y"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, m, "/a/y"); string(got) != "x" || exists(m, "/a/x") {
		t.Fatalf("rename over: %q", got)
	}
	if err := m.Rename("/a", "/b/c"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, m, "/b/c/y"); string(got) != "x" {
		t.Fatalf("dir rename: %q", got)
	}
	if err := m.Rename("/b", "/b/c/z"); err == nil {
		t.Fatal("renamed a directory into itself")
	}
	if err := m.Rename("/missing", "/q"); !os.IsNotExist(err) {
		t.Fatalf("rename missing: %v", err)
	}
	mustWrite(t, m, "/b/k", nil, false).Close()
	ents, _ := m.ReadDir("/b")
	var names []string
	for _, e := range ents {
		names = append(names, fmt.Sprintf("%s:%v", e.Name(), e.IsDir()))
	}
	if fmt.Sprint(names) != "[c:true k:false]" {
		t.Fatalf("readdir %v", names)
	}
}

func TestCrashKeepsOnlyDurable(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	m.SyncDir("/")
	f := mustWrite(t, m, "/d/synced", []byte("abc"), true)
	f.Write([]byte("def")) // not synced
	mustWrite(t, m, "/d/old", []byte("old"), true).Close()
	m.SyncDir("/d")

	// Changes after the last SyncDir: a create, a rename, a remove.
	mustWrite(t, m, "/d/new", []byte("new"), true).Close()
	if err := m.Rename("/d/synced", "/d/renamed"); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove("/d/old"); err != nil {
		t.Fatal(err)
	}
	c := m.CrashClone()
	if got := read(t, c, "/d/synced"); string(got) != "abc" {
		t.Fatalf("synced file after crash: %q", got)
	}
	if exists(c, "/d/new") || exists(c, "/d/renamed") || !exists(c, "/d/old") {
		t.Fatalf("un-synced directory changes survived: %v", c.Files())
	}
	// The original keeps working and, after SyncDir, the changes are durable.
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	c = m.CrashClone()
	if got := read(t, c, "/d/renamed"); string(got) != "abcdef" {
		t.Fatalf("after sync: %q", got)
	}
	if exists(c, "/d/synced") || exists(c, "/d/old") || !exists(c, "/d/new") {
		t.Fatalf("synced directory changes lost: %v", c.Files())
	}
	// A directory whose own entry was never synced vanishes with its files.
	m.MkdirAll("/e", 0o755)
	mustWrite(t, m, "/e/f", []byte("f"), true).Close()
	m.SyncDir("/e")
	if c := m.CrashClone(); exists(c, "/e") {
		t.Fatal("unsynced directory survived")
	}
	// Truncation is undone too until synced.
	f.Truncate(1)
	if got := read(t, m.CrashClone(), "/d/renamed"); string(got) != "abcdef" {
		t.Fatalf("unsynced truncate: %q", got)
	}
}

func TestCrashRandomTornPrefix(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		m := NewMem()
		f := mustWrite(t, m, "/f", []byte("durable|"), true)
		m.SyncDir("/")
		var all []byte
		all = append(all, "durable|"...)
		for i := 0; i < 1+r.Intn(5); i++ {
			chunk := bytes.Repeat([]byte{byte('a' + i)}, 1+r.Intn(10))
			f.Write(chunk)
			all = append(all, chunk...)
		}
		got := read(t, m.CrashCloneRandom(r), "/f")
		if len(got) < 8 || !bytes.Equal(got, all[:len(got)]) {
			t.Fatalf("seed %d: %q is not a prefix of %q keeping the synced part", seed, got, all)
		}
	}
	// Over many seeds, every cut point shows up.
	seen := map[int]bool{}
	for seed := int64(0); seed < 300; seed++ {
		m := NewMem()
		f := mustWrite(t, m, "/f", nil, true)
		m.SyncDir("/")
		f.Write([]byte("0123456789"))
		seen[len(read(t, m.CrashCloneRandom(rand.New(rand.NewSource(seed))), "/f"))] = true
	}
	if len(seen) != 11 {
		t.Fatalf("cut lengths seen: %v", seen)
	}
}

func TestCrashRandomDirOps(t *testing.T) {
	kinds := map[string]bool{}
	for seed := int64(0); seed < 100; seed++ {
		m := NewMem()
		mustWrite(t, m, "/a.swap", []byte("new"), true).Close()
		mustWrite(t, m, "/a", []byte("old"), true).Close()
		m.SyncDir("/")
		m.Rename("/a.swap", "/a")
		mustWrite(t, m, "/b", []byte("b"), true).Close()
		c := m.CrashCloneWith(CrashOptions{Rand: rand.New(rand.NewSource(seed)), DirOps: true})
		a := string(read(t, c, "/a"))
		swap, b := exists(c, "/a.swap"), exists(c, "/b")
		switch {
		case a == "old" && swap && !b:
			kinds["none"] = true
		case a == "new" && !swap && !b:
			kinds["rename"] = true
		case a == "new" && !swap && b:
			kinds["all"] = true
		default:
			t.Fatalf("seed %d: not a prefix of the operations: a=%q swap=%v b=%v", seed, a, swap, b)
		}
	}
	if len(kinds) != 3 {
		t.Fatalf("outcomes %v", kinds)
	}
}

func TestWriteBudget(t *testing.T) {
	for _, partial := range []bool{false, true} {
		m := NewMem()
		m.SetPartialWrites(partial)
		m.SetWriteBudget(10)
		f := mustWrite(t, m, "/f", []byte("0123456"), false)
		n, err := f.Write([]byte("789abc"))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("partial=%v: error %v", partial, err)
		}
		want := "0123456"
		if partial {
			want = "0123456789"
		}
		if got := read(t, m, "/f"); string(got) != want || n != len(want)-7 {
			t.Fatalf("partial=%v: wrote %d, content %q", partial, n, got)
		}
		if _, err := f.WriteAt([]byte("z"), 0); partial && !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("write after budget: %v", err)
		}
		m.SetWriteBudget(-1)
		if _, err := f.Write([]byte("ok")); err != nil {
			t.Fatal(err)
		}
		if m.WriteBudget() != -1 {
			t.Fatal("budget not lifted")
		}
	}
}

func TestFailSyncsAndRenames(t *testing.T) {
	m := NewMem()
	f := mustWrite(t, m, "/f", []byte("x"), false)
	m.SyncDir("/")
	m.FailSyncs(2, nil)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync 1: %v", err)
	}
	if err := m.SyncDir("/"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync 2: %v", err)
	}
	if got := read(t, m.CrashClone(), "/f"); len(got) != 0 {
		t.Fatalf("a failed sync made data durable: %q", got)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("sync 3: %v", err)
	}
	custom := errors.New("injected")
	m.FailRenames(1, custom)
	if err := m.Rename("/f", "/g"); !errors.Is(err, custom) || !exists(m, "/f") {
		t.Fatalf("rename 1: %v", err)
	}
	if err := m.Rename("/f", "/g"); err != nil {
		t.Fatalf("rename 2: %v", err)
	}
}

func TestMemConcurrent(t *testing.T) {
	m := NewMem()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("/f%d", i)
			f, err := m.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			for j := 0; j < 200; j++ {
				f.Write([]byte{byte(j)})
				if j%50 == 0 {
					f.Sync()
					m.SyncDir("/")
					m.CrashClone()
				}
				buf := make([]byte, 1)
				f.ReadAt(buf, int64(j))
			}
			f.Close()
		}()
	}
	wg.Wait()
	if len(m.Files()) != 8 {
		t.Fatalf("files %v", m.Files())
	}
}

func TestFaultyOS(t *testing.T) {
	dir := t.TempDir()
	ffs := Faulty(vfs.OS)
	ffs.SetPartialWrites(true)
	ffs.SetWriteBudget(4)
	name := filepath.Join(dir, "f")
	f, err := ffs.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := f.Write([]byte("abcdef")); n != 4 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write: %d %v", n, err)
	}
	if got, _ := os.ReadFile(name); string(got) != "abcd" {
		t.Fatalf("content %q", got)
	}
	ffs.SetWriteBudget(-1)
	if _, err := f.WriteAt([]byte("ef"), 4); err != nil {
		t.Fatal(err)
	}
	ffs.FailSyncs(1, nil)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v", err)
	}
	if err := ffs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	ffs.FailRenames(1, nil)
	if err := ffs.Rename(name, name+"2"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename: %v", err)
	}
	if err := vfs.WriteFileAtomic(ffs, filepath.Join(dir, "cp"), []byte("data")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, ffs, filepath.Join(dir, "cp")); string(got) != "data" {
		t.Fatalf("atomic write: %q", got)
	}
}

func TestInjectorSeesEveryStep(t *testing.T) {
	m := NewMem()
	var sw Switch
	fsys := Inject(m, &sw)
	var ops []string
	var clones []*MemFS
	sw.Set(InjectorFunc(func(op Op) error {
		if op.Mutates() {
			ops = append(ops, op.Kind.String()+" "+op.Path+op.NewPath)
			clones = append(clones, m.CrashClone()) // the state before op
		}
		return nil
	}))
	fsys.MkdirAll("/d", 0o755)
	f := mustWrite(t, fsys, "/d/f", []byte("x"), true)
	f.Truncate(0)
	fsys.Rename("/d/f", "/d/g")
	fsys.SyncDir("/d")
	fsys.Remove("/d/g")
	sw.Set(nil)
	fsys.Remove("/d")
	want := "[mkdirall /d open /d/f write /d/f sync /d/f truncate /d/f rename /d/f/d/g syncdir /d remove /d/g]"
	if fmt.Sprint(ops) != want || len(clones) != 8 {
		t.Fatalf("ops %v", ops)
	}
	// The clone taken before Remove("/d/g") follows SyncDir("/d"), which
	// made g durable in /d; "/d" itself was never made durable in "/", so
	// every clone is empty.
	if exists(clones[7], "/d/g") {
		t.Fatal("directory created without SyncDir of its parent survived")
	}
	if exists(m, "/d") {
		t.Fatal("an operation after the injector was removed did not run")
	}
}

func TestFailingInjector(t *testing.T) {
	m := NewMem()
	var sw Switch
	fsys := Inject(m, &sw)
	fsys.MkdirAll("/d", 0o755)
	// The second and third syncs of a .log file fail; nothing else does.
	sw.Set(Failing(func(op Op) bool { return op.Kind == OpSync && PathSuffix(".log")(op) }, 1, 2, nil))
	f := mustWrite(t, fsys, "/d/a.log", []byte("x"), false)
	g := mustWrite(t, fsys, "/d/a.idx", []byte("y"), false)
	for i, want := range []bool{true, false, false, true} {
		err := f.Sync()
		if (err == nil) != want || err != nil && !errors.Is(err, ErrInjected) {
			t.Fatalf("sync %d: %v", i, err)
		}
		if err := g.Sync(); err != nil {
			t.Fatalf("sync of another file: %v", err)
		}
	}
	// Every rename fails with the given error and renames nothing.
	sw.Set(Failing(Kinds(OpRename), 0, -1, syscall.EXDEV))
	for range 3 {
		if err := fsys.Rename("/d/a.log", "/d/b.log"); !errors.Is(err, syscall.EXDEV) {
			t.Fatalf("rename: %v", err)
		}
	}
	if !exists(m, "/d/a.log") {
		t.Fatal("a failed rename renamed")
	}
}
