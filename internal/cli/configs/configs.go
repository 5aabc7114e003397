// Package configs is weir configs, like kafka-configs.sh.
package configs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/controller"
)

// Entity types, as kafka-configs.sh names them, in its order.
const (
	entityBrokerLoggers = "broker-loggers"
	entityTopics        = "topics"
	entityClients       = "clients"
	entityUsers         = "users"
	entityBrokers       = "brokers"
	entityIPs           = "ips"
	entityClientMetrics = "client-metrics"
	entityGroups        = "groups"
)

var entityTypes = []string{entityBrokerLoggers, entityTopics, entityClients, entityUsers, entityBrokers, entityIPs, entityClientMetrics, entityGroups}

// orderedNames collects --entity-name and --entity-default in command-line
// order ("" for a default), as kafka-configs.sh pairs them with the
// entity types.
type orderedNames struct {
	names      *[]string
	isDefault  bool
	anyDefault *bool
}

func (o orderedNames) String() string { return "" }
func (o orderedNames) Type() string {
	if o.isDefault {
		return "bool"
	}
	return "string"
}
func (o orderedNames) Set(v string) error {
	if o.isDefault {
		*o.names = append(*o.names, "")
		*o.anyDefault = true
		return nil
	}
	*o.names = append(*o.names, v)
	return nil
}

type configsFlags struct {
	conn                                                          tool.ConnFlags
	bootstrapController                                           string
	alter, describe, all                                          bool
	entityTypes, names, deleteConfig                              []string
	entityDefault                                                 bool
	addConfig, addConfigFile                                      string
	topic, client, user, broker, brokerLogger, ip, group, metrics string
	clientDefaults, userDefaults, brokerDefaults, ipDefaults      bool
}

func NewCommand() *cobra.Command {
	f := &configsFlags{}
	cmd := &cobra.Command{
		Use:   "configs (--describe | --alter) --bootstrap-server HOST:PORT --entity-type TYPE (--entity-name NAME | --entity-default) [flags]",
		Short: "Describe and change the configs of topics, brokers, users, clients and groups, like kafka-configs.sh",
		Long: `configs describes and changes dynamic configuration: topic configs, broker
configs (per broker, or the cluster-wide defaults), client quotas of users,
client ids and IPs, SCRAM credentials, group configs, client-metrics
subscriptions and broker log levels. It takes the flags of Apache Kafka's
kafka-configs.sh and prints what it prints, with its exit codes, against weir
or Kafka alike.

Entity types: topics, brokers, broker-loggers, users, clients, ips,
client-metrics, groups. Name the entity with --entity-type T --entity-name N,
or --entity-default for the defaults of brokers, users, clients and ips; or
with the shortcuts --topic, --broker, --broker-defaults, --broker-logger,
--user, --user-defaults, --client, --client-defaults, --ip, --ip-defaults,
--group, --client-metrics. users and clients may be given together for the
quotas of a user's client.

--describe prints, per entity,
  Dynamic configs for topic orders are:
    retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000, DEFAULT_CONFIG:log.retention.hours=168}
only the configs set at that level, or with --all every config with its
source. Without a name it describes every entity of the type. Quotas print
"Quota configs for user-principal 'alice' are producer_byte_rate=1024.0".

--alter applies --add-config k=v,k2=[v1,v2] (brackets group a value with
commas), --add-config-file FILE (a properties file) and --delete-config k,k2
in one IncrementalAlterConfigs request (quotas: AlterClientQuotas; SCRAM
credentials: SCRAM-SHA-256=[iterations=8192,password=secret]).

weir serves topic and broker configs, broker loggers (each node's log
levels, root and one per component, changed at run time and not stored),
client quotas of users, client ids and ips, and SCRAM credentials. It has no
group configs or client-metrics yet: for those the broker's error is
printed and the exit code is 1, as with a Kafka broker that lacks them.

` + tool.CommandConfigHelp,
		Example: `  # the configs set on a topic, then every config of it with its source
  weir configs --bootstrap-server localhost:9092 --entity-type topics --entity-name orders --describe
  weir configs --bootstrap-server localhost:9092 --entity-type topics --entity-name orders --describe --all

  # keep a day of data, compact and delete, then go back to the default retention
  weir configs --bootstrap-server localhost:9092 --entity-type topics --entity-name orders \
      --alter --add-config retention.ms=86400000,cleanup.policy=[compact,delete]
  weir configs --bootstrap-server localhost:9092 --topic orders --alter --delete-config retention.ms

  # a dynamic config of broker 1, and the cluster-wide broker defaults
  weir configs --bootstrap-server localhost:9092 --entity-type brokers --entity-name 1 \
      --alter --add-config log.cleaner.threads=2
  weir configs --bootstrap-server localhost:9092 --entity-type brokers --entity-default --describe

  # many topic configs from a file
  weir configs --bootstrap-server localhost:9092 --topic orders --alter --add-config-file orders.properties`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runConfigs(cmd, f) },
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	f.conn.Add(fl)
	fl.StringVar(&f.bootstrapController, "bootstrap-controller", "", "the Kafka controllers to connect to, host:port[,host:port]")
	fl.BoolVar(&f.alter, "alter", false, "alter the configuration for the entity")
	fl.BoolVar(&f.describe, "describe", false, "list configs for the given entity")
	fl.BoolVar(&f.all, "all", false, "list all configs for the given entity, including static configs if available")
	fl.StringArrayVar(&f.entityTypes, "entity-type", nil, "type of entity (topics/clients/users/brokers/broker-loggers/ips/client-metrics/groups)")
	fl.Var(orderedNames{names: &f.names}, "entity-name", "name of entity (topic name/client id/user principal name/broker id/ip/client metrics/group id)")
	fl.Var(orderedNames{names: &f.names, isDefault: true, anyDefault: &f.entityDefault}, "entity-default", "default entity name for clients/users/brokers/ips (applies to corresponding entity type)")
	fl.Lookup("entity-default").NoOptDefVal = "true"
	fl.StringVar(&f.addConfig, "add-config", "", "key value pairs of configs to add: 'k1=v1,k2=[v1,v2,v2],k3=v3'")
	fl.StringVar(&f.addConfigFile, "add-config-file", "", "path to a properties file with configs to add")
	fl.StringSliceVar(&f.deleteConfig, "delete-config", nil, "config keys to remove 'k1,k2'")
	fl.StringVar(&f.topic, "topic", "", "the topic's name")
	fl.StringVar(&f.client, "client", "", "the client's ID")
	fl.BoolVar(&f.clientDefaults, "client-defaults", false, "the config defaults for all clients")
	fl.StringVar(&f.user, "user", "", "the user's principal name")
	fl.BoolVar(&f.userDefaults, "user-defaults", false, "the config defaults for all users")
	fl.StringVar(&f.broker, "broker", "", "the broker's ID")
	fl.BoolVar(&f.brokerDefaults, "broker-defaults", false, "the config defaults for all brokers")
	fl.StringVar(&f.brokerLogger, "broker-logger", "", "the broker's ID for its logger config")
	fl.BoolVar(&f.ipDefaults, "ip-defaults", false, "the config defaults for all IPs")
	fl.StringVar(&f.ip, "ip", "", "the IP address")
	fl.StringVar(&f.group, "group", "", "the group's ID")
	fl.StringVar(&f.metrics, "client-metrics", "", "the client metrics config resource name")
	return cmd
}

