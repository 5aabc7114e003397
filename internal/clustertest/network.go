package clustertest

import (
	"context"
	"errors"
	"net"
	"sync"
)

// errCut is what a dial across a cut link returns.
var errCut = errors.New("clustertest: link cut")

// network carries every connection one node opens to another (Raft, the
// controller calls, forwarded requests) and can cut links between nodes.
// A link is cut in both directions: new dials fail and the connections
// already open across it are closed. Clients' connections do not go
// through it.
type network struct {
	mu    sync.Mutex
	owner map[string]int     // listener address -> node index
	cut   map[[2]int]bool    // unordered pair, low index first
	conns map[*conn]struct{} // open connections between nodes
}

func newNetwork() *network {
	return &network{owner: map[string]int{}, cut: map[[2]int]bool{}, conns: map[*conn]struct{}{}}
}

func link(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

// listen records that node owns addr.
func (nw *network) listen(node int, addr string) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.owner[addr] = node
}

// dialer is node from's server.Options.Dial.
func (nw *network) dialer(from int) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nw.mu.Lock()
		to, known := nw.owner[addr]
		cut := known && nw.cut[link(from, to)]
		nw.mu.Unlock()
		if cut {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errCut}
		}
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil || !known {
			return nc, err
		}
		c := &conn{Conn: nc, nw: nw, link: link(from, to)}
		nw.mu.Lock()
		defer nw.mu.Unlock()
		if nw.cut[c.link] { // cut while dialling
			nc.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Err: errCut}
		}
		nw.conns[c] = struct{}{}
		return c, nil
	}
}

// setCut cuts (or mends) the link between a and b.
func (nw *network) setCut(a, b int, cut bool) {
	if a == b {
		return
	}
	nw.mu.Lock()
	var sever []*conn
	if cut {
		nw.cut[link(a, b)] = true
		for c := range nw.conns {
			if c.link == link(a, b) {
				sever = append(sever, c)
			}
		}
	} else {
		delete(nw.cut, link(a, b))
	}
	nw.mu.Unlock()
	for _, c := range sever {
		c.Close()
	}
}

// heal mends every link.
func (nw *network) heal() {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	clear(nw.cut)
}

// conn is a connection between two nodes that the network can sever.
type conn struct {
	net.Conn
	nw   *network
	link [2]int
	once sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.nw.mu.Lock()
		delete(c.nw.conns, c)
		c.nw.mu.Unlock()
	})
	return c.Conn.Close()
}

// dialFunc is server.Options.Dial's type.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)
