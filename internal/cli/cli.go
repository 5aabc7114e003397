// Package cli is weir's command line: Execute, and the list of its
// commands, each made by the package of its noun.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"weir/internal/cli/acls"
	"weir/internal/cli/cluster"
	"weir/internal/cli/configs"
	"weir/internal/cli/consoletool"
	"weir/internal/cli/doctor"
	"weir/internal/cli/dumplog"
	"weir/internal/cli/election"
	"weir/internal/cli/groups"
	"weir/internal/cli/help"
	"weir/internal/cli/links"
	"weir/internal/cli/logdirs"
	"weir/internal/cli/mirror"
	"weir/internal/cli/node"
	"weir/internal/cli/perftool"
	"weir/internal/cli/quorum"
	"weir/internal/cli/reassign"
	"weir/internal/cli/tool"
	"weir/internal/cli/topics"
	"weir/internal/cli/txns"
)

// Execute runs the command line and returns the process exit code.
func Execute() int {
	root := help.Root(commands...)
	tool.Invocation = os.Args[1:]
	if err := root.Execute(); err != nil {
		var code tool.ExitCode
		if errors.As(err, &code) {
			return int(code)
		}
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// commands make weir's subcommands, in the order of their names.
var commands = []func() *cobra.Command{
	acls.NewCommand,
	cluster.NewCommand,
	links.NewClusterLinksCommand,
	configs.NewCommand,
	consoletool.NewConsumerCommand,
	consoletool.NewProducerCommand,
	groups.NewCommand,
	doctor.NewCommand,
	dumplog.NewCommand,
	cluster.NewFeaturesCommand,
	election.NewCommand,
	logdirs.NewCommand,
	quorum.NewCommand,
	mirror.NewCommand,
	links.NewMirrorsCommand,
	perftool.NewCommand,
	reassign.NewCommand,
	node.NewServerCommand,
	node.NewStorageCommand,
	topics.NewCommand,
	txns.NewCommand,
}
