package txn

import "unicode/utf16"

// PartitionFor is the partition, of n, that holds key, as Kafka computes
// it for transactional ids and group ids: abs(key.hashCode()) % n, where
// hashCode is Java's String.hashCode over UTF-16 code units (int32
// overflow) and abs maps MinInt32 to 0 (Kafka's Utils.abs). Invalid UTF-8
// counts as U+FFFD, as Java's decoder reads it. n must be positive.
func PartitionFor(key string, n int32) int32 {
	var h int32
	for _, r := range key {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}
