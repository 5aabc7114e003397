package kafka

import (
	"context"
	"math"
	"net"
	"testing"
	"time"
)

func testConn(t *testing.T) *conn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{nc: a, ctx: ctx, cancel: cancel}
}

func TestConnQuotasMaxConnections(t *testing.T) {
	limits := ConnLimits{Max: 2, PerIP: math.MaxInt32, CreationRate: math.MaxInt32}
	q := NewConnQuotas("INTERNAL", 11, time.Second, func() ConnLimits { return limits })
	stop := make(chan struct{})
	c1, c2 := testConn(t), testConn(t)
	for i, c := range []*conn{c1, c2} {
		if !q.admit(stop, "CLIENTS", "10.0.0.1") {
			t.Fatalf("connection %d refused", i+1)
		}
		c.lastActive.Store(int64(i + 1))
		q.track(c, "CLIENTS")
	}
	// The third waits until one goes.
	admitted := make(chan bool, 1)
	go func() { admitted <- q.admit(stop, "CLIENTS", "10.0.0.2") }()
	select {
	case <-admitted:
		t.Fatal("a third connection was admitted over max.connections=2")
	case <-time.After(50 * time.Millisecond):
	}
	q.release(c2, "10.0.0.1")
	if !<-admitted {
		t.Fatal("the waiting connection was refused once a slot freed")
	}
	// The inter-broker listener is exempt: admitted over the limit, and
	// the least recently active connection of another listener closed.
	if !q.admit(stop, "INTERNAL", "10.0.0.3") {
		t.Fatal("inter-broker connection refused")
	}
	select {
	case <-c1.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the least recently active connection was not closed")
	}
	// A waiting accept gives up when the listener closes.
	go func() { admitted <- q.admit(stop, "CLIENTS", "10.0.0.4") }()
	close(stop)
	if <-admitted {
		t.Fatal("admitted after stop")
	}
}

func TestConnQuotasPerIP(t *testing.T) {
	limits := ConnLimits{Max: math.MaxInt32, PerIP: 2, PerIPOverrides: map[string]int{"10.0.0.9": 0, "10.0.0.8": 3}, CreationRate: math.MaxInt32}
	q := NewConnQuotas("INTERNAL", 11, time.Second, func() ConnLimits { return limits })
	stop := make(chan struct{})
	for _, c := range []struct {
		ip   string
		want []bool
	}{
		{"10.0.0.1", []bool{true, true, false, false}},
		{"10.0.0.8", []bool{true, true, true, false}},
		{"10.0.0.9", []bool{false}},
	} {
		for i, want := range c.want {
			if got := q.admit(stop, "CLIENTS", c.ip); got != want {
				t.Errorf("%s connection %d: admitted %v, want %v", c.ip, i+1, got, want)
			}
		}
	}
	// A connection gone frees its address's slot.
	q.release(testConn(t), "10.0.0.1")
	if !q.admit(stop, "CLIENTS", "10.0.0.1") {
		t.Error("10.0.0.1 refused after one of its connections closed")
	}
}

func TestConnQuotasCreationRate(t *testing.T) {
	limits := ConnLimits{Max: math.MaxInt32, PerIP: math.MaxInt32, CreationRate: 10}
	q := NewConnQuotas("INTERNAL", 11, time.Second, func() ConnLimits { return limits })
	now := time.Unix(1000, 0)
	q.now = func() time.Time { return now }
	// 100 connections at once are 10/s over the 10 s span the first
	// sample counts for; the 101st is one over: a tenth of the span.
	for i := 0; i < 100; i++ {
		if d := q.creationThrottle(); d != 0 {
			t.Fatalf("connection %d throttled %v", i+1, d)
		}
	}
	if d := q.creationThrottle(); d != 100*time.Millisecond {
		t.Fatalf("101st connection throttled %v, want 100ms", d)
	}
	// The inter-broker listener is not throttled (admit skips it).
	stop := make(chan struct{})
	if !q.admit(stop, "INTERNAL", "10.0.0.1") {
		t.Fatal("inter-broker connection refused")
	}
}
