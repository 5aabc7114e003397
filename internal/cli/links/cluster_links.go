// Package links is weir cluster-links and weir mirrors (Confluent's tools'
// flags, over weir's cluster link admin API).
package links

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

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
			defer lc.Close()
			ctx, cancel := lc.Context(cmd)
			defer cancel()
			out := cmd.OutOrStdout()
			switch {
			case o.create:
				props, err := tool.LoadProperties(o.configFile)
				if err != nil {
					return fail(err.Error())
				}
				if _, err := lc.admin(ctx, &link.AdminRequest{Op: "create-link", Link: o.name,
					Configs: props, ValidateOnly: o.validateOnly}); err != nil {
					return fail(err.Error())
				}
				if o.validateOnly {
					fmt.Fprintf(out, "Cluster link '%s' creation successfully validated.\n", o.name)
				} else {
					fmt.Fprintf(out, "Cluster link '%s' creation successfully completed.\n", o.name)
				}
			case o.del:
				if _, err := lc.admin(ctx, &link.AdminRequest{Op: "delete-link", Link: o.name}); err != nil {
					return fail(err.Error())
				}
				fmt.Fprintf(out, "Cluster link '%s' deletion successfully completed.\n", o.name)
			default:
				resp, err := lc.admin(ctx, &link.AdminRequest{Op: "list-links", Link: o.name})
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
	*tool.Client
	bootstrap string
	clientID  string
	dial      nodeclient.Dialer
	// plaintext: no TLS and no SASL asked.
	plaintext bool
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
	return &linkClient{Client: t, bootstrap: c.BootstrapServer, clientID: clientID, dial: dial,
		plaintext: proto == "" || proto == "PLAINTEXT"}, nil
}

// admin sends one call of the cluster link admin API to the first
// bootstrap server that answers, and returns the answer, or its error
// (with its Kafka error code's name) when it failed as a whole. A
// retriable error (NOT_CONTROLLER while the controller moves, ...) is
// retried until the command's time runs out, as Kafka's admin client
// retries.
func (l *linkClient) admin(ctx context.Context, req *link.AdminRequest) (*link.AdminResponse, error) {
	for {
		resp, err := l.adminAt(ctx, l.bootstrap, req)
		if resp == nil || resp.ErrorCode == 0 || !kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode)) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(adminRetryBackoff):
		}
	}
}

// adminRetryBackoff is the wait before a retriable admin call is sent
// again (retry.backoff.ms's default).
const adminRetryBackoff = 100 * time.Millisecond

// adminAt is admin with the servers of bootstrap, each called within
// request.timeout.ms.
func (l *linkClient) adminAt(ctx context.Context, bootstrap string, req *link.AdminRequest) (*link.AdminResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var last error
	for _, addr := range tool.SeedList(bootstrap) {
		c := nodeclient.New(addr, l.clientID, l.dial)
		rctx, cancel := context.WithTimeout(ctx, l.RequestTimeout)
		raw, err := c.RoundTrip(rctx, link.AdminAPIKey, 0, false, body)
		cancel()
		c.Close()
		if err != nil {
			last = err
			continue
		}
		var resp link.AdminResponse
		if err := json.Unmarshal(raw, &resp); err != nil {
			return nil, fmt.Errorf("%s answered something other than weir's cluster link admin API (is it weir?): %v", addr, err)
		}
		if resp.ErrorCode != 0 {
			return &resp, adminError(resp.ErrorCode, resp.ErrorMessage)
		}
		return &resp, nil
	}
	switch {
	case last == nil:
		return nil, errors.New("no bootstrap server given")
	case l.plaintext:
		return nil, fmt.Errorf("cannot reach %s: %v (if its listener needs TLS or SASL, give the client settings with --command-config)", bootstrap, last)
	}
	return nil, fmt.Errorf("cannot reach %s: %v", bootstrap, last)
}

func adminError(code int16, msg string) error {
	name := "UNKNOWN"
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			name = ke.Message
		}
	}
	return fmt.Errorf("Error: %s: %s", name, msg)
}
