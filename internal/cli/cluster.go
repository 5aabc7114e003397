package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { subcommands = append(subcommands, newClusterCommand) }

// unregisterBrokerKey is UnregisterBroker's API key (KIP-631).
const unregisterBrokerKey = 64

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster (cluster-id | unregister --id N) --bootstrap-server HOST:PORT",
		Short: "The cluster's id and broker unregistration, like kafka-cluster.sh",
		Long: `cluster has the subcommands of Apache Kafka's kafka-cluster.sh, with its flags,
output and exit codes, against weir or Kafka alike:

  cluster-id    prints "Cluster ID: <id>"
  unregister    removes a broker's registration (UnregisterBroker): the
                controller takes it out of every ISR and leadership and
                drops it from the cluster. Move its replicas off it first
                (reassign-partitions) and stop it: a broker that is still
                running registers again. An id that is not registered is
                refused (BrokerIdNotRegisteredException, exit 1); a cluster
                without the API prints "The target cluster does not support
                the broker unregistration API." and exits 0, as Kafka's tool.

--config (-c) is the client properties file.

` + commandConfigHelp,
		Example: `  weir cluster cluster-id --bootstrap-server localhost:9092
  weir cluster unregister --bootstrap-server localhost:9092 --id 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError(cmd, "kafka-cluster: error: too few arguments")
		},
	}
	for _, sub := range []struct {
		name, short string
		unregister  bool
	}{{"cluster-id", "Get information about the ID of a cluster.", false}, {"unregister", "Unregister a broker.", true}} {
		var conn connFlags
		var id int32
		c := &cobra.Command{
			Use:   sub.name,
			Short: sub.short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runCluster(cmd, &conn, sub.unregister, id)
			},
		}
		fl := c.Flags()
		fl.StringVarP(&conn.bootstrapServer, "bootstrap-server", "b", "", "the Kafka server(s) to connect to, host:port[,host:port]")
		fl.StringVarP(&conn.commandConfig, "config", "c", "", "a client properties file")
		if sub.unregister {
			fl.Int32VarP(&id, "id", "i", 0, "the id of the broker to unregister (REQUIRED)")
		}
		cmd.AddCommand(c)
	}
	return cmd
}

func runCluster(cmd *cobra.Command, conn *connFlags, unregister bool, id int32) error {
	fail := failTo(cmd.ErrOrStderr())
	if unregister && !cmd.Flags().Changed("id") {
		return usageError(cmd, "kafka-cluster: error: argument --id/-i is required")
	}
	if conn.bootstrapServer == "" {
		if conn.commandConfig == "" {
			return fail("Please specify --bootstrap-server.")
		}
		props, err := loadProperties(conn.commandConfig)
		if err != nil {
			return fail(err.Error())
		}
		if conn.bootstrapServer = props["bootstrap.servers"]; conn.bootstrapServer == "" {
			return fail("Please specify --bootstrap-server.")
		}
	}
	tc, err := conn.connect("weir-cluster")
	if err != nil {
		return fail(err.Error())
	}
	defer tc.close()
	ctx, cancel := tc.context(cmd)
	defer cancel()
	out := cmd.OutOrStdout()
	if !unregister {
		md, err := tc.adm.BrokerMetadata(ctx)
		if err != nil {
			return fail(describeErr(kafkaError(err, nil)))
		}
		if md.Cluster == "" {
			fmt.Fprintln(out, "No cluster ID found. The Kafka version is probably too old.")
		} else {
			fmt.Fprintln(out, "Cluster ID: "+md.Cluster)
		}
		return nil
	}
	ok, err := tc.supports(ctx, unregisterBrokerKey)
	if err != nil {
		return fail(describeErr(kafkaError(err, nil)))
	}
	if !ok {
		fmt.Fprintln(out, "The target cluster does not support the broker unregistration API.")
		return nil
	}
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, tc.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if errors.Is(err, kerr.UnsupportedVersion) {
		fmt.Fprintln(out, "The target cluster does not support the broker unregistration API.")
		return nil
	}
	if err != nil {
		var msg *string
		if resp != nil {
			msg = resp.ErrorMessage
		}
		return fail(describeErr(kafkaError(err, msg)))
	}
	fmt.Fprintf(out, "Broker %d is no longer registered.\n", id)
	return nil
}
