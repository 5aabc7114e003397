package config

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/CONFIGURATION.md from the definitions")

const referencePath = "../../docs/CONFIGURATION.md"

// TestConfigurationReference keeps docs/CONFIGURATION.md generated from the
// definitions; run with -update after changing them.
func TestConfigurationReference(t *testing.T) {
	want := Reference()
	if *update {
		if err := os.WriteFile(referencePath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is out of date: run go test ./internal/config -run TestConfigurationReference -update", referencePath)
	}
}
