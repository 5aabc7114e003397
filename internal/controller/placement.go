package controller

import (
	"cmp"
	"slices"

	"weir/internal/metadata"
)

// Replica placement for partitions created without a manual assignment
// (CreateTopics, CreatePartitions, auto-created topics), with the
// guarantees of Kafka's KRaft placer (StripedReplicaPlacer) and a few more.
//
// Guarantees of place, for 1 <= rf <= len(brokers), over the partitions of
// one topic:
//
//   - every partition has rf distinct brokers, all from the given brokers
//     (the usable ones: fenced brokers and brokers in controlled shutdown
//     are never given);
//   - racks: each partition's replicas cover min(rf, racks) racks, so with
//     at least rf racks no two replicas of a partition share a rack, and
//     with fewer racks no rack holds two more of them than a rack with a
//     broker to spare. Brokers without a rack form one rack group of their
//     own, as in Kafka's KRaft placer (mixed racks are not refused);
//   - leaders (first replicas): per broker they differ by at most one; per
//     rack they are in proportion to the racks' sizes within two (racks of
//     equal size differ by at most one, and consecutive partitions lead in
//     different racks);
//   - replicas: per broker of a rack they differ by at most one, and so do
//     they across all brokers when the racks are of equal size (or there
//     are none). Racks come first: when uneven racks must all be in every
//     partition, the brokers of a small rack hold more, as in Kafka;
//   - partitions added to a topic (existing) keep these for the whole
//     topic, except that its replicas per broker may differ by two, since
//     existing replicas do not move;
//   - the result depends only on the arguments.
//
// How: the brokers are put in rackOrder, which interleaves the racks in
// proportion to their sizes. Leaders are picked first: a new topic's
// round robin over that order from start; added partitions' from the
// brokers leading the fewest of the topic's partitions, in the rack
// furthest below its share of them. Then each partition's followers are
// picked greedily: the broker whose rack holds the fewest of the
// partition's replicas, then holding the fewest of the topic's replicas,
// then the fewest replicas cluster-wide. A last pass moves followers from
// brokers holding two more of the topic's replicas than another broker to
// it, where the racks allow.

// brokerInfo is what placement knows of a usable broker.
type brokerInfo struct {
	id   int32
	rack string // "" when the broker has no rack: those brokers form one group
	load int    // replicas it holds already, all topics: breaks ties between followers
}

// rackOrder returns the brokers interleaved by rack: each next broker
// comes from the rack furthest below its share (its size over the number
// of brokers) of the brokers so far, the larger rack on ties, then the
// first by name (no rack first); the brokers of a rack in id order. Equal
// racks alternate, a0 b0 c0 a1 b1 c1 ..., and every run of consecutive
// brokers, wrapping round, holds each rack's share within two.
func rackOrder(brokers []brokerInfo) []brokerInfo {
	byRack := map[string][]brokerInfo{}
	for _, b := range brokers {
		byRack[b.rack] = append(byRack[b.rack], b)
	}
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	slices.Sort(racks)
	for _, r := range racks {
		slices.SortFunc(byRack[r], func(x, y brokerInfo) int { return cmp.Compare(x.id, y.id) })
	}
	n := len(brokers)
	taken := make([]int, len(racks))
	out := make([]brokerInfo, 0, n)
	for len(out) < n {
		best := -1
		for r, name := range racks {
			size := len(byRack[name])
			if taken[r] == size {
				continue
			}
			if best < 0 {
				best = r
				continue
			}
			bsize := len(byRack[racks[best]])
			if c := cmp.Compare(deficit(taken[r], size, len(out), n), deficit(taken[best], bsize, len(out), n)); c > 0 || c == 0 && size > bsize {
				best = r
			}
		}
		out = append(out, byRack[racks[best]][taken[best]])
		taken[best]++
	}
	return out
}

// deficit is how far a rack of size brokers out of n, holding have of the
// first done+1 picks were it not picked now, falls below its share of
// them, times n.
func deficit(have, size, done, n int) int { return (done+1)*size - have*n }

