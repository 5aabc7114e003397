package config

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestEnumWireValues(t *testing.T) {
	types := map[Type]string{TypeUnknown: "UNKNOWN", TypeBoolean: "BOOLEAN", TypeString: "STRING", TypeInt: "INT",
		TypeShort: "SHORT", TypeLong: "LONG", TypeDouble: "DOUBLE", TypeList: "LIST", TypeClass: "CLASS", TypePassword: "PASSWORD"}
	for ty, name := range types {
		if ty.String() != name {
			t.Errorf("Type(%d) = %s, want %s", ty, ty, name)
		}
	}
	if TypeBoolean != 1 || TypeString != 2 || TypeInt != 3 || TypeShort != 4 || TypeLong != 5 ||
		TypeDouble != 6 || TypeList != 7 || TypeClass != 8 || TypePassword != 9 {
		t.Error("Type values must match Kafka's ConfigType")
	}
	if SourceUnknown != 0 || SourceDynamicTopic != 1 || SourceDynamicBroker != 2 || SourceDynamicDefaultBroker != 3 ||
		SourceStaticBroker != 4 || SourceDefault != 5 || SourceDynamicBrokerLogger != 6 {
		t.Error("Source values must match Kafka's ConfigSource")
	}
	if SourceStaticBroker.String() != "STATIC_BROKER_CONFIG" || Source(42).String() != "Source(42)" || Type(42).String() != "Type(42)" {
		t.Error("unexpected String output")
	}
	if ReadOnly.String() != "read-only" || PerBroker.String() != "per-broker" || ClusterWide.String() != "cluster-wide" {
		t.Error("unexpected UpdateMode names")
	}
}

func TestRegistryConsistency(t *testing.T) {
	if len(BrokerDefs()) < 100 || len(TopicDefs()) < 30 {
		t.Fatalf("registries look too small: %d broker, %d topic", len(BrokerDefs()), len(TopicDefs()))
	}
	for _, d := range append(BrokerDefs(), TopicDefs()...) {
		if d.Doc == "" || strings.Contains(d.Doc, "\n") {
			t.Errorf("%s: doc must be one non-empty line", d.Name)
		}
		if d.HasDefault {
			if norm, err := d.Normalize(d.Default); err != nil || norm != d.Default {
				t.Errorf("%s: default %q not normalized/valid (%q, %v)", d.Name, d.Default, norm, err)
			}
		}
	}
	// Every topic key's synonyms are broker keys, and the topic default is the
	// default of the first synonym that has one (converted).
	for _, td := range TopicDefs() {
		d := topicRegistry.byName[td.Name]
		for _, s := range td.Synonyms {
			if _, ok := BrokerDef(s.Name); !ok {
				t.Errorf("%s: synonym %s is not a broker key", td.Name, s.Name)
			}
		}
		for _, s := range td.Synonyms {
			bd, _ := BrokerDef(s.Name)
			if !bd.HasDefault {
				continue
			}
			if v, ok := convertSynonym(d, s, bd.Default); !ok || v != td.Default {
				t.Errorf("%s: default %s differs from %s default %s", td.Name, td.Default, s.Name, v)
			}
			break
		}
		// The first synonym is the dynamically updatable broker key.
		if len(td.Synonyms) > 0 {
			if bd, _ := BrokerDef(td.Synonyms[0].Name); !bd.Dynamic() {
				t.Errorf("%s: first synonym %s should be dynamic", td.Name, bd.Name)
			}
		}
	}
	if _, ok := BrokerDef("cluster.id"); ok {
		t.Error("cluster.id is not a configuration (it lives in meta.properties)")
	}
	if _, ok := TopicDef("message.downconversion.enable"); ok {
		t.Error("message.downconversion.enable should not be defined")
	}
	if _, ok := TopicDef("nope"); ok {
		t.Error("TopicDef(nope) should fail")
	}
	if _, ok := BrokerDef("nope"); ok {
		t.Error("BrokerDef(nope) should fail")
	}
	// Returned slices are copies.
	defs := BrokerDefs()
	defs[0].Name = "mutated"
	if BrokerDefs()[0].Name == "mutated" {
		t.Error("BrokerDefs must return a copy")
	}
}

