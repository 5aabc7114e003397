package mirror

import (
	"strings"
	"testing"
	"time"
)

func base() map[string]string {
	return map[string]string{
		"clusters":                   "A, B",
		"A.bootstrap.servers":        "a1:9092,a2:9092",
		"B.bootstrap.servers":        "b1:9092",
		"A->B.enabled":               "true",
		"sync.topic.configs.enabled": "false",
		"sync.topic.acls.enabled":    "false",
		"emit.checkpoints.enabled":   "false",
	}
}

func parse(t *testing.T, over map[string]string) (*Config, []string, error) {
	t.Helper()
	props := base()
	for k, v := range over {
		if v == "<unset>" {
			delete(props, k)
		} else {
			props[k] = v
		}
	}
	return Parse(props)
}

func TestParseDefaults(t *testing.T) {
	cfg, warns, err := parse(t, nil)
	if err != nil || len(warns) != 0 {
		t.Fatalf("Parse: %v, warnings %q", err, warns)
	}
	if len(cfg.Flows) != 1 {
		t.Fatalf("flows %d, want only A->B (B->A is disabled by default)", len(cfg.Flows))
	}
	f := cfg.Flows[0]
	if f.Name() != "A->B" || f.ReplicationFactor != 2 || f.OffsetSyncsReplicationFactor != 3 ||
		f.CheckpointsReplicationFactor != 3 || f.HeartbeatsReplicationFactor != 3 || f.PositionsReplicationFactor != 3 || f.OffsetLagMax != 100 ||
		f.OffsetSyncsOnTarget || !f.EmitOffsetSyncs || !f.HeartbeatsReplication ||
		f.HeartbeatsInterval != time.Second || f.CheckpointsInterval != 0 ||
		f.RefreshTopicsInterval != 600*time.Second || f.RefreshGroupsInterval != 600*time.Second {
		t.Errorf("defaults: %+v", f)
	}
	if f.OffsetSyncsTopic() != "mm2-offset-syncs.B.internal" || f.PositionsTopic() != "mm2-offsets.A.internal" {
		t.Errorf("internal topics %s %s", f.OffsetSyncsTopic(), f.PositionsTopic())
	}
	if got := cfg.Clusters["A"].Bootstrap; len(got) != 2 || got[1] != "a2:9092" {
		t.Errorf("A bootstrap %q", got)
	}
	for topic, want := range map[string]bool{"orders": true, "x-internal": false, "x.internal": false, "y.replica": false, "__x": false} {
		if f.Topics.Match(topic) != want {
			t.Errorf("default topic filter on %q: %v", topic, !want)
		}
	}
	for group, want := range map[string]bool{"app": true, "console-consumer-1": false, "connect-x": false, "__g": false} {
		if f.Groups.Match(group) != want {
			t.Errorf("default group filter on %q: %v", group, !want)
		}
	}
}

func TestParseOverrides(t *testing.T) {
	cfg, _, err := parse(t, map[string]string{
		"topics":                            "orders|pay.*, audit",
		"A->B.topics.exclude":               "payroll",
		"B->A.enabled":                      "TRUE",
		"B->A.replication.policy.separator": "_",
		"replication.factor":                "1",
		"A->B.offset.lag.max":               "0",
		"A->B.offset-syncs.topic.location":  "target",
		"emit.heartbeats.interval.seconds":  "5",
		"B->A.emit.heartbeats.enabled":      "false",
		"refresh.topics.interval.seconds":   "-1",
		"A.client.id":                       "mirror-a",
		"A.security.protocol":               "plaintext",
		"A->B.replication.policy.class":     "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
		"B->A.replication.policy.class":     "DefaultReplicationPolicy",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Flows) != 2 {
		t.Fatalf("%d flows", len(cfg.Flows))
	}
	ab, ba := cfg.Flows[0], cfg.Flows[1]
	if ab.Name() != "A->B" || ba.Name() != "B->A" {
		t.Fatalf("flows %s %s", ab.Name(), ba.Name())
	}
	for topic, want := range map[string]bool{"orders": true, "payments": true, "payroll": false, "audit": true, "audits": false, "xorders": false} {
		if ab.Topics.Match(topic) != want {
			t.Errorf("A->B filter on %q: %v", topic, !want)
		}
	}
	if !ba.Topics.Match("payroll") {
		t.Error("A->B's exclude leaked into B->A")
	}
	if ab.OffsetLagMax != 0 || ba.OffsetLagMax != 100 || !ab.OffsetSyncsOnTarget || ab.OffsetSyncsTopic() != "mm2-offset-syncs.A.internal" {
		t.Errorf("per-flow values: %+v %+v", ab, ba)
	}
	if ab.ReplicationFactor != 1 || ba.ReplicationFactor != 1 {
		t.Error("top-level replication.factor not applied to both flows")
	}
	if ab.HeartbeatsInterval != 5*time.Second || ba.HeartbeatsInterval != 0 || ab.RefreshTopicsInterval != 0 {
		t.Errorf("intervals %v %v %v", ab.HeartbeatsInterval, ba.HeartbeatsInterval, ab.RefreshTopicsInterval)
	}
	if ba.Policy.FormatRemoteTopic("B", "t") != "B_t" || ab.Policy.FormatRemoteTopic("A", "t") != "A.t" {
		t.Error("policies")
	}
	if cfg.Clusters["A"].ClientID != "mirror-a" {
		t.Error("A.client.id")
	}
}

func TestParseWarnings(t *testing.T) {
	_, warns, err := parse(t, map[string]string{
		"no.such.key":       "1",
		"A->B.no.such":      "1",
		"A.fetch.max.bytes": "1",
		"tasks.max":         "4",
	})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(warns, "\n")
	for _, want := range []string{"no.such.key", "A->B.no.such", "A.fetch.max.bytes"} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning about %s in %q", want, all)
		}
	}
}

