// Package config defines, parses, validates and describes weir's
// Kafka-compatible broker and topic configuration.
//
// # Contract
//
// Every configuration key weir understands is described by a [Def] in one of
// two immutable registries: broker keys ([BrokerDef], [BrokerDefs]) and topic
// keys ([TopicDef], [TopicDefs]). Names, types, defaults, valid ranges and
// dynamic-update modes follow Apache Kafka 4.x in KRaft mode, except for a few
// documented weir defaults chosen so that a single node starts with no
// configuration at all (process.roles, node.id, listeners,
// controller.listener.names, controller.quorum.voters, log.dir).
//
// Each Def also says what weir does with the key ([Support]): Honoured keys
// take effect; Ignored keys are accepted without effect, with the reason it
// is harmless (a warning at start-up when set); Refused keys name features
// weir lacks (TLS, SASL, ACLs, connection limits, ...): only Kafka's
// default is accepted. Undefined keys of the refused families (ssl.*,
// sasl.*, listener.name.*, super.users, ...) and listeners of a security
// protocol other than PLAINTEXT are refused too. [Reference] renders all of
// it as docs/CONFIGURATION.md.
//
// Values travel as strings, exactly as they do in server.properties files and
// in the Kafka wire protocol. [Def.Normalize] parses a raw value with the key's
// type, checks it against the key's validator and returns its canonical string
// form (trimmed, lower-case booleans, canonical integers, Java-style doubles,
// comma-joined lists). Every string this package hands out through
// [Broker.Values], [Entry.Value] or [Topic] has been normalized.
//
// Loading a broker: [ParseProperties] reads Java .properties syntax, and
// [LoadBroker] merges the result with the defaults, validates every value,
// runs Kafka's cross-key checks (listeners, controller quorum, log settings,
// group timeouts, ...) and returns a [Broker] with typed fields. Unknown keys
// never fail loading; they are returned as warnings. All problems are reported
// as [*Error] values (joined with [errors.Join] when there are several), whose
// messages always name the offending key.
//
// Topics: [ValidateTopicConfigs] checks per-topic overrides (unknown keys are
// errors, as in Kafka's INVALID_CONFIG). [ResolveTopic] computes a topic's
// effective settings with Kafka's precedence, highest first:
//
//	DYNAMIC_TOPIC_CONFIG           per-topic override
//	DYNAMIC_BROKER_CONFIG          dynamic override for this broker
//	DYNAMIC_DEFAULT_BROKER_CONFIG  dynamic cluster-wide default
//	STATIC_BROKER_CONFIG           server.properties
//	DEFAULT_CONFIG                 built-in default
//
// Broker keys are consulted through the topic key's synonyms, in Kafka's order
// (for example retention.ms ← log.retention.ms, log.retention.minutes,
// log.retention.hours), converting minutes and hours to milliseconds. Within
// one level the first synonym that is set wins; a higher level always beats a
// lower one.
//
// Dynamic broker updates: [ValidateBrokerDynamic] and
// [ValidateBrokerDynamicDefault] accept only keys that Kafka allows to
// change at runtime and weir applies at runtime (see [UpdateMode]), and
// never a Refused key.
//
// DescribeConfigs: [DescribeTopic], [DescribeBroker] and
// [DescribeBrokerDefaults] build entries carrying exactly the fields of Kafka's
// DescribeConfigs v1-v4 response, with numeric [Type] and [Source] values equal
// to Kafka's wire values.
//
// The package is pure: it performs no I/O besides reading the io.Reader handed
// to ParseProperties, does no DNS lookups, and all functions are safe for
// concurrent use.
package config
