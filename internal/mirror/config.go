// Package mirror is weir's MirrorMaker 2: it reads MM2's properties file,
// copies topics between Kafka clusters (weir or Apache Kafka, through
// franz-go clients only) with MM2's naming rules, writes MM2's internal
// records (offset syncs, checkpoints, heartbeats) byte for byte, syncs
// group offsets, topic configs and ACLs, shares each flow's tasks among the
// processes run with the same file, and copies at least once or exactly
// once.
package mirror

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/clientsec"
)

// MM2's defaults (MirrorMakerConfig, MirrorSourceConfig,
// MirrorCheckpointConfig, MirrorHeartbeatConfig, DefaultTopicFilter,
// DefaultGroupFilter, DefaultConfigPropertyFilter).
const (
	DefaultTopics                  = ".*"
	DefaultTopicsExclude           = `.*[\-\.]internal, .*\.replica, __.*`
	DefaultGroups                  = ".*"
	DefaultGroupsExclude           = "console-consumer-.*, connect-.*, __.*"
	DefaultConfigPropertiesExclude = `follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, unclean\.leader\.election\.enable, min\.insync\.replicas`
)

// ClusterConfig is one cluster of the `clusters` list.
type ClusterConfig struct {
	Alias     string
	Bootstrap []string
	ClientID  string
	// ExactlyOnceSource is exactly.once.source.support=enabled, for this
	// cluster as a target (<alias>. or top level); exactlyOnceSet is
	// whether the <alias>. key set it.
	ExactlyOnceSource bool
	exactlyOnceSet    bool
	// Security holds the cluster's TLS and SASL client properties
	// (`<alias>.security.protocol`, `<alias>.ssl.*`, `<alias>.sasl.*`);
	// security are the client options they make, checked at Parse.
	Security map[string]string
	security []kgo.Opt
	// ConnectTimeout is how long a flow waits at its start for the
	// cluster to answer (`<alias>.default.api.timeout.ms`, or its
	// `admin.` form, as MM2's admin client waits to describe the cluster:
	// 60 s by default), warning meanwhile of each broker it cannot reach.
	ConnectTimeout time.Duration
}

// defaultConnectTimeout is Kafka's admin client default.api.timeout.ms.
const defaultConnectTimeout = 60 * time.Second

// FlowConfig is the effective configuration of one enabled flow A->B: the
// top-level keys overridden by the `A->B.`-prefixed ones.
type FlowConfig struct {
	Source, Target string

	Topics, Groups *Filter
	Policy         Policy

	ReplicationFactor            int16
	OffsetSyncsReplicationFactor int16
	CheckpointsReplicationFactor int16
	HeartbeatsReplicationFactor  int16
	// PositionsReplicationFactor is Connect's
	// offset.storage.replication.factor, for PositionsTopic (and
	// TasksTopic).
	PositionsReplicationFactor int16
	// flowRFKeys are the replication factor keys set for this flow alone
	// (A->B.key), which errors name instead of the top-level key.
	flowRFKeys map[string]bool
	// OffsetSyncsOnTarget is offset-syncs.topic.location=target.
	OffsetSyncsOnTarget bool
	OffsetLagMax        int64
	EmitOffsetSyncs     bool

	// Intervals; zero means the task is disabled.
	HeartbeatsInterval    time.Duration
	CheckpointsInterval   time.Duration
	RefreshTopicsInterval time.Duration
	RefreshGroupsInterval time.Duration
	// SyncGroupOffsetsInterval is sync.group.offsets.interval.seconds
	// when sync.group.offsets.enabled; likewise for topic configs and ACLs.
	SyncGroupOffsetsInterval time.Duration
	SyncTopicConfigsInterval time.Duration
	SyncTopicACLsInterval    time.Duration

	// ConfigExclude is config.properties.exclude (nil: nothing excluded);
	// DefaultsFromSource is use.defaults.from=source.
	ConfigExclude      *regexp.Regexp
	DefaultsFromSource bool

	HeartbeatsReplication bool

	// ExactlyOnce is exactly.once.support=required, or the target's
	// exactly.once.source.support=enabled: records and positions are
	// written in one transaction per task and batch, the source read
	// read_committed.
	ExactlyOnce bool

	// Tasks is tasks.max: the flow's source partitions are split into this
	// many tasks, which the processes running the flow share.
	Tasks int
	// SessionTimeout and HeartbeatInterval are the Connect worker's
	// session.timeout.ms and heartbeat.interval.ms (top level): a process
	// that stops heartbeating loses its tasks after SessionTimeout.
	SessionTimeout, HeartbeatInterval time.Duration
}

