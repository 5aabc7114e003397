// Package cluster is weir cluster and weir features, like kafka-cluster.sh and
// kafka-features.sh.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
)

// unregisterBrokerKey is UnregisterBroker's API key (KIP-631).
const unregisterBrokerKey = 64

type clusterFlags struct {
	bootstrapServer, bootstrapController string
	config, commandConfig                string
	id                                   int32
	includeFenced                        bool
}

func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster (cluster-id | unregister --id N | list-endpoints | health) (--bootstrap-server | --bootstrap-controller) HOST:PORT",
		Short: "The cluster's id, its endpoints and broker unregistration, like kafka-cluster.sh",
		Long: `cluster has the subcommands of Apache Kafka's kafka-cluster.sh, with its flags,
output and exit codes, against weir or Kafka alike:

  cluster-id      prints "Cluster ID: <id>"
  unregister      removes a broker's registration (UnregisterBroker): the
                  controller takes it out of every ISR and leadership and
                  drops it from the cluster. Move its replicas off it first
                  (reassign-partitions) and stop it: a broker that is still
                  running registers again. An id that is not registered is
                  refused (BrokerIdNotRegisteredException, exit 1); a cluster
                  without the API prints "The target cluster does not
                  support the broker unregistration API." and exits 0, as
                  Kafka's tool.
  health          (weir's own) whether the cluster serves every partition:
                  see weir cluster health --help
  list-endpoints  prints a table of the endpoints DescribeCluster lists: the
                  controllers (ID HOST PORT RACK ENDPOINT_TYPE) with
                  --bootstrap-controller, the brokers (ID HOST PORT RACK
                  STATE ENDPOINT_TYPE) with --bootstrap-server, both tables
                  when both are given. --include-fenced-brokers lists fenced
                  brokers too (DescribeCluster v2); a cluster that does not
                  serve v2 gets the client's UnsupportedVersionException
                  message on stdout and exit 0, as Kafka's tool.

cluster-id and unregister take exactly one of --bootstrap-server (-b) and
--bootstrap-controller (-C). With --bootstrap-controller, the controllers are
asked directly, as Kafka's admin client does: DescribeCluster for the
controllers' endpoints (endpoint type 2) and UnregisterBroker.

--command-config (-c) is the client properties file; --config is its
deprecated name, as in Kafka. As in Kafka 4.x, its bootstrap.servers does
not stand in for the flags.

` + tool.CommandConfigHelp,
		Example: `  weir cluster cluster-id --bootstrap-server localhost:9092
  weir cluster unregister --bootstrap-server localhost:9092 --id 4
  weir cluster list-endpoints --bootstrap-server localhost:9092 --include-fenced-brokers
  weir cluster list-endpoints --bootstrap-controller localhost:9093`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return tool.UsageError(cmd, "kafka-cluster: error: too few arguments")
		},
	}
	for _, sub := range []struct{ name, short, example string }{
		{"cluster-id", "Get information about the ID of a cluster.",
			"  weir cluster cluster-id --bootstrap-server localhost:9092"},
		{"unregister", "Unregister a broker.",
			"  weir cluster unregister --bootstrap-server localhost:9092 --id 4\n  weir cluster unregister --bootstrap-controller localhost:9093 --id 4"},
		{"list-endpoints", "List endpoints",
			"  weir cluster list-endpoints --bootstrap-server localhost:9092 --include-fenced-brokers\n  weir cluster list-endpoints --bootstrap-controller localhost:9093 --bootstrap-server localhost:9092"},
	} {
		var f clusterFlags
		c := &cobra.Command{
			Use:     sub.name,
			Short:   sub.short,
			Example: sub.example,
			Args:    cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runCluster(cmd, &f, sub.name)
			},
		}
		fl := c.Flags()
		fl.StringVarP(&f.bootstrapServer, "bootstrap-server", "b", "", "a list of host/port pairs to use for establishing the connection to the Kafka cluster")
		fl.StringVarP(&f.bootstrapController, "bootstrap-controller", "C", "", "a list of host/port pairs to use for establishing the connection to the KRaft controllers")
		fl.StringVar(&f.config, "config", "", "(DEPRECATED) a client properties file; use --command-config instead")
		fl.StringVarP(&f.commandConfig, "command-config", "c", "", "a client properties file")
		switch sub.name {
		case "unregister":
			fl.Int32VarP(&f.id, "id", "i", 0, "the id of the broker to unregister (REQUIRED)")
		case "list-endpoints":
			fl.BoolVar(&f.includeFenced, "include-fenced-brokers", false, "whether to include fenced brokers when listing broker endpoints")
		}
		cmd.AddCommand(c)
	}
	cmd.AddCommand(newHealthCommand())
	return cmd
}

