package clustertest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"weir/internal/testwait"
)

// A broker-only node follows the quorum as an observer through a
// controller crash (its admin requests reach the new active controller,
// and it learns what the new one commits), is fenced when cut off and
// unfenced when healed, and catches up from an empty disk by snapshot.
func TestBrokerOnlyNodeFollowsTheQuorum(t *testing.T) {
	c := New(t, Options{Nodes: 3, Brokers: 1, Overrides: snapshotOverrides})
	b := c.Node(3)
	if b.Controller {
		t.Fatal("node 3 should be broker-only")
	}
	createTopics(t, b, 2, []int32{b.ID, 1}, nil, "observed")

	c.Kill(c.Leader())
	leader := c.Leader()
	createTopics(t, b, 1, nil, nil, "after-failover")
	makeChanges(t, c, "many", 20)
	sameImage(t, c, b.Index, durable(c.Node(leader).Server.Image()), 10*time.Second)

	c.Isolate(b.Index)
	testwait.For(t, 10*time.Second, "the broker-only node fenced", func() error {
		m := metadataFrom(t, c.Node(leader))
		if slices.Contains(brokerIDs(m), b.ID) {
			return fmt.Errorf("brokers %v", brokerIDs(m))
		}
		if l := partitionLeaders(m, "observed")[0]; l != -1 {
			return fmt.Errorf("observed-0 led by %d", l)
		}
		return nil
	})
	c.Heal()
	testwait.For(t, 10*time.Second, "the broker-only node unfenced", func() error {
		m := metadataFrom(t, c.Node(leader))
		if l := partitionLeaders(m, "observed")[0]; l != b.ID {
			return fmt.Errorf("observed-0 led by %d, brokers %v", l, brokerIDs(m))
		}
		return nil
	})

	c.Restart(b.Index, false)
	sameImage(t, c, b.Index, durable(c.Node(c.Leader()).Server.Image()), 10*time.Second)
	if got := topicNames(metadataFrom(t, b)); !slices.Contains(got, "many-19") {
		t.Fatalf("the wiped broker serves topics %v", got)
	}
}
