package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Group config keys (the GROUP config resource, KIP-848): per-group
// overrides of the broker's group.consumer.* settings.
const (
	KeyGroupConsumerSessionTimeout    = "consumer.session.timeout.ms"
	KeyGroupConsumerHeartbeatInterval = "consumer.heartbeat.interval.ms"
)

var groupRegistry = newRegistry([]Def{
	withSynonyms(def(KeyGroupConsumerSessionTimeout, TypeInt, "45000", atLeast(1), ReadOnly,
		"The timeout to detect client failures when using the consumer group protocol."), "group.consumer.session.timeout.ms"),
	withSynonyms(def(KeyGroupConsumerHeartbeatInterval, TypeInt, "5000", atLeast(1), ReadOnly,
		"The heartbeat interval given to the members of a consumer group."), "group.consumer.heartbeat.interval.ms"),
})

func withSynonyms(d Def, names ...string) Def {
	d.Synonyms = syn(names...)
	return d
}

const (
	shareGroups   = "share groups (KIP-932)"
	streamsGroups = "streams groups (KIP-1071)"
)

// kafkaGroupKeys are Kafka 4.4's group config keys that weir does not
// serve, with the groups they configure, which weir does not have.
var kafkaGroupKeys = map[string]string{
	"share.session.timeout.ms": shareGroups, "share.heartbeat.interval.ms": shareGroups,
	"share.record.lock.duration.ms": shareGroups, "share.delivery.count.limit": shareGroups,
	"share.partition.max.record.locks": shareGroups, "share.auto.offset.reset": shareGroups,
	"share.isolation.level": shareGroups, "share.renew.acknowledge.enable": shareGroups,
	"share.assignment.interval.ms": shareGroups, "share.assignor.offload.enable": shareGroups,
	"errors.deadletterqueue.topic.name": shareGroups, "errors.deadletterqueue.copy.record.enable": shareGroups,
	"streams.session.timeout.ms": streamsGroups, "streams.heartbeat.interval.ms": streamsGroups,
	"streams.num.standby.replicas": streamsGroups, "streams.initial.rebalance.delay.ms": streamsGroups,
	"streams.assignment.interval.ms": streamsGroups, "streams.assignor.offload.enable": streamsGroups,
	"streams.task.offset.interval.ms": streamsGroups, "streams.num.warmup.replicas": streamsGroups,
	"streams.acceptable.recovery.lag": streamsGroups,
}

// GroupDefs returns the group config keys weir serves, sorted by name.
func GroupDefs() []Def { return groupRegistry.all() }

// ValidateGroupConfigs checks a group's complete set of dynamic configs
// as Kafka's GroupConfig.validate does, against the broker's
// group.consumer.min/max bounds (b): the first error, in key order, is
// returned with Kafka's message. Kafka's keys of share and streams groups
// are refused, naming the groups weir does not have.
func ValidateGroupConfigs(cfg map[string]string, b *Broker) error {
	parsed := map[string]int64{}
	for _, k := range sortedKeys(cfg) {
		d, ok := groupRegistry.byName[k]
		if !ok {
			if kind, ok := kafkaGroupKeys[k]; ok {
				return fmt.Errorf("Group config %s is not supported: weir does not have %s yet.", k, kind)
			}
			return fmt.Errorf("Unknown group config name: %s", k)
		}
		v, reason := parseTyped(d.Type, cfg[k])
		if reason == "" {
			if err := d.validator.validate(v); err != nil {
				reason = err.Error()
			}
		}
		if reason != "" {
			// Kafka's ConfigException message.
			return fmt.Errorf("Invalid value %s for configuration %s: %s", cfg[k], k, strings.ToUpper(reason[:1])+reason[1:])
		}
		parsed[k] = v.(int64)
	}
	inRange := func(key string, lo, hi time.Duration) error {
		v, ok := parsed[key]
		if ok && (v < lo.Milliseconds() || v > hi.Milliseconds()) {
			return fmt.Errorf("%s must be in the range %d to %d inclusive.", key, lo.Milliseconds(), hi.Milliseconds())
		}
		return nil
	}
	if err := inRange(KeyGroupConsumerHeartbeatInterval, b.ConsumerGroupMinHeartbeatInterval, b.ConsumerGroupMaxHeartbeatInterval); err != nil {
		return err
	}
	if err := inRange(KeyGroupConsumerSessionTimeout, b.ConsumerGroupMinSessionTimeout, b.ConsumerGroupMaxSessionTimeout); err != nil {
		return err
	}
	session, hasSession := parsed[KeyGroupConsumerSessionTimeout]
	heartbeat, hasHeartbeat := parsed[KeyGroupConsumerHeartbeatInterval]
	if !hasSession && !hasHeartbeat {
		return nil
	}
	if !hasSession {
		session = b.ConsumerGroupSessionTimeout.Milliseconds()
	}
	if !hasHeartbeat {
		heartbeat = b.ConsumerGroupHeartbeatInterval.Milliseconds()
	}
	if session <= heartbeat {
		return fmt.Errorf("%s must be greater than %s", KeyGroupConsumerSessionTimeout, KeyGroupConsumerHeartbeatInterval)
	}
	return nil
}

// GroupTimeouts are the consumer session timeout and heartbeat interval a
// group's GROUP configs set (zero where they set none).
func GroupTimeouts(cfg map[string]string) (session, heartbeat time.Duration) {
	get := func(key string) time.Duration {
		if v, err := strconv.ParseInt(strings.TrimSpace(cfg[key]), 10, 32); err == nil && v > 0 {
			return time.Duration(v) * time.Millisecond
		}
		return 0
	}
	return get(KeyGroupConsumerSessionTimeout), get(KeyGroupConsumerHeartbeatInterval)
}

// DescribeGroup describes the group config keys of a group with the given
// dynamic configs, as Kafka's DescribeConfigs answers a GROUP resource: a
// key set for the group has source GROUP_CONFIG (and that synonym); any
// other has source DEFAULT_CONFIG and the broker's value of its
// group.consumer.* synonym. Entries are sorted by name.
func DescribeGroup(cfg map[string]string, b *Broker) []Entry {
	session, heartbeat := GroupTimeouts(cfg)
	set := map[string]time.Duration{KeyGroupConsumerSessionTimeout: session, KeyGroupConsumerHeartbeatInterval: heartbeat}
	broker := map[string]time.Duration{KeyGroupConsumerSessionTimeout: b.ConsumerGroupSessionTimeout,
		KeyGroupConsumerHeartbeatInterval: b.ConsumerGroupHeartbeatInterval}
	out := make([]Entry, 0, len(groupRegistry.defs))
	for i := range groupRegistry.defs {
		d := &groupRegistry.defs[i]
		v := strconv.FormatInt(broker[d.Name].Milliseconds(), 10)
		e := Entry{Name: d.Name, Value: &v, Source: SourceDefault, Type: d.Type, Documentation: d.Doc}
		if set[d.Name] > 0 {
			v = strconv.FormatInt(set[d.Name].Milliseconds(), 10)
			e.Source = SourceGroup
			e.Synonyms = []ConfigSynonym{{Name: d.Name, Value: &v, Source: SourceGroup}}
		}
		out = append(out, e)
	}
	return out
}
