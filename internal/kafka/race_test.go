//go:build race

package kafka_test

// raceEnabled: the race detector is on (it makes sync.Pool drop items
// at random, so allocation counts are not the code's own).
const raceEnabled = true
