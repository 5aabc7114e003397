package cli

// The connection every Kafka-style tool shares (topics, configs,
// consumer-groups, leader-election): --bootstrap-server, the client
// properties of --command-config, and how the tools end with Kafka's
// messages and exit codes.

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"weir/internal/config"
)

// exitCode ends a command with a process exit code once the command has
// printed its messages itself, each tool in its Kafka counterpart's form.
type exitCode int

func (e exitCode) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// toolClientOpts are added to every tool's client (tests).
var toolClientOpts []kgo.Opt

// connFlags are the connection flags of a Kafka-style tool.
type connFlags struct {
	bootstrapServer string
	commandConfig   string
}

func (c *connFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&c.bootstrapServer, "bootstrap-server", "", "REQUIRED: the Kafka server(s) to connect to, host:port[,host:port]")
	fs.StringVar(&c.commandConfig, "command-config", "", "a client properties file (PLAINTEXT settings only: see --help)")
}

// commandConfigHelp is the --help paragraph on --command-config.
const commandConfigHelp = `--command-config FILE reads client properties (Java .properties syntax), as
Kafka's tools pass them to their admin client. weir's tools honour
bootstrap.servers (--bootstrap-server wins), client.id, request.timeout.ms,
default.api.timeout.ms (how long the command may take, 60000 by default),
retry.backoff.ms, metadata.max.age.ms, connections.max.idle.ms,
socket.connection.setup.timeout.ms, and security.protocol=PLAINTEXT. Any
other property, and TLS or SASL in particular, is refused: they are not
supported yet.`

// toolClient is a connected tool: its client, admin client and the
// deadline of the whole command.
type toolClient struct {
	cl  *kgo.Client
	adm *kadm.Client
	// timeout bounds the command (default.api.timeout.ms); requestTimeout
	// is the timeout of requests that carry one (request.timeout.ms).
	timeout, requestTimeout time.Duration
}

func (t *toolClient) close() { t.cl.Close() }

// context bounds the command as default.api.timeout.ms does Kafka's.
func (t *toolClient) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, t.timeout)
}

// clientProperty turns one supported client property into client options.
type clientProperty func(v string, t *toolClient) ([]kgo.Opt, error)

func millisProperty(apply func(time.Duration, *toolClient) []kgo.Opt) clientProperty {
	return func(v string, t *toolClient) ([]kgo.Opt, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("not a non-negative number of milliseconds: %q", v)
		}
		return apply(time.Duration(n)*time.Millisecond, t), nil
	}
}

// clientProperties are the client properties the tools honour.
var clientProperties = map[string]clientProperty{
	"bootstrap.servers": func(string, *toolClient) ([]kgo.Opt, error) { return nil, nil }, // the flag wins, as in Kafka
	"client.id": func(v string, _ *toolClient) ([]kgo.Opt, error) {
		return []kgo.Opt{kgo.ClientID(v)}, nil
	},
	"security.protocol": func(v string, _ *toolClient) ([]kgo.Opt, error) {
		if !strings.EqualFold(strings.TrimSpace(v), "PLAINTEXT") {
			return nil, fmt.Errorf("%s is not supported yet: weir's tools connect with PLAINTEXT only", v)
		}
		return nil, nil
	},
	"request.timeout.ms": millisProperty(func(d time.Duration, t *toolClient) []kgo.Opt {
		t.requestTimeout = d
		return []kgo.Opt{kgo.RequestTimeoutOverhead(d)}
	}),
	"default.api.timeout.ms": millisProperty(func(d time.Duration, t *toolClient) []kgo.Opt {
		t.timeout = d
		return nil
	}),
	"retry.backoff.ms": millisProperty(func(d time.Duration, _ *toolClient) []kgo.Opt {
		return []kgo.Opt{kgo.RetryBackoffFn(func(int) time.Duration { return d })}
	}),
	"metadata.max.age.ms": millisProperty(func(d time.Duration, _ *toolClient) []kgo.Opt {
		return []kgo.Opt{kgo.MetadataMaxAge(d)}
	}),
	"connections.max.idle.ms": millisProperty(func(d time.Duration, _ *toolClient) []kgo.Opt {
		return []kgo.Opt{kgo.ConnIdleTimeout(d)}
	}),
	"socket.connection.setup.timeout.ms": millisProperty(func(d time.Duration, _ *toolClient) []kgo.Opt {
		return []kgo.Opt{kgo.DialTimeout(d)}
	}),
}

// loadProperties reads a Java properties file, as Kafka's Utils.loadProps.
func loadProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return config.ParseProperties(f)
}

// connect dials the cluster with the flags' settings. clientID is the
// default client.id.
func (c *connFlags) connect(clientID string) (*toolClient, error) {
	props := map[string]string{}
	if c.commandConfig != "" {
		var err error
		if props, err = loadProperties(c.commandConfig); err != nil {
			return nil, err
		}
	}
	var seeds []string
	for _, a := range strings.Split(c.bootstrapServer, ",") {
		if a = strings.TrimSpace(a); a != "" {
			seeds = append(seeds, a)
		}
	}
	t := &toolClient{timeout: 60 * time.Second, requestTimeout: 30 * time.Second}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID(clientID)}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		apply, ok := clientProperties[k]
		if !ok {
			if strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.") {
				return nil, fmt.Errorf("client property %s is not supported yet: weir's tools connect with PLAINTEXT only", k)
			}
			return nil, fmt.Errorf("client property %s is not supported yet by weir's tools", k)
		}
		o, err := apply(props[k], t)
		if err != nil {
			return nil, fmt.Errorf("client property %s: %w", k, err)
		}
		opts = append(opts, o...)
	}
	cl, err := kgo.NewClient(append(opts, toolClientOpts...)...)
	if err != nil {
		return nil, err
	}
	t.cl, t.adm = cl, kadm.NewClient(cl)
	t.adm.SetTimeoutMillis(int32(min(t.requestTimeout.Milliseconds(), math.MaxInt32)))
	return t, nil
}

// usageError prints msg and the command's usage on stderr and ends with
// exit code 1, as Kafka's CommandLineUtils.printUsageAndExit.
func usageError(cmd *cobra.Command, msg string) error {
	fmt.Fprintln(cmd.ErrOrStderr(), msg)
	fmt.Fprint(cmd.ErrOrStderr(), cmd.UsageString())
	return exitCode(1)
}

// stdinIsTerminal reports whether r is a terminal (a prompt can be
// answered); tests replace it.
var stdinIsTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
