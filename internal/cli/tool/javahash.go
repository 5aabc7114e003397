package tool

// The iteration order of Java's HashMap and HashSet, which Kafka's tools
// print their maps and sets in (log-dirs' JSON, its broker lists), so
// that weir prints them in the same order.

import (
	"slices"
	"unicode/utf16"
)

// JavaStringHash is Java's String.hashCode (over UTF-16 code units).
func JavaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// JavaTopicPartitionHash is Kafka's TopicPartition.hashCode.
func JavaTopicPartitionHash(topic string, partition int32) int32 {
	return 31*(31+partition) + JavaStringHash(topic)
}

// javaCapacity is the table size of a HashMap holding n entries, grown
// from the default 16 at a load factor of 0.75.
func javaCapacity(n int) uint32 {
	c := uint32(16)
	for uint32(n) > c/4*3 {
		c *= 2
	}
	return c
}

// javaBucket is the bucket of a hash code in a table of size c.
func javaBucket(h int32, c uint32) uint32 {
	u := uint32(h)
	return (u ^ u>>16) & (c - 1)
}

// JavaOrder sorts items, inserted in their present order, as a HashMap of
// them with these hash codes iterates.
func JavaOrder[T any](items []T, hash func(T) int32) {
	c := javaCapacity(len(items))
	type entry struct {
		item  T
		index int
	}
	es := make([]entry, len(items))
	for i, it := range items {
		es[i] = entry{it, i}
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		return int(javaBucket(hash(a.item), c)) - int(javaBucket(hash(b.item), c))
	})
	for i, e := range es {
		items[i] = e.item
	}
}
