package group

// The server-side assignors of consumer groups (KIP-848), selected by the
// member's ServerAssignor among group.consumer.assignors.
//
// uniform (Kafka's default): every partition of the subscribed topics goes
// to one member subscribed to its topic, and members end up with as equal
// counts as their subscriptions allow: with identical subscriptions the
// counts differ by at most one; otherwise no partition could move to a
// member subscribed to its topic that has two or more fewer partitions.
// It is sticky: a member keeps what it was assigned unless balance needs
// it elsewhere.
//
// range: topic by topic, the partitions are split among the members
// subscribed to that topic into contiguous ranges in member id order, the
// first partitions%members members getting one more. It is sticky too: a
// member keeps its lowest previously assigned partitions of a topic up to
// its share.
//
// Both are written from the properties Kafka documents for its assignors,
// not from Kafka's code; for a given input they are deterministic, but the
// exact assignment may differ from what Kafka would compute.

import (
	"slices"
	"sort"
)

// Assignor names, as ServerAssignor and group.consumer.assignors name
// them.
const (
	UniformAssignor = "uniform"
	RangeAssignor   = "range"
)

// assignSpec is the input of an assignor.
type assignSpec struct {
	members []assignMember     // in member id order
	topics  map[[16]byte]int32 // partition count of each subscribed topic
}

type assignMember struct {
	id     string
	topics [][16]byte // subscribed topics that exist, in id order
	prev   assignment // the member's current target assignment
}

// assignFunc computes a target assignment: one entry per member.
type assignFunc func(assignSpec) map[string]assignment

func assignorFunc(name string) assignFunc {
	switch name {
	case RangeAssignor:
		return assignRange
	case UniformAssignor:
		return assignUniform
	}
	return nil
}

// assignRange is the range assignor.
func assignRange(spec assignSpec) map[string]assignment {
	out := make(map[string]assignment, len(spec.members))
	subscribers := make(map[[16]byte][]assignMember)
	for _, m := range spec.members {
		out[m.id] = assignment{}
		for _, t := range m.topics {
			subscribers[t] = append(subscribers[t], m)
		}
	}
	for t, ms := range subscribers {
		n := spec.topics[t]
		quota, extra := n/int32(len(ms)), n%int32(len(ms))
		taken := make([]bool, n)
		kept := make([][]int32, len(ms))
		gotExtra := make([]bool, len(ms))
		// Keep the lowest partitions each member had, up to its share;
		// members that had more than the share take the extra slots first.
		for i, m := range ms {
			var had []int32
			for _, p := range m.prev[t] {
				if p < n && !taken[p] {
					had = append(had, p)
				}
			}
			k := min(int32(len(had)), quota)
			if int32(len(had)) > quota && extra > 0 {
				k++
				extra--
				gotExtra[i] = true
			}
			kept[i] = had[:k]
			for _, p := range kept[i] {
				taken[p] = true
			}
		}
		var free []int32
		for p := int32(0); p < n; p++ {
			if !taken[p] {
				free = append(free, p)
			}
		}
		// Fill every member up to its share with contiguous free ranges.
		for i, m := range ms {
			want := quota
			if gotExtra[i] {
				want++
			} else if extra > 0 {
				want++
				extra--
			}
			need := int(want) - len(kept[i])
			ps := append(kept[i], free[:need]...)
			free = free[need:]
			for _, p := range ps {
				out[m.id].add(t, p)
			}
		}
	}
	return out
}

// assignUniform is the uniform assignor.
func assignUniform(spec assignSpec) map[string]assignment {
	if len(spec.members) == 0 {
		return map[string]assignment{}
	}
	b := newBalancer(spec)
	if b.homogeneous() {
		b.balanceHomogeneous()
	} else {
		b.balanceHeterogeneous()
	}
	out := make(map[string]assignment, len(spec.members))
	for i, m := range spec.members {
		a := assignment{}
		for _, tp := range b.owned[i] {
			a.add(tp.topic, tp.partition)
		}
		out[m.id] = a
	}
	return out
}

// balancer holds a uniform assignment in progress; members are indexes
// into spec.members.
type balancer struct {
	spec        assignSpec
	owned       [][]tpid // per member, in (topic, partition) order once sorted
	unassigned  []tpid
	subscribers map[[16]byte][]int // members subscribed to each topic
}

func lessTP(a, b tpid) bool {
	if c := compareIDs(a.topic, b.topic); c != 0 {
		return c < 0
	}
	return a.partition < b.partition
}

