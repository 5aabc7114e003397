//go:build race

package replsim

const raceEnabled = true
