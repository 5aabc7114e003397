package metadata

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// recountLoads counts the brokers' loads by visiting every partition, as
// BrokerLoads must have them.
func recountLoads(im *Image) map[int32]BrokerLoad {
	out := map[int32]BrokerLoad{}
	for _, t := range im.Topics.All() {
		for _, p := range t.Partitions {
			for k, id := range p.Replicas {
				l := out[id]
				l.Replicas++
				if k == 0 {
					l.PreferredLeads++
				}
				out[id] = l
			}
		}
	}
	return out
}

func checkLoads(t *testing.T, im *Image, want map[int32]BrokerLoad) {
	t.Helper()
	if !reflect.DeepEqual(im.BrokerLoads, want) {
		t.Fatalf("BrokerLoads = %v, want %v", im.BrokerLoads, want)
	}
	if got := recountLoads(im); !reflect.DeepEqual(got, want) {
		t.Fatalf("the partitions count %v, want %v", got, want)
	}
}

func replicaChange(id Uuid, partition int32, replicas ...int32) *PartitionChangeRecord {
	r := NewPartitionChangeRecord()
	r.TopicId, r.PartitionId, r.Replicas = id, partition, replicas
	return r
}

func TestBrokerLoads(t *testing.T) {
	a, b := imgID(1), imgID(2)
	checkLoads(t, Empty(), map[int32]BrokerLoad{})

	// Creates: a has 3 partitions on 1 2 3, b 2 on 2 4.
	recs := append(topicRecs("a", a, 3, 1, 2, 3), topicRecs("b", b, 2, 2, 4)...)
	im, _ := mustApply(t, Empty(), 1, recs...)
	created := map[int32]BrokerLoad{1: {3, 3}, 2: {5, 2}, 3: {3, 0}, 4: {2, 0}}
	checkLoads(t, im, created)

	// A change of the ISR alone leaves the loads, and shares them.
	isr := NewPartitionChangeRecord()
	isr.TopicId, isr.PartitionId, isr.Isr = a, 0, []int32{1}
	im2, _ := mustApply(t, im, 2, isr)
	checkLoads(t, im2, created)
	if reflect.ValueOf(im2.BrokerLoads).UnsafePointer() != reflect.ValueOf(im.BrokerLoads).UnsafePointer() {
		t.Fatal("an ISR change copied BrokerLoads")
	}

	// A reassignment of a-0 from 1 2 3 to 4 5 6: first the union, then
	// the target. The old image keeps its loads.
	im3, _ := mustApply(t, im2, 3, replicaChange(a, 0, 1, 2, 3, 4, 5, 6))
	checkLoads(t, im3, map[int32]BrokerLoad{1: {3, 3}, 2: {5, 2}, 3: {3, 0}, 4: {3, 0}, 5: {1, 0}, 6: {1, 0}})
	im4, _ := mustApply(t, im3, 4, replicaChange(a, 0, 4, 5, 6))
	checkLoads(t, im4, map[int32]BrokerLoad{1: {2, 2}, 2: {4, 2}, 3: {2, 0}, 4: {3, 1}, 5: {1, 0}, 6: {1, 0}})
	checkLoads(t, im, created)

	// A preferred leader change (the same replicas reordered).
	im5, _ := mustApply(t, im4, 5, replicaChange(b, 1, 4, 2))
	checkLoads(t, im5, map[int32]BrokerLoad{1: {2, 2}, 2: {4, 1}, 3: {2, 0}, 4: {3, 2}, 5: {1, 0}, 6: {1, 0}})

	// A PartitionRecord for a partition that exists replaces it.
	pr := NewPartitionRecord()
	pr.TopicId, pr.PartitionId, pr.Replicas, pr.Isr, pr.Leader = a, 0, []int32{7}, []int32{7}, 7
	im6, _ := mustApply(t, im5, 6, pr)
	checkLoads(t, im6, map[int32]BrokerLoad{1: {2, 2}, 2: {4, 1}, 3: {2, 0}, 4: {2, 1}, 7: {1, 1}})

	// Deleting a drops the brokers left with nothing; deleting b too
	// leaves what Empty has.
	im7, _ := mustApply(t, im6, 7, &RemoveTopicRecord{TopicId: a})
	checkLoads(t, im7, map[int32]BrokerLoad{2: {2, 1}, 4: {2, 1}})
	im8, _ := mustApply(t, im7, 8, &RemoveTopicRecord{TopicId: b})
	checkLoads(t, im8, map[int32]BrokerLoad{})

	// A failed batch leaves the old image's loads alone.
	mustFail(t, im6, "unknown topic id", replicaChange(a, 1, 9), &RemoveTopicRecord{TopicId: imgID(9)})
	checkLoads(t, im6, map[int32]BrokerLoad{1: {2, 2}, 2: {4, 1}, 3: {2, 0}, 4: {2, 1}, 7: {1, 1}})
}

