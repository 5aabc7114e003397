// Package tool holds what weir's Kafka-style tools share: the connection
// (--bootstrap-server, the client properties of --command-config), the
// warning for a broker the client cannot reach, how the tools end with
// Kafka's messages and exit codes, and the small helpers several tools
// print with (Java's HashMap order, Jackson's JSON, Java's split).
package tool

// The connection every Kafka-style tool shares (topics, configs,
// consumer-groups, leader-election): --bootstrap-server, the client
// properties of --command-config, and how the tools end with Kafka's
// messages and exit codes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"weir/internal/clientsec"
	"weir/internal/config"
)

// ExitCode ends a command with a process exit code once the command has
// printed its messages itself, each tool in its Kafka counterpart's form.
type ExitCode int

func (e ExitCode) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// ClientOpts are added to every tool's client (tests).
var ClientOpts []kgo.Opt

// ConnFlags are the connection flags of a Kafka-style tool.
type ConnFlags struct {
	BootstrapServer string
	CommandConfig   string
}

func (c *ConnFlags) Add(fs *pflag.FlagSet) {
	fs.StringVar(&c.BootstrapServer, "bootstrap-server", "", "REQUIRED: the Kafka server(s) to connect to, host:port[,host:port]")
	fs.StringVar(&c.CommandConfig, "command-config", "", "a client properties file (see --help for the properties honoured)")
}

// CommandConfigHelp is the --help paragraph on --command-config.
const CommandConfigHelp = `--command-config FILE reads client properties (Java .properties syntax), as
Kafka's tools pass them to their admin client. weir's tools honour
bootstrap.servers (--bootstrap-server wins), client.id, request.timeout.ms,
default.api.timeout.ms (how long the command may take, 60000 by default),
retry.backoff.ms, metadata.max.age.ms, connections.max.idle.ms,
socket.connection.setup.timeout.ms, and security.protocol (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL) with, for TLS, ssl.truststore.location or
ssl.truststore.certificates and, for a client certificate,
ssl.keystore.location or ssl.keystore.key and ssl.keystore.certificate.chain
(PEM, or PKCS12 files: ssl.*.type=PKCS12 with ssl.*.password),
ssl.endpoint.identification.algorithm and
ssl.enabled.protocols; for SASL, sasl.mechanism (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512) and sasl.jaas.config with username and password. Any other
property is refused.`

// Client is a connected tool: its client, admin client and the
// deadline of the whole command.
type Client struct {
	Kgo   *kgo.Client
	Admin *kadm.Client
	// Timeout bounds the command (default.api.timeout.ms); requestTimeout
	// is the timeout of requests that carry one (request.timeout.ms).
	Timeout, RequestTimeout time.Duration
	// versions are the API keys the brokers serve, once asked.
	versions map[int16]bool
}

func (t *Client) Close() { t.Kgo.Close() }

// Context bounds the command as default.api.timeout.ms does Kafka's.
func (t *Client) Context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, t.Timeout)
}

// ClientProperty turns one supported client property into client options.
type ClientProperty func(v string, t *Client) ([]kgo.Opt, error)

func MillisProperty(apply func(time.Duration, *Client) []kgo.Opt) ClientProperty {
	return func(v string, t *Client) ([]kgo.Opt, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("not a non-negative number of milliseconds: %q", v)
		}
		return apply(time.Duration(n)*time.Millisecond, t), nil
	}
}

// clientProperties are the client properties the tools honour.
var clientProperties = map[string]ClientProperty{
	"bootstrap.servers": func(string, *Client) ([]kgo.Opt, error) { return nil, nil }, // the flag wins, as in Kafka
	"client.id": func(v string, _ *Client) ([]kgo.Opt, error) {
		return []kgo.Opt{kgo.ClientID(v)}, nil
	},
	"request.timeout.ms": MillisProperty(func(d time.Duration, t *Client) []kgo.Opt {
		t.RequestTimeout = d
		return []kgo.Opt{kgo.RequestTimeoutOverhead(d)}
	}),
	"default.api.timeout.ms": MillisProperty(func(d time.Duration, t *Client) []kgo.Opt {
		t.Timeout = d
		return nil
	}),
	"retry.backoff.ms": MillisProperty(func(d time.Duration, _ *Client) []kgo.Opt {
		return []kgo.Opt{kgo.RetryBackoffFn(func(int) time.Duration { return d })}
	}),
	"metadata.max.age.ms": MillisProperty(func(d time.Duration, _ *Client) []kgo.Opt {
		return []kgo.Opt{kgo.MetadataMaxAge(d)}
	}),
	"connections.max.idle.ms": MillisProperty(func(d time.Duration, _ *Client) []kgo.Opt {
		return []kgo.Opt{kgo.ConnIdleTimeout(d)}
	}),
	"socket.connection.setup.timeout.ms": MillisProperty(func(d time.Duration, _ *Client) []kgo.Opt {
		return []kgo.Opt{kgo.DialTimeout(d)}
	}),
}

