package partition

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/testwait"
	"weir/internal/vfs/vfstest"
)

// New partitions whose directories cannot be made go offline, and none of
// them stays served: the log manager's background maker fails while the
// replicas are being set up, in either order, and a replica holding an
// offline (closed) log must not be kept (it would answer from it until a
// restart).
func TestNewLogsGoingOfflineAreNotServed(t *testing.T) {
	fs := vfstest.NewMem()
	logs := log.NewManager(log.ManagerConfig{Dirs: []string{dataDir}}, log.Options{FS: fs, Now: clock, Logger: quiet(), AfterDelay: runNow})
	t.Cleanup(func() { logs.Close() })
	m := NewManager(1, logs, staticConfig(t, nil), quiet(), clock)
	if err := logs.Load(func(log.TopicPartition) log.Config { return log.DefaultConfig() }); err != nil {
		t.Fatal(err)
	}
	fs.FailOpens(0, 1<<30, syscall.EIO)
	const n = 3000
	assignment := make([][]int32, n)
	for i := range assignment {
		assignment[i] = []int32{1}
	}
	img, _ := apply(t, metadata.Empty(), topicRecords("doomed", topicID(9), assignment...)...)
	if err := m.Load(img); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, "every new partition to go offline and out of service", func() error {
		if got := len(logs.AllFailed()); got != n {
			return fmt.Errorf("%d of %d partitions offline", got, n)
		}
		for i := range n {
			tp := log.TopicPartition{Topic: "doomed", Partition: int32(i)}
			if m.Get(tp) != nil {
				return fmt.Errorf("%s is offline and still served", tp)
			}
			if m.Offline(tp) == nil {
				return fmt.Errorf("%s does not answer KAFKA_STORAGE_ERROR", tp)
			}
		}
		return nil
	})
}
