package mirror

// Topic configs and ACLs of flow A->B, synced as MM2's source connector
// does. Configs: a remote topic is created with its source topic's
// configs that are set (not defaults), and every
// sync.topic.configs.interval.seconds each topic being mirrored (its
// remote topic exists) has its configs applied with IncrementalAlterConfigs:
// SET for a value set on A, DELETE for one at its default there (so B's
// default applies, unless use.defaults.from=source); read-only, sensitive
// and static broker configs, and those matching config.properties.exclude,
// are left alone. ACLs: every sync.topic.acls.interval.seconds the literal
// topic ACLs of mirrored topics on A are created on B for the remote
// topics, ALLOW WRITE dropped (only the mirror writes there), ALLOW ALL
// turned into ALLOW READ, DENY copied; nothing is ever deleted. A source
// without an authorizer is skipped with one log line.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConfigs returns the configs of each source topic.
func (f *flow) describeConfigs(ctx context.Context, topics []string) (map[string][]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range topics {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = t
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, f.src)
	if err != nil {
		return nil, fmt.Errorf("describing the configs of %v on %s: %w", topics, f.cfg.Source, err)
	}
	out := map[string][]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			// A topic deleted since it was listed: the next round sees it gone.
			f.log.Warn("topic configs not described", "topic", r.ResourceName, "err", err)
			continue
		}
		out[r.ResourceName] = r.Configs
	}
	return out, nil
}

// syncable reports whether a source config is mirrored at all.
func (f *flow) syncable(c kmsg.DescribeConfigsResponseResourceConfig) bool {
	return !c.ReadOnly && !c.IsSensitive && c.Source != kmsg.ConfigSourceStaticBrokerConfig &&
		(f.cfg.ConfigExclude == nil || !f.cfg.ConfigExclude.MatchString(c.Name))
}

// isDefault reports whether a config is at its default on its cluster.
func isDefault(c kmsg.DescribeConfigsResponseResourceConfig) bool {
	return c.Source == kmsg.ConfigSourceDefaultConfig || (c.Source == kmsg.ConfigSourceUnknown && c.IsDefault)
}

// createConfigs are the configs a remote topic is created with.
func (f *flow) createConfigs(src []kmsg.DescribeConfigsResponseResourceConfig) map[string]*string {
	out := map[string]*string{}
	for _, c := range src {
		if f.syncable(c) && c.Value != nil && (!isDefault(c) || f.cfg.DefaultsFromSource) {
			out[c.Name] = c.Value
		}
	}
	return out
}

// alterConfigs are the incremental changes applying src to a remote topic.
func (f *flow) alterConfigs(src []kmsg.DescribeConfigsResponseResourceConfig) []kadm.AlterConfig {
	var out []kadm.AlterConfig
	for _, c := range src {
		if !f.syncable(c) {
			continue
		}
		if isDefault(c) && !f.cfg.DefaultsFromSource {
			out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: c.Name})
		} else if c.Value != nil {
			out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: c.Name, Value: c.Value})
		}
	}
	return out
}

// topicSync runs the config and ACL syncs at their intervals until ctx
// ends. A failed round is logged; the next one tries again.
func (f *flow) topicSync(ctx context.Context) {
	var cfgC, aclC <-chan time.Time
	if f.cfg.SyncTopicConfigsInterval > 0 {
		t := time.NewTicker(f.cfg.SyncTopicConfigsInterval)
		defer t.Stop()
		cfgC = t.C
	}
	if f.cfg.SyncTopicACLsInterval > 0 {
		t := time.NewTicker(f.cfg.SyncTopicACLsInterval)
		defer t.Stop()
		aclC = t.C
	}
	acls := &aclSync{f: f}
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-cfgC:
			err = f.syncConfigs(ctx)
		case <-aclC:
			err = acls.round(ctx)
		}
		if err != nil && ctx.Err() == nil {
			f.log.Warn("topic sync failed this round", "err", err)
		}
	}
}

