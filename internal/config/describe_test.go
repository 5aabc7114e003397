package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

func find(t *testing.T, entries []Entry, name string) Entry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

// synString renders synonyms compactly: "name=value@SOURCE;...".
func synString(syns []ConfigSynonym) string {
	parts := make([]string, len(syns))
	for i, s := range syns {
		v := "<nil>"
		if s.Value != nil {
			v = *s.Value
		}
		parts[i] = fmt.Sprintf("%s=%s@%s", s.Name, v, s.Source)
	}
	return strings.Join(parts, ";")
}

func val(e Entry) string {
	if e.Value == nil {
		return "<nil>"
	}
	return *e.Value
}

func TestDescribeTopic(t *testing.T) {
	entries := DescribeTopic(nil, nil, nil, nil)
	if len(entries) != len(TopicDefs()) || !sort.SliceIsSorted(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name }) {
		t.Fatalf("want %d sorted entries, got %d", len(TopicDefs()), len(entries))
	}
	for _, e := range entries {
		if e.ReadOnly || e.IsSensitive || e.Documentation == "" || e.Type == TypeUnknown || e.Value == nil {
			t.Errorf("%s: unexpected entry %+v", e.Name, e)
		}
	}
	e := find(t, entries, "retention.ms")
	if val(e) != "604800000" || e.Source != SourceDefault || e.Type != TypeLong ||
		synString(e.Synonyms) != "log.retention.hours=168@DEFAULT_CONFIG" {
		t.Errorf("retention.ms default: %s %s %s", val(e), e.Source, synString(e.Synonyms))
	}
	if e := find(t, entries, "remote.storage.enable"); e.Source != SourceDefault || len(e.Synonyms) != 0 || val(e) != "false" {
		t.Errorf("no-synonym key: %+v", e)
	}
	if e := find(t, entries, "cleanup.policy"); e.Type != TypeList || synString(e.Synonyms) != "log.cleanup.policy=delete@DEFAULT_CONFIG" {
		t.Errorf("cleanup.policy: %+v", e)
	}

	static := mustLoad(t, map[string]string{"log.retention.hours": "1"})
	e = find(t, DescribeTopic(nil, nil, nil, static), "retention.ms")
	if val(e) != "3600000" || e.Source != SourceStaticBroker ||
		synString(e.Synonyms) != "log.retention.hours=1@STATIC_BROKER_CONFIG;log.retention.hours=168@DEFAULT_CONFIG" {
		t.Errorf("static hours: %s %s %s", val(e), e.Source, synString(e.Synonyms))
	}

	static = mustLoad(t, map[string]string{"log.retention.minutes": "10", "log.retention.hours": "2"})
	entries = DescribeTopic(
		map[string]string{"retention.ms": "1000"},
		map[string]string{"log.retention.ms": "2000"},
		map[string]string{"log.retention.ms": "3000"},
		static)
	e = find(t, entries, "retention.ms")
	want := "retention.ms=1000@DYNAMIC_TOPIC_CONFIG;log.retention.ms=2000@DYNAMIC_BROKER_CONFIG;" +
		"log.retention.ms=3000@DYNAMIC_DEFAULT_BROKER_CONFIG;log.retention.minutes=10@STATIC_BROKER_CONFIG;" +
		"log.retention.hours=2@STATIC_BROKER_CONFIG;log.retention.hours=168@DEFAULT_CONFIG"
	if val(e) != "1000" || e.Source != SourceDynamicTopic || synString(e.Synonyms) != want {
		t.Errorf("all levels: %s %s\n got %s\nwant %s", val(e), e.Source, synString(e.Synonyms), want)
	}
	// Without the topic override the per-broker dynamic value is effective.
	e = find(t, DescribeTopic(nil, map[string]string{"log.retention.ms": "2000"}, map[string]string{"log.retention.ms": "3000"}, static), "retention.ms")
	if val(e) != "2000" || e.Source != SourceDynamicBroker {
		t.Errorf("dynamic broker: %s %s", val(e), e.Source)
	}
	e = find(t, DescribeTopic(nil, nil, map[string]string{"log.retention.ms": "3000"}, static), "retention.ms")
	if val(e) != "3000" || e.Source != SourceDynamicDefaultBroker {
		t.Errorf("dynamic default: %s %s", val(e), e.Source)
	}
	// Invalid values are neither effective nor listed.
	e = find(t, DescribeTopic(map[string]string{"retention.ms": "bad", "unknown.key": "1"}, map[string]string{"log.retention.ms": "x"}, nil, nil), "retention.ms")
	if val(e) != "604800000" || e.Source != SourceDefault || len(e.Synonyms) != 1 {
		t.Errorf("invalid ignored: %s %s %s", val(e), e.Source, synString(e.Synonyms))
	}
	// Effective value always equals the first synonym's converted value.
	e = find(t, DescribeTopic(nil, nil, nil, mustLoad(t, map[string]string{"log.roll.hours": "3"})), "segment.ms")
	if val(e) != "10800000" || synString(e.Synonyms) != "log.roll.hours=3@STATIC_BROKER_CONFIG;log.roll.hours=168@DEFAULT_CONFIG" {
		t.Errorf("segment.ms: %s %s", val(e), synString(e.Synonyms))
	}
}