// LoadProperties reads a Java properties file, as Kafka's Utils.loadProps.
func LoadProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return config.ParseProperties(f)
}

// SeedList splits --bootstrap-server's list.
func SeedList(s string) []string {
	var seeds []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			seeds = append(seeds, a)
		}
	}
	return seeds
}

// PropertyOpts turns client properties into client options, in key
// order: own's properties first, then those every tool honours; any other
// is refused.
func PropertyOpts(props map[string]string, own map[string]ClientProperty, t *Client) ([]kgo.Opt, error) {
	opts, err := clientsec.Opts(props)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if clientsec.Properties[k] {
			continue
		}
		apply, ok := own[k]
		if !ok {
			apply, ok = clientProperties[k]
		}
		if !ok {
			if strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.") {
				return nil, fmt.Errorf("client property %s is not supported yet: weir's tools do TLS with PEM or PKCS12 stores and SASL with PLAIN or SCRAM, configured as --help says", k)
			}
			return nil, fmt.Errorf("client property %s is not supported yet by weir's tools", k)
		}
		o, err := apply(props[k], t)
		if err != nil {
			return nil, fmt.Errorf("client property %s: %w", k, err)
		}
		opts = append(opts, o...)
	}
	return opts, nil
}

// Connect dials the cluster with the flags' settings and waits until a
// broker answers (await: call is the Kafka admin call a timeout names),
// warning on cmd's standard error of the brokers it cannot reach. clientID
// is the default client.id; extra options come last (tests).
func (c *ConnFlags) Connect(cmd *cobra.Command, clientID, call string, extra ...kgo.Opt) (*Client, error) {
	props, err := c.Properties()
	if err != nil {
		return nil, err
	}
	return c.ConnectWith(cmd, props, clientID, call, extra...)
}

// Either is yes when cond holds, else no: a tool's first Kafka admin call
// by its action, for connect.
func Either(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// Properties are the client properties of --command-config (none without).
func (c *ConnFlags) Properties() (map[string]string, error) {
	if c.CommandConfig == "" {
		return map[string]string{}, nil
	}
	return LoadProperties(c.CommandConfig)
}

// ConnectWith is connect with the client properties props.
func (c *ConnFlags) ConnectWith(cmd *cobra.Command, props map[string]string, clientID, call string, extra ...kgo.Opt) (*Client, error) {
	seeds := SeedList(c.BootstrapServer)
	t := &Client{Timeout: 60 * time.Second, RequestTimeout: 30 * time.Second}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID(clientID)}
	propOpts, err := PropertyOpts(props, nil, t)
	if err != nil {
		return nil, err
	}
	opts = append(append(append(opts, propOpts...), ClientOpts...), extra...)
	id := clientID
	if v, ok := props["client.id"]; ok {
		id = v
	}
	opts = append(opts, kgo.WithHooks(NewUnreachableHook(cmd.ErrOrStderr(), "[AdminClient clientId="+id+"] ")))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	t.Kgo, t.Admin = cl, kadm.NewClient(cl)
	t.Admin.SetTimeoutMillis(int32(min(t.RequestTimeout.Milliseconds(), math.MaxInt32)))
	if err := t.await(call); err != nil {
		cl.Close()
		return nil, err
	}
	return t, nil
}

// FailTo returns the tools' way to fail with a message: the message on w
// (standard error), and exit code 1.
func FailTo(w io.Writer) func(msg string) error {
	return func(msg string) error {
		fmt.Fprintln(w, msg)
		return ExitCode(1)
	}
}

