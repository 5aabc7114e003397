package server

import "testing"

// The segment file cache keeps the headroom under the open-file limit,
// but at most half of a small limit.
func TestSegmentFilesWithin(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
		got   int
	}{
		{1 << 20, 8192, 8192},
		{8192 + openFileHeadroom, 8192, 8192},
		{8192, 8192, 8192 - openFileHeadroom},
		{1024, 8192, 512},
		{20, 8192, 16},
	} {
		if got := segmentFilesWithin(c.limit, c.want); got != c.got {
			t.Errorf("limit %d, log.open.files.max %d: %d segment files, want %d", c.limit, c.want, got, c.got)
		}
	}
}
