package kafka

// DescribeConfigs, versions 0-4.
//
// Topics: every topic configuration with its effective value and where it
// comes from (topic override, dynamic broker config, dynamic cluster
// default, static server.properties, or the default). Brokers: this
// broker's configuration (resource name = its id), or the cluster-wide
// dynamic defaults (empty name); another broker's id is INVALID_REQUEST,
// as that broker must be asked. Synonyms (v1+) and documentation (v3+)
// when asked for. Broker loggers: broker_loggers.go. Groups (KIP-848):
// the group configs weir serves, GROUP_CONFIG where the group sets them,
// else DEFAULT_CONFIG with the broker's group.consumer.* value. A resource named again is answered once, for its first mention (clients
// key the answer by resource): a broker's every config with its
// documentation is tens of KB, which a request could otherwise ask for
// once per 5 bytes.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/config"
	"weir/internal/metadata"
)

func (s *Server) handleDescribeConfigs(req *Request) *Reply {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := respFor(req).(*kmsg.DescribeConfigsResponse)
	img := s.deps.Metadata.Image()
	self := itoa(s.cfg.Broker.NodeID)
	type resource struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	seen := map[resource]bool{}
	for _, rr := range r.Resources {
		k := resource{rr.ResourceType, rr.ResourceName}
		if seen[k] {
			continue
		}
		seen[k] = true
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []config.Entry
		switch {
		case (rr.ResourceType == kmsg.ConfigResourceTypeBroker || rr.ResourceType == kmsg.ConfigResourceTypeBrokerLogger) &&
			!s.authorizedCluster(req, acl.OpDescribeConfigs):
			setConfigErr(&res.ErrorCode, &res.ErrorMessage, kerr.ClusterAuthorizationFailed, "%s", kerr.ClusterAuthorizationFailed.Message)
		case rr.ResourceType == kmsg.ConfigResourceTypeTopic && !s.authorized(req, acl.OpDescribeConfigs, acl.ResourceTopic, rr.ResourceName):
			setConfigErr(&res.ErrorCode, &res.ErrorMessage, kerr.TopicAuthorizationFailed, "%s", kerr.TopicAuthorizationFailed.Message)
		case rr.ResourceType == kmsg.ConfigResourceTypeTopic:
			if img.Topics.Get(rr.ResourceName) == nil {
				setConfigErr(&res.ErrorCode, &res.ErrorMessage, kerr.UnknownTopicOrPartition, "Topic '%s' does not exist.", rr.ResourceName)
			} else {
				entries = config.DescribeTopic(img.TopicConfig(rr.ResourceName), img.BrokerConfig(self), img.BrokerConfig(""), s.cfg.Broker)
				entries = mirrorConfigs(img, rr.ResourceName, entries)
			}
		case rr.ResourceType == kmsg.ConfigResourceTypeBrokerLogger:
			s.describeLoggers(rr, &res)
		case rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig && !s.authorized(req, acl.OpDescribeConfigs, acl.ResourceGroup, rr.ResourceName):
			setConfigErr(&res.ErrorCode, &res.ErrorMessage, kerr.GroupAuthorizationFailed, "%s", kerr.GroupAuthorizationFailed.Message)
		case rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig && rr.ResourceName == "":
			setConfigErr(&res.ErrorCode, &res.ErrorMessage, kerr.InvalidRequest, "Group name must not be empty.")
		case rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig:
			entries = config.DescribeGroup(img.GroupConfig(rr.ResourceName), s.cfg.Broker)
		case rr.ResourceType == kmsg.ConfigResourceTypeBroker && rr.ResourceName == "":
			entries = config.DescribeBrokerDefaults(img.BrokerConfig(""))
		case rr.ResourceType == kmsg.ConfigResourceTypeBroker && rr.ResourceName == self:
			entries = config.DescribeBroker(img.BrokerConfig(self), img.BrokerConfig(""), s.cfg.Broker)
		case rr.ResourceType == kmsg.ConfigResourceTypeBroker:
			setConfigErr(&res.ErrorCode, &res.ErrorMessage, kerr.InvalidRequest, "Unexpected broker id, expected %s or empty string, but received %s", self, rr.ResourceName)
		default:
			setConfigErr(&res.ErrorCode, &res.ErrorMessage, kerr.InvalidRequest, "Unsupported resource type %d.", rr.ResourceType)
		}
		want := map[string]bool{}
		for _, n := range rr.ConfigNames {
			want[n] = true
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !want[e.Name] {
				continue
			}
			res.Configs = append(res.Configs, describedConfig(e, req.Version, r.IncludeSynonyms, r.IncludeDocumentation))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return done(resp)
}

// mirrorConfigs marks, on a topic that mirrors its source, the synced
// configs read-only (they follow the source's), and adds weir's three
// read-only entries of a mirror topic's state: mirror.link.name,
// mirror.source.topic and mirror.state (ACTIVE, PAUSED, STOPPED ...).
func mirrorConfigs(img *metadata.Image, topic string, entries []config.Entry) []config.Entry {
	m := img.MirrorOf(topic)
	if m == nil {
		return entries
	}
	if m.ReadOnly() {
		for i := range entries {
			if slices.Contains(metadata.MirrorSyncedConfigs, entries[i].Name) {
				entries[i].ReadOnly = true
			}
		}
	}
	linkName := ""
	if l := img.Links[m.LinkID]; l != nil {
		linkName = l.Name
	}
	for _, e := range [][3]string{
		{"mirror.link.name", linkName, "weir: the cluster link the topic mirrors its source through (empty once the link is deleted)."},
		{"mirror.source.topic", m.SourceTopic, "weir: the topic the mirror copies on the link's source cluster."},
		{"mirror.state", metadata.MirrorStateName(m.State), "weir: ACTIVE (copying), PAUSED, or STOPPED once promoted or failed over (writable)."},
	} {
		v := e[1]
		entries = append(entries, config.Entry{Name: e[0], Value: &v, ReadOnly: true, Source: config.SourceDynamicTopic,
			Type: config.TypeString, Documentation: e[2]})
	}
	return entries
}

func describedConfig(e config.Entry, version int16, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.Name, e.Value, e.ReadOnly, e.IsSensitive
	c.Source = kmsg.ConfigSource(e.Source)
	c.IsDefault = e.Source == config.SourceDefault
	c.ConfigType = kmsg.ConfigType(e.Type)
	if synonyms && version >= 1 {
		for _, syn := range e.Synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Value, cs.Source = syn.Name, syn.Value, kmsg.ConfigSource(syn.Source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	if docs && e.Documentation != "" {
		d := e.Documentation
		c.Documentation = &d
	}
	return c
}

func setConfigErr(code *int16, msg **string, e *kerr.Error, format string, args ...any) {
	m := fmt.Sprintf(format, args...)
	*code, *msg = e.Code, &m
}

// resourceType converts a config resource type for the controller.
func resourceType(t kmsg.ConfigResourceType) int8 {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return metadata.ResourceTopic
	case kmsg.ConfigResourceTypeBroker:
		return metadata.ResourceBroker
	case kmsg.ConfigResourceTypeGroupConfig:
		return metadata.ResourceGroup
	}
	return int8(t)
}