// Name is MM2's name of the flow, "A->B".
func (f *FlowConfig) Name() string { return f.Source + "->" + f.Target }

// OffsetSyncsTopic is the flow's offset-syncs topic, named after the other
// cluster than the one it lives on, as MM2 does.
func (f *FlowConfig) OffsetSyncsTopic() string {
	if f.OffsetSyncsOnTarget {
		return f.Policy.OffsetSyncsTopic(f.Source)
	}
	return f.Policy.OffsetSyncsTopic(f.Target)
}

// PositionsTopic is where the flow's source positions are kept on the
// target: MM2's Connect offset store, mm2-offsets.<source>.internal.
func (f *FlowConfig) PositionsTopic() string { return "mm2-offsets." + f.Source + ".internal" }

// rfSettings names the settings that set replication factor key rfKey
// for the flow: "A->B.key or key", or "A->B.key" alone when that is set
// (the top-level key would change nothing).
func (f *FlowConfig) rfSettings(rfKey string) string {
	if f.flowRFKeys[rfKey] {
		return f.Name() + "." + rfKey
	}
	return f.Name() + "." + rfKey + " or " + rfKey
}

// Config is a parsed mm2.properties.
type Config struct {
	Clusters map[string]*ClusterConfig
	Flows    []*FlowConfig
	// MetricsListener is weir.metrics.listener without its http://
	// prefix: the host:port serving /metrics; "" serves none.
	MetricsListener string
}

// Filter is MM2's include/exclude pair of pattern lists, each list joined
// with `|` and matched against the whole name.
type Filter struct{ include, exclude *regexp.Regexp }

// Match reports whether name is included and not excluded.
func (f *Filter) Match(name string) bool {
	return f.include != nil && f.include.MatchString(name) && (f.exclude == nil || !f.exclude.MatchString(name))
}

// compileList compiles a Java LIST of patterns as MM2's compilePatternList:
// nil for an empty list (matches nothing), else the alternation anchored
// at both ends.
func compileList(v string) (*regexp.Regexp, error) {
	items := splitList(v)
	if len(items) == 0 {
		return nil, nil
	}
	return regexp.Compile(`^(?:` + strings.Join(items, "|") + `)$`)
}

// splitList splits a Java ConfigDef LIST value: comma-separated, trimmed,
// empty for a blank value.
func splitList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// setting describes one connector-level key: its default.
type setting struct {
	def string
}

// flowSettings are the keys a flow reads, at top level or `A->B.`-prefixed.
var flowSettings = map[string]setting{
	"topics":                       {def: DefaultTopics},
	"topics.exclude":               {def: DefaultTopicsExclude},
	"topics.blacklist":             {},
	"groups":                       {def: DefaultGroups},
	"groups.exclude":               {def: DefaultGroupsExclude},
	"groups.blacklist":             {},
	"replication.policy.class":     {def: "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"},
	"replication.policy.separator": {def: "."},
	"replication.policy.internal.topic.separator.enabled": {def: "true"},
	"source.cluster.alias":                                {},
	"replication.factor":                                  {def: "2"},
	"offset-syncs.topic.replication.factor":               {def: "3"},
	"checkpoints.topic.replication.factor":                {def: "3"},
	"heartbeats.topic.replication.factor":                 {def: "3"},
	"offset.storage.replication.factor":                   {def: "3"},
	"offset-syncs.topic.location":                         {def: "source"},
	"offset.lag.max":                                      {def: "100"},
	"emit.offset-syncs.enabled":                           {def: "true"},
	"emit.heartbeats.enabled":                             {def: "true"},
	"emit.heartbeats.interval.seconds":                    {def: "1"},
	"emit.checkpoints.enabled":                            {def: "true"},
	"emit.checkpoints.interval.seconds":                   {def: "60"},
	"sync.group.offsets.enabled":                          {def: "false"},
	"sync.group.offsets.interval.seconds":                 {def: "60"},
	"refresh.topics.enabled":                              {def: "true"},
	"refresh.topics.interval.seconds":                     {def: "600"},
	"refresh.groups.enabled":                              {def: "true"},
	"refresh.groups.interval.seconds":                     {def: "600"},
	"sync.topic.configs.enabled":                          {def: "true"},
	"sync.topic.configs.interval.seconds":                 {def: "600"},
	"sync.topic.acls.enabled":                             {def: "true"},
	"sync.topic.acls.interval.seconds":                    {def: "600"},
	"config.properties.exclude":                           {def: DefaultConfigPropertiesExclude},
	"config.properties.blacklist":                         {},
	"use.defaults.from":                                   {def: "target"},
	"heartbeats.replication.enabled":                      {def: "true"},
	"tasks.max":                                           {def: "1"},
	"exactly.once.support":                                {def: "requested"},
}