func TestDescribeBroker(t *testing.T) {
	entries := DescribeBroker(nil, nil, nil)
	if len(entries) != len(BrokerDefs()) {
		t.Fatalf("got %d entries", len(entries))
	}
	e := find(t, entries, "log.retention.ms")
	if e.Value != nil || e.Source != SourceDefault || len(e.Synonyms) != 0 || e.ReadOnly {
		t.Errorf("null default: %+v", e)
	}
	e = find(t, entries, "log.retention.hours")
	if val(e) != "168" || !e.ReadOnly || e.Type != TypeInt || synString(e.Synonyms) != "log.retention.hours=168@DEFAULT_CONFIG" {
		t.Errorf("hours: %+v", e)
	}
	if e := find(t, entries, "node.id"); !e.ReadOnly || val(e) != "1" {
		t.Errorf("node.id: %+v", e)
	}
	// weir reads listeners only at start-up (Kafka: per-broker).
	if e := find(t, entries, "listeners"); !e.ReadOnly || e.Type != TypeList {
		t.Errorf("listeners: %+v", e)
	}
	if e := find(t, entries, "ssl.keystore.password"); !e.ReadOnly || !e.IsSensitive || e.Value != nil || e.Type != TypePassword {
		t.Errorf("ssl.keystore.password: %+v", e)
	}

	static := mustLoad(t, map[string]string{"log.retention.ms": "5000", "log.retention.hours": "2", "producer.id.expiration.ms": "4"})
	dynBroker := map[string]string{"producer.id.expiration.ms": "16", "message.max.bytes": "bad"}
	dynDefault := map[string]string{"producer.id.expiration.ms": "12", "message.max.bytes": "2000000"}
	entries = DescribeBroker(dynBroker, dynDefault, static)
	tests := []struct {
		name, value string
		source      Source
		synonyms    string
	}{
		{"log.retention.ms", "5000", SourceStaticBroker,
			"log.retention.ms=5000@STATIC_BROKER_CONFIG;log.retention.hours=2@STATIC_BROKER_CONFIG;log.retention.hours=168@DEFAULT_CONFIG"},
		{"log.retention.hours", "2", SourceStaticBroker,
			"log.retention.hours=2@STATIC_BROKER_CONFIG;log.retention.hours=168@DEFAULT_CONFIG"},
		{"log.retention.minutes", "<nil>", SourceDefault, ""},
		{"producer.id.expiration.ms", "16", SourceDynamicBroker,
			"producer.id.expiration.ms=16@DYNAMIC_BROKER_CONFIG;producer.id.expiration.ms=12@DYNAMIC_DEFAULT_BROKER_CONFIG;producer.id.expiration.ms=4@STATIC_BROKER_CONFIG;producer.id.expiration.ms=86400000@DEFAULT_CONFIG"},
		{"message.max.bytes", "2000000", SourceDynamicDefaultBroker,
			"message.max.bytes=2000000@DYNAMIC_DEFAULT_BROKER_CONFIG;message.max.bytes=1048588@DEFAULT_CONFIG"},
		{"log.flush.scheduler.interval.ms", maxLong, SourceDefault, "log.flush.scheduler.interval.ms=" + maxLong + "@DEFAULT_CONFIG"},
	}
	for _, tt := range tests {
		e := find(t, entries, tt.name)
		if val(e) != tt.value || e.Source != tt.source || synString(e.Synonyms) != tt.synonyms {
			t.Errorf("%s: got %s %s %q\nwant %s %s %q", tt.name, val(e), e.Source, synString(e.Synonyms), tt.value, tt.source, tt.synonyms)
		}
	}
}

func TestDescribeBrokerDefaults(t *testing.T) {
	entries := DescribeBrokerDefaults(map[string]string{
		"log.retention.ms": "1000", "no.such.key": "1", "num.io.threads": "zero", "log.cleanup.policy": "compact , delete",
	})
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"log.cleanup.policy", "log.retention.ms"}) {
		t.Fatalf("names %v", names)
	}
	e := entries[1]
	if val(e) != "1000" || e.Source != SourceDynamicDefaultBroker || e.ReadOnly ||
		synString(e.Synonyms) != "log.retention.ms=1000@DYNAMIC_DEFAULT_BROKER_CONFIG" {
		t.Errorf("entry %+v / %s", e, synString(e.Synonyms))
	}
	if val(entries[0]) != "compact,delete" {
		t.Errorf("normalized list: %s", val(entries[0]))
	}
	if DescribeBrokerDefaults(nil) != nil {
		t.Error("no defaults, no entries")
	}
}

func TestHideSensitive(t *testing.T) {
	pw := def("x", TypePassword, nullDefault, nil, ReadOnly, "doc")
	if hide(&pw, "secret") != nil {
		t.Error("passwords must be hidden")
	}
	s := def("y", TypeString, nullDefault, nil, ReadOnly, "doc")
	if v := hide(&s, "plain"); v == nil || *v != "plain" {
		t.Error("plain values shown")
	}
}