// newBalancer keeps every still valid previous partition with its member
// and collects the rest as unassigned.
func newBalancer(spec assignSpec) *balancer {
	b := &balancer{spec: spec, owned: make([][]tpid, len(spec.members)),
		subscribers: make(map[[16]byte][]int)}
	taken := make(map[tpid]bool)
	for i, m := range spec.members {
		for _, t := range m.topics {
			b.subscribers[t] = append(b.subscribers[t], i)
			for _, p := range m.prev[t] {
				tp := tpid{t, p}
				if p < spec.topics[t] && !taken[tp] {
					taken[tp] = true
					b.owned[i] = append(b.owned[i], tp)
				}
			}
		}
	}
	ids := make([][16]byte, 0, len(b.subscribers))
	for t := range b.subscribers {
		ids = append(ids, t)
	}
	slices.SortFunc(ids, compareIDs)
	for _, t := range ids {
		for p := int32(0); p < spec.topics[t]; p++ {
			if tp := (tpid{t, p}); !taken[tp] {
				b.unassigned = append(b.unassigned, tp)
			}
		}
	}
	return b
}

func (b *balancer) homogeneous() bool {
	for _, m := range b.spec.members[1:] {
		if !slices.Equal(m.topics, b.spec.members[0].topics) {
			return false
		}
	}
	return true
}

// balanceHomogeneous: with P partitions and M members every member gets
// P/M, and P%M of them one more; those slots go to the members that kept
// the most, so that as little as possible moves.
func (b *balancer) balanceHomogeneous() {
	n := len(b.spec.members)
	total := len(b.unassigned)
	for _, o := range b.owned {
		total += len(o)
	}
	quota, extra := total/n, total%n
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return len(b.owned[order[x]]) > len(b.owned[order[y]]) })
	want := make([]int, n)
	for rank, i := range order {
		want[i] = quota
		if rank < extra {
			want[i]++
		}
	}
	for i := range b.owned {
		slices.SortFunc(b.owned[i], func(x, y tpid) int {
			if lessTP(x, y) {
				return -1
			}
			return 1
		})
		if len(b.owned[i]) > want[i] {
			b.unassigned = append(b.unassigned, b.owned[i][want[i]:]...)
			b.owned[i] = b.owned[i][:want[i]]
		}
	}
	sort.Slice(b.unassigned, func(x, y int) bool { return lessTP(b.unassigned[x], b.unassigned[y]) })
	for i := range b.owned {
		need := want[i] - len(b.owned[i])
		b.owned[i] = append(b.owned[i], b.unassigned[:need]...)
		b.unassigned = b.unassigned[need:]
	}
}

// balanceHeterogeneous hands each unassigned partition (topics with the
// fewest subscribers first) to its least loaded subscriber, then moves
// partitions from loaded members to subscribers with at least two fewer
// until no such move remains.
func (b *balancer) balanceHeterogeneous() {
	sort.SliceStable(b.unassigned, func(x, y int) bool {
		nx, ny := len(b.subscribers[b.unassigned[x].topic]), len(b.subscribers[b.unassigned[y].topic])
		if nx != ny {
			return nx < ny
		}
		return lessTP(b.unassigned[x], b.unassigned[y])
	})
	for _, tp := range b.unassigned {
		i := b.leastLoaded(tp.topic)
		b.owned[i] = append(b.owned[i], tp)
	}
	b.unassigned = nil
	for b.moveOne() {
	}
	for i := range b.owned {
		sort.Slice(b.owned[i], func(x, y int) bool { return lessTP(b.owned[i][x], b.owned[i][y]) })
	}
}

// leastLoaded is the subscriber of topic with the fewest partitions,
// the first in member order on a tie.
func (b *balancer) leastLoaded(topic [16]byte) int {
	best := -1
	for _, i := range b.subscribers[topic] {
		if best < 0 || len(b.owned[i]) < len(b.owned[best]) {
			best = i
		}
	}
	return best
}

// moveOne moves one partition from the most loaded member that can give
// one away to a subscriber with at least two fewer, and reports whether it
// did. Each move lowers the sum of squared counts, so repeating ends.
func (b *balancer) moveOne() bool {
	order := make([]int, len(b.owned))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return len(b.owned[order[x]]) > len(b.owned[order[y]]) })
	for _, from := range order {
		for k := len(b.owned[from]) - 1; k >= 0; k-- {
			tp := b.owned[from][k]
			to := b.leastLoaded(tp.topic)
			if len(b.owned[from])-len(b.owned[to]) > 1 {
				b.owned[from] = slices.Delete(b.owned[from], k, k+1)
				b.owned[to] = append(b.owned[to], tp)
				return true
			}
		}
	}
	return false
}
