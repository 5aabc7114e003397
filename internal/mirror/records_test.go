package mirror

import (
	"bytes"
	"testing"
)

// The golden bytes are written out by hand from MM2's schemas.
func TestRecordsGolden(t *testing.T) {
	cases := []struct {
		name       string
		key, value []byte
		wantKey    []byte
		wantValue  []byte
		decode     func(k, v []byte) (any, error)
		want       any
	}{
		{
			name:  "offset sync",
			key:   OffsetSync{Topic: "t1", Partition: 2, UpstreamOffset: 5, DownstreamOffset: 7}.Key(),
			value: OffsetSync{Topic: "t1", Partition: 2, UpstreamOffset: 5, DownstreamOffset: 7}.Value(),
			// topic STRING "t1", partition INT32 2
			wantKey: []byte{0, 2, 't', '1', 0, 0, 0, 2},
			// upstreamOffset INT64 5, offset INT64 7
			wantValue: []byte{0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 7},
			decode:    func(k, v []byte) (any, error) { return DecodeOffsetSync(k, v) },
			want:      OffsetSync{Topic: "t1", Partition: 2, UpstreamOffset: 5, DownstreamOffset: 7},
		},
		{
			name:  "checkpoint",
			key:   Checkpoint{Group: "g", Topic: "A.t", Partition: 1, UpstreamOffset: 10, DownstreamOffset: 9, Metadata: "m"}.Key(),
			value: Checkpoint{Group: "g", Topic: "A.t", Partition: 1, UpstreamOffset: 10, DownstreamOffset: 9, Metadata: "m"}.Value(),
			// group STRING "g", topic STRING "A.t", partition INT32 1
			wantKey: []byte{0, 1, 'g', 0, 3, 'A', '.', 't', 0, 0, 0, 1},
			// version INT16 0, upstreamOffset INT64 10, offset INT64 9, metadata STRING "m"
			wantValue: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 'm'},
			decode:    func(k, v []byte) (any, error) { return DecodeCheckpoint(k, v) },
			want:      Checkpoint{Group: "g", Topic: "A.t", Partition: 1, UpstreamOffset: 10, DownstreamOffset: 9, Metadata: "m"},
		},
		{
			name:  "heartbeat",
			key:   Heartbeat{Source: "A", Target: "B", Timestamp: 0x0102030405060708}.Key(),
			value: Heartbeat{Source: "A", Target: "B", Timestamp: 0x0102030405060708}.Value(),
			// sourceClusterAlias STRING "A", targetClusterAlias STRING "B"
			wantKey: []byte{0, 1, 'A', 0, 1, 'B'},
			// version INT16 0, timestamp INT64
			wantValue: []byte{0, 0, 1, 2, 3, 4, 5, 6, 7, 8},
			decode:    func(k, v []byte) (any, error) { return DecodeHeartbeat(k, v) },
			want:      Heartbeat{Source: "A", Target: "B", Timestamp: 0x0102030405060708},
		},
	}
	for _, c := range cases {
		if !bytes.Equal(c.key, c.wantKey) || !bytes.Equal(c.value, c.wantValue) {
			t.Errorf("%s: key % x value % x, want key % x value % x", c.name, c.key, c.value, c.wantKey, c.wantValue)
		}
		got, err := c.decode(c.wantKey, c.wantValue)
		if err != nil || got != c.want {
			t.Errorf("%s: decoded %+v, %v; want %+v", c.name, got, err, c.want)
		}
		// Every truncation is an error, never a panic or a wrong record.
		for n := range c.wantValue {
			if _, err := c.decode(c.wantKey, c.wantValue[:n]); err == nil {
				t.Errorf("%s: value cut to %d bytes decoded without error", c.name, n)
			}
		}
		for n := range c.wantKey {
			if _, err := c.decode(c.wantKey[:n], c.wantValue); err == nil {
				t.Errorf("%s: key cut to %d bytes decoded without error", c.name, n)
			}
		}
	}
	if _, err := DecodeCheckpoint([]byte{0, 1, 'g', 0, 1, 't', 0, 0, 0, 0}, append([]byte{0, 1}, make([]byte, 18)...)); err == nil {
		t.Error("checkpoint of version 1 decoded")
	}
	if _, err := DecodeHeartbeat([]byte{0, 1, 'A', 0, 1, 'B'}, []byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("heartbeat of version -1 decoded")
	}
}
