package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateTopicConfigs(t *testing.T) {
	if err := ValidateTopicConfigs(nil); err != nil {
		t.Errorf("nil: %v", err)
	}
	ok := map[string]string{"retention.ms": "-1", "cleanup.policy": "compact, delete", "min.cleanable.dirty.ratio": "0.1",
		"compression.type": "lz4", "compression.lz4.level": "17", "message.timestamp.type": "LogAppendTime",
		"leader.replication.throttled.replicas": "*", "max.message.bytes": "0", "min.compaction.lag.ms": "5",
		"max.compaction.lag.ms": "5", "remote.storage.enable": "false", "local.retention.ms": "-2"}
	if err := ValidateTopicConfigs(ok); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
	tests := []struct {
		name string
		cfg  map[string]string
		kind ErrorKind
		want string
	}{
		{"unknown key", map[string]string{"retention.ms": "1", "retention.hours": "1"}, UnknownKey, `unknown configuration "retention.hours": not a topic configuration`},
		{"broker key", map[string]string{"log.retention.ms": "1"}, UnknownKey, `"log.retention.ms"`},
		{"not a number", map[string]string{"retention.ms": "forever"}, InvalidValue, `invalid value "forever" for configuration retention.ms: not a number of type LONG`},
		{"below range", map[string]string{"retention.ms": "-2"}, InvalidValue, "retention.ms: value must be at least -1"},
		{"segment too small", map[string]string{"segment.bytes": "1000"}, InvalidValue, "segment.bytes: value must be at least 1048576"},
		{"ratio too big", map[string]string{"min.cleanable.dirty.ratio": "1.5"}, InvalidValue, "min.cleanable.dirty.ratio: value must be no more than 1"},
		{"bad policy", map[string]string{"cleanup.policy": "remove"}, InvalidValue, `cleanup.policy: element "remove" is not one of: compact, delete`},
		{"bad compression", map[string]string{"compression.type": "brotli"}, InvalidValue, "compression.type: string must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"bad boolean", map[string]string{"preallocate": "yes"}, InvalidValue, "preallocate: expected value to be either true or false"},
		{"tiered storage", map[string]string{"remote.storage.enable": "true"}, Unsupported, `unsupported configuration remote.storage.enable="true": weir does not implement tiered storage`},
		{"compaction lag conflict", map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "9"}, InvalidCombination, "min.compaction.lag.ms: (10) must not be greater than max.compaction.lag.ms (9)"},
		{"first error in key order", map[string]string{"segment.bytes": "x", "cleanup.policy": "x"}, InvalidValue, "cleanup.policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateTopicConfigs(tt.cfg)
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != tt.kind {
				t.Fatalf("want *Error kind %d, got %#v", tt.kind, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q should contain %q", err, tt.want)
			}
		})
	}
}