// entityFlags are the shortcut flags of an entity, in Kafka's order.
func (f *configsFlags) entityFlags() []struct{ flag, typ, value string } {
	return []struct{ flag, typ, value string }{
		{"topic", entityTopics, f.topic}, {"client", entityClients, f.client}, {"user", entityUsers, f.user},
		{"broker", entityBrokers, f.broker}, {"broker-logger", entityBrokerLoggers, f.brokerLogger}, {"ip", entityIPs, f.ip},
		{"client-metrics", entityClientMetrics, f.metrics}, {"group", entityGroups, f.group},
		{"client-defaults", entityClients, ""}, {"user-defaults", entityUsers, ""}, {"broker-defaults", entityBrokers, ""}, {"ip-defaults", entityIPs, ""},
	}
}

// resolve returns the entity types and names the flags name, as Kafka's
// ConfigCommandOptions.entityTypes and entityNames.
func (f *configsFlags) resolve(cmd *cobra.Command) (types, names []string) {
	types = slices.Clone(f.entityTypes)
	names = slices.Clone(f.names)
	for _, e := range f.entityFlags() {
		if cmd.Flags().Changed(e.flag) {
			types = append(types, e.typ)
			names = append(names, e.value)
		}
	}
	return types, names
}

// checkConfigsArgs validates the flags as kafka-configs.sh does, in its
// order and with its messages.
func checkConfigsArgs(cmd *cobra.Command, f *configsFlags) error {
	has := cmd.Flags().Changed
	if cmd.Flags().NFlag() == 0 {
		return tool.UsageError(cmd, "This tool helps to manipulate and describe entity config for a topic, client, user, broker, ip, client-metrics or group")
	}
	if has("alter") == has("describe") {
		return tool.UsageError(cmd, "Command must include exactly one action: --describe, --alter")
	}
	if has("describe") {
		for _, bad := range []string{"alter", "add-config", "delete-config"} {
			if has(bad) {
				return tool.UsageError(cmd, fmt.Sprintf(`Option "[describe]" can't be used with option "[%s]"`, bad))
			}
		}
	}
	types, names := f.resolve(cmd)
	seen := map[string]bool{}
	var dups []string
	for _, t := range types {
		if seen[t] && !slices.Contains(dups, t) {
			dups = append(dups, t)
		}
		seen[t] = true
	}
	if len(dups) > 0 {
		return fmt.Errorf("Duplicate entity type(s) specified: %s", strings.Join(dups, ","))
	}
	if !has("bootstrap-server") && !has("bootstrap-controller") {
		return errors.New("Either --bootstrap-server or --bootstrap-controller must be specified.")
	}
	for _, t := range types {
		if !slices.Contains(entityTypes, t) {
			return fmt.Errorf("Invalid entity type %s, the entity type must be one of %s with a --bootstrap-server or --bootstrap-controller argument", t, strings.Join(entityTypes, ", "))
		}
	}
	if len(types) == 0 {
		return errors.New("At least one entity type must be specified")
	}
	if len(types) > 1 && !(len(types) == 2 && seen[entityUsers] && seen[entityClients]) {
		return errors.New("Only 'users' and 'clients' entity types may be specified together")
	}
	specific := false
	for _, e := range f.entityFlags() {
		specific = specific || has(e.flag)
	}
	if (has("entity-name") || has("entity-type") || has("entity-default")) && specific {
		return errors.New("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
	}
	hasName, hasDefault := false, false
	for _, n := range names {
		hasName = hasName || n != ""
		hasDefault = hasDefault || n == ""
	}
	if has("bootstrap-server") && has("bootstrap-controller") {
		return errors.New("Only one of --bootstrap-server or --bootstrap-controller can be specified")
	}
	if hasName && (seen[entityBrokers] || seen[entityBrokerLoggers]) {
		for _, n := range names {
			if n == "" {
				continue
			}
			if _, err := strconv.ParseInt(n, 10, 32); err != nil {
				return fmt.Errorf("The entity name for %s must be a valid integer broker id, but it is: %s", types[0], n)
			}
		}
	}
	if has("describe") {
		if !(seen[entityUsers] || seen[entityClients] || seen[entityBrokers] || seen[entityIPs]) && has("entity-default") {
			return fmt.Errorf("--entity-default must not be specified with --describe of %s", strings.Join(types, ","))
		}
		if seen[entityBrokerLoggers] && !hasName {
			return fmt.Errorf("An entity name must be specified with --describe of %s", strings.Join(types, ","))
		}
	}
	if has("alter") {
		if seen[entityUsers] || seen[entityClients] || seen[entityBrokers] || seen[entityIPs] {
			if !hasName && !hasDefault {
				return errors.New("An entity-name or default entity must be specified with --alter of users, clients, brokers or ips")
			}
		} else if !hasName {
			return fmt.Errorf("An entity name must be specified with --alter of %s", strings.Join(types, ","))
		}
		if has("add-config") && has("add-config-file") {
			return errors.New("Only one of --add-config or --add-config-file must be specified")
		}
		if !has("add-config") && !has("add-config-file") && !has("delete-config") {
			return errors.New("At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter")
		}
	}
	return nil
}

// configsError is a failure Kafka's tool reports with its message alone on
// stderr (IllegalArgumentException, InvalidConfigurationException,
// UnsupportedVersionException); any other error is printed after
// "Error while executing config command with args '...'".
type configsError struct{ msg string }

func (e *configsError) Error() string { return e.msg }

func runConfigs(cmd *cobra.Command, f *configsFlags) error {
	if err := checkConfigsArgs(cmd, f); err != nil {
		var code tool.ExitCode
		if errors.As(err, &code) {
			return err
		}
		fmt.Fprintln(cmd.ErrOrStderr(), err)
		return tool.ExitCode(1)
	}
	err := configsCommand(cmd, f)
	if err == nil {
		return nil
	}
	var ce *configsError
	var je *tool.JavaError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintln(cmd.ErrOrStderr(), ce.msg)
	default:
		fmt.Fprintf(cmd.ErrOrStderr(), "Error while executing config command with args '%s'\n", strings.Join(tool.Args(cmd), " "))
		if errors.As(err, &je) {
			fmt.Fprintln(cmd.ErrOrStderr(), je.String())
		} else {
			fmt.Fprintln(cmd.ErrOrStderr(), err)
		}
	}
	return tool.ExitCode(1)
}