func runCluster(cmd *cobra.Command, f *clusterFlags, op string) error {
	fail := tool.FailTo(cmd.ErrOrStderr())
	has := cmd.Flags().Changed
	out := cmd.OutOrStdout()
	if op == "unregister" && !has("id") {
		return tool.UsageError(cmd, "kafka-cluster: error: argument --id/-i is required")
	}
	if has("config") && has("command-config") {
		return fail("--config and --command-config cannot be specified together.")
	}
	if has("config") {
		fmt.Fprintln(out, "Option --config has been deprecated and will be removed in a future version. Use --command-config instead.")
		f.commandConfig = f.config
	}
	if op == "list-endpoints" {
		if f.includeFenced && !has("bootstrap-server") {
			return fail("The option --include-fenced-brokers is only supported with --bootstrap-server option")
		}
		return listEndpoints(cmd, f)
	}
	switch {
	case has("bootstrap-server") && has("bootstrap-controller"):
		return fail("You cannot specify both --bootstrap-controller and --bootstrap-server.")
	case !has("bootstrap-server") && !has("bootstrap-controller"):
		return fail("You must specify either --bootstrap-controller or --bootstrap-server.")
	}
	controller := has("bootstrap-controller")
	conn := tool.ConnFlags{BootstrapServer: f.bootstrapServer, CommandConfig: f.commandConfig}
	if controller {
		conn.BootstrapServer = f.bootstrapController
	}
	tc, err := conn.Connect(cmd, "weir-cluster", tool.Either(op == "unregister", "unregisterBroker", "describeCluster"))
	if err != nil {
		return fail(err.Error())
	}
	defer tc.Close()
	ctx, cancel := tc.Context(cmd)
	defer cancel()
	if op == "cluster-id" {
		var id string
		if controller {
			resp, err := describeEndpoints(ctx, tc, true, false)
			if err != nil {
				return fail(tool.DescribeErr(err))
			}
			id = resp.ClusterID
		} else {
			md, err := tc.Admin.BrokerMetadata(ctx)
			if err != nil {
				return fail(tool.DescribeErr(tool.KafkaError(err, nil)))
			}
			id = md.Cluster
		}
		if id == "" {
			fmt.Fprintln(out, "No cluster ID found. The Kafka version is probably too old.")
		} else {
			fmt.Fprintln(out, "Cluster ID: "+id)
		}
		return nil
	}
	var ok bool
	if controller {
		ok, err = seedSupports(ctx, tc, unregisterBrokerKey)
	} else {
		ok, err = tc.Supports(ctx, unregisterBrokerKey)
	}
	if err != nil {
		return fail(tool.DescribeErr(tool.KafkaError(err, nil)))
	}
	if !ok {
		fmt.Fprintln(out, "The target cluster does not support the broker unregistration API.")
		return nil
	}
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = f.id
	var resp *kmsg.UnregisterBrokerResponse
	if controller {
		var r kmsg.Response
		if r, err = seedRequest(ctx, tc, req); err == nil {
			resp = r.(*kmsg.UnregisterBrokerResponse)
		}
	} else {
		resp, err = req.RequestWith(ctx, tc.Kgo)
	}
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
		return fail(tool.DescribeErr(tool.KafkaError(err, msg)))
	}
	fmt.Fprintf(out, "Broker %d is no longer registered.\n", f.id)
	return nil
}

// listEndpoints prints the controllers' endpoints (--bootstrap-controller)
// then the brokers' (--bootstrap-server), as Kafka's list-endpoints; with
// neither it prints nothing, as Kafka's tool.
func listEndpoints(cmd *cobra.Command, f *clusterFlags) error {
	fail := tool.FailTo(cmd.ErrOrStderr())
	out := cmd.OutOrStdout()
	for _, controller := range []bool{true, false} {
		addrs := f.bootstrapServer
		if controller {
			addrs = f.bootstrapController
		}
		if addrs == "" {
			continue
		}
		conn := tool.ConnFlags{BootstrapServer: addrs, CommandConfig: f.commandConfig}
		tc, err := conn.Connect(cmd, "weir-cluster", "describeCluster")
		if err != nil {
			return fail(err.Error())
		}
		ctx, cancel := tc.Context(cmd)
		resp, err := describeEndpoints(ctx, tc, controller, f.includeFenced)
		cancel()
		tc.Close()
		var uv *unsupportedVersionError
		if errors.As(err, &uv) {
			fmt.Fprintln(out, uv.msg)
			return nil
		}
		if err != nil {
			return fail(tool.DescribeErr(err))
		}
		printEndpoints(out, resp.Brokers, controller)
	}
	return nil
}

