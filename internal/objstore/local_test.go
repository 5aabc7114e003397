package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

func TestLocalConformance(t *testing.T) {
	s, err := NewLocal(vfs.OS, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	conformance(t, s, 2*MinPartSize+1<<20)
}

// TestLocalCrash crashes at every filesystem operation of a Put that
// replaces an object: after the crash the object is the old one or the new
// one, whole, and once Put has returned it is the new one; reopening the
// store deletes the partial file.
func TestLocalCrash(t *testing.T) {
	ctx := context.Background()
	for at := 0; ; at++ {
		mem := vfstest.NewMem()
		s, err := NewLocal(mem, "/store")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, "t/0/a", bytes.NewReader([]byte("old")), 3); err != nil {
			t.Fatal(err)
		}
		n := 0
		var crashed *vfstest.MemFS
		inj := vfstest.Inject(mem, vfstest.InjectorFunc(func(op vfstest.Op) error {
			if n == at {
				crashed = mem.CrashClone()
			}
			n++
			return nil
		}))
		s.fsys = inj
		if err := s.Put(ctx, "t/0/a", bytes.NewReader([]byte("new!")), 4); err != nil {
			t.Fatal(err)
		}
		done := crashed == nil
		if done {
			crashed = mem.CrashClone() // after Put returned
		}
		after, err := NewLocal(crashed, "/store")
		if err != nil {
			t.Fatal(err)
		}
		r, err := after.GetRange(ctx, "t/0/a", 0, 100)
		if err != nil {
			t.Fatalf("crash at op %d: %v", at, err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if string(got) != "old" && string(got) != "new!" || done && string(got) != "new!" {
			t.Fatalf("crash at op %d (done %v): object %q", at, done, got)
		}
		if ents, err := crashed.ReadDir("/store/partial"); err != nil || len(ents) != 0 {
			t.Fatalf("crash at op %d: partial files after reopening: %v, %v", at, ents, err)
		}
		if done {
			t.Logf("%d crash points", at)
			return
		}
	}
}

// TestLocalFaults: a failed sync or rename fails the Put with the key named
// and leaves no object.
func TestLocalFaults(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []vfstest.OpKind{vfstest.OpSync, vfstest.OpRename, vfstest.OpSyncDir} {
		mem := vfstest.NewMem()
		boom := errors.New("boom")
		var sw vfstest.Switch
		s, err := NewLocal(vfstest.Inject(mem, &sw), "/store")
		if err != nil {
			t.Fatal(err)
		}
		sw.Set(vfstest.Failing(vfstest.Kinds(kind), 0, 1, boom))
		err = s.Put(ctx, "t/0/a", bytes.NewReader([]byte("x")), 1)
		var oe *Error
		if !errors.Is(err, boom) || !errors.As(err, &oe) || oe.Key != "t/0/a" || oe.Op != "put" {
			t.Errorf("%v fault: put = %v", kind, err)
		}
		if kind != vfstest.OpSyncDir { // a failed directory sync may leave the renamed file
			if objs, err := s.List(ctx, "t/"); err != nil || len(objs) != 0 {
				t.Errorf("%v fault: left %+v, %v", kind, objs, err)
			}
		}
	}
}
