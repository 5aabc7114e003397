// Command weir is a Kafka-compatible streaming platform in one binary.
// main stays a few lines: everything lives in internal/cli.
package main

import (
	"os"

	"weir/internal/cli"
)

func main() {
	os.Exit(cli.Execute())
}
