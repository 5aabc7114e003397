package clustertest

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// The fault network: a cut refuses new connections between two nodes and
// severs the open ones, both ways; other links and unknown addresses are
// untouched; healing restores the link.
func TestNetworkCutsAndHeals(t *testing.T) {
	nw := newNetwork()
	var addrs []string
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go io.Copy(c, c) // echo
			}
		}()
		nw.listen(i, ln.Addr().String())
		addrs = append(addrs, ln.Addr().String())
	}
	dial := func(from, to int) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return nw.dialer(from)(ctx, "tcp", addrs[to])
	}
	works := func(c net.Conn) bool {
		c.SetDeadline(time.Now().Add(time.Second))
		var b [1]byte
		if _, err := c.Write([]byte{7}); err != nil {
			return false
		}
		_, err := io.ReadFull(c, b[:])
		return err == nil && b[0] == 7
	}

	c01, err := dial(0, 1)
	if err != nil || !works(c01) {
		t.Fatalf("0 -> 1 before any cut: %v", err)
	}
	c10, _ := dial(1, 0)
	c02, _ := dial(0, 2)
	nw.setCut(1, 0, true)
	if works(c01) || works(c10) {
		t.Fatal("a connection across the cut still works")
	}
	if !works(c02) {
		t.Fatal("the cut severed another link")
	}
	for _, d := range [][2]int{{0, 1}, {1, 0}} {
		if _, err := dial(d[0], d[1]); !errors.Is(err, errCut) {
			t.Fatalf("%d -> %d across the cut: %v, want the link cut", d[0], d[1], err)
		}
	}
	if c, err := dial(1, 2); err != nil || !works(c) {
		t.Fatalf("1 -> 2 with only 0-1 cut: %v", err)
	} else {
		c.Close()
	}
	nw.heal()
	if c, err := dial(1, 0); err != nil || !works(c) {
		t.Fatalf("1 -> 0 after healing: %v", err)
	}
	c01.Close()
	c02.Close()
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if len(nw.conns) != 1 {
		t.Fatalf("the network tracks %d connections, want the one still open", len(nw.conns))
	}
}
