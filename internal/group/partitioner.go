package group

import "unicode/utf16"

// PartitionFor is the __consumer_offsets partition that holds groupID, as
// Kafka computes it: abs(groupID.hashCode()) % partitions, where hashCode is
// Java's String.hashCode over UTF-16 code units and abs maps MinInt32 to 0
// (Kafka's Utils.abs). partitions must be positive.
func PartitionFor(groupID string, partitions int32) int32 {
	return javaAbs(javaStringHashCode(groupID)) % partitions
}

// javaStringHashCode is h = 31*h + c over the UTF-16 code units of s, with
// int32 overflow, exactly as java.lang.String.hashCode. Runes outside the
// Basic Multilingual Plane count as their two surrogates. Invalid UTF-8 is
// read as U+FFFD, as Java's UTF-8 decoder does.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}

// javaUTF16Len is Java's String.length(): the number of UTF-16 code units.
// Kafka compares offset commit metadata against offset.metadata.max.bytes
// with it, so the limit counts characters, not bytes.
func javaUTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

func javaAbs(n int32) int32 {
	switch {
	case n == -1<<31:
		return 0
	case n < 0:
		return -n
	}
	return n
}
