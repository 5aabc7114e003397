// Package cli holds weir's subcommands, one file per noun.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Execute runs the command line and returns the process exit code.
func Execute() int {
	root := newRootCommand()
	invocation = os.Args[1:]
	if err := root.Execute(); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "weir",
		Short: "weir is a Kafka-compatible streaming platform in one binary",
		Long: `weir speaks the Apache Kafka wire protocol, so stock Kafka clients and tools
work against it unchanged. One binary runs brokers and controllers and carries
the operator tools.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands is filled by each noun's file in its init function, so adding a
// command never touches this file.
var subcommands []func() *cobra.Command
