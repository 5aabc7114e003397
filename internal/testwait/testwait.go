// Package testwait is the one place weir's tests wait by the clock. Tests
// drive deterministic code without waiting; where a test must watch a real
// cluster, a process or another goroutine converge, it polls a condition
// here, always with a deadline, so a broken test fails with the condition's
// last error instead of hanging until go test's own timeout.
package testwait

import (
	"errors"
	"testing"
	"time"
)

// First and last poll intervals: polls start fast, for conditions that
// settle in milliseconds, and back off to the slower one.
const (
	minInterval = time.Millisecond
	maxInterval = 100 * time.Millisecond
)

// Poll calls cond until it returns nil or timeout has passed, and returns
// cond's last error (nil on success). It is safe in any goroutine.
func Poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	interval := minInterval
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return err
		}
		timer.Reset(min(interval, time.Until(deadline)))
		<-timer.C
		interval = min(2*interval, maxInterval)
	}
}

// For waits until cond returns nil and fails t, naming what it waited for
// and cond's last error, when timeout passes first. Call it only from the
// test's goroutine (it calls t.Fatalf); other goroutines use Poll.
func For(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatalf("waited %v for %s: %v", timeout, what, err)
	}
}

// Until is For for a condition without an error to report.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	For(t, timeout, what, Bool(cond))
}

// errNotYet is the error Bool reports while its condition is false.
var errNotYet = errors.New("condition not met")

// Bool turns a boolean condition into one for Poll and For.
func Bool(cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}
}
