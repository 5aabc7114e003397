// Package links is weir cluster-links and weir mirrors (Confluent's tools'
// flags, over weir's cluster link admin API).
package links

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"weir/internal/cli/tool"
	"weir/internal/clientsec"
	"weir/internal/link"
	"weir/internal/nodeclient"
)

func NewClusterLinksCommand() *cobra.Command {
	var conn tool.ConnFlags
	var o struct {
		create, list, describe, del, validateOnly bool
		name, configFile                          string
	}
	cmd := &cobra.Command{
		Use:   "cluster-links --bootstrap-server DEST [--command-config FILE] (--create --link NAME --config-file FILE | --list | --describe [--link NAME] | --delete --link NAME)",
		Short: "Create, list, describe and delete cluster links, like Confluent's kafka-cluster-links",
		Long: `cluster-links manages the cluster links of the destination cluster named by
--bootstrap-server: a link is the source cluster mirror topics copy from
(see "weir mirrors"), with offsets, bytes and leader epochs kept.

  --create --link NAME --config-file FILE [--validate-only]
        the link's properties: bootstrap.servers (the source cluster),
        client.id, the client security settings of the source
        (security.protocol, ssl.* with PEM stores, sasl.* with PLAIN or
        SCRAM), link.fetcher.max.bytes,
        link.fetcher.throttle.bytes.per.sec, topic.config.sync.ms,
        consumer.offset.sync.enable, consumer.offset.sync.ms,
        consumer.group.filters, auto.create.mirror.topics.enable,
        auto.create.mirror.topics.filters, cluster.link.prefix,
        acl.sync.enable, acl.sync.ms, acl.filters, link.mode=DESTINATION
        and connection.mode=OUTBOUND. Confluent's other link properties
        are refused, by name when known: weir does not have them yet.
  --list                       the links, one a line
  --describe [--link NAME]     the links with their properties
  --delete --link NAME         refused while mirror topics follow the link

The tool speaks weir's own admin API (Kafka has none for links): it works
against weir only.

` + tool.CommandConfigHelp + `

The client properties are the tool's own, to reach the destination; the
link's are in --config-file.
`,
		Example: `  weir cluster-links --bootstrap-server dest:9092 --create --link dr --config-file link.properties
  weir cluster-links --bootstrap-server dest:9092 --describe --link dr`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fail := tool.FailTo(cmd.ErrOrStderr())
			n := 0
			for _, b := range []bool{o.create, o.list, o.describe, o.del} {
				if b {
					n++
				}
			}
			switch {
			case n != 1:
				return tool.UsageError(cmd, "Exactly one of --create, --list, --describe or --delete must be given.")
			case conn.BootstrapServer == "":
				return tool.UsageError(cmd, "Missing required argument \"[bootstrap-server]\"")
			case (o.create || o.del) && o.name == "":
				return tool.UsageError(cmd, "--link is required.")
			case o.create && o.configFile == "":
				return tool.UsageError(cmd, "--config-file is required with --create.")
			}
			lc, err := linkConnect(&conn, cmd, "weir-cluster-links", "describeClusterLinks")
			if err != nil {
				return fail(err.Error())
			}
			defer lc.conn.Close()
			ctx, cancel := lc.conn.Context(cmd)
			defer cancel()
			out := cmd.OutOrStdout()
			switch {
			case o.create:
				props, err := tool.LoadProperties(o.configFile)
				if err != nil {
					return fail(err.Error())
				}
				if _, err := lc.Admin(ctx, &link.AdminRequest{Op: "create-link", Link: o.name,
					Configs: props, ValidateOnly: o.validateOnly}); err != nil {
					return fail(err.Error())
				}
				if o.validateOnly {
					fmt.Fprintf(out, "Cluster link '%s' creation successfully validated.\n", o.name)
				} else {
					fmt.Fprintf(out, "Cluster link '%s' creation successfully completed.\n", o.name)
				}
			case o.del:
				if _, err := lc.Admin(ctx, &link.AdminRequest{Op: "delete-link", Link: o.name}); err != nil {
					return fail(err.Error())
				}
				fmt.Fprintf(out, "Cluster link '%s' deletion successfully completed.\n", o.name)
			default:
				resp, err := lc.Admin(ctx, &link.AdminRequest{Op: "list-links", Link: o.name})
				if err != nil {
					return fail(err.Error())
				}
				for _, l := range resp.Links {
					fmt.Fprintf(out, "Link name: '%s', link ID: '%s', source bootstrap servers: '%s'\n", l.Name, l.ID, l.Configs["bootstrap.servers"])
					if o.describe {
						for _, k := range slices.Sorted(maps.Keys(l.Configs)) {
							fmt.Fprintf(out, "\t%s=%s\n", k, l.Configs[k])
						}
					}
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&conn.BootstrapServer, "bootstrap-server", "", "REQUIRED: the destination cluster, host:port[,host:port]")
	fl.StringVar(&conn.CommandConfig, "command-config", "", "the client properties file to reach the destination (see --help)")
	fl.BoolVar(&o.create, "create", false, "create a link")
	fl.BoolVar(&o.list, "list", false, "list the links")
	fl.BoolVar(&o.describe, "describe", false, "describe the links (or --link)")
	fl.BoolVar(&o.del, "delete", false, "delete a link")
	fl.BoolVar(&o.validateOnly, "validate-only", false, "with --create: check the link without creating it")
	fl.StringVar(&o.name, "link", "", "the link's name")
	fl.StringVar(&o.configFile, "config-file", "", "with --create: the link's properties file")
	return cmd
}

// linkClient is how cluster-links and mirrors reach the destination
// cluster: weir's cluster link admin API over connections of their own,
// and a kgo client for offsets and metadata, both set up by the client
// properties of --command-config as the other tools are (TLS, SASL,
// client.id, timeouts; any other property is refused).
type linkClient struct {
	// conn is the Kafka client; it is not embedded, as its Admin field
	// would hide AdminClient's Admin method.
	conn *tool.Client
	*link.AdminClient
}

// linkConnect returns the destination's client, connected with c; clientID is the default
// client.id.
func linkConnect(c *tool.ConnFlags, cmd *cobra.Command, clientID, call string) (*linkClient, error) {
	props, err := c.Properties()
	if err != nil {
		return nil, err
	}
	t, err := c.ConnectWith(cmd, props, clientID, call)
	if err != nil {
		return nil, err
	}
	if id, ok := props["client.id"]; ok {
		clientID = id
	}
	secure, err := clientsec.Dialer(props, clientID)
	if err != nil {
		t.Close()
		return nil, err
	}
	dial := nodeclient.Dialer(secure)
	// socket.connection.setup.timeout.ms bounds a connection's setup,
	// the TLS handshake and the SASL login with it.
	if v, ok := props["socket.connection.setup.timeout.ms"]; ok {
		ms, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64) // checked by connectWith
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
			defer cancel()
			return secure(ctx, network, addr)
		}
	}
	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	return &linkClient{conn: t, AdminClient: &link.AdminClient{Bootstrap: c.BootstrapServer, ClientID: clientID, Dial: dial,
		RequestTimeout: t.RequestTimeout, Adm: t.Admin, Plaintext: proto == "" || proto == "PLAINTEXT",
		Hint: "give the client settings with --command-config"}}, nil
}
