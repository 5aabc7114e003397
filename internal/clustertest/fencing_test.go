package clustertest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"weir/internal/testwait"
)

// A node cut off from the others stops heartbeating: the active
// controller fences it once its session runs out, so the other nodes'
// Metadata no longer lists it and its single-replica partitions go
// offline. Healed, it heartbeats again, is unfenced, and its partitions
// come back with it as leader.
func TestIsolatedBrokerIsFencedAndUnfenced(t *testing.T) {
	for _, victim := range []string{"follower", "active controller"} {
		t.Run(victim, func(t *testing.T) {
			c := New(t, Options{Nodes: 3})
			session, _ := time.ParseDuration(Defaults["broker.session.timeout.ms"] + "ms")
			heartbeat, _ := time.ParseDuration(Defaults["broker.heartbeat.interval.ms"] + "ms")
			// Partition p lives on node p alone.
			createTopics(t, c.Node(0), 3, []int32{1, 2, 3}, nil, "spread")

			v := c.Leader()
			if victim == "follower" {
				v = (v + 1) % c.Size()
			}
			id := c.Node(v).ID
			others := slices.DeleteFunc(c.Live(), func(i int) bool { return i == v })

			start := time.Now()
			c.Isolate(v)
			for _, i := range others {
				testwait.For(t, session+5*time.Second, fmt.Sprintf("node %d to drop broker %d", i, id), func() error {
					m := metadataFrom(t, c.Node(i))
					if slices.Contains(brokerIDs(m), id) {
						return fmt.Errorf("brokers %v", brokerIDs(m))
					}
					if l := partitionLeaders(m, "spread")[int32(v)]; l != -1 {
						return fmt.Errorf("partition %d is led by %d", v, l)
					}
					return nil
				})
			}
			// Fenced for its silence, not earlier: its last heartbeat was at
			// most an interval before the cut.
			if took := time.Since(start); took < session-heartbeat {
				t.Errorf("broker %d was fenced %v after the cut, before its %v session ran out", id, took, session)
			}
			t.Logf("broker %d fenced and dropped from every Metadata %v after the cut", id, time.Since(start))
			// The others' partitions keep their leaders.
			for _, i := range others {
				m := metadataFrom(t, c.Node(i))
				for _, j := range others {
					if l := partitionLeaders(m, "spread")[int32(j)]; l != c.Node(j).ID {
						t.Errorf("node %d: partition %d is led by %d, want %d", i, j, l, c.Node(j).ID)
					}
				}
			}

			c.Heal()
			for _, i := range c.Live() {
				testwait.For(t, 10*time.Second, fmt.Sprintf("node %d to list broker %d again", i, id), func() error {
					m := metadataFrom(t, c.Node(i))
					if !slices.Contains(brokerIDs(m), id) {
						return fmt.Errorf("brokers %v", brokerIDs(m))
					}
					if l := partitionLeaders(m, "spread")[int32(v)]; l != id {
						return fmt.Errorf("partition %d is led by %d", v, l)
					}
					return nil
				})
			}
		})
	}
}

// Fast fencing: a crashed broker is fenced as soon as the active
// controller sees its heartbeat connection close and its address refuse
// connections, long before its session (here 30 s) runs out; a crashed
// active controller is fenced by the next one when it takes over. A cut
// link (the process alive) is left to the session: see
// TestIsolatedBrokerIsFencedAndUnfenced.
func TestCrashedBrokerIsFencedBeforeItsSessionRunsOut(t *testing.T) {
	c := New(t, Options{Nodes: 3, Overrides: map[string]string{"broker.session.timeout.ms": "30000"}})
	// Well within the 30 s session.
	const within = 10 * time.Second
	createTopics(t, c.Node(0), 3, []int32{1, 2, 3}, nil, "spread")
	for _, victim := range []string{"follower", "active controller"} {
		v := c.Leader()
		if victim == "follower" {
			v = (v + 1) % c.Size()
		}
		id := c.Node(v).ID
		c.Kill(v)
		testwait.For(t, within, fmt.Sprintf("the crashed %s %d fenced", victim, id), func() error {
			if err := unfenced(c.Node(c.Leader()).Server.Image(), id); err == nil {
				return fmt.Errorf("broker %d is not fenced", id)
			}
			return nil
		})
		c.Restart(v, true)
		testwait.For(t, 10*time.Second, fmt.Sprintf("node %d unfenced", v), func() error {
			return unfenced(c.Node(c.Leader()).Server.Image(), id)
		})
	}
	// Stopped cleanly, the last node would wait its whole session for a
	// controlled shutdown no quorum answers.
	for _, i := range c.Live() {
		c.Kill(i)
	}
}
