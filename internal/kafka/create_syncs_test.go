package kafka_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/internal/servertest"
	"weir/internal/testwait"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// Creating partitions fsyncs nothing per partition (issue 16): the log
// manager's background maker makes the new partitions' directories and
// partition.metadata after the answer and makes them durable with one
// fsync of their log directory per batch, each partition's own directory
// and files being fsynced by its log's first flush, and a new leader's
// epoch checkpoint being written before its first batch.
func TestCreatingPartitionsFsyncsNothingPerPartition(t *testing.T) {
	var mu sync.Mutex
	var inPartitions []string
	ops := map[string]int{} // kind (an open that creates: "create") -> count
	var on bool
	var sw vfstest.Switch
	sw.Set(vfstest.InjectorFunc(func(op vfstest.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if !on || !strings.Contains(op.Path, "/many-") {
			return nil
		}
		if op.Kind == vfstest.OpSync || op.Kind == vfstest.OpSyncDir {
			inPartitions = append(inPartitions, op.Kind.String()+" "+op.Path)
		}
		kind := op.Kind.String()
		if op.Create {
			kind = "create " + filepath.Base(op.Path)
		}
		ops[kind]++
		return nil
	}))
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate, FS: vfstest.Inject(vfs.OS, &sw)})
	w := dial(t, n.Addr)
	mu.Lock()
	on = true
	mu.Unlock()
	w.createTopic("many", 200, nil)
	testwait.For(t, 60*time.Second, "the new partitions' directories", func() error {
		for p := range 200 {
			if _, err := os.Stat(filepath.Join(n.Dir, "logs", fmt.Sprintf("many-%d", p), "partition.metadata")); err != nil {
				return err
			}
		}
		return nil
	})
	mu.Lock()
	got := inPartitions
	t.Logf("operations in the partition directories: %v", ops)
	// Each new partition costs its directory and partition.metadata: its
	// segment files are created by its first write.
	for kind, n := range ops {
		switch kind {
		case "create partition.metadata", "mkdirall", "write":
			if n > 200 {
				t.Errorf("%d operations %q for 200 partitions", n, kind)
			}
		default:
			t.Errorf("creating 200 partitions made %d operations %q in their directories", n, kind)
		}
	}
	mu.Unlock()
	if len(got) > 0 {
		t.Fatalf("creating 200 partitions made %d fsyncs in their directories, first %q", len(got), got[0])
	}
	// They are served: a produce and a read back.
	batch := buildBatch(t, batchHeader(), testRecords(1, "v"))
	if off := w.produceOK("many", 199, batch); off != 0 {
		t.Fatalf("produce: offset %d", off)
	}
	if f := w.fetchOne("many", 199, 0); f.ErrorCode != 0 || len(f.RecordBatches) == 0 {
		t.Fatalf("fetch: code %d, %d bytes", f.ErrorCode, len(f.RecordBatches))
	}
	// The first write created the segment's files, as Kafka lays them out;
	// the partitions not written to have none.
	for p, want := range map[int]bool{199: true, 0: false} {
		for _, ext := range []string{".log", ".index", ".timeindex"} {
			path := filepath.Join(n.Dir, "logs", fmt.Sprintf("many-%d", p), "00000000000000000000"+ext)
			if _, err := os.Stat(path); (err == nil) != want {
				t.Errorf("partition %d: %s exists: %v, want %v", p, ext, err == nil, want)
			}
		}
	}
}
