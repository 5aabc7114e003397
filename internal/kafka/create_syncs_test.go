package kafka_test

import (
	"strings"
	"sync"
	"testing"

	"weir/internal/servertest"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// Creating partitions fsyncs nothing per partition (issue 16): a batch
// makes its new partition directories durable with one fsync of their log
// directory, each partition's own directory and files being fsynced by
// its log's first flush, and a new leader's epoch checkpoint being
// written before its first batch.
func TestCreatingPartitionsFsyncsNothingPerPartition(t *testing.T) {
	var mu sync.Mutex
	var inPartitions []string
	var on bool
	var sw vfstest.Switch
	sw.Set(vfstest.InjectorFunc(func(op vfstest.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if on && (op.Kind == vfstest.OpSync || op.Kind == vfstest.OpSyncDir) && strings.Contains(op.Path, "/many-") {
			inPartitions = append(inPartitions, op.Kind.String()+" "+op.Path)
		}
		return nil
	}))
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate, FS: vfstest.Inject(vfs.OS, &sw)})
	w := dial(t, n.Addr)
	mu.Lock()
	on = true
	mu.Unlock()
	w.createTopic("many", 200, nil)
	mu.Lock()
	got := inPartitions
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
}
