package controller

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/metadata"
)

// layout is a cluster for the placement tests: broker ids and their racks
// ("" for none). Many layouts give racks in blocks of neighbouring ids, so
// that it is the rack interleaving, not the id order, that must spread the
// replicas.
type layout struct {
	name  string
	ids   []int32
	racks []string
}

func (l layout) brokers() []brokerInfo {
	out := make([]brokerInfo, len(l.ids))
	for i, id := range l.ids {
		out[i] = brokerInfo{id: id, rack: l.racks[i]}
	}
	return out
}

// rackSizes is how many brokers each rack has.
func (l layout) rackSizes() map[string]int {
	m := map[string]int{}
	for _, r := range l.racks {
		m[r]++
	}
	return m
}

func (l layout) rackOf() map[int32]string {
	m := map[int32]string{}
	for i, id := range l.ids {
		m[id] = l.racks[i]
	}
	return m
}

// evenRacks: every rack (the no-rack group counting as one) has the same
// number of brokers.
func (l layout) evenRacks() bool {
	sizes := slices.Collect(maps.Values(l.rackSizes()))
	return slices.Min(sizes) == slices.Max(sizes)
}

func mkLayout(name string, racks ...string) layout {
	l := layout{name: name, racks: racks}
	// Ids 10, 13, 16, ...: not positions, so a mix-up shows.
	for i := range racks {
		l.ids = append(l.ids, int32(10+3*i))
	}
	return l
}

var placementLayouts = []layout{
	mkLayout("1 broker", ""),
	mkLayout("1 broker with rack", "a"),
	mkLayout("3 no racks", "", "", ""),
	mkLayout("3 one rack", "a", "a", "a"),
	mkLayout("3 three racks", "c", "a", "b"),
	mkLayout("3 two racks", "a", "b", "a"),
	mkLayout("6 no racks", "", "", "", "", "", ""),
	mkLayout("6 one rack", "r", "r", "r", "r", "r", "r"),
	mkLayout("6 three racks", "a", "a", "b", "b", "c", "c"),
	mkLayout("6 three racks 1-2-3", "c", "b", "c", "a", "b", "c"),
	mkLayout("6 two racks 4-2", "a", "a", "a", "a", "b", "b"),
	mkLayout("6 mixed no rack", "", "a", "", "b", "a", "b"),
	mkLayout("9 no racks", "", "", "", "", "", "", "", "", ""),
	mkLayout("9 one rack", "z", "z", "z", "z", "z", "z", "z", "z", "z"),
	mkLayout("9 three racks", "a", "a", "a", "b", "b", "b", "c", "c", "c"),
	mkLayout("9 three racks 2-3-4", "a", "b", "c", "a", "b", "c", "b", "c", "c"),
	mkLayout("9 two racks 5-4", "x", "y", "x", "y", "x", "y", "x", "y", "x"),
	mkLayout("9 mixed 1 without", "a", "b", "c", "a", "b", "c", "a", "b", ""),
}

var placementCounts = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 17, 18, 27, 50, 99, 100}