// mirroredTopics returns the source topics being mirrored: replicated by
// the rules, with their remote topic on the target.
func (f *flow) mirroredTopics(ctx context.Context) ([]string, error) {
	src, err := f.srcAdm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the source's topics: %w", err)
	}
	dst, err := f.dstAdm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the target's topics: %w", err)
	}
	var out []string
	for _, t := range src.Names() {
		if f.cfg.ShouldReplicate(t) && dst.Has(f.cfg.Policy.FormatRemoteTopic(f.cfg.Source, t)) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// syncConfigs applies the source configs of every mirrored topic to its
// remote topic.
func (f *flow) syncConfigs(ctx context.Context) error {
	topics, err := f.mirroredTopics(ctx)
	if err != nil || len(topics) == 0 {
		return err
	}
	configs, err := f.describeConfigs(ctx, topics)
	if err != nil {
		return err
	}
	for _, t := range topics {
		alter := f.alterConfigs(configs[t])
		if len(alter) == 0 {
			continue
		}
		remote := f.cfg.Policy.FormatRemoteTopic(f.cfg.Source, t)
		r, err := f.dstAdm.AlterTopicConfigs(ctx, alter, remote)
		if err == nil {
			_, err = r.On(remote, nil)
		}
		if err != nil {
			if errors.Is(err, kerr.UnsupportedVersion) {
				return fmt.Errorf("the target %s does not serve IncrementalAlterConfigs: %w", f.cfg.Target, err)
			}
			// As MM2: one topic's refusal does not stop the others.
			f.log.Warn("could not alter the configs of a remote topic", "topic", remote, "err", err)
		}
	}
	return nil
}

// aclSync remembers whether the source was found without an authorizer,
// so that it is said once.
type aclSync struct {
	f         *flow
	noAuthLog bool
}

func (s *aclSync) round(ctx context.Context) error {
	f := s.f
	versions, err := f.srcAdm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("asking the source's API versions: %w", err)
	}
	served := false
	versions.Each(func(v kadm.BrokerApiVersions) {
		if _, ok := v.KeyMaxVersion(int16(kmsg.DescribeACLs)); ok {
			served = true
		}
	})
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeTopic
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	var resp *kmsg.DescribeACLsResponse
	if served {
		if resp, err = req.RequestWith(ctx, f.src); err != nil {
			return fmt.Errorf("describing the source's ACLs: %w", err)
		}
	}
	if !served || resp.ErrorCode == kerr.SecurityDisabled.Code {
		if !s.noAuthLog {
			s.noAuthLog = true
			f.log.Info("No ACL authorizer is configured on the source cluster, so no topic ACL syncing will take place; set sync.topic.acls.enabled=false to silence this", "source", f.cfg.Source)
		}
		return nil
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("describing the source's ACLs: %w", err)
	}
	create := targetACLs(resp.Resources, f.cfg.ShouldReplicate, func(t string) string { return f.cfg.Policy.FormatRemoteTopic(f.cfg.Source, t) })
	if len(create) == 0 {
		return nil
	}
	creq := kmsg.NewPtrCreateACLsRequest()
	creq.Creations = create
	cresp, err := creq.RequestWith(ctx, f.dst)
	if err != nil {
		return fmt.Errorf("creating ACLs on the target: %w", err)
	}
	for i, r := range cresp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil && i < len(create) {
			c := create[i]
			f.log.Warn("could not create an ACL on the target", "topic", c.ResourceName, "principal", c.Principal, "err", err)
		}
	}
	return nil
}

// targetACLs maps the source's topic ACLs to those to create on the target:
// literal ACLs of topics replicated (replicate), on their remote names
// (remote); ALLOW WRITE dropped, ALLOW ALL made ALLOW READ, the rest
// (DENY included) copied.
func targetACLs(src []kmsg.DescribeACLsResponseResource, replicate func(string) bool, remote func(string) string) []kmsg.CreateACLsRequestCreation {
	var out []kmsg.CreateACLsRequestCreation
	for _, r := range src {
		if r.ResourceType != kmsg.ACLResourceTypeTopic || r.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral || !replicate(r.ResourceName) {
			continue
		}
		for _, a := range r.ACLs {
			op := a.Operation
			if a.PermissionType == kmsg.ACLPermissionTypeAllow {
				switch op {
				case kmsg.ACLOperationWrite:
					continue
				case kmsg.ACLOperationAll:
					op = kmsg.ACLOperationRead
				}
			}
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType = kmsg.ACLResourceTypeTopic
			c.ResourceName = remote(r.ResourceName)
			c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
			c.Principal = a.Principal
			c.Host = a.Host
			c.Operation = op
			c.PermissionType = a.PermissionType
			out = append(out, c)
		}
	}
	return out
}
