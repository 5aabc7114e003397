// Package node is weir server and weir storage: running a node and
// formatting its directories.
package node

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"weir/internal/cli/tool"
	"weir/internal/config"
	"weir/internal/server"
)

func NewServerCommand() *cobra.Command {
	var (
		configFile string
		overrides  []string
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a weir node (broker, controller, or both)",
		Long: `server runs one weir node, configured like a Kafka server: a server.properties
file and --override key=value pairs, using Kafka's key names and defaults.

With no configuration at all it runs a single node that is both broker and
controller, listening on localhost:9092, storing data under ./data, and
formatting that directory on first start.

A node whose quorum has other voters must have its storage formatted first:

  weir storage format -t $(weir storage random-uuid) -c server.properties

SIGTERM or SIGINT shuts the node down cleanly: it stops serving, flushes and
closes every log and writes its checkpoints, so the next start recovers
nothing.`,
		Example: `  # zero-setup single node
  weir server

  # a node configured by file, with one key changed
  weir server --config config/server.properties --override log.retention.hours=24`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lg, err := tool.NewLogger(logLevel)
			if err != nil {
				return err
			}
			cfg, err := loadServerConfig(configFile, overrides, lg)
			if err != nil {
				return err
			}
			// Signals are caught before the node starts: a SIGTERM that
			// arrives while it starts shuts it down cleanly once started.
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
			srv := server.New(cfg, server.Options{Logger: lg, AutoFormat: server.SingleNode(cfg), Out: cmd.OutOrStdout()})
			if err := srv.Start(); err != nil {
				return err
			}
			s := <-sig
			lg.Info("shutting down", "signal", s.String())
			return srv.Shutdown()
		},
	}
	cmd.Flags().StringVarP(&configFile, "config", "c", "", "server.properties file to read")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "set a configuration key (key=value); may be repeated")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

// loadServerConfig reads the properties file (if any), applies overrides,
// and validates everything; unknown keys are logged as warnings.
func loadServerConfig(file string, overrides []string, lg *slog.Logger) (*config.Broker, error) {
	props := map[string]string{}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if props, err = config.ParseProperties(f); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--override %q: expected key=value", o)
		}
		props[strings.TrimSpace(k)] = v
	}
	cfg, warnings, err := server.LoadConfig(props)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		lg.Warn(w)
	}
	return cfg, nil
}
