//go:build race

package log

// The race detector slows the randomized tests about tenfold; they run
// with fewer seeds (the full count runs without -race).
func init() {
	modelSeeds = 80
	crashSeeds = 60
}
