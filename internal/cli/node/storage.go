package node

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"weir/internal/controller"
	"weir/internal/metadata"
	"weir/internal/quorum"
	"weir/internal/server"
	"weir/internal/vfs"
)

func NewStorageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Format and inspect log directories, like kafka-storage.sh",
		Long: `storage prepares a node's log directories. Every directory in log.dirs and
metadata.log.dir gets a meta.properties naming the cluster and the node; a
node refuses to start on directories formatted for another cluster or node.`,
	}
	cmd.AddCommand(newStorageRandomUUIDCommand(), newStorageFormatCommand(), newStorageInfoCommand())
	return cmd
}

func newStorageRandomUUIDCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "random-uuid",
		Short: "Print a new random cluster id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), server.RandomUUID())
			return nil
		},
	}
}

func newStorageFormatCommand() *cobra.Command {
	var (
		clusterID, configFile string
		overrides, addScram   []string
		ignoreFormatted       bool
	)
	cmd := &cobra.Command{
		Use:   "format",
		Short: "Write meta.properties into the node's log directories",
		Long: `format writes meta.properties (cluster id, node id, a new directory id) into
every directory of log.dirs and metadata.log.dir. A directory that is already
formatted is an error unless --ignore-formatted is given. --add-scram adds a
SCRAM user to the new cluster's metadata (the first active controller writes
it), as Kafka's does: SCRAM-SHA-256=[name=alice,password=alice-secret], with
iterations= (4096 by default), or salt= and saltedpassword= (base64) instead
of the password.`,
		Example: `  weir storage format -t $(weir storage random-uuid) -c config/server.properties`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadServerConfig(configFile, overrides, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				return err
			}
			var users []metadata.Record
			for _, s := range addScram {
				r, err := parseAddScram(s)
				if err != nil {
					return err
				}
				users = append(users, r)
			}
			dirs := append(append([]string(nil), cfg.LogDirs...), cfg.MetadataLogDir)
			done, err := server.Format(dirs, clusterID, cfg.NodeID, ignoreFormatted)
			if err != nil {
				return server.NameDirSetting(cfg, err)
			}
			if len(users) > 0 {
				if !slices.Contains(done, filepath.Clean(cfg.MetadataLogDir)) {
					return fmt.Errorf("--add-scram: metadata.log.dir %s was formatted before; SCRAM users can be added only to a new cluster (use AlterUserScramCredentials)", cfg.MetadataLogDir)
				}
				if err := quorum.WriteBootstrap(vfs.OS, cfg.MetadataLogDir, users); err != nil {
					return err
				}
			}
			if len(done) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "All of the log directories are already formatted.")
			}
			for _, d := range done {
				fmt.Fprintf(cmd.OutOrStdout(), "Formatting %s with metadata.version %d.\n", d, controller.MetadataVersion)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&clusterID, "cluster-id", "t", "", "the cluster id (from \"weir storage random-uuid\")")
	cmd.Flags().StringVarP(&configFile, "config", "c", "", "the node's server.properties")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "set a configuration key (key=value); may be repeated")
	cmd.Flags().BoolVarP(&ignoreFormatted, "ignore-formatted", "g", false, "skip directories that are already formatted")
	cmd.Flags().StringArrayVarP(&addScram, "add-scram", "S", nil, "a SCRAM user of the new cluster: 'SCRAM-SHA-256=[name=alice,password=alice-secret]'; may be repeated")
	cmd.MarkFlagRequired("cluster-id")
	cmd.MarkFlagRequired("config")
	return cmd
}

func newStorageInfoCommand() *cobra.Command {
	var (
		configFile string
		overrides  []string
	)
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the meta.properties of the node's log directories",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadServerConfig(configFile, overrides, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			dirs := append(append([]string(nil), cfg.LogDirs...), cfg.MetadataLogDir)
			seen := map[string]bool{}
			for _, d := range dirs {
				if seen[d] {
					continue
				}
				seen[d] = true
				mp, ok, err := server.ReadMetaProperties(d)
				switch {
				case err != nil:
					fmt.Fprintf(out, "%s: error: %v\n", d, err)
				case !ok:
					fmt.Fprintf(out, "%s: not formatted\n", d)
				default:
					fmt.Fprintf(out, "%s: cluster.id=%s node.id=%d directory.id=%s\n", d, mp.ClusterID, mp.NodeID, mp.DirectoryID)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&configFile, "config", "c", "", "the node's server.properties")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "set a configuration key (key=value); may be repeated")
	return cmd
}
