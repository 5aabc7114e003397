package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// CleanupPolicy is the parsed cleanup.policy. Both false (an empty list)
// means segments are never deleted nor compacted.
type CleanupPolicy struct {
	Delete  bool
	Compact bool
}

// String returns the policy in cleanup.policy syntax.
func (p CleanupPolicy) String() string {
	var parts []string
	if p.Compact {
		parts = append(parts, "compact")
	}
	if p.Delete {
		parts = append(parts, "delete")
	}
	return strings.Join(parts, ",")
}

// TimestampType is the value of message.timestamp.type.
type TimestampType string

// Timestamp types.
const (
	CreateTime    TimestampType = "CreateTime"
	LogAppendTime TimestampType = "LogAppendTime"
)

// Topic is the effective configuration of one topic. Times are in
// milliseconds, as on the wire; Kafka's Long.MAX_VALUE means "never".
type Topic struct {
	SegmentBytes           int64
	SegmentMs              int64
	SegmentJitterMs        int64
	SegmentIndexBytes      int32
	IndexIntervalBytes     int32
	RetentionMs            int64 // -1: keep forever
	RetentionBytes         int64 // -1: no size limit
	CleanupPolicy          CleanupPolicy
	DeleteRetentionMs      int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MinCleanableDirtyRatio float64
	FlushMessages          int64
	FlushMs                int64
	MaxMessageBytes        int32
	FileDeleteDelayMs      int64
	MessageTimestampType   TimestampType
	TimestampBeforeMaxMs   int64
	TimestampAfterMaxMs    int64
	CompressionType        string // uncompressed, zstd, lz4, snappy, gzip or producer
	CompressionGzipLevel   int32
	CompressionLz4Level    int32
	CompressionZstdLevel   int32
	MinInsyncReplicas      int
	UncleanLeaderElection  bool
	Preallocate            bool
	// Throttled replicas: "*" alone, or partition:broker pairs.
	LeaderThrottledReplicas   []string
	FollowerThrottledReplicas []string
	RemoteStorageEnable       bool
	LocalRetentionMs          int64
	LocalRetentionBytes       int64
	// ProducerIDExpirationMs is the broker's producer.id.expiration.ms,
	// which is not a topic key: Kafka applies it to every partition of
	// the broker.
	ProducerIDExpirationMs int64

	// Values holds the normalized effective value of every topic key.
	Values map[string]string
}

