package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/metadata"
	"weir/internal/server"
)

// With eligible leader replicas turned on (kafka-features.sh upgrade
// --feature eligible.leader.replicas.version=1), a replica that left an
// ISR already below min.insync.replicas may lead once the whole ISR is
// gone, with every acknowledged record; a replica whose broker crashed is
// no longer eligible, so the partition waits for a clean one.
func TestEligibleLeaderReplicaLeadsAfterTheISRIsGone(t *testing.T) {
	c := New(t, Options{Nodes: 3, Brokers: 2, Overrides: map[string]string{"auto.leader.rebalance.enable": "false"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: metadata.ELRFeature, MaxVersionLevel: 1, UpgradeType: 1})
	if err == nil {
		err = res[metadata.ELRFeature].Err
	}
	if err != nil {
		t.Fatalf("enabling eligible leader replicas: %v", err)
	}
	createAssigned(t, c, "elr", [][]int32{{4, 5}}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, c, "elr", 0, "both in sync", isrIs(4, 5))
	sent := produceAll(t, c, "elr", 30)

	c.Stop(4) // node 5, cleanly: it leaves a clean shutdown marker
	if _, err := os.Stat(filepath.Join(c.Node(4).Dir, "logs", server.CleanShutdownFile)); err != nil {
		entries, _ := os.ReadDir(c.Node(4).Dir)
		t.Fatalf("no clean shutdown marker after a clean stop (%v): %v", entries, err)
	}
	waitState(t, c, "elr", 0, "node 5 out of the ISR", isrIs(4))
	c.Kill(3) // node 4, the last ISR member, crashes
	waitState(t, c, "elr", 0, "offline", func(l int32, isr []int32) bool { return l == -1 && len(isr) == 0 })

	// Node 4 comes back from a crash: not eligible any more.
	c.Restart(3, true)
	Consistently(t, 2*time.Second, "offline while only the crashed replica is back", func() error {
		if l, _, _ := partitionState(c, 0, "elr", 0); l != -1 {
			t.Fatalf("node %d leads after a crash", l)
		}
		return nil
	})
	// Node 5 had shut down cleanly: it leads, with every record.
	c.Restart(4, true)
	waitState(t, c, "elr", 0, "node 5 leading", func(l int32, _ []int32) bool { return l == 5 })
	sameRecords(t, sent, consumeAll(t, c, "elr", 30))
}
