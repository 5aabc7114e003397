package clustertest

import (
	"fmt"
	"testing"
	"time"

	"weir/internal/testwait"
)

// The active controller crashes: the others elect a new one, every
// committed topic is still there on every live node, new topics can be
// created, and the crashed node, restarted on its disk, catches up with
// what it missed.
func TestActiveControllerKilled(t *testing.T) {
	c := New(t, Options{Nodes: 3})
	before := names("before", 10)
	createTopics(t, c.Node(0), 3, nil, map[string]string{"retention.ms": "3600000"}, before...)

	old := c.Leader()
	c.Kill(old)
	leader := c.Leader()
	if leader == old {
		t.Fatalf("node %d is still the active controller after being killed", old)
	}
	for _, i := range c.Live() {
		if got := missing(before, topicNames(metadataFrom(t, c.Node(i)))); len(got) > 0 {
			t.Fatalf("after the controller's crash node %d lost topics %v", i, got)
		}
	}

	after := names("after", 5)
	createTopics(t, c.Node(c.Live()[0]), 2, nil, nil, after...)
	want := durable(c.Node(leader).Server.Image())

	c.Restart(old, true)
	sameImage(t, c, old, want, 10*time.Second)
	if got := missing(append(before, after...), topicNames(metadataFrom(t, c.Node(old)))); len(got) > 0 {
		t.Fatalf("the restarted node %d does not serve topics %v", old, got)
	}
	testwait.For(t, 10*time.Second, fmt.Sprintf("node %d unfenced", old), func() error {
		return unfenced(c.Node(c.Leader()).Server.Image(), c.Node(old).ID)
	})
}