// randomReplicas returns 0 to 4 distinct brokers of 1..6 in random order.
func randomReplicas(rng *rand.Rand) []int32 {
	ids := []int32{1, 2, 3, 4, 5, 6}
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return slices.Clone(ids[:rng.IntN(5)])
}

// randomRecord returns a record that applies to im: a topic created with
// partitions, a partition added or replaced, a partition's replicas or ISR
// changed, a topic removed.
func randomRecord(rng *rand.Rand, im *Image) []Record {
	ids := slices.SortedFunc(im.TopicsByID.Keys(), func(a, b Uuid) int { return slices.Compare(a[:], b[:]) })
	if len(ids) == 0 || rng.IntN(6) == 0 {
		id := imgID(byte(1 + rng.IntN(250)))
		if im.TopicsByID.Get(id) != nil {
			return nil
		}
		return append(topicRecs(fmt.Sprintf("t%d", id[0]), id, rng.IntN(4), 1), randomPartition(rng, id, int32(rng.IntN(5))))
	}
	t := im.TopicsByID.Get(ids[rng.IntN(len(ids))])
	switch rng.IntN(5) {
	case 0:
		return []Record{&RemoveTopicRecord{TopicId: t.ID}}
	case 1:
		return []Record{randomPartition(rng, t.ID, int32(rng.IntN(len(t.Partitions)+2)))}
	}
	if len(t.Partitions) == 0 {
		return nil
	}
	r := NewPartitionChangeRecord()
	r.TopicId, r.PartitionId = t.ID, int32(rng.IntN(len(t.Partitions)))
	if _, ok := t.Partitions[r.PartitionId]; !ok {
		return nil
	}
	if rng.IntN(3) > 0 {
		r.Replicas = randomReplicas(rng)
	} else {
		r.Isr = randomReplicas(rng)
	}
	return []Record{r}
}

func randomPartition(rng *rand.Rand, id Uuid, partition int32) *PartitionRecord {
	r := NewPartitionRecord()
	r.TopicId, r.PartitionId = id, partition
	r.Replicas = randomReplicas(rng)
	r.Isr, r.Leader, r.LeaderEpoch, r.PartitionEpoch = slices.Clone(r.Replicas), -1, 0, 0
	return r
}

// Over random record sequences, applied in random batches, BrokerLoads is
// always the brute-force count, earlier images keep theirs, and the image
// rebuilt from the final image's snapshot records equals it, loads
// included.
func TestBrokerLoadsMatchRecount(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 16))
		im := Empty()
		type kept struct {
			im    *Image
			loads map[int32]BrokerLoad
		}
		var history []kept
		for step := range 40 {
			var batch []Record
			next := im
			for range 1 + rng.IntN(4) {
				recs := randomRecord(rng, next)
				if len(recs) == 0 {
					continue
				}
				var err error
				if next, _, err = next.Apply(recs, next.Offset+1); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				batch = append(batch, recs...)
			}
			// The same records again, as one batch.
			got, _, err := im.Apply(batch, im.Offset+int64(len(batch)))
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if want := recountLoads(got); !reflect.DeepEqual(got.BrokerLoads, want) {
				t.Fatalf("seed %d step %d: BrokerLoads = %v, want %v (batch %d records)", seed, step, got.BrokerLoads, want, len(batch))
			}
			if !reflect.DeepEqual(got.BrokerLoads, next.BrokerLoads) {
				t.Fatalf("seed %d step %d: one batch gives %v, record by record %v", seed, step, got.BrokerLoads, next.BrokerLoads)
			}
			history = append(history, kept{got, maps.Clone(got.BrokerLoads)})
			im = got
		}
		for i, h := range history {
			if !reflect.DeepEqual(h.im.BrokerLoads, h.loads) {
				t.Fatalf("seed %d: the image of step %d changed its loads", seed, i)
			}
		}
		snap, _, err := Empty().Apply(im.Records(), im.Offset)
		if err != nil {
			t.Fatalf("seed %d: snapshot: %v", seed, err)
		}
		if !reflect.DeepEqual(normalize(snap), normalize(im)) {
			t.Fatalf("seed %d: the snapshot's image differs from the replayed one:\n got %v\nwant %v", seed, snap.BrokerLoads, im.BrokerLoads)
		}
	}
}