func TestKafkaDefaults(t *testing.T) {
	want := map[string]string{
		"num.partitions": "1", "default.replication.factor": "1", "auto.create.topics.enable": "true",
		"delete.topic.enable": "true", "message.max.bytes": "1048588", "socket.request.max.bytes": "104857600",
		"log.segment.bytes": "1073741824", "log.roll.hours": "168", "log.retention.hours": "168",
		"log.retention.bytes": "-1", "log.retention.check.interval.ms": "300000",
		"log.flush.interval.messages": "9223372036854775807", "log.flush.offset.checkpoint.interval.ms": "60000",
		"log.cleanup.policy": "delete", "log.cleaner.enable": "true", "log.cleaner.backoff.ms": "15000",
		"log.cleaner.delete.retention.ms": "86400000", "log.cleaner.min.cleanable.ratio": "0.5",
		"log.cleaner.min.compaction.lag.ms": "0", "log.cleaner.max.compaction.lag.ms": "9223372036854775807",
		"log.index.size.max.bytes": "10485760", "log.index.interval.bytes": "4096",
		"log.segment.delete.delay.ms": "60000", "log.message.timestamp.type": "CreateTime",
		"log.message.timestamp.before.max.ms": "9223372036854775807", "log.message.timestamp.after.max.ms": "3600000",
		"compression.type": "producer", "min.insync.replicas": "1", "unclean.leader.election.enable": "false",
		"replica.lag.time.max.ms": "30000", "replica.fetch.max.bytes": "1048576", "replica.fetch.wait.max.ms": "500",
		"replica.fetch.min.bytes": "1", "replica.fetch.response.max.bytes": "10485760", "replica.fetch.backoff.ms": "1000",
		"num.replica.fetchers": "1", "replica.high.watermark.checkpoint.interval.ms": "5000",
		"auto.leader.rebalance.enable": "true", "leader.imbalance.per.broker.percentage": "10",
		"leader.imbalance.check.interval.seconds": "300", "follower.replication.throttled.rate": "9223372036854775807",
		"broker.heartbeat.interval.ms": "2000", "broker.session.timeout.ms": "9000",
		"metadata.log.max.record.bytes.between.snapshots": "20971520", "metadata.log.max.snapshot.interval.ms": "3600000",
		"offsets.topic.num.partitions": "50", "offsets.topic.replication.factor": "3", "offsets.retention.minutes": "10080",
		"group.initial.rebalance.delay.ms": "3000", "group.min.session.timeout.ms": "6000",
		"group.max.session.timeout.ms": "1800000", "group.consumer.session.timeout.ms": "45000",
		"group.consumer.heartbeat.interval.ms": "5000", "transaction.state.log.num.partitions": "50",
		"transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
		"transaction.max.timeout.ms": "900000", "transactional.id.expiration.ms": "604800000",
		"producer.id.expiration.ms": "86400000", "max.incremental.fetch.session.cache.slots": "1000",
		"fetch.max.bytes": "57671680", "connections.max.idle.ms": "600000",
		"log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
		// weir defaults
		"process.roles": "broker,controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093", "controller.quorum.voters": "1@localhost:9093",
		"log.dir": "./data",
	}
	for name, v := range want {
		d, ok := BrokerDef(name)
		if !ok || !d.HasDefault || d.Default != v {
			t.Errorf("%s: default %q (has %v), want %q", name, d.Default, d.HasDefault, v)
		}
	}
	for _, name := range []string{"log.dirs", "log.roll.ms", "log.retention.ms", "log.retention.minutes", "log.flush.interval.ms",
		"advertised.listeners", "inter.broker.listener.name", "broker.rack", "metadata.log.dir"} {
		if d, _ := BrokerDef(name); d.HasDefault {
			t.Errorf("%s: Kafka default is null", name)
		}
	}
	modes := map[string]UpdateMode{"listeners": PerBroker, "listener.security.protocol.map": PerBroker,
		"log.retention.ms": ClusterWide, "log.retention.hours": ReadOnly, "message.max.bytes": ClusterWide,
		"num.io.threads": ClusterWide, "num.network.threads": ClusterWide, "node.id": ReadOnly, "log.cleaner.threads": ClusterWide}
	for name, m := range modes {
		if d, _ := BrokerDef(name); d.KafkaUpdate != m {
			t.Errorf("%s: Kafka's update mode %s, want %s", name, d.KafkaUpdate, m)
		}
	}
	// weir narrows the keys it reads only at start-up.
	for name, m := range map[string]UpdateMode{"listeners": ReadOnly, "log.retention.ms": ClusterWide, "num.replica.fetchers": ReadOnly} {
		if d, _ := BrokerDef(name); d.Update != m {
			t.Errorf("%s: update mode %s, want %s", name, d.Update, m)
		}
	}
}