// spread is max-min of m over ids.
func spread(m map[int32]int, ids []int32) int {
	lo, hi := -1, -1
	for _, id := range ids {
		v := m[id]
		if lo < 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return hi - lo
}

// checkPlacement checks the guarantees of place for the partitions of one
// topic: all of them (existing and new) for the balance properties, the
// new ones for the per-partition properties.
func checkPlacement(l layout, existing, got [][]int32, count, rf int) error {
	if len(got) != count {
		return fmt.Errorf("%d partitions, want %d", len(got), count)
	}
	rackOf, sizes := l.rackOf(), l.rackSizes()
	nracks := len(sizes)
	for p, rs := range got {
		if len(rs) != rf {
			return fmt.Errorf("partition %d: replicas %v, want %d", p, rs, rf)
		}
		inRack := map[string]int{}
		for i, id := range rs {
			if _, ok := rackOf[id]; !ok {
				return fmt.Errorf("partition %d: replicas %v: %d is not a usable broker", p, rs, id)
			}
			if slices.Contains(rs[:i], id) {
				return fmt.Errorf("partition %d: replicas %v: %d twice", p, rs, id)
			}
			inRack[rackOf[id]]++
		}
		// As many racks as possible ...
		if len(inRack) != min(rf, nracks) {
			return fmt.Errorf("partition %d: replicas %v cover %d racks, want %d", p, rs, len(inRack), min(rf, nracks))
		}
		// ... and no rack with two more of them than a rack that has room.
		for r, c := range inRack {
			for s, size := range sizes {
				if c >= inRack[s]+2 && inRack[s] < size {
					return fmt.Errorf("partition %d: replicas %v: %d in rack %q, %d in rack %q", p, rs, c, r, inRack[s], s)
				}
			}
		}
	}

	all := append(slices.Clone(existing), got...)
	leaders, replicas, rackLeaders := map[int32]int{}, map[int32]int{}, map[string]int{}
	for _, rs := range all {
		leaders[rs[0]]++
		rackLeaders[rackOf[rs[0]]]++
		for _, id := range rs {
			replicas[id]++
		}
	}
	n, total := len(l.ids), len(all)
	// New partitions added to a topic cannot move the replicas it has: its
	// replicas per broker may then differ by two.
	slack := 1
	if len(existing) > 0 {
		slack = 2
	}
	if d := spread(leaders, l.ids); d > 1 {
		return fmt.Errorf("leaders per broker %v differ by %d", leaders, d)
	}
	// Leaders per rack: in proportion to the racks' sizes, within two.
	for r, size := range sizes {
		if dev := rackLeaders[r]*n - total*size; dev >= 2*n || -dev >= 2*n {
			return fmt.Errorf("rack %q (%d of %d brokers) leads %d of %d partitions", r, size, n, rackLeaders[r], total)
		}
	}
	if l.evenRacks() {
		racks := slices.Collect(maps.Keys(sizes))
		lo, hi := total, 0
		for _, r := range racks {
			lo, hi = min(lo, rackLeaders[r]), max(hi, rackLeaders[r])
		}
		if hi-lo > 1 {
			return fmt.Errorf("leaders per rack %v differ by %d", rackLeaders, hi-lo)
		}
		// Replicas per broker: even (the racks force nothing).
		if d := spread(replicas, l.ids); d > slack {
			return fmt.Errorf("replicas per broker %v differ by %d", replicas, d)
		}
	}
	// Within a rack replicas are always even.
	for r := range sizes {
		var ids []int32
		for _, id := range l.ids {
			if rackOf[id] == r {
				ids = append(ids, id)
			}
		}
		if d := spread(replicas, ids); d > slack {
			return fmt.Errorf("replicas per broker of rack %q %v differ by %d", r, replicas, d)
		}
	}
	return nil
}

func TestPlaceGuarantees(t *testing.T) {
	for _, l := range placementLayouts {
		for rf := 1; rf <= 3 && rf <= len(l.ids); rf++ {
			for _, count := range placementCounts {
				for _, start := range []int{0, 1, len(l.ids) - 1, 7} {
					got := place(l.brokers(), nil, count, rf, start)
					if err := checkPlacement(l, nil, got, count, rf); err != nil {
						t.Fatalf("%s, rf %d, %d partitions, start %d: %v\n%v", l.name, rf, count, start, err, got)
					}
					if again := place(l.brokers(), nil, count, rf, start); !slices.EqualFunc(got, again, slices.Equal) {
						t.Fatalf("%s, rf %d, %d partitions, start %d: not deterministic:\n%v\n%v", l.name, rf, count, start, got, again)
					}
				}
			}
		}
	}
}

// TestPlaceLeadersAlternateRacks: with racks of equal size, consecutive
// partitions lead in different racks, and the first partitions of a topic
// lead in as many racks as there are partitions (up to the racks).
func TestPlaceLeadersAlternateRacks(t *testing.T) {
	for _, l := range placementLayouts {
		nracks := len(l.rackSizes())
		if !l.evenRacks() || nracks < 2 {
			continue
		}
		rackOf := l.rackOf()
		for start := range l.ids {
			got := place(l.brokers(), nil, 20, 1, start)
			for p := 1; p < len(got); p++ {
				if rackOf[got[p][0]] == rackOf[got[p-1][0]] {
					t.Fatalf("%s start %d: partitions %d and %d lead in rack %q: %v", l.name, start, p-1, p, rackOf[got[p][0]], got)
				}
			}
			seen := map[string]bool{}
			for _, rs := range got[:nracks] {
				seen[rackOf[rs[0]]] = true
			}
			if len(seen) != nracks {
				t.Fatalf("%s start %d: first %d partitions lead in racks %v", l.name, start, nracks, seen)
			}
		}
	}
}

// TestPlaceStart: a new topic's first partition leads at start in the
// rack order, and the next ones round robin from there.
func TestPlaceStart(t *testing.T) {
	for _, l := range placementLayouts {
		order := rackOrder(l.brokers())
		n := len(order)
		for start := -n; start < 2*n; start++ {
			got := place(l.brokers(), nil, 2*n+1, 1, start)
			for p, rs := range got {
				if want := order[((start+p)%n+n)%n].id; rs[0] != want {
					t.Fatalf("%s start %d: partition %d leader %d, want %d (%v)", l.name, start, p, rs[0], want, got)
				}
			}
		}
	}
}

func TestRackOrder(t *testing.T) {
	ids := func(bs []brokerInfo) []int32 {
		var out []int32
		for _, b := range bs {
			out = append(out, b.id)
		}
		return out
	}
	cases := []struct {
		name string
		l    layout
		want []int32
	}{
		{"blocks of ids", mkLayout("", "a", "a", "b", "b", "c", "c"), []int32{10, 16, 22, 13, 19, 25}},
		{"no racks: by id", layout{ids: []int32{3, 1, 2}, racks: []string{"", "", ""}}, []int32{1, 2, 3}},
		{"equal racks alternate", layout{ids: []int32{1, 2, 3, 4, 5, 6}, racks: []string{"b", "b", "a", "a", "c", "c"}}, []int32{3, 1, 5, 4, 2, 6}},
		// c b c a b c: each rack spread over the list in proportion to its size.
		{"uneven racks in proportion", layout{ids: []int32{1, 2, 3, 4, 5, 6}, racks: []string{"a", "b", "b", "c", "c", "c"}}, []int32{4, 2, 5, 1, 3, 6}},
		// The brokers without a rack are one group, ordered first as in Kafka.
		{"no rack is a group", layout{ids: []int32{1, 2, 3, 4}, racks: []string{"a", "", "a", ""}}, []int32{2, 1, 4, 3}},
	}
	for _, tc := range cases {
		if got := ids(rackOrder(tc.l.brokers())); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPlaceExamples pins a few assignments so a change of algorithm is
// seen; the properties are checked by TestPlaceGuarantees.
func TestPlaceExamples(t *testing.T) {
	noRacks := mkLayout("3 no racks", "", "", "")
	threeRacks := mkLayout("6 three racks", "a", "a", "b", "b", "c", "c") // order 10 16 22 13 19 25
	cases := []struct {
		name      string
		l         layout
		count, rf int
		want      [][]int32
	}{
		{"3 brokers rf 2", noRacks, 6, 2, [][]int32{{10, 13}, {13, 16}, {16, 10}, {10, 16}, {13, 10}, {16, 13}}},
		{"3 racks of 2, rf 3", threeRacks, 6, 3, [][]int32{{10, 16, 22}, {16, 13, 25}, {22, 19, 10}, {13, 19, 25}, {19, 10, 22}, {25, 16, 13}}},
		{"3 racks of 2, rf 2", threeRacks, 6, 2, [][]int32{{10, 16}, {16, 22}, {22, 13}, {13, 19}, {19, 25}, {25, 10}}},
	}
	for _, tc := range cases {
		got := place(tc.l.brokers(), nil, tc.count, tc.rf, 0)
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPlaceAddPartitions adds partitions to a topic a few at a time
// (CreatePartitions): the new partitions have the topic's replication
// factor and the whole topic keeps the balance a single placement has.
func TestPlaceAddPartitions(t *testing.T) {
	steps := []int{1, 2, 3, 5, 1, 7, 10}
	for _, l := range placementLayouts {
		for rf := 1; rf <= 3 && rf <= len(l.ids); rf++ {
			var topic [][]int32
			start := 0
			for _, add := range steps {
				got := place(l.brokers(), topic, add, rf, start)
				if err := checkPlacement(l, topic, got, add, rf); err != nil {
					t.Fatalf("%s, rf %d, %d partitions + %d: %v\n%v + %v", l.name, rf, len(topic), add, err, topic, got)
				}
				topic = append(topic, got...)
				// As placeNew does: continue after the last partition's leader.
				order := rackOrder(l.brokers())
				start = slices.IndexFunc(order, func(b brokerInfo) bool { return b.id == topic[len(topic)-1][0] }) + 1
			}
		}
	}
}

// TestPlaceRebalancesFollowers: the greedy pass alone leaves broker 13 of
// 4 with 2 replicas and 19 with 4 here (13 leads the last partition, so it
// cannot follow it); the rebalancing pass evens them out.
func TestPlaceRebalancesFollowers(t *testing.T) {
	l := mkLayout("4 no racks", "", "", "", "")
	got := place(l.brokers(), nil, 6, 2, 0)
	n := map[int32]int{}
	for _, rs := range got {
		for _, id := range rs {
			n[id]++
		}
	}
	if !maps.Equal(n, map[int32]int{10: 3, 13: 3, 16: 3, 19: 3}) {
		t.Fatalf("replicas per broker %v: %v", n, got)
	}
}

func TestBalancedStart(t *testing.T) {
	// Brokers 0..n-1 without racks: the rack order is by id and a new
	// topic's leaders go round robin, so a start is a window of brokers.
	cases := []struct {
		leads         []int // current leaders of brokers 0..n-1
		count, rotate int
		want          int
	}{
		{[]int{0, 0, 0}, 1, 0, 0},
		{[]int{1, 0, 0}, 1, 1, 1},
		{[]int{1, 1, 0}, 1, 0, 2},
		{[]int{1, 1, 0}, 2, 0, 1}, // windows {0,1}=2, {1,2}=1, {2,0}=1: first from 0
		{[]int{1, 1, 0}, 2, 2, 2},
		{[]int{2, 1, 1}, 2, 0, 1},
		{[]int{3, 3, 3}, 3, 0, 0}, // whole rounds: all starts equal, rotate decides
		{[]int{3, 3, 3}, 6, 2, 2},
		{[]int{3, 3, 3}, 6, 4, 1},
		{[]int{0, 5, 0, 0}, 2, 1, 2},
		{[]int{1, 0, 2, 0}, 3, 0, 3}, // {3,0,1}=1 beats {0,1,2}=3, {1,2,3}=2, {2,3,0}=3
		{[]int{0, 2, 0, 2}, 2, 0, 0}, // every window sums to 2; max 2 everywhere: first
		{nil, 3, 0, 0},
	}
	for _, tc := range cases {
		var brokers []brokerInfo
		leads := map[int32]int{}
		for id, c := range tc.leads {
			brokers = append(brokers, brokerInfo{id: int32(id)})
			leads[int32(id)] = c
		}
		if got := balancedStart(brokers, leads, tc.count, tc.rotate); got != tc.want {
			t.Errorf("balancedStart(%v, %d, %d) = %d, want %d", tc.leads, tc.count, tc.rotate, got, tc.want)
		}
	}

	// The start is a position in the rack order: here 10c 13b 16c 19a
	// 22b 25c, and the two brokers leading nothing, 19 and 22, are at 3.
	l := mkLayout("6 three racks 1-2-3", "c", "b", "c", "a", "b", "c")
	leads := map[int32]int{10: 1, 13: 1, 16: 1, 19: 0, 22: 0, 25: 1}
	if s := balancedStart(l.brokers(), leads, 8, 0); s != 3 {
		t.Fatalf("start %d, want 3 (%v)", s, rackOrder(l.brokers()))
	}
}

func rackCluster(t *testing.T, l layout) *harness {
	h := newHarness(t, nil)
	for i, id := range l.ids {
		h.addRackBroker(id, l.racks[i], false)
	}
	return h
}

func topicAssignment(h *harness, name string) [][]int32 {
	var out [][]int32
	for _, p := range h.c.Image().Topics.Get(name).SortedPartitions() {
		out = append(out, p.Replicas)
	}
	return out
}

// TestCreateTopicsRackAware goes through the controller: topics and
// partitions created on racked (and partly racked) clusters have the
// placement guarantees, and mixed racks are accepted as Kafka's KRaft
// controller accepts them.
func TestCreateTopicsRackAware(t *testing.T) {
	for _, l := range placementLayouts {
		if len(l.ids) < 3 {
			continue
		}
		h := rackCluster(t, l)
		h.mustCreate(topicReq("t", 12, 3), topicReq("u", 5, 2))
		for _, name := range []string{"t", "u"} {
			got := topicAssignment(h, name)
			if err := checkPlacement(l, nil, got, len(got), len(got[0])); err != nil {
				t.Fatalf("%s: topic %s: %v\n%v", l.name, name, err, got)
			}
		}
		wantCode(t, l.name+": add partitions", h.createPartitions(partsReq(false, partsTopic("u", 9)))[0], nil)
		got := topicAssignment(h, "u")
		if err := checkPlacement(l, got[:5], got[5:], 4, 2); err != nil {
			t.Fatalf("%s: topic u after CreatePartitions: %v\n%v", l.name, err, got)
		}
	}
}

// TestPlacementSkipsUnusableBrokers: fenced brokers and brokers in
// controlled shutdown get no replica, and the rest keep the guarantees.
func TestPlacementSkipsUnusableBrokers(t *testing.T) {
	h := newHarness(t, nil)
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c", 7: "a", 8: "b"}
	for id := int32(1); id <= 8; id++ {
		h.addRackBroker(id, racks[id], id == 7) // 7 stays fenced
	}
	if _, err := h.q.Append([]metadata.Record{&metadata.BrokerRegistrationChangeRecord{
		RecordVersion: 1, BrokerId: 8, BrokerEpoch: h.epochs[8], InControlledShutdown: 1}}); err != nil {
		t.Fatal(err)
	}
	h.mustCreate(topicReq("t", 30, 3))
	got := topicAssignment(h, "t")
	usable := mkLayout("usable")
	for id := int32(1); id <= 6; id++ {
		usable.ids, usable.racks = append(usable.ids, id), append(usable.racks, racks[id])
	}
	if err := checkPlacement(usable, nil, got, 30, 3); err != nil {
		t.Fatalf("%v\n%v", err, got)
	}
	// 6 usable brokers: rf 7 is refused.
	_, errs, _ := h.create(false, topicReq("wide", 1, 7))
	wantCode(t, "rf above usable brokers", errs[0], kerr.InvalidReplicationFactor)
	wantCode(t, "add partitions", h.createPartitions(partsReq(false, partsTopic("t", 31)))[0], nil)
	if p := h.c.Image().Topics.Get("t").Partitions[30]; p.HasReplica(7) || p.HasReplica(8) || len(p.Replicas) != 3 {
		t.Fatalf("new partition %+v", p)
	}
}

// TestSuccessiveTopicsStartOnDifferentBrokers: new topics start where the
// cluster has the fewest leaders, rotating through the brokers when the
// counts are even, so successive topics do not lead on the same broker and
// the cluster's leaders stay even.
func TestSuccessiveTopicsStartOnDifferentBrokers(t *testing.T) {
	for _, l := range []layout{
		mkLayout("3 no racks", "", "", ""),
		mkLayout("6 three racks", "a", "a", "b", "b", "c", "c"),
		mkLayout("9 three racks 2-3-4", "a", "b", "c", "a", "b", "c", "b", "c", "c"),
	} {
		n := len(l.ids)
		for _, partitions := range []int32{1, int32(n), int32(2 * n)} {
			h := rackCluster(t, l)
			prev := int32(-1)
			for i := range 3 * n {
				name := fmt.Sprintf("t%d", i)
				h.mustCreate(topicReq(name, partitions, 2))
				first := h.c.Image().Topics.Get(name).Partitions[0].Replicas[0]
				if first == prev {
					t.Fatalf("%s, %d partitions: topics %d and %d both start on broker %d", l.name, partitions, i-1, i, first)
				}
				prev = first
				leaders := map[int32]int{}
				for _, tp := range h.c.Image().Topics.All() {
					for _, p := range tp.Partitions {
						leaders[p.Replicas[0]]++
					}
				}
				if d := spread(leaders, l.ids); d > 1 {
					t.Fatalf("%s, %d partitions: after %d topics leaders per broker %v", l.name, partitions, i+1, leaders)
				}
			}
		}
	}

	// Topics of assorted sizes keep the cluster's leaders close to even.
	h := newCluster(t, 4, nil)
	for i, p := range []int32{1, 2, 3, 1, 5, 2, 2, 7, 1, 3, 6, 2} {
		h.mustCreate(topicReq(fmt.Sprintf("m%d", i), p, 2))
	}
	leaders := map[int32]int{}
	for _, tp := range h.c.Image().Topics.All() {
		for _, p := range tp.Partitions {
			leaders[p.Leader]++
		}
	}
	if d := spread(leaders, []int32{1, 2, 3, 4}); d > 1 {
		t.Fatalf("leaders per broker after assorted topics: %v", leaders)
	}
}
