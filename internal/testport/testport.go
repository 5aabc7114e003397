// Package testport hands out loopback ports for the nodes that tests and
// the request fuzzer start. A port from net.Listen(":0") is a poor choice
// for a node started later: the kernel may give the same port to the next
// caller once it is closed, and it lies in the ephemeral range, where any
// client connection may take it as its local port before the node binds it.
// Ports from here are below Linux's ephemeral range (32768-60999), free
// when handed out, and never handed out twice by one process.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The range ports are drawn from: above the well-known and common service
// ports, below the ephemeral range.
const (
	low  = 10000
	high = 32000
)

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Free returns n distinct ports that nothing listens on now and that this
// process has not handed out before.
func Free(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("no free loopback port found in %d-%d", low, high)
		}
		p := low + rand.IntN(high-low)
		if given[p] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ln.Close()
		given[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}
