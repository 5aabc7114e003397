package config

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	b, warnings, err := LoadBroker(props)
	if err != nil {
		t.Fatalf("LoadBroker(%v): %v", props, err)
	}
	if len(warnings) > 0 {
		t.Fatalf("unexpected warnings: %v", warnings)
	}
	return b
}

func TestLoadBrokerDefaults(t *testing.T) {
	b := mustLoad(t, nil)
	if b.NodeID != 1 || !slices.Equal(b.ProcessRoles, []string{"broker", "controller"}) || !b.HasRole("broker") || !b.HasRole("controller") {
		t.Errorf("identity: %d %v", b.NodeID, b.ProcessRoles)
	}
	wantListeners := []Listener{
		{Name: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Name: "CONTROLLER", Host: "localhost", Port: 9093, SecurityProtocol: "PLAINTEXT"},
	}
	if !slices.Equal(b.Listeners, wantListeners) {
		t.Errorf("listeners: %+v", b.Listeners)
	}
	if !slices.Equal(b.AdvertisedListeners, wantListeners[:1]) {
		t.Errorf("advertised: %+v", b.AdvertisedListeners)
	}
	if b.InterBrokerListenerName != "PLAINTEXT" || !slices.Equal(b.ControllerListenerNames, []string{"CONTROLLER"}) {
		t.Errorf("inter-broker %q controller %v", b.InterBrokerListenerName, b.ControllerListenerNames)
	}
	if !slices.Equal(b.QuorumVoters, []Voter{{ID: 1, Host: "localhost", Port: 9093}}) || b.QuorumBootstrapServers != nil {
		t.Errorf("quorum: %+v %v", b.QuorumVoters, b.QuorumBootstrapServers)
	}
	if !slices.Equal(b.LogDirs, []string{"./data"}) || b.MetadataLogDir != "./data" || b.Rack != "" {
		t.Errorf("dirs: %v %q rack %q", b.LogDirs, b.MetadataLogDir, b.Rack)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"NumPartitions", b.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", b.DefaultReplicationFactor, int16(1)},
		{"AutoCreateTopics", b.AutoCreateTopics, true},
		{"MessageMaxBytes", b.MessageMaxBytes, int32(1048588)},
		{"SocketRequestMaxBytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"SocketSendBufferBytes", b.SocketSendBufferBytes, int32(-1)},
		{"LogRetentionCheckInterval", b.LogRetentionCheckInterval, 5 * time.Minute},
		{"FlushSchedulerInterval", b.FlushSchedulerInterval, time.Duration(math.MaxInt64)},
		{"OffsetCheckpointInterval", b.OffsetCheckpointInterval, time.Minute},
		{"LeaderImbalanceCheckInterval", b.LeaderImbalanceCheckInterval, 300 * time.Second},
		{"OffsetsRetention", b.OffsetsRetention, 7 * 24 * time.Hour},
		{"OffsetsTopicReplicationFactor", b.OffsetsTopicReplicationFactor, int16(3)},
		{"TransactionStateLogMinISR", b.TransactionStateLogMinISR, int32(2)},
		{"TransactionalIDExpiration", b.TransactionalIDExpiration, 7 * 24 * time.Hour},
		{"ConsumerGroupSessionTimeout", b.ConsumerGroupSessionTimeout, 45 * time.Second},
		{"BrokerSessionTimeout", b.BrokerSessionTimeout, 9 * time.Second},
		{"LogCleanerIOBufferLoadFactor", b.LogCleanerIOBufferLoadFactor, 0.9},
		{"LogRetentionMs", b.LogRetentionMs(), int64(604800000)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(b.Set) != 0 {
		t.Errorf("nothing should be Set: %v", b.Set)
	}
	for _, d := range BrokerDefs() {
		v, ok := b.Values[d.Name]
		if d.HasDefault && (!ok || v != d.Default) {
			t.Errorf("Values[%s] = %q, want default %q", d.Name, v, d.Default)
		}
		if !d.HasDefault && ok {
			t.Errorf("Values[%s] = %q, want absent (null)", d.Name, v)
		}
		if b.Source(d.Name) != SourceDefault {
			t.Errorf("Source(%s) = %s", d.Name, b.Source(d.Name))
		}
	}
}

func TestLoadBrokerFromProperties(t *testing.T) {
	props, err := ParseProperties(strings.NewReader(`
# single node
process.roles=broker,controller
node.id=3
listeners=PLAINTEXT://0.0.0.0:19092,CONTROLLER://:19093
advertised.listeners = PLAINTEXT://kafka.example.com:19092
controller.quorum.voters=3@localhost:19093
log.dirs=/var/lib/weir/a,\
         /var/lib/weir/b
num.partitions: 6
log.retention.hours 1
broker.rack=r1
compression.type=zstd
foo.bar=baz
`))
	if err != nil {
		t.Fatal(err)
	}
	b, warnings, err := LoadBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(warnings, []string{`unknown configuration "foo.bar" was ignored`}) {
		t.Errorf("warnings: %v", warnings)
	}
	if b.NodeID != 3 || b.NumPartitions != 6 || b.Rack != "r1" || b.LogRetentionMs() != 3600000 {
		t.Errorf("got node %d partitions %d rack %q retention %d", b.NodeID, b.NumPartitions, b.Rack, b.LogRetentionMs())
	}
	if !slices.Equal(b.LogDirs, []string{"/var/lib/weir/a", "/var/lib/weir/b"}) || b.MetadataLogDir != "/var/lib/weir/a" {
		t.Errorf("dirs %v meta %q", b.LogDirs, b.MetadataLogDir)
	}
	if len(b.AdvertisedListeners) != 1 || b.AdvertisedListeners[0].Host != "kafka.example.com" || b.AdvertisedListeners[0].SecurityProtocol != "PLAINTEXT" {
		t.Errorf("advertised %+v", b.AdvertisedListeners)
	}
	if !b.Set["num.partitions"] || b.Source("num.partitions") != SourceStaticBroker || b.Set["foo.bar"] || b.Set["num.io.threads"] {
		t.Errorf("Set: %v", b.Set)
	}
	if b.Values["num.partitions"] != "6" || b.Values["log.dirs"] != "/var/lib/weir/a,/var/lib/weir/b" {
		t.Errorf("normalized values: %q %q", b.Values["num.partitions"], b.Values["log.dirs"])
	}
	if topic := b.TopicDefaults(); topic.CompressionType != "zstd" || topic.RetentionMs != 3600000 {
		t.Errorf("topic defaults: %+v", topic)
	}
}

func TestLoadBrokerInvalidValues(t *testing.T) {
	_, warnings, err := LoadBroker(map[string]string{
		"num.partitions": "abc", "log.cleanup.policy": "delete,nope", "num.io.threads": "0", "zzz": "1",
	})
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{
		`invalid value "abc" for configuration num.partitions: not a number of type INT`,
		`invalid value "delete,nope" for configuration log.cleanup.policy: element "nope" is not one of: compact, delete`,
		`invalid value "0" for configuration num.io.threads: value must be at least 1`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != InvalidValue || ce.Name != "log.cleanup.policy" {
		t.Errorf("errors.As: %#v", ce)
	}
	if !slices.Equal(warnings, []string{`unknown configuration "zzz" was ignored`}) {
		t.Errorf("warnings still reported with errors: %v", warnings)
	}
}

func TestLoadBrokerWarningsSorted(t *testing.T) {
	_, warnings, err := LoadBroker(map[string]string{"z.z": "1", "a.a": "1", "zookeeper.connect": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`unknown configuration "a.a" was ignored`, `unknown configuration "z.z" was ignored`,
		`unknown configuration "zookeeper.connect" was ignored`}
	if !slices.Equal(warnings, want) {
		t.Errorf("got %v", warnings)
	}
}

func TestBrokerIDAlias(t *testing.T) {
	voters := map[string]string{KeyQuorumVoters: "5@localhost:9093"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{KeyQuorumVoters: voters[KeyQuorumVoters]}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	b := mustLoad(t, with(map[string]string{"broker.id": "5"}))
	if b.NodeID != 5 || !b.Set[KeyNodeID] {
		t.Errorf("broker.id should set node.id: %d %v", b.NodeID, b.Set)
	}
	b = mustLoad(t, with(map[string]string{"node.id": "5"}))
	if b.Values[KeyBrokerID] != "5" || b.Source(KeyBrokerID) != SourceStaticBroker {
		t.Errorf("node.id should mirror to broker.id: %q", b.Values[KeyBrokerID])
	}
	mustLoad(t, with(map[string]string{"node.id": "5", "broker.id": "5"}))
	_, _, err := LoadBroker(with(map[string]string{"node.id": "5", "broker.id": "6"}))
	if err == nil || !strings.Contains(err.Error(), "invalid configuration broker.id: 6 must equal node.id (5)") {
		t.Errorf("mismatch: %v", err)
	}
	_, _, err = LoadBroker(map[string]string{"broker.id": "-1"})
	if err == nil || !strings.Contains(err.Error(), `invalid value "-1" for configuration node.id`) {
		t.Errorf("negative broker.id: %v", err)
	}
}

func TestLoadBrokerLogDirs(t *testing.T) {
	b := mustLoad(t, map[string]string{"log.dir": "/a,/b", "log.dirs": "/c"})
	if !slices.Equal(b.LogDirs, []string{"/c"}) {
		t.Errorf("log.dirs must win: %v", b.LogDirs)
	}
	b = mustLoad(t, map[string]string{"log.dir": "/a,/b", "metadata.log.dir": "/meta"})
	if !slices.Equal(b.LogDirs, []string{"/a", "/b"}) || b.MetadataLogDir != "/meta" {
		t.Errorf("got %v %q", b.LogDirs, b.MetadataLogDir)
	}
	if _, _, err := LoadBroker(map[string]string{"log.dirs": " "}); err == nil || !strings.Contains(err.Error(), "log.dirs") {
		t.Errorf("empty log.dirs: %v", err)
	}
}

func TestLoadBrokerCrossChecks(t *testing.T) {
	brokerOnly := map[string]string{"process.roles": "broker", "node.id": "2", "listeners": "PLAINTEXT://:9092"}
	controllerOnly := map[string]string{"process.roles": "controller", "listeners": "CONTROLLER://:9093"}
	merge := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	valid := []struct {
		name  string
		props map[string]string
	}{
		{"broker only", brokerOnly},
		{"controller only", controllerOnly},
		{"bootstrap servers naming the voters", merge(nil, KeyQuorumBootstrapServers, "LocalHost:9093")},
		{"bootstrap servers naming the voters in another order", merge(nil, KeyQuorumVoters, "1@localhost:9093,2@[::1]:9093",
			KeyQuorumBootstrapServers, "[::1]:9093, localhost:9093")},
		{"implicit controller protocol", merge(nil, "listeners", "PLAINTEXT://:9092,CTRL://:9093", KeyControllerListenerNames, "CTRL")},
		{"IPv4 and IPv6 on one port", merge(nil, "listeners", "PLAINTEXT://127.0.0.1:9092,V6://[::1]:9092,CONTROLLER://:9093",
			KeyListenerSecurityMap, "PLAINTEXT:PLAINTEXT,V6:PLAINTEXT,CONTROLLER:PLAINTEXT")},
		{"inter broker listener name", merge(nil, "listeners", "PLAINTEXT://:9092,INTERNAL://:9094,CONTROLLER://:9093",
			KeyListenerSecurityMap, "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT", KeyInterBrokerListenerName, "internal")},
		{"unlimited retention", merge(nil, "log.retention.hours", "-1")},
		{"port zero listeners", merge(nil, "listeners", "PLAINTEXT://:0,CONTROLLER://:0")},
	}
	for _, tt := range valid {
		t.Run(tt.name, func(t *testing.T) { mustLoad(t, tt.props) })
	}
	if b := mustLoad(t, controllerOnly); len(b.AdvertisedListeners) != 0 {
		t.Errorf("controller only advertises nothing: %v", b.AdvertisedListeners)
	}
	if b := mustLoad(t, merge(nil, "log.retention.hours", "-1")); b.LogRetentionMs() != -1 {
		t.Errorf("retention %d", b.LogRetentionMs())
	}
	if b := mustLoad(t, merge(nil, "listeners", "PLAINTEXT://:9092,INTERNAL://:9094,CONTROLLER://:9093",
		KeyListenerSecurityMap, "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT", KeyInterBrokerListenerName, "internal")); b.InterBrokerListenerName != "INTERNAL" {
		t.Errorf("inter broker %q", b.InterBrokerListenerName)
	}

	invalid := []struct {
		name  string
		props map[string]string
		key   string
		want  string
	}{
		{"advertised controller listener", merge(nil, "advertised.listeners", "PLAINTEXT://h:9092,CONTROLLER://h:9093"), "advertised.listeners", "must not contain controller listener CONTROLLER"},
		{"advertised unknown listener", merge(nil, "advertised.listeners", "PLAINTEXT://h:9092,OTHER://h:1", KeyListenerSecurityMap, DefaultSecurityProtocolMap+",OTHER:SSL"), "advertised.listeners", "listener OTHER is not defined in listeners"},
		{"advertised 0.0.0.0", merge(nil, "listeners", "PLAINTEXT://0.0.0.0:9092,CONTROLLER://:9093"), "advertised.listeners", "non-routable address 0.0.0.0"},
		{"listener without protocol", merge(nil, "listeners", "PLAINTEXT://:9092,CLIENT://:9094,CONTROLLER://:9093"), "listeners", "no security protocol is defined for listener CLIENT"},
		{"explicit map drops implicit controller", merge(nil, KeyListenerSecurityMap, "PLAINTEXT:PLAINTEXT"), "listeners", "no security protocol is defined for listener CONTROLLER"},
		{"secure listener disables implicit mapping", merge(nil, "listeners", "SSL://:9092,CTRL://:9093", KeyControllerListenerNames, "CTRL", KeyInterBrokerProtocol, "SSL"), "listeners", "listener CTRL"},
		{"duplicate listener name", merge(nil, "listeners", "PLAINTEXT://:9092,plaintext://:9094,CONTROLLER://:9093"), "listeners", "listener name PLAINTEXT is used more than once"},
		{"duplicate port", merge(nil, "listeners", "PLAINTEXT://a:9092,CONTROLLER://b:9092"), "listeners", "port 9092 is used by more than one listener"},
		{"controller listener missing", merge(nil, "listeners", "PLAINTEXT://:9092"), "controller.listener.names", "controller listener CONTROLLER must appear in listeners"},
		{"node not a voter", merge(nil, "node.id", "7"), "node.id", "node id 7 must be one of the controller.quorum.voters"},
		{"duplicate voters", merge(nil, KeyQuorumVoters, "1@a:1,1@b:2"), "controller.quorum.voters", "voter id 1 appears more than once"},
		{"no quorum", merge(nil, KeyQuorumVoters, ""), "controller.quorum.voters", "either controller.quorum.voters or controller.quorum.bootstrap.servers must be set"},
		{"dynamic quorum", merge(nil, KeyQuorumVoters, "", KeyQuorumBootstrapServers, "localhost:9093"), "controller.quorum.bootstrap.servers", "weir supports only a static controller quorum"},
		{"bootstrap servers beyond the voters", merge(nil, KeyQuorumBootstrapServers, "localhost:9093,other:9093"), "controller.quorum.bootstrap.servers", "must name exactly the endpoints of controller.quorum.voters (1@localhost:9093)"},
		{"broker is voter", merge(brokerOnly, "node.id", "1"), "node.id", "must not be one of the controller.quorum.voters"},
		{"broker listens on controller", merge(brokerOnly, "listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"), "listeners", "must not contain controller listener CONTROLLER when process.roles=broker"},
		{"broker without controller mapping", merge(brokerOnly, KeyListenerSecurityMap, "PLAINTEXT:PLAINTEXT"), "listener.security.protocol.map", "controller listener CONTROLLER has no security protocol mapping"},
		{"controller with advertised", merge(controllerOnly, "advertised.listeners", "CONTROLLER://h:9093"), "advertised.listeners", "must not be set when process.roles=controller"},
		{"controller with client listener", merge(controllerOnly, "listeners", "CONTROLLER://:9093,PLAINTEXT://:9092"), "listeners", "listener PLAINTEXT is not a controller listener"},
		{"no advertised listener", merge(nil, "listeners", "CONTROLLER://:9093"), "advertised.listeners", "there must be at least one advertised"},
		{"both inter broker keys", merge(nil, KeyInterBrokerListenerName, "PLAINTEXT", KeyInterBrokerProtocol, "PLAINTEXT"), "inter.broker.listener.name", "only one of inter.broker.listener.name and security.inter.broker.protocol"},
		{"inter broker not advertised", merge(nil, KeyInterBrokerListenerName, "OTHER"), "inter.broker.listener.name", "inter-broker listener OTHER must be one of the advertised listeners"},
		{"inter broker protocol not advertised", merge(nil, KeyInterBrokerProtocol, "SSL"), "security.inter.broker.protocol", "inter-broker listener SSL"},
		{"zero retention ms", merge(nil, "log.retention.ms", "0"), "log.retention.ms", "unlimited (-1) or at least 1 ms"},
		{"zero retention minutes", merge(nil, "log.retention.minutes", "0"), "log.retention.minutes", "unlimited (-1)"},
		{"zero retention hours", merge(nil, "log.retention.hours", "0"), "log.retention.hours", "unlimited (-1)"},
		{"zero roll", merge(nil, "log.roll.ms", "0"), "log.roll.ms", "must be at least 1"},
		{"negative jitter", merge(nil, "log.roll.jitter.ms", "-1"), "log.roll.jitter.ms", "must be at least 0"},
		{"small dedupe buffer", merge(nil, "log.cleaner.dedupe.buffer.size", "2097152", "log.cleaner.threads", "2"), "log.cleaner.dedupe.buffer.size", "more than 1 MiB per cleaner thread"},
		{"compaction lags", merge(nil, "log.cleaner.min.compaction.lag.ms", "10", "log.cleaner.max.compaction.lag.ms", "5"), "log.cleaner.min.compaction.lag.ms", "(10) must not be greater than log.cleaner.max.compaction.lag.ms (5)"},
		{"fetch wait above lag", merge(nil, "replica.fetch.wait.max.ms", "40000"), "replica.fetch.wait.max.ms", "at most replica.lag.time.max.ms (30000)"},
		{"socket timeout below fetch wait", merge(nil, "replica.socket.timeout.ms", "100"), "replica.socket.timeout.ms", "at least replica.fetch.wait.max.ms (500)"},
		{"heartbeat not below session", merge(nil, "broker.heartbeat.interval.ms", "9000"), "broker.heartbeat.interval.ms", "less than broker.session.timeout.ms (9000)"},
		{"classic session bounds", merge(nil, "group.min.session.timeout.ms", "2000000"), "group.min.session.timeout.ms", "at most group.max.session.timeout.ms"},
		{"consumer heartbeat below min", merge(nil, "group.consumer.heartbeat.interval.ms", "1000"), "group.consumer.heartbeat.interval.ms", "greater than or equal to group.consumer.min.heartbeat.interval.ms (5000)"},
		{"consumer heartbeat above max", merge(nil, "group.consumer.heartbeat.interval.ms", "20000"), "group.consumer.heartbeat.interval.ms", "less than or equal to group.consumer.max.heartbeat.interval.ms (15000)"},
		{"consumer max session below min", merge(nil, "group.consumer.max.session.timeout.ms", "40000", "group.consumer.session.timeout.ms", "40000"), "group.consumer.max.session.timeout.ms", "greater than or equal to group.consumer.min.session.timeout.ms"},
		{"empty roles", merge(nil, "process.roles", ""), "process.roles", "must not be empty"},
		{"bad role", merge(nil, "process.roles", "broker,worker"), "process.roles", `element "worker"`},
		{"empty controller names", merge(nil, KeyControllerListenerNames, ""), "controller.listener.names", "must not be empty"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadBroker(tt.props)
			if err == nil {
				t.Fatal("want error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %q should name %s and contain %q", err, tt.key, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("not an *Error: %T", err)
			}
		})
	}
}

func TestScaleDuration(t *testing.T) {
	if scaleDuration(math.MaxInt64, time.Millisecond) != math.MaxInt64 || scaleDuration(math.MinInt64, time.Hour) != math.MinInt64 {
		t.Error("durations must saturate")
	}
	if scaleDuration(1500, time.Millisecond) != 1500*time.Millisecond {
		t.Error("plain conversion")
	}
}

func TestGetterPanicsOnUnknownKey(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("want panic")
		}
	}()
	getter(nil).str("no.such.key")
}
