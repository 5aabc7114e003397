package controller

import (
	"slices"
	"sort"

	"weir/internal/metadata"
)

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

// assignReplicas places rf replicas for each of count partitions numbered
// from first, over brokers, spreading leaders (the first replica) round
// robin from a start that depends on the partition number so successive
// topics do not all lead on the same broker.
func assignReplicas(brokers []int32, first, count int32, rf int, start int) [][]int32 {
	out := make([][]int32, count)
	n := len(brokers)
	for i := int32(0); i < count; i++ {
		p := int(first+i) + start
		replicas := make([]int32, rf)
		for r := 0; r < rf; r++ {
			replicas[r] = brokers[(p+r)%n]
		}
		out[i] = replicas
	}
	return out
}

// leaderCounts counts partitions led by each broker, used to pick where a
// new topic's assignment starts.
func leaderCounts(img *metadata.Image) map[int32]int {
	c := map[int32]int{}
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if p.Leader >= 0 {
				c[p.Leader]++
			}
		}
	}
	return c
}

// leastLoadedStart returns the index in brokers of the broker leading the
// fewest partitions (lowest id on ties).
func leastLoadedStart(img *metadata.Image, brokers []int32) int {
	counts := leaderCounts(img)
	idx := make([]int, len(brokers))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return counts[brokers[idx[a]]] < counts[brokers[idx[b]]] })
	return idx[0]
}