func TestValidateBrokerDynamic(t *testing.T) {
	tests := []struct {
		key, value  string
		kind        ErrorKind // 0 = valid
		defaultKind ErrorKind
		want        string
	}{
		{"log.retention.ms", "1000", 0, 0, ""},
		{"message.max.bytes", "2000000", 0, 0, ""},
		{"num.io.threads", "16", 0, 0, ""},
		{"listeners", "PLAINTEXT://:9092", NotDynamic, NotDynamic, "configuration listeners cannot be updated dynamically: weir reads it only at start-up (in Kafka it is per-broker)"},
		{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT", NotDynamic, NotDynamic, "listener.security.protocol.map"},
		{"num.replica.fetchers", "2", NotDynamic, NotDynamic, "weir reads it only at start-up (in Kafka it is cluster-wide)"},
		{"node.id", "2", NotDynamic, NotDynamic, "configuration node.id cannot be updated dynamically"},
		{"log.retention.hours", "1", NotDynamic, NotDynamic, "log.retention.hours cannot be updated dynamically"},
		{"no.such.key", "1", UnknownKey, UnknownKey, `unknown configuration "no.such.key": not a broker configuration`},
		{"log.retention.ms", "abc", InvalidValue, InvalidValue, `invalid value "abc" for configuration log.retention.ms`},
		{"num.io.threads", "0", InvalidValue, InvalidValue, "num.io.threads: value must be at least 1"},
	}
	for _, tt := range tests {
		for i, fn := range []func(string, string) error{ValidateBrokerDynamic, ValidateBrokerDynamicDefault} {
			kind := tt.kind
			if i == 1 {
				kind = tt.defaultKind
			}
			err := fn(tt.key, tt.value)
			if kind == 0 {
				if err != nil {
					t.Errorf("%s=%s (default=%v): %v", tt.key, tt.value, i == 1, err)
				}
				continue
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != kind || ce.Name != tt.key || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s=%s (default=%v): got %v, want kind %d containing %q", tt.key, tt.value, i == 1, err, kind, tt.want)
			}
		}
	}
}

func TestResolveTopicPrecedence(t *testing.T) {
	static := mustLoad(t, map[string]string{
		"log.retention.hours": "1", "log.retention.minutes": "30", "log.roll.hours": "2",
		"message.max.bytes": "2000000", "log.cleanup.policy": "compact", "compression.type": "gzip",
	})
	tests := []struct {
		name                         string
		topic, dynDefault, dynBroker map[string]string
		static                       *Broker
		key, want                    string
	}{
		{"built-in default", nil, nil, nil, nil, "retention.ms", "604800000"},
		{"static minutes beat hours", nil, nil, nil, static, "retention.ms", "1800000"},
		{"static hours converted", nil, nil, nil, mustLoad(t, map[string]string{"log.retention.hours": "3"}), "retention.ms", "10800000"},
		{"static ms beats minutes", nil, nil, nil, mustLoad(t, map[string]string{"log.retention.ms": "5000", "log.retention.minutes": "1"}), "retention.ms", "5000"},
		{"dynamic default beats static", nil, map[string]string{"log.retention.ms": "7000"}, nil, static, "retention.ms", "7000"},
		{"dynamic broker beats dynamic default", nil, map[string]string{"log.retention.ms": "7000"}, map[string]string{"log.retention.ms": "8000"}, static, "retention.ms", "8000"},
		{"topic beats everything", map[string]string{"retention.ms": "9000"}, map[string]string{"log.retention.ms": "7000"}, map[string]string{"log.retention.ms": "8000"}, static, "retention.ms", "9000"},
		{"higher level wins over better synonym", nil, map[string]string{"log.retention.hours": "5"}, nil, mustLoad(t, map[string]string{"log.retention.ms": "5000"}), "retention.ms", "18000000"},
		{"negative hours mean infinite", nil, nil, nil, mustLoad(t, map[string]string{"log.retention.hours": "-1"}), "retention.ms", "-1"},
		{"negative ms mean infinite", nil, nil, map[string]string{"log.retention.ms": "-5"}, nil, "retention.ms", "-1"},
		{"invalid topic value falls through", map[string]string{"retention.ms": "x"}, nil, nil, static, "retention.ms", "1800000"},
		{"invalid dynamic value falls through", nil, nil, map[string]string{"log.retention.ms": "x"}, static, "retention.ms", "1800000"},
		{"roll hours", nil, nil, nil, static, "segment.ms", "7200000"},
		{"roll ms beats hours", nil, map[string]string{"log.roll.ms": "1000"}, nil, static, "segment.ms", "1000"},
		{"invalid converted value falls through", nil, map[string]string{"log.roll.ms": "0"}, nil, static, "segment.ms", "7200000"},
		{"jitter hours", nil, nil, nil, mustLoad(t, map[string]string{"log.roll.jitter.hours": "1"}), "segment.jitter.ms", "3600000"},
		{"flush.ms from scheduler", nil, nil, nil, mustLoad(t, map[string]string{"log.flush.scheduler.interval.ms": "1000"}), "flush.ms", "1000"},
		{"flush.ms from flush interval", nil, nil, nil, mustLoad(t, map[string]string{"log.flush.scheduler.interval.ms": "1000", "log.flush.interval.ms": "500"}), "flush.ms", "500"},
		{"max.message.bytes from message.max.bytes", nil, nil, nil, static, "max.message.bytes", "2000000"},
		{"cleanup policy", nil, nil, nil, static, "cleanup.policy", "compact"},
		{"same-name synonym", nil, map[string]string{"compression.type": "zstd"}, nil, static, "compression.type", "zstd"},
		{"static only when set", nil, nil, nil, static, "segment.bytes", "1073741824"},
		{"no synonym", map[string]string{"follower.replication.throttled.replicas": "0:1"}, nil, nil, static, "follower.replication.throttled.replicas", "0:1"},
		{"normalized override", map[string]string{"cleanup.policy": " delete , compact "}, nil, nil, nil, "cleanup.policy", "delete,compact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResolveTopic(tt.topic, tt.dynDefault, tt.dynBroker, tt.static)
			if got.Values[tt.key] != tt.want {
				t.Errorf("%s = %q, want %q", tt.key, got.Values[tt.key], tt.want)
			}
		})
	}
}

