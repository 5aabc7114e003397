package coordinator

import "testing"

func TestPartitionFor(t *testing.T) {
	// Expected values worked out by hand from Java's String.hashCode
	// (h = 31*h + c over UTF-16 units, int32 overflow) and Utils.abs.
	for _, c := range []struct {
		id   string
		hash int32
		p    int32
	}{
		{"", 0, 0},
		{"a", 97, 47},               // 97 % 50
		{"ab", 97*31 + 98, 5},       // 3105 % 50
		{"Aa", 65*31 + 97, 12},      // 2112, the classic collision...
		{"BB", 66*31 + 66, 12},      // ...with "BB"
		{"\U0001F600", 1772899, 49}, // surrogates D83D DE00: 55357*31 + 56832
		{"hello", 99162322, 22},
		{"Hello World", -862545276, 26},     // negative: abs first
		{"polygenelubricants", -1 << 31, 0}, // MinInt32: Utils.abs gives 0
	} {
		if h := javaStringHashCode(c.id); h != c.hash {
			t.Errorf("hashCode(%q) = %d, want %d", c.id, h, c.hash)
		}
		if p := PartitionFor(c.id, 50); p != c.p {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", c.id, p, c.p)
		}
	}
}