// ValidateTopicConfigs checks per-topic overrides as CreateTopics,
// AlterConfigs and IncrementalAlterConfigs must: unknown keys, invalid
// values and Refused keys set to anything but their default are errors, and min.compaction.lag.ms must not exceed
// max.compaction.lag.ms (keys not in cfg take their topic defaults). The
// first problem in key order is returned as an *Error.
func ValidateTopicConfigs(cfg map[string]string) error {
	keys := sortedKeys(cfg)
	norm := make(map[string]string, len(cfg))
	for _, k := range keys {
		d, ok := topicRegistry.byName[k]
		if !ok {
			return &Error{Kind: UnknownKey, Name: k, Reason: "not a topic configuration"}
		}
		v, err := d.Normalize(cfg[k])
		if err == nil {
			err = d.refusal(cfg[k], v)
		}
		if err != nil {
			return err
		}
		norm[k] = v
	}
	lookup := func(name string) int64 {
		v, ok := norm[name]
		if !ok {
			v = topicRegistry.byName[name].Default
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	if lo, hi := lookup(TopicMinCompactionLagMs), lookup(TopicMaxCompactionLagMs); lo > hi {
		return combinationError(TopicMinCompactionLagMs, "(%d) must not be greater than %s (%d)", lo, TopicMaxCompactionLagMs, hi)
	}
	return nil
}

// ValidateBrokerDynamic checks a dynamic update of one broker key for a
// specific broker (DYNAMIC_BROKER_CONFIG): the key must be known and
// dynamically updatable, and the value must be valid.
//
// A key weir refuses (see [Refused]) is refused whatever its value, with
// Kind Unsupported; so is an undefined key of a refused family (ssl.*,
// sasl.*, listener.name.*, super.users, ...).
func ValidateBrokerDynamic(key, value string) error {
	d, ok := brokerRegistry.byName[key]
	_, isHandler := callbackKey(key)
	if _, _, isJAAS := jaasKey(key); !ok && (isJAAS || isHandler) {
		return &Error{Kind: NotDynamic, Name: key, Reason: "cannot be updated dynamically: weir reads it only at start-up (in Kafka it is per-broker)"}
	}
	if !ok {
		if err := checkUnknownBroker(key, value); err != nil {
			return err
		}
		return &Error{Kind: UnknownKey, Name: key, Reason: "not a broker configuration"}
	}
	if d.Support == Refused {
		return unsupported(key, value, d.Reason, d.Sensitive())
	}
	if !d.Dynamic() {
		reason := "cannot be updated dynamically; it is read-only"
		if d.startupOnly {
			reason = fmt.Sprintf("cannot be updated dynamically: weir reads it only at start-up (in Kafka it is %s)", d.KafkaUpdate)
		}
		return &Error{Kind: NotDynamic, Name: key, Reason: reason}
	}
	_, err := d.Normalize(value)
	return err
}

// ValidateBrokerDynamicDefault is ValidateBrokerDynamic for the cluster-wide
// default (DYNAMIC_DEFAULT_BROKER_CONFIG), which additionally rejects
// per-broker keys such as listeners.
func ValidateBrokerDynamicDefault(key, value string) error {
	if err := ValidateBrokerDynamic(key, value); err != nil {
		return err
	}
	if brokerRegistry.byName[key].Update == PerBroker {
		return &Error{Kind: NotDynamic, Name: key, Reason: "can only be updated for a specific broker, not as a cluster-wide default"}
	}
	return nil
}

// TopicDefaults returns the configuration a topic without overrides gets
// from this broker's static configuration and the built-in defaults.
func (b *Broker) TopicDefaults() Topic { return ResolveTopic(nil, nil, nil, b) }

// ResolveTopic computes a topic's effective configuration with Kafka's
// precedence: topic override > dynamic per-broker > dynamic cluster-wide
// default > static (keys set in static's properties) > built-in default.
// Broker levels are read through each topic key's synonyms in order, with
// minutes and hours converted to milliseconds; a negative effective
// retention is -1. Values that do not validate are skipped, falling through
// to the next candidate. static may be nil (no static settings).
//
// Note the parameter order: cluster-wide defaults come before per-broker
// overrides here, while DescribeTopic takes them in precedence order.
func ResolveTopic(topicOverrides, dynamicClusterDefaults, dynamicBrokerOverrides map[string]string, static *Broker) Topic {
	values := make(map[string]string, len(topicRegistry.defs))
	for i := range topicRegistry.defs {
		d := &topicRegistry.defs[i]
		values[d.Name] = d.Default
		for _, c := range topicCandidates(d, topicOverrides, dynamicBrokerOverrides, dynamicClusterDefaults, static) {
			if c.valid {
				values[d.Name] = c.topicValue
				break
			}
		}
	}
	t := topicFromValues(values)
	t.ProducerIDExpirationMs, _ = strconv.ParseInt(BrokerValue(KeyProducerIDExpiration, dynamicBrokerOverrides, dynamicClusterDefaults, static), 10, 64)
	return t
}

// BrokerValue returns the normalized value of broker key name for this
// broker: the first valid value of dynamic per-broker, dynamic cluster-wide
// default, static (keys set in static's properties; static may be nil) and
// built-in default; "" when none has one. The key must be defined.
func BrokerValue(name string, dynBroker, dynDefault map[string]string, static *Broker) string {
	d := brokerRegistry.byName[name]
	for _, m := range []map[string]string{dynBroker, dynDefault} {
		if raw, ok := m[name]; ok {
			if v, err := d.Normalize(raw); err == nil {
				return v
			}
		}
	}
	if static != nil && static.Set[name] {
		return static.Values[name]
	}
	return d.Default
}

// candidate is one place a topic key's value can come from.
type candidate struct {
	name       string // key that holds the value
	value      string // normalized value of that key
	source     Source
	topicValue string // value in the topic key's type and unit
	valid      bool   // topicValue passes the topic key's validation
}

// topicCandidates lists every value that can supply topic key d, highest
// precedence first: the topic override, then for each broker level
// (dynamic per-broker, dynamic default, static, default) the synonyms in
// order. Broker values that are not valid broker values are left out.
func topicCandidates(d *Def, topic, dynBroker, dynDefault map[string]string, static *Broker) []candidate {
	var out []candidate
	if raw, ok := topic[d.Name]; ok {
		if v, err := d.Normalize(raw); err == nil {
			out = append(out, candidate{d.Name, v, SourceDynamicTopic, v, true})
		}
	}
	addLevel := func(src Source, lookup func(name string) (string, bool)) {
		for _, s := range d.Synonyms {
			bd := brokerRegistry.byName[s.Name]
			if bd == nil {
				continue
			}
			raw, ok := lookup(s.Name)
			if !ok {
				continue
			}
			v, err := bd.Normalize(raw)
			if err != nil {
				continue
			}
			tv, valid := convertSynonym(d, s, v)
			out = append(out, candidate{s.Name, v, src, tv, valid})
		}
	}
	addLevel(SourceDynamicBroker, fromMap(dynBroker))
	addLevel(SourceDynamicDefaultBroker, fromMap(dynDefault))
	addLevel(SourceStaticBroker, func(n string) (string, bool) {
		if static == nil || !static.Set[n] {
			return "", false
		}
		return static.Values[n], true
	})
	addLevel(SourceDefault, func(n string) (string, bool) {
		bd := brokerRegistry.byName[n]
		return bd.Default, bd.HasDefault
	})
	return out
}

// convertSynonym turns a normalized broker value into the topic key's unit
// and validates it as a topic value.
func convertSynonym(d *Def, s Synonym, v string) (string, bool) {
	if s.Scale > 1 || d.negInfinite {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", false
		}
		switch {
		case n > math.MaxInt64/s.Scale:
			n = math.MaxInt64
		case n < math.MinInt64/s.Scale:
			n = math.MinInt64
		default:
			n *= s.Scale
		}
		if d.negInfinite && n < 0 {
			n = -1
		}
		v = strconv.FormatInt(n, 10)
	}
	tv, err := d.Normalize(v)
	return tv, err == nil
}

func topicFromValues(values map[string]string) Topic {
	i64 := func(k string) int64 { n, _ := strconv.ParseInt(values[k], 10, 64); return n }
	i32 := func(k string) int32 { return int32(i64(k)) }
	list := func(k string) []string {
		if values[k] == "" {
			return nil
		}
		return strings.Split(values[k], ",")
	}
	policy := list(TopicCleanupPolicy)
	ratio, _ := strconv.ParseFloat(values[TopicMinCleanableRatio], 64)
	return Topic{
		SegmentBytes:              i64(TopicSegmentBytes),
		SegmentMs:                 i64(TopicSegmentMs),
		SegmentJitterMs:           i64(TopicSegmentJitterMs),
		SegmentIndexBytes:         i32(TopicSegmentIndexBytes),
		IndexIntervalBytes:        i32(TopicIndexIntervalBytes),
		RetentionMs:               i64(TopicRetentionMs),
		RetentionBytes:            i64(TopicRetentionBytes),
		CleanupPolicy:             CleanupPolicy{Delete: contains(policy, "delete"), Compact: contains(policy, "compact")},
		DeleteRetentionMs:         i64(TopicDeleteRetentionMs),
		MinCompactionLagMs:        i64(TopicMinCompactionLagMs),
		MaxCompactionLagMs:        i64(TopicMaxCompactionLagMs),
		MinCleanableDirtyRatio:    ratio,
		FlushMessages:             i64(TopicFlushMessages),
		FlushMs:                   i64(TopicFlushMs),
		MaxMessageBytes:           i32(TopicMaxMessageBytes),
		FileDeleteDelayMs:         i64(TopicFileDeleteDelayMs),
		MessageTimestampType:      TimestampType(values[TopicTimestampType]),
		TimestampBeforeMaxMs:      i64(TopicTimestampBeforeMaxMs),
		TimestampAfterMaxMs:       i64(TopicTimestampAfterMaxMs),
		CompressionType:           values[TopicCompressionType],
		CompressionGzipLevel:      i32(TopicGzipLevel),
		CompressionLz4Level:       i32(TopicLz4Level),
		CompressionZstdLevel:      i32(TopicZstdLevel),
		MinInsyncReplicas:         int(i64(TopicMinInsyncReplicas)),
		UncleanLeaderElection:     values[TopicUncleanLeaderElection] == "true",
		Preallocate:               values[TopicPreallocate] == "true",
		LeaderThrottledReplicas:   list(TopicLeaderThrottled),
		FollowerThrottledReplicas: list(TopicFollowerThrottled),
		RemoteStorageEnable:       values[TopicRemoteStorageEnable] == "true",
		LocalRetentionMs:          i64(TopicLocalRetentionMs),
		LocalRetentionBytes:       i64(TopicLocalRetentionBytes),
		Values:                    values,
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