// clientKeys are the `<alias>.` client properties the mirror honours.
var clientKeys = map[string]bool{"bootstrap.servers": true, "client.id": true, "security.protocol": true}

// Parse reads mm2.properties. It returns the warnings to log (unknown keys,
// defaults asking for what weir does not do yet) or an error naming the
// first key whose value is invalid or asks for an unsupported feature.
func Parse(props map[string]string) (*Config, []string, error) {
	var warns []string
	aliases := splitList(props["clusters"])
	if len(aliases) == 0 {
		return nil, nil, fmt.Errorf("clusters: no cluster alias listed")
	}
	cfg := &Config{Clusters: map[string]*ClusterConfig{}}
	for _, a := range aliases {
		if a == "" || strings.Contains(a, "->") {
			return nil, nil, fmt.Errorf("clusters: invalid alias %q", a)
		}
		cfg.Clusters[a] = &ClusterConfig{Alias: a, Security: map[string]string{}, ConnectTimeout: defaultConnectTimeout}
	}
	// Sort every key into its scope: `A->B.` flow, `A.` cluster, top level.
	flowKeys := map[[2]string]map[string]string{}
	top := map[string]string{}
	keys := slices.Sorted(mapKeys(props))
	for _, k := range keys {
		v := props[k]
		if src, dst, rest, ok := flowKey(k, cfg.Clusters); ok {
			m := flowKeys[[2]string{src, dst}]
			if m == nil {
				m = map[string]string{}
				flowKeys[[2]string{src, dst}] = m
			}
			m[rest] = v
			continue
		}
		if alias, rest, ok := clusterKey(k, cfg.Clusters); ok {
			w, err := cfg.Clusters[alias].set(k, rest, v)
			if err != nil {
				return nil, nil, err
			}
			warns = append(warns, w...)
			continue
		}
		top[k] = v
	}
	for _, a := range aliases {
		c := cfg.Clusters[a]
		var err error
		if c.security, err = clientsec.Opts(c.Security); err != nil {
			return nil, nil, fmt.Errorf("cluster %s: %w", a, err)
		}
	}
	for _, k := range slices.Sorted(mapKeys(top)) {
		v := top[k]
		switch k {
		case "clusters":
		case "weir.metrics.listener":
			l := strings.TrimPrefix(strings.TrimSpace(v), "http://")
			if _, _, err := net.SplitHostPort(l); err != nil && l != "" {
				return nil, nil, fmt.Errorf("%s=%s: not host:port or http://host:port", k, v)
			}
			cfg.MetricsListener = l
		case "exactly.once.source.support":
			on, err := parseSourceSupport(k, v)
			if err != nil {
				return nil, nil, err
			}
			for _, c := range cfg.Clusters {
				if !c.exactlyOnceSet {
					c.ExactlyOnceSource = on
				}
			}
		default:
			if _, ok := flowSettings[k]; ok {
				continue
			}
			if _, ok := workerDefaults[k]; ok {
				continue
			}
			warns = append(warns, fmt.Sprintf("unknown key %s ignored", k))
		}
	}
	for _, a := range aliases {
		for _, b := range aliases {
			if a == b {
				continue
			}
			over := flowKeys[[2]string{a, b}]
			enabled := false
			if v, ok := over["enabled"]; ok {
				var err error
				if enabled, err = parseBool(v); err != nil {
					return nil, nil, fmt.Errorf("%s->%s.enabled: %w", a, b, err)
				}
			}
			if !enabled {
				continue
			}
			f, w, err := parseFlow(a, b, top, over)
			if err != nil {
				return nil, nil, err
			}
			warns = append(warns, w...)
			f.ExactlyOnce = f.ExactlyOnce || cfg.Clusters[b].ExactlyOnceSource
			cfg.Flows = append(cfg.Flows, f)
		}
	}
	if err := identityCycle(cfg.Flows); err != nil {
		return nil, nil, err
	}
	for _, f := range cfg.Flows {
		for _, a := range []string{f.Source, f.Target} {
			if len(cfg.Clusters[a].Bootstrap) == 0 {
				return nil, nil, fmt.Errorf("%s.bootstrap.servers: missing for cluster %s of flow %s", a, a, f.Name())
			}
		}
	}
	return cfg, warns, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// flowKey splits "A->B.rest" for known aliases A and B.
func flowKey(k string, clusters map[string]*ClusterConfig) (src, dst, rest string, ok bool) {
	i := strings.Index(k, "->")
	if i < 0 {
		return "", "", "", false
	}
	src = k[:i]
	if clusters[src] == nil {
		return "", "", "", false
	}
	for dst = range clusters {
		if p := dst + "."; strings.HasPrefix(k[i+2:], p) && dst != src {
			return src, dst, k[i+2+len(p):], true
		}
	}
	return "", "", "", false
}

// clusterKey splits "A.rest" for a known alias A.
func clusterKey(k string, clusters map[string]*ClusterConfig) (alias, rest string, ok bool) {
	for a := range clusters {
		if strings.HasPrefix(k, a+".") {
			return a, k[len(a)+1:], true
		}
	}
	return "", "", false
}

// set applies one `<alias>.` property.
func (c *ClusterConfig) set(key, rest, v string) ([]string, error) {
	client := rest
	for _, role := range []string{"consumer.", "producer.", "admin."} {
		client = strings.TrimPrefix(client, role)
	}
	if clientsec.Properties[client] {
		if client != rest {
			return nil, fmt.Errorf("%s: weir's mirror takes security settings per cluster (%s.%s), not per consumer, producer or admin client", key, c.Alias, client)
		}
		c.Security[client] = v
		return nil, nil
	}
	if strings.HasPrefix(client, "ssl.") || strings.HasPrefix(client, "sasl.") {
		return nil, fmt.Errorf("%s: not supported yet by weir's mirror, which does TLS with PEM or PKCS12 stores and SASL with PLAIN or SCRAM (security.protocol, ssl.keystore.*, ssl.key.password, ssl.truststore.*, ssl.endpoint.identification.algorithm, ssl.enabled.protocols, sasl.mechanism, sasl.jaas.config)", key)
	}
	switch {
	case rest == "bootstrap.servers":
		c.Bootstrap = splitList(v)
		if len(c.Bootstrap) == 0 || slices.Contains(c.Bootstrap, "") {
			return nil, fmt.Errorf("%s: invalid list %q", key, v)
		}
	case rest == "client.id":
		c.ClientID = strings.TrimSpace(v)
	case rest == "default.api.timeout.ms" || rest == "admin.default.api.timeout.ms":
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("%s: not a non-negative number of milliseconds: %q", key, v)
		}
		c.ConnectTimeout = time.Duration(ms) * time.Millisecond
	case rest == "exactly.once.source.support":
		on, err := parseSourceSupport(key, v)
		if err != nil {
			return nil, err
		}
		c.ExactlyOnceSource, c.exactlyOnceSet = on, true
	default:
		return []string{fmt.Sprintf("%s: client property not applied by weir's mirror, ignored", key)}, nil
	}
	return nil, nil
}

