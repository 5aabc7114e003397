package metadata

import (
	"hash/maphash"
	"iter"
	"maps"
)

// mapShards is how many Go maps a Map spreads its entries over.
const mapShards = 256

var mapSeed = maphash.MakeSeed()

// A Map is a persistent map, the image's map of topics: an edit copies
// only the shards (of 256) it changes, so changing one topic of an image
// of n costs about n/256 entry copies rather than n (issue 16: the cost
// of a metadata change grows with the change, not the cluster). The zero
// value is empty; a Map is never mutated once built.
type Map[K comparable, V any] struct{ d *mapData[K, V] }

type mapData[K comparable, V any] struct {
	shards [mapShards]map[K]V
	n      int
}

func shardOf[K comparable](k K) int { return int(maphash.Comparable(mapSeed, k) % mapShards) }

// Get returns the value of k, or the zero value.
func (m Map[K, V]) Get(k K) V {
	var zero V
	if m.d == nil {
		return zero
	}
	return m.d.shards[shardOf(k)][k]
}

// Len is the number of entries.
func (m Map[K, V]) Len() int {
	if m.d == nil {
		return 0
	}
	return m.d.n
}

// All iterates over the entries, in no particular order.
func (m Map[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.d == nil {
			return
		}
		for _, s := range m.d.shards {
			for k, v := range s {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// MapOf returns a Map of the entries of m (for tests and literals).
func MapOf[K comparable, V any](m map[K]V) Map[K, V] {
	var e mapEdit[K, V]
	e.start(Map[K, V]{})
	for k, v := range m {
		e.set(k, v)
	}
	return e.done()
}

// mapEdit builds a new Map from an old one: shards are copied on their
// first change. Its Map m shows the changes as they are made; once the
// edit is over (done), m is never changed again.
type mapEdit[K comparable, V any] struct {
	m     Map[K, V]
	owned [mapShards]bool
}

func (e *mapEdit[K, V]) start(m Map[K, V]) {
	d := &mapData[K, V]{}
	if m.d != nil {
		*d = *m.d
	}
	e.m = Map[K, V]{d}
}

// done returns the Map built, the zero Map when it is empty (as an empty
// shard is nil, so that Maps of the same entries are equal under
// reflect.DeepEqual however they were edited).
func (e *mapEdit[K, V]) done() Map[K, V] {
	if e.m.Len() == 0 {
		return Map[K, V]{}
	}
	return e.m
}

// shard returns shard i, owned by the edit; delete leaves an empty
// shard nil.
func (e *mapEdit[K, V]) shard(i int) map[K]V {
	if !e.owned[i] {
		e.m.d.shards[i] = maps.Clone(e.m.d.shards[i])
		e.owned[i] = true
	}
	if e.m.d.shards[i] == nil {
		e.m.d.shards[i] = map[K]V{}
	}
	return e.m.d.shards[i]
}

func (e *mapEdit[K, V]) set(k K, v V) {
	s := e.shard(shardOf(k))
	if _, ok := s[k]; !ok {
		e.m.d.n++
	}
	s[k] = v
}

func (e *mapEdit[K, V]) delete(k K) {
	i := shardOf(k)
	if _, ok := e.m.d.shards[i][k]; !ok {
		return
	}
	s := e.shard(i)
	delete(s, k)
	e.m.d.n--
	if len(s) == 0 {
		e.m.d.shards[i] = nil
	}
}

// Keys iterates over the keys, in no particular order.
func (m Map[K, V]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range m.All() {
			if !yield(k) {
				return
			}
		}
	}
}