func TestResolveTopicTyped(t *testing.T) {
	got := ResolveTopic(map[string]string{
		"cleanup.policy": "compact,delete", "message.timestamp.type": "LogAppendTime", "min.insync.replicas": "2",
		"unclean.leader.election.enable": "true", "preallocate": "true", "compression.zstd.level": "-5",
		"leader.replication.throttled.replicas": "0:1,1:2", "min.cleanable.dirty.ratio": "0.25", "segment.index.bytes": "4096",
		"retention.bytes": "1000", "max.message.bytes": "500",
	}, nil, nil, nil)
	if !got.CleanupPolicy.Delete || !got.CleanupPolicy.Compact || got.CleanupPolicy.String() != "compact,delete" {
		t.Errorf("policy %+v", got.CleanupPolicy)
	}
	if got.MessageTimestampType != LogAppendTime || got.MinInsyncReplicas != 2 || !got.UncleanLeaderElection || !got.Preallocate {
		t.Errorf("got %+v", got)
	}
	if got.CompressionZstdLevel != -5 || got.CompressionGzipLevel != -1 || got.CompressionLz4Level != 9 || got.CompressionType != "producer" {
		t.Errorf("compression %+v", got)
	}
	if !slices.Equal(got.LeaderThrottledReplicas, []string{"0:1", "1:2"}) || got.FollowerThrottledReplicas != nil {
		t.Errorf("throttled %v %v", got.LeaderThrottledReplicas, got.FollowerThrottledReplicas)
	}
	if got.MinCleanableDirtyRatio != 0.25 || got.SegmentIndexBytes != 4096 || got.RetentionBytes != 1000 || got.MaxMessageBytes != 500 {
		t.Errorf("numbers %+v", got)
	}
	def := ResolveTopic(nil, nil, nil, nil)
	want := Topic{SegmentBytes: 1073741824, SegmentMs: 604800000, RetentionMs: 604800000, RetentionBytes: -1,
		CleanupPolicy: CleanupPolicy{Delete: true}, MessageTimestampType: CreateTime, TimestampAfterMaxMs: 3600000,
		MaxMessageBytes: 1048588, MinInsyncReplicas: 1, LocalRetentionMs: -2}
	if def.SegmentBytes != want.SegmentBytes || def.SegmentMs != want.SegmentMs || def.RetentionMs != want.RetentionMs ||
		def.RetentionBytes != want.RetentionBytes || def.CleanupPolicy != want.CleanupPolicy ||
		def.MessageTimestampType != want.MessageTimestampType || def.TimestampAfterMaxMs != want.TimestampAfterMaxMs ||
		def.MaxMessageBytes != want.MaxMessageBytes || def.MinInsyncReplicas != want.MinInsyncReplicas ||
		def.LocalRetentionMs != want.LocalRetentionMs || def.RemoteStorageEnable || len(def.Values) != len(TopicDefs()) {
		t.Errorf("defaults %+v", def)
	}
	if p := (CleanupPolicy{}); p.String() != "" {
		t.Errorf("empty policy %q", p.String())
	}
}

