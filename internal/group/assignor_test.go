package group

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// spec builds an assignor input: members m0, m1, ... with the given
// subscriptions (topic names) and previous assignments.
func spec(counts map[string]int32, subs [][]string, prev []assignment) assignSpec {
	s := assignSpec{topics: map[[16]byte]int32{}}
	for name, n := range counts {
		s.topics[topicID(name)] = n
	}
	for i, ts := range subs {
		m := assignMember{id: fmt.Sprintf("m%d", i)}
		for _, t := range ts {
			m.topics = append(m.topics, topicID(t))
		}
		slices.SortFunc(m.topics, compareIDs)
		if i < len(prev) {
			m.prev = prev[i]
		}
		s.members = append(s.members, m)
	}
	return s
}

// checkAssignment checks the properties every assignor has: each partition
// of a subscribed topic goes to exactly one member subscribed to it.
func checkAssignment(t *testing.T, s assignSpec, out map[string]assignment) {
	t.Helper()
	owner := make(map[tpid]string)
	subscribed := make(map[[16]byte]bool)
	for _, m := range s.members {
		a, ok := out[m.id]
		if !ok {
			t.Fatalf("no assignment for %s", m.id)
		}
		for _, tp := range m.topics {
			subscribed[tp] = true
		}
		a.each(func(id [16]byte, p int32) {
			if !slices.Contains(m.topics, id) || p < 0 || p >= s.topics[id] {
				t.Fatalf("%s got %v-%d", m.id, id, p)
			}
			if o, dup := owner[tpid{id, p}]; dup {
				t.Fatalf("%v-%d to %s and %s", id, p, o, m.id)
			}
			owner[tpid{id, p}] = m.id
		})
	}
	for id := range subscribed {
		for p := int32(0); p < s.topics[id]; p++ {
			if _, ok := owner[tpid{id, p}]; !ok {
				t.Fatalf("%v-%d unassigned", id, p)
			}
		}
	}
}

// uniformBalanced is the uniform assignor's balance: no partition could
// move to a subscriber with two or more fewer partitions.
func uniformBalanced(s assignSpec, out map[string]assignment) bool {
	for _, from := range s.members {
		for _, to := range s.members {
			if out[from.id].count()-out[to.id].count() < 2 {
				continue
			}
			for id := range out[from.id] {
				if slices.Contains(to.topics, id) {
					return false
				}
			}
		}
	}
	return true
}

func moved(before, after map[string]assignment) int {
	n := 0
	for id, a := range after {
		a.each(func(t [16]byte, p int32) {
			if !before[id].has(t, p) {
				n++
			}
		})
	}
	return n
}

func TestUniformAssignorSticky(t *testing.T) {
	counts := map[string]int32{"a": 6, "b": 6}
	subs := [][]string{{"a", "b"}, {"a", "b"}, {"a", "b"}}
	s := spec(counts, subs, nil)
	out := assignUniform(s)
	checkAssignment(t, s, out)
	for _, m := range s.members {
		if out[m.id].count() != 4 {
			t.Fatalf("%s has %d partitions", m.id, out[m.id].count())
		}
	}
	// A fourth member: it takes 3 partitions and nothing else moves.
	prev := []assignment{out["m0"], out["m1"], out["m2"]}
	s = spec(counts, append(subs, []string{"a", "b"}), prev)
	out2 := assignUniform(s)
	checkAssignment(t, s, out2)
	if n := moved(out, out2); n != 3 || out2["m3"].count() != 3 {
		t.Fatalf("%d partitions moved, m3 has %d", n, out2["m3"].count())
	}
	// m1 leaves: only its partitions move.
	s = spec(counts, [][]string{{"a", "b"}, {"a", "b"}, {"a", "b"}},
		[]assignment{out2["m0"], out2["m2"], out2["m3"]})
	out3 := assignUniform(s)
	checkAssignment(t, s, out3)
	before := map[string]assignment{"m0": out2["m0"], "m1": out2["m2"], "m2": out2["m3"]}
	if n := moved(before, out3); n != out2["m1"].count() {
		t.Fatalf("%d partitions moved, m1 had %d", n, out2["m1"].count())
	}
}

func TestRangeAssignor(t *testing.T) {
	counts := map[string]int32{"a": 5, "b": 5}
	subs := [][]string{{"a", "b"}, {"a", "b"}}
	s := spec(counts, subs, nil)
	out := assignRange(s)
	checkAssignment(t, s, out)
	// Co-partitioned topics: the same partition numbers go together.
	if fmt.Sprint(out["m0"][topicID("a")], out["m0"][topicID("b")]) != "[0 1 2] [0 1 2]" ||
		fmt.Sprint(out["m1"][topicID("a")], out["m1"][topicID("b")]) != "[3 4] [3 4]" {
		t.Fatalf("range: %v", out)
	}
	// A third member takes one partition of each topic from m0's extra.
	s = spec(counts, append(subs, []string{"a", "b"}), []assignment{out["m0"], out["m1"]})
	out2 := assignRange(s)
	checkAssignment(t, s, out2)
	for _, m := range []string{"m0", "m1"} {
		out2[m].each(func(id [16]byte, p int32) {
			if !out[m].has(id, p) {
				t.Fatalf("%s gained %v-%d", m, id, p)
			}
		})
	}
}

func TestAssignorsRandomized(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	names := []string{"a", "b", "c", "d"}
	for round := 0; round < 500; round++ {
		counts := map[string]int32{}
		for _, n := range names {
			counts[n] = int32(rng.Intn(9))
		}
		nm := 1 + rng.Intn(7)
		var subs [][]string
		var prev []assignment
		homogeneous := rng.Intn(2) == 0
		for i := 0; i < nm; i++ {
			var ts []string
			for _, n := range names {
				if homogeneous && i > 0 {
					ts = subs[0]
					break
				}
				if rng.Intn(2) == 0 {
					ts = append(ts, n)
				}
			}
			subs = append(subs, ts)
			// Random previous assignments, possibly stale or overlapping.
			p := assignment{}
			for k := rng.Intn(6); k > 0; k-- {
				p.add(topicID(names[rng.Intn(len(names))]), int32(rng.Intn(10)))
			}
			prev = append(prev, p)
		}
		s := spec(counts, subs, prev)
		u := assignUniform(s)
		checkAssignment(t, s, u)
		if !uniformBalanced(s, u) {
			t.Fatalf("round %d: uniform unbalanced: %v", round, u)
		}
		if homogeneous {
			lo, hi := 1<<30, 0
			for _, a := range u {
				lo, hi = min(lo, a.count()), max(hi, a.count())
			}
			if hi-lo > 1 {
				t.Fatalf("round %d: homogeneous spread %d..%d", round, lo, hi)
			}
		}
		r := assignRange(s)
		checkAssignment(t, s, r)
		// Range: per topic, subscribers' shares differ by at most one.
		for _, name := range names {
			id := topicID(name)
			lo, hi := 1<<30, 0
			for i, m := range s.members {
				if slices.Contains(subs[i], name) {
					lo, hi = min(lo, len(r[m.id][id])), max(hi, len(r[m.id][id]))
				}
			}
			if hi-lo > 1 && hi > 0 {
				t.Fatalf("round %d: range on %s spread %d..%d", round, name, lo, hi)
			}
		}
	}
}