// place returns the replicas of count new partitions of a topic, each of rf
// brokers, with the guarantees above. existing are the replicas of the
// topic's partitions already placed (CreatePartitions; nil for a new
// topic): they count toward the topic's leader and replica balance, so the
// new partitions even it out. start is a position in rackOrder(brokers)
// (taken modulo its length): a new topic's first partition leads there,
// and an added partition's leader is searched for from there.
//
// Callers check 1 <= rf <= len(brokers); place returns nil otherwise.
func place(brokers []brokerInfo, existing [][]int32, count, rf, start int) [][]int32 {
	order := rackOrder(brokers)
	n := len(order)
	if count <= 0 || rf <= 0 || rf > n {
		return nil
	}
	pos := make(map[int32]int, n)
	rackOf := make([]int, n) // rack group of each position, numbered densely
	rackIdx := map[string]int{}
	for i, b := range order {
		pos[b.id] = i
		if _, ok := rackIdx[b.rack]; !ok {
			rackIdx[b.rack] = len(rackIdx)
		}
		rackOf[i] = rackIdx[b.rack]
	}
	rackSize := make([]int, len(rackIdx))
	for _, r := range rackOf {
		rackSize[r]++
	}
	leaders := make([]int, n)                // partitions of the topic led, by position
	rackLeaders := make([]int, len(rackIdx)) // and by rack
	load := make([]int, n)                   // replicas of the topic, by position
	for _, rs := range existing {
		for k, id := range rs {
			if i, ok := pos[id]; ok {
				load[i]++
				if k == 0 {
					leaders[i]++
					rackLeaders[rackOf[i]]++
				}
			}
		}
	}

	// Leaders first, so the follower pass sees each broker's final share
	// of leaderships. A new topic's go round robin over the rack order
	// from start. Added partitions go to the broker leading the fewest
	// partitions of the topic, then in the rack furthest below its share
	// of them (the rule rackOrder interleaves by), then holding the fewest
	// of its replicas, then the first from after the previous leader.
	lead := make([]int, count)
	total := 0 // partitions of the topic led by the brokers
	for _, c := range leaders {
		total += c
	}
	cursor := ((start % n) + n) % n
	for p := range lead {
		best := cursor
		for d := 1; d < n && len(existing) > 0; d++ {
			i := (cursor + d) % n
			if c := cmp.Compare(leaders[i], leaders[best]); c != 0 {
				if c < 0 {
					best = i
				}
				continue
			}
			ri, rb := rackOf[i], rackOf[best]
			if c := cmp.Compare(deficit(rackLeaders[ri], rackSize[ri], total, n), deficit(rackLeaders[rb], rackSize[rb], total, n)); c != 0 {
				if c > 0 {
					best = i
				}
				continue
			}
			if load[i] < load[best] {
				best = i
			}
		}
		lead[p] = best
		total++
		leaders[best]++
		rackLeaders[rackOf[best]]++
		load[best]++
		cursor = (best + 1) % n
	}

	// Followers: fewest replicas of this partition in the broker's rack,
	// then fewest replicas of the topic, then fewest replicas overall; the
	// remaining ties go to the first broker after the leader plus a shift
	// that grows each time the partitions have gone once round the brokers,
	// so leader-follower pairs vary (as Kafka's rack-unaware assignment
	// does).
	out := make([][]int32, count)
	inRack := make([]int, len(rackIdx))
	used := make([]bool, n)
	for p, l := range lead {
		clear(inRack)
		clear(used)
		replicas := make([]int32, 1, rf)
		replicas[0] = order[l].id
		used[l] = true
		inRack[rackOf[l]]++
		shift := 1
		if n > 1 {
			shift += ((len(existing) + p) / n) % (n - 1)
		}
		from := (l + shift) % n
		for len(replicas) < rf {
			best := -1
			for d := range n {
				i := (from + d) % n
				if used[i] {
					continue
				}
				if best < 0 || followerLess(i, best, inRack, rackOf, load, order) {
					best = i
				}
			}
			replicas = append(replicas, order[best].id)
			used[best] = true
			inRack[rackOf[best]]++
			load[best]++
		}
		out[p] = replicas
	}
	rebalanceFollowers(out, order, pos, rackOf, load)
	return out
}

// rebalanceFollowers evens out the topic's replicas per broker where the
// greedy pass could not (it cannot see that a broker leading one of the
// last partitions will have no chance to follow it): while a follower on
// a broker holding at least two replicas more than another broker can move
// to that broker without making its partition's racks less spread (the
// same rack, or a rack holding fewer of the partition's replicas), move
// it. Each move lowers the sum of the squared loads, so this ends. Leaders
// never move.
func rebalanceFollowers(out [][]int32, order []brokerInfo, pos map[int32]int, rackOf, load []int) {
	n := len(order)
	byLoad := make([]int, n)
	inRack := make([]int, slices.Max(rackOf)+1)
	for {
		for i := range byLoad {
			byLoad[i] = i
		}
		// Most loaded first; equal loads in placement order.
		slices.SortStableFunc(byLoad, func(a, b int) int { return cmp.Compare(load[b], load[a]) })
		moved := false
	search:
		for _, hi := range byLoad {
			for k := n - 1; k >= 0 && load[hi]-load[byLoad[k]] >= 2; k-- {
				lo := byLoad[k]
				for p := len(out) - 1; p >= 0; p-- {
					r := followerMove(out[p], hi, lo, pos, rackOf, inRack)
					if r < 0 {
						continue
					}
					out[p][r] = order[lo].id
					load[hi]--
					load[lo]++
					moved = true
					break search
				}
			}
		}
		if !moved {
			return
		}
	}
}

