package clustertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"weir/internal/testwait"
)

// makeChanges creates topics (some with configs), changes configs and
// deletes a topic, through every live node in turn.
func makeChanges(t *testing.T, c *Cluster, prefix string, n int) {
	t.Helper()
	live := c.Live()
	for i, name := range names(prefix, n) {
		via := c.Node(live[i%len(live)])
		var cfg map[string]string
		if i%3 == 0 {
			cfg = map[string]string{"cleanup.policy": "compact", "segment.bytes": fmt.Sprint(1<<20 + i)}
		}
		createTopics(t, via, int32(1+i%4), nil, cfg, name)
		if i%4 == 1 {
			alterTopicConfig(t, via, name, "retention.ms", fmt.Sprint(3600000+i))
		}
	}
	deleteTopic(t, c.Node(live[0]), prefix+"-2")
}

// Every node stopped cleanly and started again: the metadata image is the
// same (topic ids, assignments, configs), and every single-replica
// partition is led by its replica again.
func TestFullRestartKeepsTheImage(t *testing.T) {
	c := New(t, Options{Nodes: 3})
	makeChanges(t, c, "kept", 12)
	want := durable(c.Node(c.Leader()).Server.Image())
	if !strings.Contains(want, "retention.ms=3600001") || strings.Contains(want, "topic kept-2 ") {
		t.Fatalf("the changes are not in the image:\n%s", want)
	}

	c.RestartAll()
	for _, i := range c.Live() {
		sameImage(t, c, i, want, 10*time.Second)
	}
	testwait.For(t, 10*time.Second, "every partition led by its replica", func() error {
		img := c.Node(c.Leader()).Server.Image()
		for _, tp := range img.Topics.All() {
			for _, p := range tp.Partitions {
				if p.Leader != p.Replicas[0] || !slices.Equal(p.ISR, p.Replicas) {
					return fmt.Errorf("%s-%d: leader %d, isr %v, replicas %v", tp.Name, p.ID, p.Leader, p.ISR, p.Replicas)
				}
			}
		}
		return nil
	})
}

// snapshotOverrides make the quorum write a snapshot every few changes
// and keep the metadata log in small segments, so a snapshot lets older
// segments go.
var snapshotOverrides = map[string]string{
	"metadata.log.max.record.bytes.between.snapshots": "4096",
	"metadata.log.segment.bytes":                      "8192",
}

// A node restarted on a metadata log that begins with a snapshot rebuilds,
// from the snapshot and the log after it, the image the leader has.
func TestSnapshotPlusLogReplayEqualsLiveImage(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: snapshotOverrides})
	makeChanges(t, c, "snap", 40)
	leader := c.Leader()
	n := c.Node((leader + 1) % c.Size())
	if len(checkpoints(n)) == 0 {
		t.Fatalf("node %d wrote no snapshot; metadata log: %v", n.Index, logSegments(n))
	}
	if segs := logSegments(n); slices.Contains(segs, fmt.Sprintf("%020d.log", 0)) {
		t.Fatalf("node %d kept the log's first segment after a snapshot: %v", n.Index, segs)
	}
	// A few changes after the last snapshot, for the log part of the replay.
	makeChanges(t, c, "tail", 3)

	c.Restart(n.Index, true)
	want := durable(c.Node(c.Leader()).Server.Image())
	sameImage(t, c, n.Index, want, 10*time.Second)
	if got := durable(n.Server.Image()); !strings.Contains(got, "topic tail-1 ") {
		t.Fatalf("the restarted node's image lacks the changes after the snapshot:\n%s", got)
	}
}

// A node whose disk is wiped rejoins as a new, empty node with the same
// id: it catches up from the others, by a snapshot since the leader's log
// no longer starts at the beginning.
func TestWipedNodeCatchesUp(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: snapshotOverrides})
	makeChanges(t, c, "wipe", 40)
	leader := c.Leader()
	if segs := logSegments(c.Node(leader)); slices.Contains(segs, fmt.Sprintf("%020d.log", 0)) {
		t.Fatalf("the leader kept the log's first segment after snapshots: %v", segs)
	}
	w := (leader + 1) % c.Size()
	c.Restart(w, false)
	want := durable(c.Node(c.Leader()).Server.Image())
	sameImage(t, c, w, want, 10*time.Second)
	if len(checkpoints(c.Node(w))) == 0 {
		t.Fatalf("the wiped node caught up without a snapshot; metadata log: %v", logSegments(c.Node(w)))
	}
	testwait.For(t, 10*time.Second, "the wiped node unfenced", func() error {
		return unfenced(c.Node(c.Leader()).Server.Image(), c.Node(w).ID)
	})
}