func configsCommand(cmd *cobra.Command, f *configsFlags) error {
	if cmd.Flags().Changed("bootstrap-controller") {
		f.conn.BootstrapServer = f.bootstrapController
	}
	tc, err := f.conn.Connect(cmd, "weir-configs", tool.Either(cmd.Flags().Changed("alter"), "incrementalAlterConfigs", "describeConfigs"))
	var timedOut *tool.JavaError
	if err != nil && !errors.As(err, &timedOut) {
		return &configsError{err.Error()}
	}
	if err != nil {
		return err
	}
	defer tc.Close()
	ctx, cancel := tc.Context(cmd)
	defer cancel()
	types, names := f.resolve(cmd)
	if f.alter && len(types) != len(names) {
		return &configsError{"An entity name must be specified for every entity type"}
	}
	if f.alter {
		return alterConfigs(ctx, tc, cmd, f, types, names)
	}
	return describeConfigs(ctx, tc, cmd, f, types, names)
}

// splitOutsideBrackets splits s at each match of sep that is not inside
// square brackets (Kafka's lookahead "(?=[^\]]*(?:\[|$))"), keeping empty
// parts.
func splitOutsideBrackets(s string, sep *regexp.Regexp) []string {
	var parts []string
	last := 0
	for _, m := range sep.FindAllStringIndex(s, -1) {
		outside := true
		for j := m[1]; j < len(s); j++ {
			if s[j] == ']' {
				outside = false
				break
			}
			if s[j] == '[' {
				break
			}
		}
		if outside {
			parts = append(parts, s[last:m[0]])
			last = m[1]
		}
	}
	return append(parts, s[last:])
}

