package kafka_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/servertest"
	"weir/internal/testwait"
	"weir/internal/vfs"
	"weir/internal/vfs/vfstest"
)

// A partition whose log cannot be created (the process is out of file
// handles when its directory is made, in the background after the
// creation) is offline: the node keeps serving its other partitions,
// answers KAFKA_STORAGE_ERROR to producers and consumers of this one, and
// Metadata shows it leaderless with this broker as an offline replica,
// until a restart.
func TestOfflinePartition(t *testing.T) {
	fs := vfstest.Faulty(vfs.OS)
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate, FS: fs})
	w := dial(t, n.Addr)
	w.createTopic("good", 1, nil)
	batch := func(v string) []byte { return buildBatch(t, batchHeader(), testRecords(1, v)) }
	// Written once, so its directory is made before the disk fails.
	if off := w.produceOK("good", 0, batch("before")); off != 0 {
		t.Fatalf("good partition: offset %d", off)
	}

	gauge := func(name string) float64 {
		mfs, err := n.Server.Metrics().Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	fs.FailOpens(0, 1<<30, nil) // every open fails with EMFILE
	w.createTopic("bad", 2, nil)
	testwait.For(t, 60*time.Second, "the new partitions to go offline", func() error {
		if got := gauge("kafka_server_replicamanager_offlinereplicacount"); got != 2 {
			return fmt.Errorf("offline replica count %v, want 2", got)
		}
		return nil
	})
	fs.FailOpens(0, 0, nil)

	if off := w.produceOK("good", 0, batch("still served")); off != 1 {
		t.Fatalf("good partition: offset %d", off)
	}
	for p := int32(0); p < 2; p++ {
		what := fmt.Sprintf("bad-%d", p)
		wantCode(t, "produce to "+what, w.produce("bad", p, batch("x")).ErrorCode, kerr.KafkaStorageError)
		wantCode(t, "fetch from "+what, w.fetchOne("bad", p, 0).ErrorCode, kerr.KafkaStorageError)
	}
	if f := w.fetchOne("good", 0, 0); f.ErrorCode != 0 || len(f.RecordBatches) == 0 {
		t.Fatalf("fetch from good: %v, %d bytes", kerr.ErrorForCode(f.ErrorCode), len(f.RecordBatches))
	}
	mt := w.metadataTopic("bad", false)
	if len(mt.Partitions) != 2 {
		t.Fatalf("metadata of bad: %d partitions", len(mt.Partitions))
	}
	for _, mp := range mt.Partitions {
		wantCode(t, "metadata of bad", mp.ErrorCode, kerr.LeaderNotAvailable)
		if mp.Leader != -1 || !slices.Contains(mp.OfflineReplicas, 1) {
			t.Fatalf("metadata of bad-%d: leader %d, offline replicas %v", mp.Partition, mp.Leader, mp.OfflineReplicas)
		}
	}
	if mt := w.metadataTopic("good", false); mt.Partitions[0].ErrorCode != 0 || mt.Partitions[0].Leader != 1 {
		t.Fatalf("metadata of good: %+v", mt.Partitions[0])
	}
	if got := gauge("kafka_server_replicamanager_offlinereplicacount"); got != 2 {
		t.Fatalf("offline replica count %v, want 2", got)
	}
	// The broker tells the controller (AssignReplicasToDirs to the LOST
	// directory), which takes the partitions' leadership away.
	testwait.For(t, 60*time.Second, "the controller to count the offline partitions", func() error {
		if got := gauge("kafka_controller_kafkacontroller_offlinepartitionscount"); got != 2 {
			return fmt.Errorf("offline partitions count %v, want 2", got)
		}
		return nil
	})
	for p := int32(0); p < 2; p++ {
		if l := n.Server.Image().Topics.Get("bad").Partitions[p].Leader; l != -1 {
			t.Fatalf("bad-%d: leader %d in the metadata image after the report", p, l)
		}
	}

	// Offline lasts until a restart, which opens (or creates) the logs.
	n.Restart()
	w = dial(t, n.Addr)
	for p := int32(0); p < 2; p++ {
		if off := w.produceOK("bad", p, batch("back")); off != 0 {
			t.Fatalf("bad-%d after the restart: offset %d", p, off)
		}
	}
	if f := w.fetchOne("good", 0, 0); f.ErrorCode != 0 || len(f.RecordBatches) == 0 {
		t.Fatalf("fetch from good after the restart: %v", kerr.ErrorForCode(f.ErrorCode))
	}
}
