package nodeclient

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// silentPeer accepts connections and never answers, like a paused node.
func silentPeer(t *testing.T) string {
	t.Helper()
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
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().String()
}

// A call waiting behind a stuck one gives up when its context ends, and
// the stuck one ends at its own deadline.
func TestCallsWaitTheirTurnOnlyAsLongAsTheirContext(t *testing.T) {
	c := New(silentPeer(t), "test", nil)
	defer c.Close()
	stuck := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.RoundTrip(ctx, 18, 0, false, nil)
		stuck <- err
	}()
	for len(c.turn) == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.RoundTrip(ctx, 18, 0, false, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting call: %v, want its deadline", err)
	}
	var ne net.Error
	if err := <-stuck; !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("stuck call: %v, want a timeout", err)
	}
}

// Close fails the call in flight at once, and every later call.
func TestCloseAbortsTheCallInFlight(t *testing.T) {
	c := New(silentPeer(t), "test", nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.RoundTrip(context.Background(), 18, 0, false, nil)
		done <- err
	}()
	for {
		c.mu.Lock()
		connected := c.nc != nil
		c.mu.Unlock()
		if connected {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the aborted call succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not abort the call in flight")
	}
	if _, err := c.RoundTrip(context.Background(), 18, 0, false, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v, want ErrClosed", err)
	}
}
