package group

import (
	"testing"
	"time"
)

// A group's own settings (its GROUP configs) apply to its members from
// their next heartbeat: the interval answered and the session timeout;
// other groups keep the broker's, and a group whose settings go returns
// to them.
func TestConsumerGroupSettings(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"t": 2})
	a, o := h.newMember("g"), h.newMember("other")
	h.converge(a)
	h.converge(o)
	if got := h.beat(a).HeartbeatIntervalMillis; got != 5000 {
		t.Fatalf("interval %d before the group's settings, want the broker's 5000", got)
	}

	h.apply(h.c.SetGroupSettings(h.now, map[string]GroupSettings{"g": {SessionTimeout: 50 * time.Second, HeartbeatInterval: 7 * time.Second}}, false))
	if got := h.beat(a).HeartbeatIntervalMillis; got != 7000 {
		t.Errorf("interval %d, want the group's 7000", got)
	}
	if got := h.beat(o).HeartbeatIntervalMillis; got != 5000 {
		t.Errorf("other group's interval %d, want the broker's 5000", got)
	}
	// The session timeout runs from the last heartbeat: 50 s, not 45.
	h.advance(46 * time.Second)
	if h.cg("g").members[a.id] == nil {
		t.Fatal("removed at the broker's 45 s, not the group's 50 s")
	}
	if h.cg("other").members[o.id] != nil {
		t.Fatal("the other group's member outlived the broker's 45 s")
	}
	h.advance(4 * time.Second)
	if h.cg("g").members[a.id] != nil {
		t.Fatal("not removed at the group's session timeout")
	}

	// A zero entry removes the group's settings; a whole set replaces all.
	b := h.newMember("g")
	h.converge(b)
	h.apply(h.c.SetGroupSettings(h.now, map[string]GroupSettings{"g": {}}, false))
	if got := h.beat(b).HeartbeatIntervalMillis; got != 5000 {
		t.Errorf("interval %d after the settings went, want 5000", got)
	}
	h.apply(h.c.SetGroupSettings(h.now, map[string]GroupSettings{"g": {HeartbeatInterval: 6 * time.Second}}, true))
	if got := h.beat(b).HeartbeatIntervalMillis; got != 6000 {
		t.Errorf("interval %d from a whole set, want 6000", got)
	}
	h.apply(h.c.SetGroupSettings(h.now, map[string]GroupSettings{}, true))
	if got := h.beat(b).HeartbeatIntervalMillis; got != 5000 {
		t.Errorf("interval %d after an empty whole set, want 5000", got)
	}
}
