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

func admitted(q *ConnQuotas, stop <-chan struct{}, listener, ip string) bool {
	ok, _ := q.admit(stop, listener, ip)
	return ok
}

func TestConnQuotasMaxConnections(t *testing.T) {
	limits := ConnLimits{Max: 2, PerIP: math.MaxInt32, CreationRate: math.MaxInt32}
	q := NewConnQuotas("INTERNAL", 11, time.Second, func() ConnLimits { return limits })
	stop := make(chan struct{})
	c1, c2 := testConn(t), testConn(t)
	for i, c := range []*conn{c1, c2} {
		if !admitted(q, stop, "CLIENTS", "10.0.0.1") {
			t.Fatalf("connection %d refused", i+1)
		}
		c.lastActive.Store(int64(i + 1))
		q.track(c, "CLIENTS")
	}
	// The third waits until one goes.
	result := make(chan bool, 1)
	go func() { result <- admitted(q, stop, "CLIENTS", "10.0.0.2") }()
	select {
	case <-result:
		t.Fatal("a third connection was admitted over max.connections=2")
	case <-time.After(50 * time.Millisecond):
	}
	q.release(c2, "10.0.0.1")
	if !<-result {
		t.Fatal("the waiting connection was refused once a slot freed")
	}
	// The inter-broker listener is exempt: admitted over the limit, and
	// the least recently active connection of another listener closed.
	if !admitted(q, stop, "INTERNAL", "10.0.0.3") {
		t.Fatal("inter-broker connection refused")
	}
	select {
	case <-c1.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the least recently active connection was not closed")
	}
	// A waiting accept gives up when the listener closes.
	go func() { result <- admitted(q, stop, "CLIENTS", "10.0.0.4") }()
	close(stop)
	if <-result {
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
			if got := admitted(q, stop, "CLIENTS", c.ip); got != want {
				t.Errorf("%s connection %d: admitted %v, want %v", c.ip, i+1, got, want)
			}
		}
	}
	// A connection gone frees its address's slot.
	q.release(testConn(t), "10.0.0.1")
	if !admitted(q, stop, "CLIENTS", "10.0.0.1") {
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
	if !admitted(q, stop, "INTERNAL", "10.0.0.1") {
		t.Fatal("inter-broker connection refused")
	}
}

func TestConnQuotasIPConnectionRate(t *testing.T) {
	limits := ConnLimits{Max: math.MaxInt32, PerIP: math.MaxInt32, CreationRate: math.MaxInt32,
		IPRate: func(ip string) (float64, bool) {
			if ip == "10.0.0.1" {
				return 1, true
			}
			return 0, false
		}}
	q := NewConnQuotas("INTERNAL", 11, time.Second, func() ConnLimits { return limits })
	now := time.Unix(1000, 0)
	q.now = func() time.Time { return now }
	stop := make(chan struct{})
	// 10 connections fit a rate of 1/s over the 10 s the first sample
	// counts for; the 11th is closed once the rate is back within it
	// (1 s), and not counted.
	for i := 0; i < 10; i++ {
		if ok, d := q.admit(stop, "CLIENTS", "10.0.0.1"); !ok || d != 0 {
			t.Fatalf("connection %d: %v %v", i+1, ok, d)
		}
	}
	if ok, d := q.admit(stop, "CLIENTS", "10.0.0.1"); ok || d != time.Second {
		t.Fatalf("11th connection: admitted %v, closed in %v, want closed in 1s", ok, d)
	}
	if ok, d := q.admit(stop, "CLIENTS", "10.0.0.1"); ok || d != time.Second {
		t.Fatalf("12th connection: admitted %v, closed in %v, want closed in 1s (the 11th not counted)", ok, d)
	}
	// Other addresses and the inter-broker listener are not limited.
	if !admitted(q, stop, "CLIENTS", "10.0.0.2") || !admitted(q, stop, "INTERNAL", "10.0.0.1") {
		t.Fatal("an unlimited connection was refused")
	}
	// Once the first sample is out of the 11 windows, it is admitted.
	now = now.Add(11 * time.Second)
	if !admitted(q, stop, "CLIENTS", "10.0.0.1") {
		t.Fatal("refused once the rate fell")
	}
}