var configKeyRE = regexp.MustCompile(`^[$a-zA-Z0-9._-]*$`)

// configsToAdd parses --add-config-file and --add-config as
// kafka-configs.sh does.
func configsToAdd(f *configsFlags) (map[string]string, error) {
	props := map[string]string{}
	if f.addConfigFile != "" {
		file, err := tool.LoadProperties(f.addConfigFile)
		if err != nil {
			return nil, err
		}
		maps.Copy(props, file)
	}
	if f.addConfig != "" {
		var pairs [][]string
		for _, kv := range splitOutsideBrackets(f.addConfig, tool.CommaRE) {
			pairs = append(pairs, splitOutsideBrackets(kv, tool.EqualsRE))
		}
		for _, p := range pairs {
			if len(p) != 2 {
				return nil, &configsError{`Invalid entity config: all configs to be added must be in the format "key=val" or  "key=[val1,val2]" to group values which contain commas.`}
			}
		}
		for _, p := range pairs {
			props[strings.TrimSpace(p[0])] = strings.TrimSpace(strings.NewReplacer("[", "", "]", "").Replace(p[1]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if !configKeyRE.MatchString(k) {
			return nil, &configsError{"Invalid character found for config key: " + k}
		}
	}
	return props, nil
}

func (f *configsFlags) configsToDelete() []string {
	out := make([]string, len(f.deleteConfig))
	for i, k := range f.deleteConfig {
		out[i] = strings.TrimSpace(k)
	}
	return out
}

// resourceTypes are the config resource types of the entity types that
// have one, and the source of the configs set at the entity's own level.
var resourceTypes = map[string]struct {
	typ     kmsg.ConfigResourceType
	dynamic kmsg.ConfigSource
}{
	entityTopics:        {kmsg.ConfigResourceTypeTopic, kmsg.ConfigSourceDynamicTopicConfig},
	entityBrokers:       {kmsg.ConfigResourceTypeBroker, kmsg.ConfigSourceDynamicBrokerConfig},
	entityBrokerLoggers: {kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigSourceDynamicBrokerLoggerConfig},
	entityClientMetrics: {kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigSourceClientMetricsConfig},
	entityGroups:        {kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigSourceGroupConfig},
}

// configSourceNames are Java's ConfigEntry.ConfigSource names.
var configSourceNames = map[kmsg.ConfigSource]string{
	kmsg.ConfigSourceDynamicTopicConfig:         "DYNAMIC_TOPIC_CONFIG",
	kmsg.ConfigSourceDynamicBrokerConfig:        "DYNAMIC_BROKER_CONFIG",
	kmsg.ConfigSourceDynamicDefaultBrokerConfig: "DYNAMIC_DEFAULT_BROKER_CONFIG",
	kmsg.ConfigSourceStaticBrokerConfig:         "STATIC_BROKER_CONFIG",
	kmsg.ConfigSourceDefaultConfig:              "DEFAULT_CONFIG",
	kmsg.ConfigSourceDynamicBrokerLoggerConfig:  "DYNAMIC_BROKER_LOGGER_CONFIG",
	kmsg.ConfigSourceClientMetricsConfig:        "DYNAMIC_CLIENT_METRICS_CONFIG",
	kmsg.ConfigSourceGroupConfig:                "DYNAMIC_GROUP_CONFIG",
}

func sourceName(s kmsg.ConfigSource) string {
	if n, ok := configSourceNames[s]; ok {
		return n
	}
	return "UNKNOWN"
}

// singular is an entity type without its plural "s".
func singular(typ string) string { return typ[:len(typ)-1] }

func alterConfigs(ctx context.Context, tc *tool.Client, cmd *cobra.Command, f *configsFlags, types, names []string) error {
	typ, name := types[0], names[0]
	add, err := configsToAdd(f)
	if err != nil {
		return err
	}
	del := f.configsToDelete()
	switch typ {
	case entityTopics, entityClientMetrics, entityBrokers, entityGroups:
		if typ == entityBrokers && name != "" {
			if _, err := strconv.ParseInt(name, 10, 32); err != nil {
				return &configsError{fmt.Sprintf("The entity name for %s must be a valid integer broker id, found: %s", typ, name)}
			}
		}
		if err := incrementalAlter(ctx, tc, resourceTypes[typ].typ, name, add, del); err != nil {
			if errors.Is(err, errIncrementalUnsupported) {
				return &configsError{"The INCREMENTAL_ALTER_CONFIGS API is not supported by the cluster. The API is supported starting from version 2.3.0. You may want to use an older version of this tool to interact with your cluster, or upgrade your brokers to version 2.3.0 or newer to avoid this error."}
			}
			return err
		}
	case entityBrokerLoggers:
		entries, err := resourceConfigs(ctx, tc, typ, name, false, false)
		if err != nil {
			return err
		}
		valid := map[string]bool{}
		for _, e := range entries {
			valid[e.Name] = true
		}
		var invalid []string
		for _, k := range del {
			if !valid[k] {
				invalid = append(invalid, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(add)) {
			if !valid[k] {
				invalid = append(invalid, k)
			}
		}
		if len(invalid) > 0 {
			return &configsError{"Invalid broker logger(s): " + strings.Join(invalid, ",")}
		}
		if err := incrementalAlter(ctx, tc, kmsg.ConfigResourceTypeBrokerLogger, name, add, del); err != nil {
			return err
		}
	case entityUsers, entityClients, entityIPs:
		if err := alterQuotasOrCredentials(ctx, tc, types, names, add, del); err != nil {
			return err
		}
	default:
		return &configsError{"Unsupported entity type: " + typ}
	}
	if name != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "Completed updating config for %s %s.\n", singular(typ), name)
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "Completed updating default config for %s in the cluster.\n", typ)
	}
	return nil
}

var errIncrementalUnsupported = errors.New("IncrementalAlterConfigs is not supported")

// incrementalAlter deletes del and sets add on one resource.
func incrementalAlter(ctx context.Context, tc *tool.Client, typ kmsg.ConfigResourceType, name string, add map[string]string, del []string) error {
	if ok, err := tc.Supports(ctx, 44); err != nil {
		return err
	} else if !ok {
		return errIncrementalUnsupported
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	for _, k := range del {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpDelete, kmsg.StringPtr("")
		res.Configs = append(res.Configs, c)
	}
	for _, k := range slices.Sorted(maps.Keys(add)) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(add[k])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	// A broker's loggers live on that broker: the request goes there.
	var to kmsg.Requestor = tc.Kgo
	if id, err := strconv.ParseInt(name, 10, 32); err == nil && typ == kmsg.ConfigResourceTypeBrokerLogger {
		to = tc.Kgo.Broker(int(id))
	}
	resp, err := req.RequestWith(ctx, to)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return tool.KafkaError(err, r.ErrorMessage)
		}
	}
	return nil
}

// resourceConfigs describes one resource: its configs sorted by name,
// only those set at its own level unless all.
func resourceConfigs(ctx context.Context, tc *tool.Client, typ, name string, synonyms, all bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	rs, err := describeResources(ctx, tc, typ, []string{name}, synonyms)
	if err != nil {
		return nil, err
	}
	return filterConfigs(rs[name], typ, name, all)
}

// describeResources describes resources of one entity type at once.
func describeResources(ctx context.Context, tc *tool.Client, typ string, names []string, synonyms bool) (map[string]kmsg.DescribeConfigsResponseResource, error) {
	rt := resourceTypes[typ]
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = synonyms
	for _, n := range names {
		if typ == entityTopics && n != "" {
			if err := controller.ValidateTopicName(n); err != nil {
				return nil, &tool.JavaError{Class: "InvalidTopicException", Msg: err.Error()}
			}
		}
		if (typ == entityBrokers || typ == entityBrokerLoggers) && n != "" {
			if _, err := strconv.ParseInt(n, 10, 32); err != nil {
				return nil, &configsError{fmt.Sprintf("The entity name for %s must be a valid integer broker id, found: %s", typ, n)}
			}
		}
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = rt.typ, n
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, tc.Kgo)
	if err != nil {
		return nil, err
	}
	out := map[string]kmsg.DescribeConfigsResponseResource{}
	for _, r := range resp.Resources {
		out[r.ResourceName] = r
	}
	return out, nil
}

func filterConfigs(r kmsg.DescribeConfigsResponseResource, typ, name string, all bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return nil, tool.KafkaError(err, r.ErrorMessage)
	}
	want := resourceTypes[typ].dynamic
	if typ == entityBrokers && name == "" {
		want = kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, c := range r.Configs {
		if all || c.Source == want {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func nullable(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func describeConfigs(ctx context.Context, tc *tool.Client, cmd *cobra.Command, f *configsFlags, types, names []string) error {
	typ := types[0]
	switch typ {
	case entityUsers, entityClients:
		return describeQuotas(ctx, tc, cmd, types, names, true)
	case entityIPs:
		return describeQuotas(ctx, tc, cmd, types, names, false)
	}
	out := cmd.OutOrStdout()
	var entities []string
	if len(names) > 0 {
		name := names[0]
		if !f.all {
			exists, err := entityExists(ctx, tc, typ, name)
			if err != nil {
				return err
			}
			if !exists {
				fmt.Fprintf(out, "The %s '%s' doesn't exist and doesn't have dynamic config.\n", singular(typ), name)
				return nil
			}
		}
		entities = []string{name}
	} else {
		var err error
		if entities, err = listEntities(ctx, tc, typ); err != nil {
			return err
		}
	}
	if len(entities) == 0 {
		return nil
	}
	described, err := describeResources(ctx, tc, typ, entities, true)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range entities {
		if e == "" {
			fmt.Fprintf(&b, "Default configs for %s in the cluster are:\n", typ)
		} else {
			src := "Dynamic"
			if f.all {
				src = "All"
			}
			fmt.Fprintf(&b, "%s configs for %s %s are:\n", src, singular(typ), e)
		}
		configs, err := filterConfigs(described[e], typ, e, f.all)
		if err != nil {
			io.WriteString(out, b.String())
			return err
		}
		for _, c := range configs {
			var syns []string
			for _, s := range c.ConfigSynonyms {
				syns = append(syns, sourceName(s.Source)+":"+s.Name+"="+nullable(s.Value))
			}
			fmt.Fprintf(&b, "  %s=%s sensitive=%t synonyms={%s}\n", c.Name, nullable(c.Value), c.IsSensitive, strings.Join(syns, ", "))
		}
	}
	_, err = io.WriteString(out, b.String())
	return err
}

// entityExists reports whether a named entity exists, as kafka-configs.sh
// checks before describing its dynamic configs.
func entityExists(ctx context.Context, tc *tool.Client, typ, name string) (bool, error) {
	switch typ {
	case entityTopics:
		if err := controller.ValidateTopicName(name); err != nil {
			return false, &tool.JavaError{Class: "InvalidTopicException", Msg: err.Error()}
		}
		md, err := tc.Admin.Metadata(ctx)
		if err != nil {
			return false, err
		}
		_, ok := md.Topics[name]
		return ok, nil
	case entityBrokers, entityBrokerLoggers:
		if name == "" {
			return true, nil
		}
		bs, err := tc.Admin.ListBrokers(ctx)
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(bs, func(b kadm.BrokerDetail) bool { return tool.Itoa(int64(b.NodeID)) == name }), nil
	case entityClientMetrics:
		names, err := listConfigResources(ctx, tc, kmsg.ConfigResourceTypeClientMetrics, true)
		return slices.Contains(names, name), err
	case entityGroups:
		gs, err := tc.Admin.ListGroups(ctx)
		if err != nil {
			return false, err
		}
		if _, ok := gs[name]; ok {
			return true, nil
		}
		ok, err := tc.Supports(ctx, 74)
		if err != nil || !ok {
			// Without ListConfigResources, Kafka's tool goes on to
			// describe the group's configs.
			return true, err
		}
		names, err := listConfigResources(ctx, tc, kmsg.ConfigResourceTypeGroupConfig, false)
		return slices.Contains(names, name), err
	}
	return false, &configsError{"Invalid entity type: " + typ}
}

// listEntities lists every entity of a type, for --describe without a name.
func listEntities(ctx context.Context, tc *tool.Client, typ string) ([]string, error) {
	switch typ {
	case entityTopics:
		md, err := tc.Admin.Metadata(ctx)
		if err != nil {
			return nil, err
		}
		return md.Topics.Names(), nil
	case entityBrokers, entityBrokerLoggers:
		bs, err := tc.Admin.ListBrokers(ctx)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, id := range bs.NodeIDs() {
			out = append(out, tool.Itoa(int64(id)))
		}
		return append(out, ""), nil
	case entityClientMetrics:
		return listConfigResources(ctx, tc, kmsg.ConfigResourceTypeClientMetrics, true)
	case entityGroups:
		gs, err := tc.Admin.ListGroups(ctx)
		if err != nil {
			return nil, err
		}
		out := gs.Groups()
		if ok, err := tc.Supports(ctx, 74); err != nil {
			return nil, err
		} else if ok {
			more, err := listConfigResources(ctx, tc, kmsg.ConfigResourceTypeGroupConfig, false)
			if err != nil {
				return nil, err
			}
			for _, n := range more {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
		return out, nil
	}
	return nil, &configsError{"Invalid entity type: " + typ}
}

// listConfigResources lists the resources of a type that have configs
// (ListConfigResources); required makes a broker without the API an error.
func listConfigResources(ctx context.Context, tc *tool.Client, typ kmsg.ConfigResourceType, required bool) ([]string, error) {
	if ok, err := tc.Supports(ctx, 74); err != nil {
		return nil, err
	} else if !ok {
		if required {
			return nil, tool.Unsupported("LIST_CONFIG_RESOURCES")
		}
		return nil, nil
	}
	ls, err := tc.Admin.ListConfigResources(ctx, typ)
	if err == nil {
		err = ls.Err
	}
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	return ls.Names(), nil
}

// Quotas and SCRAM credentials.

var (
	userClientQuotas = []string{"consumer_byte_rate", "controller_mutation_rate", "producer_byte_rate", "request_percentage"}
	ipQuotas         = []string{"connection_creation_rate"}
	scramMechanisms  = map[string]kadm.ScramMechanism{"SCRAM-SHA-256": kadm.ScramSha256, "SCRAM-SHA-512": kadm.ScramSha512}
)

// quotaEntityTypes are the client-quota entity types of entity types.
var quotaEntityTypes = map[string]string{entityUsers: "user", entityClients: "client-id", entityIPs: "ip"}

// javaDouble formats a float as Java's Double.toString.
func javaDouble(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(v); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64) // 1.5E+07
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(n)
}

// quotaComponents builds the DescribeClientQuotas filter of the entity
// types and names: a name matches exactly, "" the default, none any.
func quotaComponents(types, names []string) []kadm.DescribeClientQuotaComponent {
	var cs []kadm.DescribeClientQuotaComponent
	for i, t := range types {
		c := kadm.DescribeClientQuotaComponent{Type: quotaEntityTypes[t], MatchType: 2}
		if i < len(names) {
			if names[i] == "" {
				c.MatchType = 1
			} else {
				n := names[i]
				c.MatchType, c.MatchName = 0, &n
			}
		}
		cs = append(cs, c)
	}
	return cs
}

func describeClientQuotas(ctx context.Context, tc *tool.Client, types, names []string) (kadm.DescribedClientQuotas, error) {
	if len(names) > len(types) {
		return nil, &configsError{"More entity names specified than entity types"}
	}
	if ok, err := tc.Supports(ctx, 48); err != nil {
		return nil, err
	} else if !ok {
		return nil, tool.Unsupported("DESCRIBE_CLIENT_QUOTAS")
	}
	qs, err := tc.Admin.DescribeClientQuotas(ctx, true, quotaComponents(types, names))
	if err != nil {
		return nil, tool.KafkaError(err, nil)
	}
	return qs, nil
}

func describeQuotas(ctx context.Context, tc *tool.Client, cmd *cobra.Command, types, names []string, withSCRAM bool) error {
	qs, err := describeClientQuotas(ctx, tc, types, names)
	if err != nil {
		return err
	}
	var lines []string
	for _, q := range qs {
		var parts []string
		for _, typ := range []string{"user", "client-id", "ip"} {
			label := map[string]string{"user": "user-principal", "client-id": "client-id", "ip": "ip"}[typ]
			for _, c := range q.Entity {
				if c.Type != typ {
					continue
				}
				if c.Name == nil || *c.Name == "" {
					parts = append(parts, "the default "+label)
				} else {
					parts = append(parts, label+" '"+*c.Name+"'")
				}
			}
		}
		vals := slices.Clone(q.Values)
		slices.SortFunc(vals, func(a, b kadm.ClientQuotaValue) int { return strings.Compare(a.Key, b.Key) })
		var entries []string
		for _, v := range vals {
			entries = append(entries, v.Key+"="+javaDouble(v.Value))
		}
		lines = append(lines, "Quota configs for "+strings.Join(parts, ", ")+" are "+strings.Join(entries, ", "))
	}
	slices.Sort(lines)
	out := cmd.OutOrStdout()
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	if !withSCRAM || slices.Contains(types, entityClients) || slices.Contains(names, "") {
		return nil
	}
	if ok, err := tc.Supports(ctx, 50); err != nil {
		return err
	} else if !ok {
		return tool.Unsupported("DESCRIBE_USER_SCRAM_CREDENTIALS")
	}
	ds, err := tc.Admin.DescribeUserSCRAMs(ctx, names...)
	if err != nil {
		return tool.KafkaError(err, nil)
	}
	for _, d := range ds.Sorted() {
		if d.Err != nil {
			je := tool.KafkaError(d.Err, &d.ErrMessage)
			if j, ok := je.(*tool.JavaError); ok {
				fmt.Fprintf(out, "Error retrieving SCRAM credential configs for user-principal '%s': ExecutionException: %s\n", d.User, j.String())
			} else {
				fmt.Fprintf(out, "Error retrieving SCRAM credential configs for user-principal '%s': %v\n", d.User, je)
			}
			continue
		}
		var infos []string
		for _, c := range d.CredInfos {
			infos = append(infos, c.String())
		}
		fmt.Fprintf(out, "SCRAM credential configs for user-principal '%s' are %s\n", d.User, strings.Join(infos, ", "))
	}
	return nil
}

var scramCredentialRE = regexp.MustCompile(`^(?:iterations=(-?[0-9]*),)?password=(.*)$`)

func alterQuotasOrCredentials(ctx context.Context, tc *tool.Client, types, names []string, add map[string]string, del []string) error {
	typ := types[0]
	isQuota := func(k string) bool {
		if typ == entityIPs {
			return slices.Contains(ipQuotas, k)
		}
		return slices.Contains(userClientQuotas, k)
	}
	var quotaAdd, quotaDel, scramAdd, scramDel, unknownAdd, unknownDel []string
	for _, k := range slices.Sorted(maps.Keys(add)) {
		switch {
		case isQuota(k):
			quotaAdd = append(quotaAdd, k)
		case scramMechanisms[k] != 0 && typ != entityIPs:
			scramAdd = append(scramAdd, k)
		default:
			unknownAdd = append(unknownAdd, k)
		}
	}
	for _, k := range del {
		switch {
		case isQuota(k):
			quotaDel = append(quotaDel, k)
		case scramMechanisms[k] != 0 && typ != entityIPs:
			scramDel = append(scramDel, k)
		default:
			unknownDel = append(unknownDel, k)
		}
	}
	switch {
	case typ == entityIPs:
		if bad := append(slices.Clone(unknownAdd), unknownDel...); len(bad) > 0 {
			return &configsError{"Only connection quota configs can be added for 'ips' using --bootstrap-server. Unexpected config names: " + strings.Join(bad, ", ")}
		}
	case typ == entityClients || len(types) == 2:
		if bad := append(slices.Clone(unknownAdd), scramAdd...); len(bad) > 0 {
			return &configsError{"Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: " + strings.Join(bad, ",")}
		}
		if bad := append(slices.Clone(unknownDel), scramDel...); len(bad) > 0 {
			return &configsError{"Only quota configs can be deleted for 'clients' using --bootstrap-server. Unexpected config names: " + strings.Join(bad, ",")}
		}
	default:
		if len(unknownAdd) > 0 {
			return &configsError{"Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: " + strings.Join(unknownAdd, ",")}
		}
		if len(unknownDel) > 0 {
			return &configsError{"Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server. Unexpected config names: " + strings.Join(unknownDel, ",")}
		}
		if len(scramAdd)+len(scramDel) > 0 {
			if slices.Contains(names, "") {
				return &configsError{"The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server."}
			}
			if len(quotaAdd)+len(quotaDel) > 0 {
				return &configsError{"Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using --bootstrap-server."}
			}
		}
	}
	if len(quotaAdd)+len(quotaDel) > 0 {
		if len(types) != len(names) {
			return &configsError{"Exactly one entity name must be specified for every entity type"}
		}
		old, err := describeClientQuotas(ctx, tc, types, names)
		if err != nil {
			return err
		}
		have := map[string]bool{}
		if len(old) > 0 {
			for _, v := range old[0].Values {
				have[v.Key] = true
			}
		}
		var invalid []string
		for _, k := range quotaDel {
			if !have[k] {
				invalid = append(invalid, k)
			}
		}
		if len(invalid) > 0 {
			return &configsError{"Invalid config(s): " + strings.Join(invalid, ",")}
		}
		var entity kadm.ClientQuotaEntity
		for i, t := range types {
			c := kadm.ClientQuotaEntityComponent{Type: quotaEntityTypes[t]}
			if names[i] != "" {
				n := names[i]
				c.Name = &n
			}
			entity = append(entity, c)
		}
		var ops []kadm.AlterClientQuotaOp
		for _, k := range quotaAdd {
			v, err := strconv.ParseFloat(strings.TrimSpace(add[k]), 64)
			if err != nil {
				return &configsError{fmt.Sprintf("Cannot parse quota configuration value for %s: %s", k, add[k])}
			}
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: v})
		}
		for _, k := range quotaDel {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
		}
		if ok, err := tc.Supports(ctx, 49); err != nil {
			return err
		} else if !ok {
			return tool.Unsupported("ALTER_CLIENT_QUOTAS")
		}
		rs, err := tc.Admin.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
		if err != nil {
			return tool.KafkaError(err, nil)
		}
		for _, r := range rs {
			if r.Err != nil {
				return tool.KafkaError(r.Err, &r.ErrMessage)
			}
		}
		return nil
	}
	user := names[0]
	var upserts []kadm.UpsertSCRAM
	for _, mech := range scramAdd {
		m := scramCredentialRE.FindStringSubmatch(add[mech])
		if m == nil {
			return &configsError{fmt.Sprintf("Invalid credential property %s=%s", mech, add[mech])}
		}
		iterations := int64(4096)
		if m[1] != "" && m[1] != "-1" {
			n, err := strconv.ParseInt(m[1], 10, 32)
			if err != nil {
				return &configsError{fmt.Sprintf("For input string: %q", m[1])}
			}
			iterations = n
		}
		if iterations < 4096 {
			return &configsError{fmt.Sprintf("Iterations %d is less than the minimum 4096 required for %s", iterations, mech)}
		}
		upserts = append(upserts, kadm.UpsertSCRAM{User: user, Mechanism: scramMechanisms[mech], Iterations: int32(iterations), Password: m[2]})
	}
	var dels []kadm.DeleteSCRAM
	for _, mech := range scramDel {
		dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: scramMechanisms[mech]})
	}
	if ok, err := tc.Supports(ctx, 51); err != nil {
		return err
	} else if !ok {
		return tool.Unsupported("ALTER_USER_SCRAM_CREDENTIALS")
	}
	rs, err := tc.Admin.AlterUserSCRAMs(ctx, dels, upserts)
	if err != nil {
		return tool.KafkaError(err, nil)
	}
	for _, r := range rs {
		if r.Err != nil {
			return tool.KafkaError(r.Err, &r.ErrMessage)
		}
	}
	return nil
}