func TestParseTyped(t *testing.T) {
	tests := []struct {
		typ     Type
		in      string
		want    string
		wantErr string
	}{
		{TypeBoolean, " TRUE ", "true", ""},
		{TypeBoolean, "False", "false", ""},
		{TypeBoolean, "yes", "", "expected value to be either true or false"},
		{TypeInt, " +42 ", "42", ""},
		{TypeInt, "-7", "-7", ""},
		{TypeInt, "2147483648", "", "not a number of type INT"},
		{TypeInt, "abc", "", "not a number of type INT"},
		{TypeInt, "", "", "not a number of type INT"},
		{TypeShort, "32767", "32767", ""},
		{TypeShort, "32768", "", "not a number of type SHORT"},
		{TypeLong, "9223372036854775807", "9223372036854775807", ""},
		{TypeLong, "9223372036854775808", "", "not a number of type LONG"},
		{TypeLong, "1.5", "", "not a number of type LONG"},
		{TypeDouble, "0.5", "0.5", ""},
		{TypeDouble, "1", "1.0", ""},
		{TypeDouble, "1e10", "1.0E10", ""},
		{TypeDouble, "0.0001", "1.0E-4", ""},
		{TypeDouble, "x", "", "not a number of type DOUBLE"},
		{TypeList, " a , b,c ", "a,b,c", ""},
		{TypeList, "   ", "", ""},
		{TypeString, "  padded  ", "padded", ""},
		{TypeClass, " com.Foo ", "com.Foo", ""},
		{TypePassword, " secret ", "secret", ""},
		{TypeUnknown, "x", "", "unsupported type UNKNOWN"},
	}
	for _, tt := range tests {
		d := def("k", tt.typ, nullDefault, nil, ReadOnly, "doc")
		got, err := d.Normalize(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s %q: got %q, %v; want error %q", tt.typ, tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %q: got %q, %v; want %q", tt.typ, tt.in, got, err, tt.want)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	tests := map[float64]string{0: "0.0", 0.5: "0.5", 100: "100.0", 1e7: "1.0E7", 1234567.5: "1234567.5",
		0.001: "0.001", 0.00099: "9.9E-4", -2.5: "-2.5", math.MaxFloat64: "1.7976931348623157E308",
		math.NaN(): "NaN", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity"}
	for f, want := range tests {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestValidators(t *testing.T) {
	tests := []struct {
		name    string
		v       validator
		typ     Type
		in      string
		wantErr string // "" = valid
	}{
		{"atLeast ok", atLeast(1), TypeInt, "1", ""},
		{"atLeast low", atLeast(1), TypeInt, "0", "value must be at least 1"},
		{"atLeast double", atLeast(0), TypeDouble, "-0.5", "value must be at least 0"},
		{"between ok", between(1, 17), TypeInt, "17", ""},
		{"between low", between(1, 17), TypeInt, "0", "value must be no less than 1"},
		{"between high", between(1, 17), TypeInt, "18", "value must be no more than 17"},
		{"betweenFloat ok", betweenFloat(0, 1), TypeDouble, "0.75", ""},
		{"betweenFloat high", betweenFloat(0, 1), TypeDouble, "1.01", "value must be no more than 1"},
		{"in ok", in("delete", "compact"), TypeString, "compact", ""},
		{"in case-sensitive", in("CreateTime", "LogAppendTime"), TypeString, "createtime", "string must be one of: CreateTime, LogAppendTime"},
		{"listIn ok", listIn(true, "compact", "delete"), TypeList, "delete,compact", ""},
		{"listIn empty allowed", listIn(true, "compact", "delete"), TypeList, "", ""},
		{"listIn empty rejected", listIn(false, "broker"), TypeList, "", "the list must not be empty"},
		{"listIn unknown", listIn(true, "compact", "delete"), TypeList, "delete,nope", `element "nope" is not one of: compact, delete`},
		{"listIn duplicate", listIn(true, "compact", "delete"), TypeList, "delete, delete", `duplicate element "delete"`},
		{"list blank element", nonDuplicateList(false), TypeList, "a,,b", "the list must not contain blank elements"},
		{"gzip default", gzipLevel, TypeInt, "-1", ""},
		{"gzip 9", gzipLevel, TypeInt, "9", ""},
		{"gzip 0", gzipLevel, TypeInt, "0", "value must be -1 or between 1 and 9"},
		{"gzip 10", gzipLevel, TypeInt, "10", "value must be -1 or between 1 and 9"},
		{"throttled star", throttledReplicas, TypeList, "*", ""},
		{"throttled pairs", throttledReplicas, TypeList, "0:1, 1:2", ""},
		{"throttled empty", throttledReplicas, TypeList, "", ""},
		{"throttled bad", throttledReplicas, TypeList, "0:1,x", `element "x" is not of the form partitionId:brokerId`},
		{"throttled star mixed", throttledReplicas, TypeList, "*,0:1", `element "*"`},
		{"listeners ok", listenersValidator, TypeList, "PLAINTEXT://:9092,SSL://[::1]:9093", ""},
		{"listeners bad", listenersValidator, TypeList, "PLAINTEXT//:9092", "is not of the form NAME://host:port"},
		{"listeners dup", listenersValidator, TypeList, "A://:1,A://:1", "duplicate element"},
		{"voters ok", votersValidator, TypeList, "1@localhost:9093,2@[::1]:9094", ""},
		{"voters empty", votersValidator, TypeList, "", ""},
		{"voters bad", votersValidator, TypeList, "1localhost:9093", "id@host:port"},
		{"bootstrap ok", bootstrapServersValidator, TypeList, "a:1,b:2", ""},
		{"bootstrap bad", bootstrapServersValidator, TypeList, "a", "missing port"},
		{"protocol map ok", protocolMapValidator, TypeString, "A:PLAINTEXT, b:ssl", ""},
		{"protocol map bad", protocolMapValidator, TypeString, "A:TLS", `unknown security protocol "TLS"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := def("some.key", tt.typ, nullDefault, tt.v, ReadOnly, "doc")
			_, err := d.Normalize(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != InvalidValue || ce.Name != "some.key" || ce.Value != tt.in {
				t.Fatalf("want *Error InvalidValue for some.key, got %#v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "invalid value ") {
				t.Errorf("error %q should contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidValuesDescriptions(t *testing.T) {
	tests := map[string]string{
		"num.partitions":            "[1,...]",
		"compression.lz4.level":     "[1,...,17]",
		"compression.zstd.level":    "[-131072,...,22]",
		"compression.gzip.level":    "[1,...,9] or -1",
		"log.cleanup.policy":        "[compact, delete]",
		"compression.type":          "[uncompressed, zstd, lz4, snappy, gzip, producer]",
		"log.cleaner.threads":       "[1,...]",
		"controller.listener.names": "non-empty list of unique values",
		"log.retention.bytes":       "",
	}
	for name, want := range tests {
		d, _ := BrokerDef(name)
		if got := d.ValidValues(); got != want {
			t.Errorf("%s: ValidValues %q, want %q", name, got, want)
		}
	}
	if d, _ := TopicDef("min.cleanable.dirty.ratio"); d.ValidValues() != "[0,...,1]" {
		t.Errorf("ratio: %q", d.ValidValues())
	}
	if listIn(true, "a", "b").String() != "[a, b]" || nonDuplicateList(true).String() != "list of unique values" {
		t.Error("unexpected list descriptions")
	}
	if err := atLeast(0).validate("x"); err == nil {
		t.Error("numeric validator must reject non-numbers")
	}
}

func TestErrorMessages(t *testing.T) {
	d := def("ssl.key.password", TypePassword, nullDefault, check{"x", func(any) error { return errors.New("too short") }}, ReadOnly, "doc")
	_, err := d.Normalize("hunter2")
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "[hidden]") {
		t.Errorf("password values must be hidden: %v", err)
	}
	if !d.Sensitive() {
		t.Error("password type must be sensitive")
	}
	cases := map[*Error]string{
		{Kind: UnknownKey, Name: "foo"}:                          `unknown configuration "foo"`,
		{Kind: UnknownKey, Name: "foo", Reason: "why"}:           `unknown configuration "foo": why`,
		{Kind: NotDynamic, Name: "node.id", Reason: "is ro"}:     "configuration node.id is ro",
		{Kind: InvalidCombination, Name: "a", Reason: "bad"}:     "invalid configuration a: bad",
		{Kind: InvalidValue, Name: "a", Value: "v", Reason: "r"}: `invalid value "v" for configuration a: r`,
	}
	for e, want := range cases {
		if e.Error() != want {
			t.Errorf("got %q, want %q", e.Error(), want)
		}
	}
}