// parseFlow builds the effective configuration of flow src->dst.
func parseFlow(src, dst string, top, over map[string]string) (*FlowConfig, []string, error) {
	var warns []string
	for _, k := range slices.Sorted(mapKeys(over)) {
		if k == "enabled" {
			continue
		}
		if _, ok := flowSettings[k]; !ok {
			warns = append(warns, fmt.Sprintf("unknown key %s->%s.%s ignored", src, dst, k))
		}
	}
	// get returns the effective value and the key to name in errors.
	get := func(k string) (string, string) {
		if v, ok := over[k]; ok {
			return v, src + "->" + dst + "." + k
		}
		if v, ok := top[k]; ok {
			return v, k
		}
		return flowSettings[k].def, k
	}
	// alias returns a deprecated alias's value when the key is unset.
	alias := func(k, old string) (string, string) {
		_, o1 := over[k]
		_, t1 := top[k]
		if !o1 && !t1 {
			if v, name := get(old); v != "" {
				return v, name
			}
		}
		return get(k)
	}
	var err error
	f := &FlowConfig{Source: src, Target: dst}
	fail := func(key string, e error) (*FlowConfig, []string, error) {
		return nil, nil, fmt.Errorf("%s: %w", key, e)
	}
	filter := func(inKey, exKey, exOld string) (*Filter, error) {
		v, k := get(inKey)
		in, err := compileList(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		v, k = alias(exKey, exOld)
		ex, err := compileList(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		return &Filter{include: in, exclude: ex}, nil
	}
	if f.Topics, err = filter("topics", "topics.exclude", "topics.blacklist"); err != nil {
		return nil, nil, err
	}
	if f.Groups, err = filter("groups", "groups.exclude", "groups.blacklist"); err != nil {
		return nil, nil, err
	}
	if v, k := alias("config.properties.exclude", "config.properties.blacklist"); true {
		if f.ConfigExclude, err = compileList(v); err != nil {
			return fail(k, err)
		}
	}
	switch v, k := get("use.defaults.from"); strings.ToLower(strings.TrimSpace(v)) {
	case "target":
	case "source":
		f.DefaultsFromSource = true
	default:
		return fail(k, fmt.Errorf("invalid value %q (target or source)", v))
	}
	class, classKey := get("replication.policy.class")
	sep, _ := get("replication.policy.separator")
	internalSep, isk := get("replication.policy.internal.topic.separator.enabled")
	useSep, err := parseBool(internalSep)
	if err != nil {
		return fail(isk, err)
	}
	identityAlias, _ := get("source.cluster.alias")
	if identityAlias == "" {
		identityAlias = src
	}
	if f.Policy, err = NewPolicy(class, sep, useSep, identityAlias); err != nil {
		return fail(classKey, err)
	}
	f.flowRFKeys = map[string]bool{}
	for _, rf := range []struct {
		key string
		dst *int16
	}{
		{"replication.factor", &f.ReplicationFactor},
		{"offset-syncs.topic.replication.factor", &f.OffsetSyncsReplicationFactor},
		{"checkpoints.topic.replication.factor", &f.CheckpointsReplicationFactor},
		{"heartbeats.topic.replication.factor", &f.HeartbeatsReplicationFactor},
		{"offset.storage.replication.factor", &f.PositionsReplicationFactor},
	} {
		v, k := get(rf.key)
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 16)
		if err != nil || (n < 1 && n != -1) {
			return fail(k, fmt.Errorf("invalid replication factor %q (a positive number, or -1 for the broker's default)", v))
		}
		*rf.dst = int16(n)
		f.flowRFKeys[rf.key] = k != rf.key
	}
	switch v, k := get("offset-syncs.topic.location"); strings.ToLower(strings.TrimSpace(v)) {
	case "source":
	case "target":
		f.OffsetSyncsOnTarget = true
	default:
		return fail(k, fmt.Errorf("invalid value %q (source or target)", v))
	}
	v, k := get("offset.lag.max")
	if f.OffsetLagMax, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil || f.OffsetLagMax < 0 {
		return fail(k, fmt.Errorf("invalid value %q (a non-negative number)", v))
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{
		{"emit.offset-syncs.enabled", &f.EmitOffsetSyncs},
		{"heartbeats.replication.enabled", &f.HeartbeatsReplication},
	} {
		v, k := get(b.key)
		if *b.dst, err = parseBool(v); err != nil {
			return fail(k, err)
		}
	}
	for _, iv := range []struct {
		prefix string
		dst    *time.Duration
	}{
		{"emit.heartbeats", &f.HeartbeatsInterval},
		{"emit.checkpoints", &f.CheckpointsInterval},
		{"sync.group.offsets", &f.SyncGroupOffsetsInterval},
		{"refresh.topics", &f.RefreshTopicsInterval},
		{"refresh.groups", &f.RefreshGroupsInterval},
		{"sync.topic.configs", &f.SyncTopicConfigsInterval},
		{"sync.topic.acls", &f.SyncTopicACLsInterval},
	} {
		ev, ek := get(iv.prefix + ".enabled")
		on, err := parseBool(ev)
		if err != nil {
			return fail(ek, err)
		}
		sv, sk := get(iv.prefix + ".interval.seconds")
		secs, err := strconv.ParseInt(strings.TrimSpace(sv), 10, 64)
		if err != nil || secs == 0 {
			return fail(sk, fmt.Errorf("invalid value %q (a number of seconds, negative to disable)", sv))
		}
		if iv.dst != nil && on && secs > 0 {
			*iv.dst = time.Duration(secs) * time.Second
		}
	}
	if !f.EmitOffsetSyncs && f.CheckpointsInterval > 0 {
		_, k := get("emit.offset-syncs.enabled")
		return fail(k, fmt.Errorf("false needs emit.checkpoints.enabled=false: checkpoints are translated through the offset syncs"))
	}
	if f.SyncGroupOffsetsInterval > 0 && f.CheckpointsInterval == 0 {
		_, k := get("sync.group.offsets.enabled")
		return fail(k, fmt.Errorf("true needs emit.checkpoints.enabled=true: group offsets are synced from the checkpoints"))
	}
	switch v, k := get("exactly.once.support"); strings.ToLower(strings.TrimSpace(v)) {
	case "requested":
	case "required":
		f.ExactlyOnce = true
	default:
		return fail(k, fmt.Errorf("invalid value %q (requested or required)", v))
	}
	v, k = get("tasks.max")
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return fail(k, fmt.Errorf("invalid value %q (a positive number)", v))
	}
	f.Tasks = n
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{{"session.timeout.ms", &f.SessionTimeout}, {"heartbeat.interval.ms", &f.HeartbeatInterval}} {
		v := top[d.key]
		if v == "" {
			v = workerDefaults[d.key]
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || ms <= 0 {
			return fail(d.key, fmt.Errorf("invalid value %q (a positive number of milliseconds)", v))
		}
		*d.dst = time.Duration(ms) * time.Millisecond
	}
	if f.HeartbeatInterval >= f.SessionTimeout {
		return fail("heartbeat.interval.ms", fmt.Errorf("must be below session.timeout.ms"))
	}
	return f, warns, nil
}

// workerDefaults are the Connect worker keys weir's mirror honours, at top
// level, with Connect's defaults.
var workerDefaults = map[string]string{"session.timeout.ms": "10000", "heartbeat.interval.ms": "3000"}

// parseSourceSupport parses Connect's worker key exactly.once.source.support:
// only enabled turns exactly-once on (preparing is its step before that).
func parseSourceSupport(key, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "enabled":
		return true, nil
	case "disabled", "preparing":
		return false, nil
	}
	return false, fmt.Errorf("%s=%s: invalid value (disabled, preparing or enabled)", key, v)
}

// parseBool parses a Java ConfigDef BOOLEAN: true or false, any case.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("invalid boolean %q (true or false)", v)
}

// identityCycle refuses enabled flows that form a cycle through a flow with
// the identity policy: its topic names keep no trace of their source, so
// records would loop forever (MM2 documents the hazard and lets it happen).
func identityCycle(flows []*FlowConfig) error {
	next := map[string][]string{}
	for _, f := range flows {
		next[f.Source] = append(next[f.Source], f.Target)
	}
	for _, f := range flows {
		if !f.Policy.Identity() {
			continue
		}
		seen := map[string]bool{}
		stack := []string{f.Target}
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if c == f.Source {
				return fmt.Errorf("%s->%s.enabled: IdentityReplicationPolicy cannot tell mirrored topics from local ones, and the enabled flows lead back from %s to %s: records would loop", f.Source, f.Target, f.Target, f.Source)
			}
			if !seen[c] {
				seen[c] = true
				stack = append(stack, next[c]...)
			}
		}
	}
	return nil
}