// unsupportedVersionError is the admin client's UnsupportedVersionException:
// a request field the cluster's version of the API cannot carry.
type unsupportedVersionError struct{ msg string }

func (e *unsupportedVersionError) Error() string { return e.msg }

// describeEndpoints sends DescribeCluster for the brokers' endpoints, or
// for the controllers' (endpoint type 2, to the seeds in turn, as Kafka's
// admin client asks the bootstrap controllers). includeFenced needs v2.
func describeEndpoints(ctx context.Context, tc *tool.Client, controller, includeFenced bool) (*kmsg.DescribeClusterResponse, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = includeFenced
	var r kmsg.Response
	var err error
	if controller {
		req.EndpointType = 2
		r, err = seedRequest(ctx, tc, req)
	} else {
		if includeFenced {
			vs, err := tc.Admin.ApiVersions(ctx)
			if err != nil {
				return nil, tool.KafkaError(err, nil)
			}
			maxV := int16(-1)
			vs.Each(func(v kadm.BrokerApiVersions) {
				if k, ok := v.KeyMaxVersion(req.Key()); v.Err == nil && ok && (maxV < 0 || k < maxV) {
					maxV = k
				}
			})
			if maxV >= 0 && maxV < 2 {
				return nil, &unsupportedVersionError{"Attempted to write a non-default includeFencedBrokers at version " + strconv.Itoa(int(maxV))}
			}
		}
		r, err = req.RequestWith(ctx, tc.Kgo)
	}
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	resp := r.(*kmsg.DescribeClusterResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, tool.KafkaError(err, resp.ErrorMessage)
	}
	return resp, nil
}

// seedRequest sends req to the seeds in turn and returns the first answer.
func seedRequest(ctx context.Context, tc *tool.Client, req kmsg.Request) (kmsg.Response, error) {
	var first error
	for _, b := range tc.Kgo.SeedBrokers() {
		resp, err := b.Request(ctx, req)
		if err == nil {
			return resp, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// seedSupports reports whether the seed that answers ApiVersions serves key
// (the controllers, asked directly).
func seedSupports(ctx context.Context, tc *tool.Client, key int16) (bool, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-cluster", "1"
	r, err := seedRequest(ctx, tc, req)
	if err != nil {
		return false, err
	}
	resp := r.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return false, err
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return true, nil
		}
	}
	return false, nil
}

// printEndpoints prints the table of Kafka's list-endpoints: columns padded
// to 10, HOST to the longest host, RACK to the longest rack (10 when none
// has one; a missing rack prints null), ENDPOINT_TYPE to 15.
func printEndpoints(w io.Writer, nodes []kmsg.DescribeClusterResponseBroker, controller bool) {
	if len(nodes) == 0 {
		return
	}
	hostLen, rackLen := 0, -1
	for _, n := range nodes {
		hostLen = max(hostLen, len(n.Host))
		if n.Rack != nil {
			rackLen = max(rackLen, len(*n.Rack))
		}
	}
	if rackLen < 0 {
		rackLen = 10
	}
	pad := func(s string, n int) string { return fmt.Sprintf("%-*s", n, s) }
	row := func(id, host, port, rack, state, typ string) {
		line := pad(id, 10) + " " + pad(host, hostLen) + " " + pad(port, 10) + " " + pad(rack, rackLen) + " "
		if !controller {
			line += pad(state, 10) + " "
		}
		fmt.Fprintln(w, line+pad(typ, 15))
	}
	row("ID", "HOST", "PORT", "RACK", "STATE", "ENDPOINT_TYPE")
	for _, n := range nodes {
		rack, state, typ := "null", "unfenced", "broker"
		if n.Rack != nil {
			rack = *n.Rack
		}
		if n.IsFenced {
			state = "fenced"
		}
		if controller {
			typ = "controller"
		}
		row(strconv.Itoa(int(n.NodeID)), n.Host, strconv.Itoa(int(n.Port)), rack, state, typ)
	}
}