// followerMove returns the index in replicas of the follower on the broker
// at position hi if it may move to the broker at position lo, or -1.
func followerMove(replicas []int32, hi, lo int, pos map[int32]int, rackOf, inRack []int) int {
	at := -1
	clear(inRack)
	for r, id := range replicas {
		i := pos[id]
		if i == lo {
			return -1
		}
		if i == hi && r > 0 {
			at = r
		}
		inRack[rackOf[i]]++
	}
	if at < 0 {
		return -1
	}
	if rackOf[hi] != rackOf[lo] && inRack[rackOf[lo]] >= inRack[rackOf[hi]] {
		return -1
	}
	return at
}

// followerLess reports whether the broker at position i is a strictly
// better next follower than the one at j.
func followerLess(i, j int, inRack, rackOf, load []int, order []brokerInfo) bool {
	if a, b := inRack[rackOf[i]], inRack[rackOf[j]]; a != b {
		return a < b
	}
	if load[i] != load[j] {
		return load[i] < load[j]
	}
	return order[i].load < order[j].load
}

// usableBrokers are the registered, unfenced brokers not shutting down,
// by id: the ones new replicas may be placed on.
func usableBrokers(img *metadata.Image) []int32 {
	var ids []int32
	for id, b := range img.Brokers {
		if !b.Fenced && !b.InControlledShutdown {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// placeNew places count new partitions of rf replicas on img's usable
// brokers: the next partitions of t, or a new topic's when t is nil.
// The brokers' loads are the image's BrokerLoads, so this costs nothing
// of the cluster's size. Callers check 1 <= rf <= len(usableBrokers(img)).
//
// Where the search for the first leader starts (Kafka starts at random;
// this is deterministic):
//   - new partitions of an existing topic continue after the preferred
//     leader of its last partition, as Kafka's placer does, when that
//     broker is still usable;
//   - otherwise see balancedStart: where the cluster's leaders stay most
//     even, successive topics rotating through the brokers on ties.
func placeNew(img *metadata.Image, t *metadata.Topic, count, rf int) [][]int32 {
	ids := usableBrokers(img)
	leads := make(map[int32]int, len(ids))
	brokers := make([]brokerInfo, len(ids))
	for i, id := range ids {
		l := img.BrokerLoads[id]
		leads[id] = l.PreferredLeads
		brokers[i] = brokerInfo{id: id, load: l.Replicas}
		if r := img.Brokers[id].Rack; r != nil {
			brokers[i].rack = *r
		}
	}
	var existing [][]int32
	if t != nil {
		for _, p := range t.SortedPartitions() {
			existing = append(existing, p.Replicas)
		}
	}
	start := -1
	if len(existing) > 0 && len(existing[len(existing)-1]) > 0 {
		last := existing[len(existing)-1][0]
		for i, b := range rackOrder(brokers) {
			if b.id == last {
				start = i + 1
			}
		}
	}
	if start < 0 {
		start = balancedStart(brokers, leads, count, img.Topics.Len())
	}
	return place(brokers, existing, count, rf, start)
}

// balancedStart returns the start for a new topic of count partitions.
// Its leaders go round robin over the rack order, so each broker leads
// count/n of them and the count mod n brokers from the start one more.
// The start chosen is the one where those brokers lead the fewest
// partitions cluster-wide now (preferred leaders, as in leads), then where
// the most loaded of them leads the fewest, so the cluster's leaders stay
// even; ties go to the first from position rotate (the number of topics)
// mod n, so that when the counts are even successive topics start on
// successive brokers of the rack order.
func balancedStart(brokers []brokerInfo, leads map[int32]int, count, rotate int) int {
	order := rackOrder(brokers)
	n := len(order)
	if n == 0 {
		return 0
	}
	w := count % n
	best, bestSum, bestMax := -1, 0, 0
	for d := range n {
		s := (rotate + d) % n
		sum, mx := 0, 0
		for k := range w {
			c := leads[order[(s+k)%n].id]
			sum += c
			mx = max(mx, c)
		}
		if best < 0 || sum < bestSum || sum == bestSum && mx < bestMax {
			best, bestSum, bestMax = s, sum, mx
		}
	}
	return best
}
