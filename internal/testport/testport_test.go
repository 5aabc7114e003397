package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeHandsOutDistinctBindablePortsBelowTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		ports, err := Free(5)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if p < low || p >= high {
				t.Fatalf("port %d outside %d-%d", p, low, high)
			}
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
	ports, err := Free(1)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[0]))
	if err != nil {
		t.Fatalf("port %d handed out but not bindable: %v", ports[0], err)
	}
	ln.Close()
}
