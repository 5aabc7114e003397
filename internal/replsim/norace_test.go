//go:build !race

package replsim

const raceEnabled = false