// UsageError prints msg and the command's usage on stderr and ends with
// exit code 1, as Kafka's CommandLineUtils.printUsageAndExit.
func UsageError(cmd *cobra.Command, msg string) error {
	fmt.Fprintln(cmd.ErrOrStderr(), msg)
	fmt.Fprint(cmd.ErrOrStderr(), cmd.UsageString())
	return ExitCode(1)
}

// StdinIsTerminal reports whether r is a terminal (a prompt can be
// answered); tests replace it.
var StdinIsTerminal = func(r io.Reader) bool { return IsTerminal(r) }

// IsTerminal reports whether the file f (stdin, stdout) is a terminal.
func IsTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS)
	return err == nil
}

// JavaError is a failed request's error as Kafka's admin client raises it:
// the exception class (simple name) and its message, the broker's when it
// sent one, else the error's description.
type JavaError struct{ Class, Msg string }

func (e *JavaError) Error() string { return e.Msg }

// String is the exception as the first line of a Java stack trace.
func (e *JavaError) String() string {
	return "org.apache.kafka.common.errors." + e.Class + ": " + e.Msg
}

// javaClasses are the exception classes whose names do not follow from
// the error name.
var javaClasses = map[string]string{
	"INVALID_CONFIG":                 "InvalidConfigurationException",
	"INVALID_TOPIC_EXCEPTION":        "InvalidTopicException",
	"TOPIC_AUTHORIZATION_FAILED":     "TopicAuthorizationException",
	"GROUP_AUTHORIZATION_FAILED":     "GroupAuthorizationException",
	"CLUSTER_AUTHORIZATION_FAILED":   "ClusterAuthorizationException",
	"NOT_CONTROLLER":                 "NotControllerException",
	"REQUEST_TIMED_OUT":              "TimeoutException",
	"NON_EMPTY_GROUP":                "GroupNotEmptyException",
	"GROUP_ID_NOT_FOUND":             "GroupIdNotFoundException",
	"UNKNOWN_SERVER_ERROR":           "UnknownServerException",
	"ELECTION_NOT_NEEDED":            "ElectionNotNeededException",
	"PREFERRED_LEADER_NOT_AVAILABLE": "PreferredLeaderNotAvailableException",
	"ELIGIBLE_LEADERS_NOT_AVAILABLE": "EligibleLeadersNotAvailableException",
	"KAFKA_STORAGE_ERROR":            "KafkaStorageException",
}

// KafkaError turns an error of a response into the exception Kafka's
// admin client raises for it; msg is the response's error message, if any.
func KafkaError(err error, msg *string) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	class, ok := javaClasses[ke.Message]
	if !ok {
		for _, w := range strings.Split(strings.ToLower(ke.Message), "_") {
			if w != "" {
				class += strings.ToUpper(w[:1]) + w[1:]
			}
		}
		if !strings.HasSuffix(class, "Exception") {
			class += "Exception"
		}
	}
	je := &JavaError{Class: class, Msg: ke.Description}
	if msg != nil && *msg != "" {
		je.Msg = *msg
	}
	return je
}

// Unsupported is the error of Kafka's admin client when no broker serves
// an API.
func Unsupported(api string) error {
	return &JavaError{Class: "UnsupportedVersionException", Msg: "The node does not support " + api}
}

// Supports reports whether the brokers serve the API key.
func (t *Client) Supports(ctx context.Context, key int16) (bool, error) {
	if t.versions == nil {
		vs, err := t.Admin.ApiVersions(ctx)
		if err != nil {
			return false, err
		}
		t.versions = map[int16]bool{}
		vs.Each(func(v kadm.BrokerApiVersions) {
			if v.Err == nil {
				v.EachKeySorted(func(k, _, _ int16) { t.versions[k] = true })
			}
		})
	}
	return t.versions[key], nil
}

// Invocation is the command line after the program's name (Execute sets
// it, and tests), for the messages that quote it, as Kafka's tools do.
var Invocation []string

// toolArgs are the arguments after the tool's name.
func Args(cmd *cobra.Command) []string {
	for i, a := range Invocation {
		if a == cmd.Name() {
			return Invocation[i+1:]
		}
	}
	return Invocation
}
