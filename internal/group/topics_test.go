package group

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
)

// UpdateTopics (a metadata change) leaves the coordinator's topics as
// SetTopics with the whole resulting set would: names, ids, the sorted
// list regexes match against, and which groups must refresh.
func TestUpdateTopicsMatchesSetTopics(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			inc, whole := newHarness(t, cgConfig()), newHarness(t, cgConfig())
			want := map[string]TopicInfo{}
			for step := 0; step < 30; step++ {
				changed, removed := map[string]TopicInfo{}, []string(nil)
				for range 1 + r.Intn(5) {
					name := fmt.Sprintf("t%d", r.Intn(12))
					switch r.Intn(3) {
					case 0:
						removed = append(removed, name)
						delete(changed, name)
						delete(want, name)
					default: // created, re-created with a new id, or grown
						ti := TopicInfo{ID: topicID(name), Partitions: int32(1 + r.Intn(4))}
						ti.ID[15] = byte(r.Intn(3)) // a re-created topic has a new id
						if slices.Contains(removed, name) {
							continue // a batch does not remove and re-add a name
						}
						changed[name] = ti
						want[name] = ti
					}
				}
				inc.apply(inc.c.UpdateTopics(inc.now, changed, removed))
				whole.apply(whole.c.SetTopics(whole.now, maps.Clone(want)))
				for _, h := range []*harness{inc, whole} {
					img := &h.c.groups.topics
					if !maps.Equal(img.byName, want) {
						t.Fatalf("step %d: topics %v, want %v", step, img.byName, want)
					}
					if len(img.byID) != len(want) {
						t.Fatalf("step %d: %d ids for %d topics", step, len(img.byID), len(want))
					}
					for name, ti := range want {
						if img.byID[ti.ID] != name {
							t.Fatalf("step %d: id of %s maps to %q", step, name, img.byID[ti.ID])
						}
					}
					if got := img.sortedNames(); len(want) > 0 && !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
						t.Fatalf("step %d: sorted names %v", step, got)
					}
				}
			}
		})
	}
}

// A regex subscription picks up a topic that UpdateTopics adds, and drops
// one it removes.
func TestConsumerRegexFollowsUpdateTopics(t *testing.T) {
	h := newHarness(t, cgConfig())
	h.setTopics(map[string]int32{"orders-eu": 2, "users": 2})
	re := "orders-.*"
	r := h.cgHeartbeat(cgReq{group: "g", member: "m", epoch: 0, regex: &re})
	wantCode(t, "regex join", r.ErrorCode, 0)
	m := &cgSim{group: "g", id: "m", owned: assignment{}}
	m.take(r)
	h.converge(m)
	h.checkPartitioned([]*cgSim{m}, map[string]int32{"orders-eu": 2}, 0)
	h.apply(h.c.UpdateTopics(h.now, map[string]TopicInfo{"orders-ap": {ID: topicID("orders-ap"), Partitions: 3}}, nil))
	h.converge(m)
	h.checkPartitioned([]*cgSim{m}, map[string]int32{"orders-eu": 2, "orders-ap": 3}, 0)
	h.apply(h.c.UpdateTopics(h.now, nil, []string{"orders-eu"}))
	h.converge(m)
	h.checkPartitioned([]*cgSim{m}, map[string]int32{"orders-ap": 3}, 0)
	h.reload()
}
