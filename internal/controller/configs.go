package controller

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/metadata"
)

// ConfigChange is one resource's requested change, in the shape both
// AlterConfigs (Replace: the new complete set) and IncrementalAlterConfigs
// (Ops) take.
type ConfigChange struct {
	Type    int8
	Name    string
	Replace map[string]*string // AlterConfigs: the full new set
	Ops     []kmsg.IncrementalAlterConfigsRequestResourceConfig
	// Incremental selects Ops over Replace.
	Incremental bool
}

// AlterConfigsResult is the answer of AlterConfigs: one error per
// resource (nil: applied), in request order.
type AlterConfigsResult struct {
	Committed
	Errs []error
}

// AlterConfigs applies config changes to topics, brokers and groups,
// each resource independently.
func (c *Controller) AlterConfigs(changes []ConfigChange, validateOnly bool) (AlterConfigsResult, error) {
	return run(c, func(img *metadata.Image) (result[AlterConfigsResult], error) {
		return c.alterConfigs(img, changes, validateOnly)
	})
}

// alterConfigs builds AlterConfigs. Validating only plans the same
// records and commits none.
func (c *Controller) alterConfigs(img *metadata.Image, changes []ConfigChange, validateOnly bool) (result[AlterConfigsResult], error) {
	res := result[AlterConfigsResult]{Answer: AlterConfigsResult{Committed{img.Offset}, make([]error, len(changes))}}
	errs := res.Answer.Errs
	seen := map[metadata.ConfigResource]int{}
	for _, ch := range changes {
		seen[metadata.ConfigResource{Type: ch.Type, Name: ch.Name}]++
	}
	var recs userRecords
	for i, ch := range changes {
		r := metadata.ConfigResource{Type: ch.Type, Name: ch.Name}
		if seen[r] > 1 {
			errs[i] = topicErr(kerr.InvalidRequest, "Duplicate resource in request.")
			continue
		}
		rrecs, err := c.planConfigChange(img, ch)
		if err != nil {
			errs[i] = err
			continue
		}
		if err := recs.add(rrecs...); err != nil {
			return res, err
		}
	}
	if validateOnly || len(recs) == 0 {
		return res, nil
	}
	// unclean.leader.election.enable may have been turned on: offline
	// partitions it now lets lead are elected in the same commit.
	var err error
	res.Records, err = thenElect(img, recs, c.electOffline)
	return res, err
}

func (c *Controller) planConfigChange(img *metadata.Image, ch ConfigChange) ([]metadata.Record, error) {
	res := metadata.ConfigResource{Type: ch.Type, Name: ch.Name}
	var current map[string]string
	switch ch.Type {
	case metadata.ResourceTopic:
		if img.Topics.Get(ch.Name) == nil {
			return nil, topicErr(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", ch.Name)
		}
		current = img.TopicConfig(ch.Name)
	case metadata.ResourceBroker:
		if ch.Name != "" {
			if _, err := strconv.ParseInt(ch.Name, 10, 32); err != nil {
				return nil, topicErr(kerr.InvalidRequest, "Invalid broker name %q: must be a broker id or empty for the cluster default.", ch.Name)
			}
		}
		current = img.BrokerConfig(ch.Name)
	case metadata.ResourceGroup:
		if ch.Name == "" {
			return nil, topicErr(kerr.InvalidRequest, "Group name must not be empty.")
		}
		current = img.GroupConfig(ch.Name)
	default:
		return nil, topicErr(kerr.InvalidRequest, "Unsupported resource type %d.", ch.Type)
	}
	next, err := applyChange(current, ch)
	if err != nil {
		return nil, err
	}
	if err := c.validateConfigs(ch, next); err != nil {
		return nil, err
	}
	if ch.Type == metadata.ResourceTopic {
		if err := checkMirrorConfigs(img, ch.Name, current, next); err != nil {
			return nil, err
		}
	}
	return configRecords(res, current, next), nil
}

// applyChange computes a resource's new dynamic config set.
func applyChange(current map[string]string, ch ConfigChange) (map[string]string, error) {
	if !ch.Incremental {
		next := map[string]string{}
		for k, v := range ch.Replace {
			if v == nil {
				return nil, topicErr(kerr.InvalidConfig, "Null value not supported for: %s", k)
			}
			next[k] = *v
		}
		return next, nil
	}
	next := maps.Clone(current)
	seen := map[string]bool{}
	for _, op := range ch.Ops {
		if seen[op.Name] {
			return nil, topicErr(kerr.InvalidConfig, "Error due to duplicate config keys: %s", op.Name)
		}
		seen[op.Name] = true
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return nil, topicErr(kerr.InvalidConfig, "Null value not supported for: %s", op.Name)
			}
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !isList(ch.Type, op.Name) {
				verb := "APPEND"
				if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
					verb = "SUBTRACT"
				}
				return nil, topicErr(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", verb, op.Name)
			}
			// The default applies only to an unset key; a key set to the
			// empty list starts empty.
			cur, ok := next[op.Name]
			if !ok {
				cur = listDefault(ch.Type, op.Name)
			}
			var items []string
			if cur != "" {
				items = strings.Split(cur, ",")
			}
			var vals []string
			if op.Value != nil && *op.Value != "" {
				vals = strings.Split(*op.Value, ",")
			}
			for _, v := range vals {
				v = strings.TrimSpace(v)
				has := slices.Contains(items, v)
				if op.Op == kmsg.IncrementalAlterConfigOpAppend && !has {
					items = append(items, v)
				}
				if op.Op == kmsg.IncrementalAlterConfigOpSubtract && has {
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			next[op.Name] = strings.Join(items, ",")
		default:
			return nil, topicErr(kerr.InvalidRequest, "Unknown config operation %d for %s.", op.Op, op.Name)
		}
	}
	return next, nil
}

func def(typ int8, name string) (config.Def, bool) {
	switch typ {
	case metadata.ResourceTopic:
		return config.TopicDef(name)
	case metadata.ResourceGroup:
		return config.Def{}, false // no group config is a list
	}
	return config.BrokerDef(name)
}

func isList(typ int8, name string) bool {
	d, ok := def(typ, name)
	return ok && d.Type == config.TypeList
}

func listDefault(typ int8, name string) string {
	d, _ := def(typ, name)
	return d.Default
}

func (c *Controller) validateConfigs(ch ConfigChange, next map[string]string) error {
	switch ch.Type {
	case metadata.ResourceTopic:
		if err := config.ValidateTopicConfigs(next); err != nil {
			return topicErr(kerr.InvalidConfig, "%v", err)
		}
		return nil
	case metadata.ResourceGroup:
		// Against this controller's group.consumer.* bounds, as Kafka's
		// controller validates with its own configuration.
		if err := config.ValidateGroupConfigs(next, c.cfg.Static); err != nil {
			return topicErr(kerr.InvalidConfig, "%v", err)
		}
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(next)) {
		validate := config.ValidateBrokerDynamic
		if ch.Name == "" {
			validate = config.ValidateBrokerDynamicDefault
		}
		if err := validate(k, next[k]); err != nil {
			return topicErr(kerr.InvalidConfig, "%v", err)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
