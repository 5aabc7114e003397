package perf

import (
	"sync/atomic"
	"time"
)

// CoarseClock is a clock read with one atomic load, ticked by a goroutine
// every Resolution. A producer reading the time twice per record (send and
// acknowledgement) spends a noticeable share of its CPU in time.Now at
// millions of records a second; that CPU then is not there for producing,
// and the measurement says more about the client than about the broker.
type CoarseClock struct {
	now  atomic.Int64 // unix nanoseconds
	stop chan struct{}
}

// Resolution is how often a CoarseClock ticks: well below the millisecond
// in which Kafka's perf tools print latency percentiles.
const Resolution = 200 * time.Microsecond

// NewCoarseClock starts a clock; Stop ends its goroutine.
func NewCoarseClock() *CoarseClock {
	c := &CoarseClock{stop: make(chan struct{})}
	c.now.Store(time.Now().UnixNano())
	go func() {
		t := time.NewTicker(Resolution)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case now := <-t.C:
				c.now.Store(now.UnixNano())
			}
		}
	}()
	return c
}

// Now returns the time as of the last tick.
func (c *CoarseClock) Now() time.Time { return time.Unix(0, c.now.Load()) }

// Stop ends the ticking goroutine.
func (c *CoarseClock) Stop() { close(c.stop) }
