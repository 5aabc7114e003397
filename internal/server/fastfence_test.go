package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
)

// A broker is taken for dead only when a dial to it is refused, and a
// listener that keeps accepting (three dials) is alive, even if it
// accepted while its process was dying.
func TestRefuses(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}
	timeout := context.DeadlineExceeded
	for _, tc := range []struct {
		dials []error
		want  bool
	}{
		{[]error{refused}, true},
		{[]error{nil, refused}, true},
		{[]error{nil, nil, refused}, true},
		{[]error{nil, nil, nil}, false},
		{[]error{timeout}, false},
		{[]error{nil, errors.New("no route to host")}, false},
	} {
		i := 0
		got := refuses(context.Background(), func(context.Context) error {
			if i >= len(tc.dials) {
				t.Fatalf("%v: dialled %d times", tc.dials, i+1)
			}
			i++
			return tc.dials[i-1]
		}, 0)
		if got != tc.want || i != len(tc.dials) {
			t.Errorf("%v: refuses %v after %d dials, want %v after %d", tc.dials, got, i, tc.want, len(tc.dials))
		}
	}
	// A real closed port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dial := func(ctx context.Context) error {
		nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err
	}
	if !refuses(context.Background(), dial, 0) {
		t.Errorf("a closed port on loopback is not taken as refusing")
	}
}
