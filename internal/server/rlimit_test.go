package server

import (
	"path/filepath"
	"testing"

	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// The open-file estimate counts each segment's files in every partition
// directory, and skips directories being deleted.
func TestSegmentFiles(t *testing.T) {
	fs := vfstest.NewMem()
	files := []string{
		"/d1/a-0/00000000000000000000.log", "/d1/a-0/00000000000000000000.index", "/d1/a-0/00000000000000000000.timeindex",
		"/d1/a-0/00000000000000000007.log", "/d1/a-0/00000000000000000007.index", "/d1/a-0/00000000000000000007.timeindex",
		"/d1/a-0/00000000000000000007.txnindex", "/d1/a-0/00000000000000000007.snapshot", "/d1/a-0/partition.metadata",
		"/d2/b-3/00000000000000000000.log", "/d2/b-3/00000000000000000000.index", "/d2/b-3/00000000000000000000.timeindex",
		"/d2/b-1.x-delete/00000000000000000000.log", "/d2/recovery-point-offset-checkpoint",
	}
	for _, f := range files {
		if err := fs.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileAtomic(fs, f, nil); err != nil {
			t.Fatal(err)
		}
	}
	n, err := segmentFiles(fs, []string{"/d1", "/d2", "/missing"})
	if err != nil || n != 10 {
		t.Fatalf("segmentFiles = %d, %v; want 10", n, err)
	}
}
