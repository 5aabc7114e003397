package reassign

// Kafka's replica assignment (AdminUtils.assignReplicasToBrokers), which
// reassign-partitions --generate proposes: partitions' first replicas
// round-robin from a random broker, the others shifted, and with racks,
// brokers taken rack by rack so that replicas spread over racks.

import (
	"fmt"
	"slices"

	"weir/internal/cli/tool"
)

// brokerRack is a broker and its rack ("" for none).
type brokerRack struct {
	id   int32
	rack string
}

// assignReplicas assigns n partitions of rf replicas over the brokers;
// they are rack-aware when every broker has a rack.
func assignReplicas(brokers []brokerRack, n, rf int) (map[int][]int32, error) {
	switch {
	case n <= 0:
		return nil, &tool.JavaError{Class: "InvalidPartitionsException", Msg: "Number of partitions must be larger than 0."}
	case rf <= 0:
		return nil, &tool.JavaError{Class: "InvalidReplicationFactorException", Msg: "Replication factor must be larger than 0."}
	case rf > len(brokers):
		return nil, &tool.JavaError{Class: "InvalidReplicationFactorException", Msg: fmt.Sprintf("Replication factor: %d larger than available brokers: %d.", rf, len(brokers))}
	}
	racks := map[int32]string{}
	for _, b := range brokers {
		if b.rack != "" {
			racks[b.id] = b.rack
		}
	}
	if len(racks) == 0 {
		ids := make([]int32, len(brokers))
		for i, b := range brokers {
			ids[i] = b.id
		}
		slices.Sort(ids)
		return assignRackUnaware(ids, n, rf), nil
	}
	return assignRackAware(racks, n, rf), nil
}

// replicaIndex is the broker index of a partition's replica after its
// first.
func replicaIndex(first, shift, replica, nBrokers int) int {
	return (first + 1 + (shift+replica)%(nBrokers-1)) % nBrokers
}

func assignRackUnaware(brokers []int32, n, rf int) map[int][]int32 {
	out := map[int][]int32{}
	start, shift := reassignRandom(len(brokers)), reassignRandom(len(brokers))
	for p := 0; p < n; p++ {
		if p > 0 && p%len(brokers) == 0 {
			shift++
		}
		first := (p + start) % len(brokers)
		replicas := []int32{brokers[first]}
		for j := 0; j < rf-1; j++ {
			replicas = append(replicas, brokers[replicaIndex(first, shift, j, len(brokers))])
		}
		out[p] = replicas
	}
	return out
}

// rackAlternated lists brokers taking one from each rack in turn (racks
// and their brokers in order).
func rackAlternated(racks map[int32]string) []int32 {
	byRack := map[string][]int32{}
	for id, r := range racks {
		byRack[r] = append(byRack[r], id)
	}
	names := make([]string, 0, len(byRack))
	for r, ids := range byRack {
		slices.Sort(ids)
		names = append(names, r)
	}
	slices.Sort(names)
	var out []int32
	next := map[string]int{}
	for i := 0; len(out) < len(racks); i = (i + 1) % len(names) {
		r := names[i]
		if next[r] < len(byRack[r]) {
			out = append(out, byRack[r][next[r]])
			next[r]++
		}
	}
	return out
}

func assignRackAware(racks map[int32]string, n, rf int) map[int][]int32 {
	seen := map[string]bool{}
	for _, r := range racks {
		seen[r] = true
	}
	numRacks := len(seen)
	brokers := rackAlternated(racks)
	out := map[int][]int32{}
	start, shift := reassignRandom(len(brokers)), reassignRandom(len(brokers))
	for p := 0; p < n; p++ {
		if p > 0 && p%len(brokers) == 0 {
			shift++
		}
		first := (p + start) % len(brokers)
		leader := brokers[first]
		replicas := []int32{leader}
		withRacks := map[string]bool{racks[leader]: true}
		withBrokers := map[int32]bool{leader: true}
		k := 0
		for j := 0; j < rf-1; j++ {
			for {
				b := brokers[replicaIndex(first, shift*numRacks, k, len(brokers))]
				k++
				rack := racks[b]
				if (!withRacks[rack] || len(withRacks) == numRacks) && (!withBrokers[b] || len(withBrokers) == len(brokers)) {
					replicas = append(replicas, b)
					withRacks[rack], withBrokers[b] = true, true
					break
				}
			}
		}
		out[p] = replicas
	}
	return out
}
