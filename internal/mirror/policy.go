package mirror

import (
	"fmt"
	"strings"
)

// HeartbeatsTopic is MM2's heartbeats topic name.
const HeartbeatsTopic = "heartbeats"

// Policy is MM2's replication policy: how remote topics are named and how a
// remote topic's origin is read back from its name. It is
// DefaultReplicationPolicy, or IdentityReplicationPolicy when identity is set.
type Policy struct {
	separator string
	// internalSep is the separator of the internal topics' names: the
	// separator, or "." when
	// replication.policy.internal.topic.separator.enabled=false.
	internalSep string
	identity    bool
	// sourceAlias is what the identity policy answers as any topic's
	// source (source.cluster.alias).
	sourceAlias string
}

// NewPolicy returns the policy of replication.policy.class, by its short or
// fully qualified Java name.
func NewPolicy(class, separator string, internalSeparator bool, sourceAlias string) (Policy, error) {
	if separator == "" {
		return Policy{}, fmt.Errorf("replication.policy.separator must not be empty")
	}
	p := Policy{separator: separator, internalSep: ".", sourceAlias: sourceAlias}
	if internalSeparator {
		p.internalSep = separator
	}
	switch strings.TrimPrefix(strings.TrimSpace(class), "org.apache.kafka.connect.mirror.") {
	case "DefaultReplicationPolicy":
	case "IdentityReplicationPolicy":
		p.identity = true
	default:
		return Policy{}, fmt.Errorf("replication policy %q is not supported (DefaultReplicationPolicy or IdentityReplicationPolicy)", class)
	}
	return p, nil
}

// Identity reports whether this is the identity policy, which cannot see
// cycles in topic names.
func (p Policy) Identity() bool { return p.identity }

// looksLikeHeartbeats is the identity policy's test for names it leaves to
// the default policy.
func (p Policy) looksLikeHeartbeats(topic string) bool {
	return strings.HasSuffix(topic, HeartbeatsTopic)
}

// FormatRemoteTopic names topic of cluster source on the target.
func (p Policy) FormatRemoteTopic(source, topic string) string {
	if p.identity && !p.looksLikeHeartbeats(topic) {
		return topic
	}
	return source + p.separator + topic
}

// TopicSource is the alias of the cluster a remote topic came from, "" when
// the name does not say (not a remote topic).
func (p Policy) TopicSource(topic string) string {
	if p.identity && !p.looksLikeHeartbeats(topic) {
		return p.sourceAlias
	}
	// As Java's String.split: trailing empty parts are dropped, and a name
	// with fewer than two parts is not remote.
	parts := strings.Split(topic, p.separator)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) < 2 {
		return ""
	}
	return parts[0]
}

// UpstreamTopic is the name of a remote topic on the cluster it came from
// (itself possibly remote), "" when not a remote topic. The identity policy
// answers the topic itself.
func (p Policy) UpstreamTopic(topic string) string {
	if p.identity && !p.looksLikeHeartbeats(topic) {
		return topic
	}
	src := p.TopicSource(topic)
	if src == "" {
		return ""
	}
	return topic[len(src)+len(p.separator):]
}

// OriginalTopic follows the remote-topic chain up to the topic's first
// cluster.
func (p Policy) OriginalTopic(topic string) string {
	for {
		up := p.UpstreamTopic(topic)
		if up == "" || up == topic {
			return topic
		}
		topic = up
	}
}

// OffsetSyncsTopic is mm2-offset-syncs.<alias>.internal.
func (p Policy) OffsetSyncsTopic(alias string) string {
	return "mm2-offset-syncs" + p.internalSep + alias + p.internalSep + "internal"
}

// CheckpointsTopic is <alias>.checkpoints.internal.
func (p Policy) CheckpointsTopic(alias string) string {
	return alias + p.internalSep + "checkpoints" + p.internalSep + "internal"
}

// IsCheckpointsTopic reports a checkpoints topic name.
func (p Policy) IsCheckpointsTopic(topic string) bool {
	return strings.HasSuffix(topic, p.internalSep+"checkpoints"+p.internalSep+"internal")
}

// IsHeartbeatsTopic reports heartbeats and its remote copies.
func (p Policy) IsHeartbeatsTopic(topic string) bool {
	return p.OriginalTopic(topic) == HeartbeatsTopic
}

// IsMM2InternalTopic reports a name ending in MM2's internal suffix.
func (p Policy) IsMM2InternalTopic(topic string) bool {
	return strings.HasSuffix(topic, p.internalSep+"internal")
}

// IsInternalTopic reports the topics never mirrored: MM2's own, Kafka's
// (`__*`, `.*`) and Connect's (`*.internal`, `*-internal`).
func (p Policy) IsInternalTopic(topic string) bool {
	return p.IsMM2InternalTopic(topic) || strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, ".") ||
		strings.HasSuffix(topic, ".internal") || strings.HasSuffix(topic, "-internal")
}

// IsCycle reports whether topic came, at some hop of its remote-topic
// chain, from target: mirroring it there would loop. The identity policy
// sees no chain, so only its configured source alias is checked.
func (p Policy) IsCycle(topic, target string) bool {
	for {
		src := p.TopicSource(topic)
		if src == "" {
			return false
		}
		if src == target {
			return true
		}
		up := p.UpstreamTopic(topic)
		if up == "" || up == topic {
			return false
		}
		topic = up
	}
}

// ShouldReplicate is MM2's rule for a source topic of flow f: matching the
// filter (or a heartbeats topic with heartbeat replication on), not
// internal, and not a cycle back to the target.
func (f *FlowConfig) ShouldReplicate(topic string) bool {
	p := f.Policy
	return (f.Topics.Match(topic) || (f.HeartbeatsReplication && p.IsHeartbeatsTopic(topic))) &&
		!p.IsInternalTopic(topic) && !p.IsCycle(topic, f.Target)
}