func TestParseExactlyOnce(t *testing.T) {
	for _, c := range []struct {
		over map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"exactly.once.support": "requested"}, false},
		{map[string]string{"exactly.once.support": "required"}, true},
		{map[string]string{"A->B.exactly.once.support": "required"}, true},
		{map[string]string{"B.exactly.once.source.support": "enabled"}, true},
		{map[string]string{"A.exactly.once.source.support": "enabled"}, false}, // A is not the target
		{map[string]string{"exactly.once.source.support": "enabled"}, true},
		{map[string]string{"exactly.once.source.support": "enabled", "B.exactly.once.source.support": "preparing"}, false},
	} {
		cfg, _, err := parse(t, c.over)
		if err != nil {
			t.Fatalf("%v: %v", c.over, err)
		}
		if got := cfg.Flows[0].ExactlyOnce; got != c.want {
			t.Errorf("%v: exactly once %v, want %v", c.over, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		over map[string]string
		key  string // the error names it
	}{
		{map[string]string{"clusters": ""}, "clusters"},
		{map[string]string{"B.bootstrap.servers": "<unset>"}, "B.bootstrap.servers"},
		{map[string]string{"A->B.enabled": "yes"}, "A->B.enabled"},
		{map[string]string{"topics": "(unclosed"}, "topics"},
		{map[string]string{"A->B.groups.exclude": "a(?=b)"}, "A->B.groups.exclude"},
		{map[string]string{"replication.factor": "0"}, "replication.factor"},
		{map[string]string{"A->B.heartbeats.topic.replication.factor": "x"}, "A->B.heartbeats.topic.replication.factor"},
		{map[string]string{"offset-syncs.topic.location": "middle"}, "offset-syncs.topic.location"},
		{map[string]string{"offset.lag.max": "-1"}, "offset.lag.max"},
		{map[string]string{"emit.heartbeats.enabled": "1"}, "emit.heartbeats.enabled"},
		{map[string]string{"refresh.topics.interval.seconds": "0"}, "refresh.topics.interval.seconds"},
		{map[string]string{"replication.policy.class": "com.example.Policy"}, "replication.policy.class"},
		{map[string]string{"replication.policy.separator": ""}, "replication.policy.class"},
		{map[string]string{"A.security.protocol": "SASL_SSL", "A.sasl.mechanism": "PLAIN"}, "cluster A: client property sasl.jaas.config is needed"},
		{map[string]string{"A.security.protocol": "SASL_SSL", "A.sasl.mechanism": "GSSAPI"}, "cluster A: client property sasl.mechanism: GSSAPI is not supported"},
		{map[string]string{"A.security.protocol": "SSL", "A.ssl.truststore.type": "JKS"}, "cluster A: client property ssl.truststore.type: JKS is not supported"},
		{map[string]string{"A.security.protocol": "TLS"}, "cluster A: client property security.protocol: unknown protocol"},
		{map[string]string{"B.consumer.sasl.mechanism": "PLAIN"}, "B.consumer.sasl.mechanism: weir's mirror takes security settings per cluster"},
		{map[string]string{"A.ssl.truststore.location": "/x"}, "cluster A: client property ssl.truststore.location has no effect with security.protocol=PLAINTEXT"},
		{map[string]string{"A.ssl.keymanager.algorithm": "SunX509"}, "A.ssl.keymanager.algorithm: not supported yet"},
		{map[string]string{"exactly.once.support": "always"}, "exactly.once.support"},
		{map[string]string{"B.exactly.once.source.support": "on"}, "B.exactly.once.source.support"},
		{map[string]string{"exactly.once.source.support": "yes"}, "exactly.once.source.support"},
		{map[string]string{"A->B.use.defaults.from": "both"}, "A->B.use.defaults.from"},
		{map[string]string{"config.properties.exclude": "a(?=b)"}, "config.properties.exclude"},
		{map[string]string{"A->B.sync.group.offsets.enabled": "true", "emit.checkpoints.enabled": "false"}, "A->B.sync.group.offsets.enabled"},
		{map[string]string{"emit.checkpoints.enabled": "true", "A->B.emit.offset-syncs.enabled": "false"}, "A->B.emit.offset-syncs.enabled"},
		{map[string]string{"tasks.max": "0"}, "tasks.max"},
		{map[string]string{"session.timeout.ms": "-5"}, "session.timeout.ms"},
		{map[string]string{"heartbeat.interval.ms": "20000"}, "heartbeat.interval.ms"},
		{map[string]string{"replication.policy.class": "IdentityReplicationPolicy", "B->A.enabled": "true"}, "IdentityReplicationPolicy"},
	}
	for _, c := range cases {
		_, _, err := parse(t, c.over)
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%v: error %v, want one naming %s", c.over, err, c.key)
		}
	}
}
