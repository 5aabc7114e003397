//go:build race

package kafka_test

// raceEnabled: the race detector's instrumentation makes goroutine stacks
// larger, so TestIdleConnections does not bound them.
const raceEnabled = true