func TestBrokerValue(t *testing.T) {
	static := mustLoad(t, map[string]string{KeyProducerIDExpiration: "3000"})
	dynBroker := map[string]string{KeyProducerIDExpiration: "1000"}
	dynDefault := map[string]string{KeyProducerIDExpiration: "2000"}
	for _, tt := range []struct {
		broker, def map[string]string
		static      *Broker
		want        int64
	}{
		{dynBroker, dynDefault, static, 1000},
		{map[string]string{KeyProducerIDExpiration: "0"}, dynDefault, static, 2000}, // invalid: skipped
		{nil, dynDefault, static, 2000},
		{nil, nil, static, 3000},
		{nil, nil, nil, 86400000},
	} {
		if got := ResolveTopic(nil, tt.def, tt.broker, tt.static).ProducerIDExpirationMs; got != tt.want {
			t.Errorf("producer.id.expiration.ms from %v %v: %d, want %d", tt.broker, tt.def, got, tt.want)
		}
	}
	if got := BrokerValue("leader.replication.throttled.rate", nil, map[string]string{"leader.replication.throttled.rate": "77"}, static); got != "77" {
		t.Errorf("leader.replication.throttled.rate = %q", got)
	}
	if got := BrokerValue("log.roll.ms", nil, nil, nil); got != "" {
		t.Errorf("null default = %q", got)
	}
}

func TestConvertSynonymSaturates(t *testing.T) {
	d := topicRegistry.byName[TopicSegmentMs]
	if v, ok := convertSynonym(d, Synonym{"log.roll.hours", msPerHour}, "9223372036854775807"); !ok || v != "9223372036854775807" {
		t.Errorf("got %q %v", v, ok)
	}
	r := topicRegistry.byName[TopicRetentionMs]
	if v, ok := convertSynonym(r, Synonym{"log.retention.hours", msPerHour}, "-9223372036854775807"); !ok || v != "-1" {
		t.Errorf("got %q %v", v, ok)
	}
	if _, ok := convertSynonym(r, Synonym{"log.retention.hours", msPerHour}, "x"); ok {
		t.Error("non-number must fail")
	}
}

// Every broker synonym of a topic key supplies the topic's value, in the
// topic key's unit, when set statically or dynamically.
func TestSynonymsSupplyTopicKeys(t *testing.T) {
	for _, td := range TopicDefs() {
		for _, s := range td.Synonyms {
			bd, _ := BrokerDef(s.Name)
			v := otherValue(t, bd)
			if td.Name == TopicRetentionMs || s.Scale > 1 {
				v = "7" // a positive time whatever the unit
			}
			want, ok := convertSynonym(topicRegistry.byName[td.Name], s, mustNormalize(t, bd, v))
			if !ok {
				t.Fatalf("%s=%s is not a valid %s", s.Name, v, td.Name)
			}
			props := map[string]string{s.Name: v}
			if bd.Name == "log.cleaner.min.compaction.lag.ms" {
				props["log.cleaner.max.compaction.lag.ms"] = v
			}
			static, _, err := LoadBroker(props)
			if err != nil {
				t.Fatalf("%s=%s: %v", s.Name, v, err)
			}
			if got := ResolveTopic(nil, nil, nil, static).Values[td.Name]; got != want {
				t.Errorf("static %s=%s gives %s=%s, want %s", s.Name, v, td.Name, got, want)
			}
			if bd.Dynamic() {
				if got := ResolveTopic(nil, nil, map[string]string{s.Name: v}, nil).Values[td.Name]; got != want {
					t.Errorf("dynamic %s=%s gives %s=%s, want %s", s.Name, v, td.Name, got, want)
				}
			}
		}
	}
}

func mustNormalize(t *testing.T, d Def, v string) string {
	t.Helper()
	n, err := d.Normalize(v)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
