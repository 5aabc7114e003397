package coordinator

import "unicode/utf16"

// PartitionFor is the partition, of n, that holds key, as Kafka computes
// it for group ids and transactional ids: abs(key.hashCode()) % n, where
// hashCode is Java's String.hashCode over UTF-16 code units (int32
// overflow) and abs maps MinInt32 to 0 (Kafka's Utils.abs). Invalid UTF-8
// counts as U+FFFD, as Java's decoder reads it. n must be positive.
func PartitionFor(key string, n int32) int32 {
	h := javaStringHashCode(key)
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}

// javaStringHashCode is h = 31*h + c over the UTF-16 code units of s, with
// int32 overflow, exactly as java.lang.String.hashCode; runes outside the
// Basic Multilingual Plane count as their two surrogates.
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
