//go:build race

package kafka_test

// raceEnabled: the race detector is on. Its instrumentation makes
// goroutine stacks larger (TestIdleConnections does not bound them) and
// its sync.Pool drops items at random (TestRequestAllocs' counts are not
// the code's own).
const raceEnabled = true
